"""A caller's input bound to exactly its bytes against one padded to whole 16-byte quads (issue
35), GPU times interleaved in one process.

    python benchmarks/studies/exact_bindings.py           # on the GPU machine: 256 MiB to 1 GiB inputs
    python benchmarks/studies/exact_bindings.py --small   # small shapes (lavapipe)

The device is yours (``Device.from_wgpu`` on a wgpu device requested as an application would:
the adapter's binding and buffer limits, dmlgpu's optional features where the adapter has them),
and so are the input buffers, written with ``queue.write_buffer``. Each case's one compiled ARGMAX
runs on its input held three ways, timed interleaved in rounds (timestamp queries around its
passes, the median of ``--repeats`` each):

- ``padded``: ``Device.wrap`` of a buffer of the tensor's bytes rounded up to 16, and 256 more
  (no size given: the binding runs past the tensor, and every quad the kernels load is whole);
- ``exact``: ``Device.wrap`` of a buffer of exactly ``total_tensor_size_in_bytes``, as
  ``create_buffer_with_data(data=x.tobytes())`` makes one: where that is not whole quads, the
  quad its end cuts is read a word at a time;
- ``padded, before``: the padded input on passes compiled from the shaders as they were before
  that tail handling (``before``: load_quads reading a tail element from its quad, reduce_rows
  loading its last tiles as the others), which read it rightly where the buffer runs on:
  what the tail handling costs the hot loops.

Issue 35's target: ``exact`` within 1% of ``padded`` on the bandwidth cases, the bench's ``rows``
and ``cols``. Their bytes are whole quads, so there the two differ only in where the binding
ends; ``row_tail`` (one row whose last quad holds 3 FLOAT32, the segments kernel) and ``rows3_tail``
(rows of 3 FLOAT32 whose last block ends inside a quad, reduce_rows) have a tail to read, and
``tiny_rows8`` (rows of 8, reduce_rows on whole quads) has none.
Every variant's answer is checked against NumPy.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import wgpu

import dmlgpu
from dmlgpu.bench import interleaved, warm_up
from dmlgpu.runtime import gpu_times

U = wgpu.BufferUsage
OPTIONAL = ("shader-int64", "subgroup", "timestamp-query", "shader-int64-atomic-all-ops", "mappable-primary-buffers")
#: (name, shape, axis), FLOAT32 ARGMAX: the GPU machine's, and --small's
CASES = [("rows", (4096, 65536), 1), ("cols", (65536, 4096), 0), ("row_tail", (1, 2**28 - 1), 1),
         ("rows3_tail", (2**25 - 1, 3), 1), ("tiny_rows8", (16777216, 8), 1)]
SMALL_CASES = [("rows", (256, 4096), 1), ("cols", (4096, 256), 0), ("row_tail", (1, 2**20 - 1), 1),
               ("rows3_tail", (2**16 - 1, 3), 1), ("tiny_rows8", (2**15, 8), 1)]
#: The tail handling in the shaders' text, and what stood there before it.
TAIL_HANDLING = (
    ("return key_of_bits((src_words[e / PER_WORD] >> ((e % PER_WORD) * BITS)) & BIT_MASK);",
     "return key_of_bits(quad_bits(quad(e / PER_QUAD), e % PER_QUAD));"),
    ("for (; tile < whole_tiles; tile += stride) {", "for (; tile < tiles; tile += stride) {"),
)


def your_device(without=()):
    """A wgpu device as an application that wants dmlgpu at its best would request it (less the
    optional features ``without`` names)."""
    adapter = wgpu.gpu.request_adapter_sync(power_preference="high-performance")
    limits = {name: adapter.limits[name] for name in ("max-storage-buffer-binding-size", "max-buffer-size")}
    return adapter.request_device_sync(required_features=[f for f in OPTIONAL if f in adapter.features and f not in without],
                                       required_limits=limits)


def before(source: str) -> str:
    """A pass's WGSL as it was before the tail handling (the shaders that read quads have it)."""
    for now, then in TAIL_HANDLING:
        source = source.replace(now, then)
    assert "src_words[e" not in source and "tile < whole_tiles" not in source, "the tail handling was not found"
    return source


