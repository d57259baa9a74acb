"""The exported (1, 151936) FLOAT32 ARGMAX in headless Chromium, beside the Python runner's.

    python benchmarks/browser_argmax.py [--repeats 50]

Question: what does the module ``dmlgpu export`` makes cost on the GPU in a web page, recorded
into the page's own encoder, beside the Python runner on the same machine?

1. **In the page** (Chromium's WebGPU; headless here, so its software adapter, SwiftShader):
   the module compiled on the page's device, the page's logits in its buffer, and per repeat
   ``op.record(encoder, bindings, timestampWrites)`` into the page's encoder, one submit, the
   GPU done (``onSubmittedWorkDone``): the GPU time from the timestamps on the first and last
   pass (Chromium run with timestamp quantization off); and, interleaved, the wall time of that
   round trip beside the same round trip of a bare 1-workgroup dispatch of the page's.
   Twice: the module exported for a GPU (the default), and with ``software=True`` (the
   planner's tuning for a CPU adapter, which SwiftShader is).
2. **The Python runner** (wgpu-native; lavapipe where there is no GPU), timestamps around its
   passes (``operator_gpu_times``): on a device of WebGPU's default limits and no optional
   feature, whose plan is the module's exported for that adapter (a CPU adapter's on lavapipe;
   ``tests/test_export.py`` holds them equal), and on ``Device()``, dmlgpu as users get it
   (its optional features too).

The two sides run on different adapters unless both reach the same one. Headless Chromium offers
SwiftShader only, but SwiftShader is a Vulkan driver that wgpu-native loads too: with
``VK_ICD_FILENAMES=/usr/lib/chromium/vk_swiftshader_icd.json`` the Python side runs on it, and
the two compare on one adapter. The answers are checked (the page's against a JavaScript
argmax, Python's against NumPy).
"""

from __future__ import annotations

import argparse
import pathlib
import sys
import warnings

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from _browser import Chromium, Site, find_chromium  # noqa: E402  (tests/_browser.py)

import dmlgpu  # noqa: E402
from dmlgpu.bench.gpu_timers import operator_gpu_times  # noqa: E402
from dmlgpu.errors import SoftwareAdapterWarning  # noqa: E402

warnings.simplefilter("ignore", SoftwareAdapterWarning)  # lavapipe is what this compares, on purpose

CALL = "argmax float32 (1, 151936) axis=1 out=uint32"
#: Chromium rounds timestamps to 100 us unless told otherwise.
TIMESTAMP_FLAGS = ["--enable-webgpu-developer-features", "--enable-dawn-features=allow_unsafe_apis",
                   "--disable-dawn-features=timestamp_quantization"]

PAGE = """(async (repeats) => {
  const m = await import(location.origin + "/argmax.js");
  const adapter = await navigator.gpu.requestAdapter();
  const timed = adapter.features.has("timestamp-query");
  const device = await adapter.requestDevice({ requiredFeatures: timed ? ["timestamp-query"] : [] });
  const op = await m.compile(device);
  const U = GPUBufferUsage;
  const n = m.operator.input.sizes[1];
  const logits = new Float32Array(n).map(() => Math.random());
  const input = device.createBuffer({ size: logits.byteLength, usage: U.STORAGE | U.COPY_DST });
  device.queue.writeBuffer(input, 0, logits);
  const output = device.createBuffer({ size: 16, usage: U.STORAGE | U.COPY_SRC });
  const size = m.bindingProperties.temporaryResourceSize;
  const temporary = size ? device.createBuffer({ size, usage: U.STORAGE }) : undefined;
  const bindings = { input, output, temporary };
  const bare = device.createComputePipeline({ layout: "auto", compute: { module: device.createShaderModule({ code:
    "@group(0) @binding(0) var<storage, read_write> y: array<u32>;\\n@compute @workgroup_size(1) fn main() { y[0] = y[0] + 1u; }" }) } });
  const word = device.createBuffer({ size: 16, usage: U.STORAGE });
  const bareGroup = device.createBindGroup({ layout: bare.getBindGroupLayout(0), entries: [{ binding: 0, resource: { buffer: word } }] });
  const querySet = timed ? device.createQuerySet({ type: "timestamp", count: 2 * repeats }) : null;
  const once = async (i) => {
    const encoder = device.createCommandEncoder();
    op.record(encoder, bindings, timed ? { querySet, beginningOfPassWriteIndex: 2 * i, endOfPassWriteIndex: 2 * i + 1 } : undefined);
    device.queue.submit([encoder.finish()]);
    await device.queue.onSubmittedWorkDone();
  };
  const bareOnce = async () => {
    const encoder = device.createCommandEncoder();
    const pass = encoder.beginComputePass();
    pass.setPipeline(bare); pass.setBindGroup(0, bareGroup); pass.dispatchWorkgroups(1); pass.end();
    device.queue.submit([encoder.finish()]);
    await device.queue.onSubmittedWorkDone();
  };
  for (let i = 0; i < 3; i++) { await once(0); await bareOnce(); }  // warm
  const roundTrip = [], bareTrip = [];
  for (let i = 0; i < repeats; i++) {
    let t = performance.now(); await once(i); roundTrip.push(performance.now() - t);
    t = performance.now(); await bareOnce(); bareTrip.push(performance.now() - t);
  }
  let gpu = null;
  if (timed) {
    const resolved = device.createBuffer({ size: 16 * repeats, usage: U.QUERY_RESOLVE | U.COPY_SRC });
    const read = device.createBuffer({ size: 16 * repeats, usage: U.MAP_READ | U.COPY_DST });
    const encoder = device.createCommandEncoder();
    encoder.resolveQuerySet(querySet, 0, 2 * repeats, resolved, 0);
    encoder.copyBufferToBuffer(resolved, 0, read, 0, 16 * repeats);
    device.queue.submit([encoder.finish()]);
    await read.mapAsync(GPUMapMode.READ);
    const ticks = new BigUint64Array(read.getMappedRange());
    gpu = [];
    for (let i = 0; i < repeats; i++) gpu.push(Number(ticks[2 * i + 1] - ticks[2 * i]) / 1e6);
  }
  const id = (await op.run(bindings))[0];
  let want = 0;
  for (let i = 1; i < n; i++) if (logits[i] > logits[want]) want = i;
  return { adapter: `${adapter.info.vendor} ${adapter.info.architecture}`, timed, gpu, roundTrip, bareTrip,
           ok: id === want, passes: m.operator.pieces.flatMap((p) => p.passes).length };
})"""


