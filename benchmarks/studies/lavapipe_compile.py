"""What does each WGSL text the test suite compiles cost lavapipe, and where (issue 36)?

Two steps. First the suite's texts, each with the first test that compiled it, dumped by this
file loaded as a pytest plugin (warm Mesa cache: a couple of minutes)::

    PYTHONPATH=benchmarks/studies LAVAPIPE_TEXTS=/tmp/texts bash scripts/test.sh -p lavapipe_compile

Then each text compiled on a fresh device with an empty Mesa cache of its own, timed per step:
``create_shader_module`` (naga's parse and validation), ``create_compute_pipeline`` (naga's
SPIR-V, then lavapipe's NIR), the first dispatch (llvmpipe's LLVM compile of the shader) and a
second (the dispatch alone); ``--reachable`` compiles what ``wgsl.reachable`` kept of each
(the top-level items ``main`` reaches; it exists only at ``e8edb0a``, reverted after this study)::

    python benchmarks/studies/lavapipe_compile.py /tmp/texts --count 300 --seed 11 [--reachable]

Texts of the shared layout (input bound writable) are left out: they bind differently.
"""

from __future__ import annotations

import argparse
import atexit
import glob
import json
import os
import random
import shutil
import statistics
import sys
import tempfile
import time

# --- step 1: the pytest plugin --------------------------------------------------------------

_seen: dict[str, str] = {}
_current = {"test": ""}


def pytest_configure(config):  # noqa: ARG001 (pytest's hook)
    from wgpu.backends.wgpu_native import GPUDevice

    made = GPUDevice.create_shader_module

    def create_shader_module(self, *args, **kwargs):
        _seen.setdefault(kwargs.get("code", ""), _current["test"])
        return made(self, *args, **kwargs)

    GPUDevice.create_shader_module = create_shader_module
    folder = os.environ["LAVAPIPE_TEXTS"]
    os.makedirs(folder, exist_ok=True)
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    atexit.register(lambda: json.dump(_seen, open(f"{folder}/texts-{worker}-{os.getpid()}.json", "w")))


def pytest_runtest_setup(item):
    _current["test"] = item.nodeid


# --- step 2: the compiles -------------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("folder", help="where step 1 wrote the texts")
    parser.add_argument("--count", type=int, default=0, help="this many texts, drawn with --seed (0: all)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--reachable", action="store_true", help="compile wgsl.reachable's items of each")
    parser.add_argument("--json", help="write each text's times here")
    args = parser.parse_args()
    texts: dict[str, str] = {}
    for path in glob.glob(f"{args.folder}/texts-*.json"):
        for text, test in json.load(open(path)).items():
            texts.setdefault(text, test)
    chosen = sorted(t for t in texts if "@binding(1) var<storage, read_write>" not in t)
    random.Random(args.seed).shuffle(chosen)
    chosen = chosen[:args.count or None]
    cache = tempfile.mkdtemp(prefix="mesa-cache-")
    os.environ["MESA_SHADER_CACHE_DIR"] = cache  # before the driver loads: an empty cache
    atexit.register(shutil.rmtree, cache, ignore_errors=True)
    import wgpu

    from dmlgpu.runtime.programs import LAYOUT_ENTRIES

    adapter = wgpu.gpu.request_adapter_sync(power_preference="high-performance")
    wanted = ("shader-int64", "shader-f16", "subgroup", "shader-int64-atomic-all-ops")
    device = adapter.request_device_sync(required_features=[f for f in wanted if f in adapter.features])
    group = device.create_bind_group_layout(entries=LAYOUT_ENTRIES)
    layout = device.create_pipeline_layout(bind_group_layouts=[group])
    params = device.create_buffer(size=4096, usage=wgpu.BufferUsage.UNIFORM)  # zeros: no work
    usage = wgpu.BufferUsage.STORAGE | wgpu.BufferUsage.COPY_SRC
    buffers = [device.create_buffer(size=1 << 16, usage=usage) for _ in range(3)]
    bound = device.create_bind_group(layout=group, entries=[
        {"binding": i, "resource": {"buffer": b}} for i, b in enumerate([params, *buffers, buffers[0]])])

    def dispatch(pipeline) -> float:
        started = time.perf_counter()
        encoder = device.create_command_encoder()
        compute = encoder.begin_compute_pass()
        compute.set_pipeline(pipeline)
        compute.set_bind_group(0, bound)
        compute.dispatch_workgroups(1)
        compute.end()
        device.queue.submit([encoder.finish()])
        device.queue.read_buffer(buffers[1], 0, 16)  # waits for the dispatch
        return time.perf_counter() - started

    rows = []
    for text in chosen:
        if args.reachable:
            from dmlgpu.wgsl import reachable  # type: ignore[attr-defined]  # e8edb0a's
            source = "".join(reachable(text))
        else:
            source = text
        started = time.perf_counter()
        module = device.create_shader_module(code=source)
        parsed = time.perf_counter()
        pipeline = device.create_compute_pipeline(layout=layout, compute={"module": module, "entry_point": "main"})
        made = time.perf_counter()
        rows.append({"test": texts[text], "bytes": len(source), "module": parsed - started, "pipeline": made - parsed,
                     "first": dispatch(pipeline), "second": dispatch(pipeline)})
    print(f"{len(rows)} texts{' (reachable items)' if args.reachable else ''}, "
          f"{sum(r['bytes'] for r in rows) / len(rows):.0f} bytes on average")
    for step in ("module", "pipeline", "first", "second"):
        times = [r[step] for r in rows]
        print(f"  {step:8s} sum {sum(times):7.2f} s, median {statistics.median(times) * 1e3:6.1f} ms, "
              f"max {max(times) * 1e3:7.1f} ms")
    if args.json:
        json.dump(rows, open(args.json, "w"), indent=1)


if __name__ == "__main__":
    sys.exit(main())