def case(gpu, device, name: str, shape, axis: int, repeats: int) -> bool:
    x = np.random.default_rng(len(name)).standard_normal(shape, dtype=np.float32)
    desc = dmlgpu.TensorDesc("FLOAT32", shape)
    op = device.compile(dmlgpu.ArgMaxOperatorDesc(desc, axes=[axis]))
    need = desc.total_tensor_size_in_bytes
    buffers = {"exact": gpu.create_buffer(size=need, usage=U.STORAGE | U.COPY_DST),
               "padded": gpu.create_buffer(size=((need + 15) & ~15) + 256, usage=U.STORAGE | U.COPY_DST)}
    for buffer in buffers.values():
        gpu.queue.write_buffer(buffer, 0, x)
    out = device.empty(op.output_desc)
    ours = device.upload(x)  # dmlgpu's own buffer: where the library puts an input itself
    steps = {}
    for kind, buffer in buffers.items():
        steps[kind], clear = op.passes(device.wrap(buffer, desc), out)
    steps["ours"], _ = op.passes(ours, out)
    assert len(steps["padded"]) == len(op.sources) and not clear
    programs = device.runner.programs
    steps["padded, before"] = [(programs.pipeline(before(source)), group, grid)
                               for (_, group, grid), source in zip(steps["padded"], op.sources)]
    want, ok = np.argmax(x, axis=axis), True
    for kind, s in steps.items():
        device.runner.dispatch(s)
        right = np.array_equal(out.numpy().reshape(want.shape), want)
        ok &= right
        if not right:
            print(f"  {kind}: WRONG ANSWER")
    times = interleaved({kind: (lambda n, s=s: gpu_times(device.runner, s, repeats=n)) for kind, s in steps.items()},
                        repeats)
    p = op.plan
    print(f"{name}: ARGMAX {shape} FLOAT32 axis {axis}, {need} bytes ({need % 16} past whole quads), {p.kernel} "
          f"{p.loader}{' (64-bit halves)' if p.wide_loads else ''}, split {p.split}{' racing' if p.race else ''}; "
          f"median of {repeats}, interleaved", flush=True)
    medians = {kind: float(np.median(t)) for kind, t in times.items()}
    for kind, m in medians.items():
        print(f"  {kind:15s} {m * 1e6:10.1f} us  {need / m / 1e9:8.1f} GB/s")
    print(f"  exact / padded {100 * (medians['exact'] / medians['padded'] - 1):+.2f}% (target within 1%); "
          f"padded / padded, before {100 * (medians['padded'] / medians['padded, before'] - 1):+.2f}%; "
          f"answers {'match NumPy' if ok else 'WRONG'}", flush=True)
    for buffer in buffers.values():
        buffer.destroy()
    out.release()
    ours.release()
    return ok


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--small", action="store_true", help="small shapes, for lavapipe")
    parser.add_argument("--case", action="append", default=[], help="cases whose name contains this (repeatable)")
    parser.add_argument("--repeats", type=int, default=None, help="timed runs per variant (default 60, --small 10)")
    parser.add_argument("--without", action="append", default=[], metavar="FEATURE",
                        help="request the device without this optional feature (repeatable)")
    args = parser.parse_args()
    repeats = args.repeats or (10 if args.small else 60)
    start = time.perf_counter()
    gpu = your_device(args.without)
    device = dmlgpu.Device.from_wgpu(gpu)
    print(f"{device.name} ({device.runner.backend}), runner path {device.runner.path.name}", flush=True)
    if "timestamp-query" not in gpu.features:
        print("the adapter has no timestamp-query: nothing to time")
        return 1
    cases = [c for c in (SMALL_CASES if args.small else CASES) if not args.case or any(s in c[0] for s in args.case)]
    warm_up(device.runner, 256 << 20, 0.5)
    ok = all([case(gpu, device, name, shape, axis, repeats) for name, shape, axis in cases])
    device.close()
    print(f"{'ok' if ok else 'WRONG'} in {time.perf_counter() - start:.1f} s")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