def median_ms(values) -> str:
    return f"{float(np.median(values)):.3f} ms"


def in_the_page(repeats: int) -> list[tuple[str, dict]]:
    """(which module, what the page measured) for the module exported for a GPU and for a CPU
    adapter (``software=True``), in one browser, one after the other."""
    executable = find_chromium()
    if executable is None:
        raise SystemExit("no Chromium found (apt-get install chromium, or DMLGPU_CHROMIUM)")
    site = Site()
    site.add("/", "<!doctype html><title>browser_argmax</title>")
    browser = Chromium(executable, TIMESTAMP_FLAGS, timeout=600)
    rows = []
    try:
        for name, software in (("exported for a GPU (the default)", False),
                               ("exported with software=True (a CPU adapter's tuning)", True)):
            site.add("/argmax.js", dmlgpu.export(CALL, software=software))
            browser.goto(site.url + "/")
            rows.append((name, browser.evaluate(f"{PAGE}({repeats})", timeout=600)))
    finally:
        browser.close()
        site.close()
    return rows


def in_python(repeats: int) -> list[tuple[str, str, int, np.ndarray]]:
    """(which device, its adapter, passes, GPU seconds) of the Python runner."""
    import wgpu

    from dmlgpu.explainer import parse_call

    adapter = wgpu.gpu.request_adapter_sync(power_preference="high-performance")
    webgpu_defaults = adapter.request_device_sync(required_features=["timestamp-query"], required_limits={
        "max-storage-buffer-binding-size": 128 << 20, "max-buffer-size": 256 << 20,
        "min-storage-buffer-offset-alignment": 256})
    desc, _ = parse_call(CALL)
    x = np.random.default_rng(0).random((1, 151936), dtype=np.float32)
    rows = []
    for name, device in (("a device of WebGPU's defaults, no optional feature", dmlgpu.Device.from_wgpu(webgpu_defaults)),
                         ("Device() (dmlgpu as users get it)", dmlgpu.Device())):
        op = device.compile(desc)
        source, out = device.upload(x), device.empty(op.output_desc)
        op.run(source, out)
        assert out.numpy().reshape(-1)[0] == np.argmax(x), name
        times = operator_gpu_times(op, source, out, repeats)
        rows.append((name, device.name, len(op.sources), times))
        device.close()
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=50)
    args = parser.parse_args()
    ok = True
    for name, page in in_the_page(args.repeats):
        ok &= page["ok"]
        print(f"in the page: Chromium's WebGPU on {page['adapter']}, {CALL!r} {name} ({page['passes']} passes), "
              f"recorded into the page's encoder; answer {'matches' if page['ok'] else 'DIFFERS from'} JavaScript's")
        if page["gpu"]:
            print(f"  GPU time (timestamps on its first and last pass): median {median_ms(page['gpu'])} "
                  f"of {args.repeats}")
        print(f"  round trip, record + submit + onSubmittedWorkDone: median {median_ms(page['roundTrip'])}; "
              f"a bare 1-workgroup dispatch of the page's, the same way: {median_ms(page['bareTrip'])}")
    for name, adapter, passes, times in in_python(args.repeats):
        print(f"Python runner on {adapter}, {name}: {passes} passes, GPU time median "
              f"{median_ms(times * 1e3)} of {args.repeats}")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
