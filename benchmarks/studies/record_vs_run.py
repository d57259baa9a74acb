"""Recording into your own encoder against dmlgpu's own path, in one process.

    python benchmarks/studies/record_vs_run.py           # on the GPU machine
    python benchmarks/studies/record_vs_run.py --small   # small shapes, a few hundred calls (lavapipe)

The device is yours (``Device.from_wgpu`` on a wgpu device this script requests as an
application would: the adapter's binding and buffer limits, dmlgpu's optional features where
the adapter has them), so both paths run the same compiled operator on the same device.

1. Latency of one call on resident data, ``llm_argmax``'s shape (1, 151936) FLOAT32, p50 and
   p99 of ``--calls`` calls each, the variants interleaved in rounds:

   - ``record+copy+map``: ``op.record`` into a new encoder of yours, a copy of the id into your
     read-back buffer, your submit, a map of it and the id read: the answer on the host, as
     ``run(...).numpy()`` gives it;
   - ``record+map out``: the same with the output itself in mappable memory, mapped with no copy
     (where the device has ``mappable-primary-buffers``, as dmlgpu's own small outputs are);
   - ``record+work_done``: ``op.record``, your submit, ``queue.on_submitted_work_done_sync()``:
     the GPU done, nothing read (where wgpu-py's works: 0.32.0's raises a TypeError, a callback
     of the wrong signature, and the variant is left out);
   - ``record+dmlgpu read``: ``op.record``, your submit, then your output read through dmlgpu
     (``Device.wrap`` of it, ``.numpy()``: dmlgpu's copy, submit and map);
   - ``copy+map only``: the bound of your own wait: your copy, submit and map through
     wgpu-py's public calls with nothing recorded (what ``record+copy+map`` costs without us);
   - ``run().numpy()``: ``op.run(t, out).numpy()``, dmlgpu's own path.

   "Recording costs no more than our own path" holds when ``record+dmlgpu read`` is within 10%
   of ``run().numpy()``; with your own wait, what recording adds is ``record+copy+map`` less
   ``copy+map only``.
2. GPU time of ARGMAX over (4096, 65536) FLOAT32 (1 GiB) on resident data, median of
   ``--repeats``: ours (``operator_gpu_times``: timestamps in the first and last of our
   passes); the very passes ``record`` records on your buffers, timed the same way; and what
   you see, your two empty passes with ``timestamp_writes`` around ``op.record`` in one
   encoder. "No extra copies" holds when these are within 1% of ours.

Each path's answer is checked against NumPy.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import wgpu

import dmlgpu
from dmlgpu.bench import call_timer, interleaved, warm_up
from dmlgpu.bench.gpu_timers import operator_gpu_times
from dmlgpu.runtime import gpu_times
from dmlgpu.bench.timing import percentiles

U = wgpu.BufferUsage
OPTIONAL = ("shader-int64", "subgroup", "timestamp-query", "shader-int64-atomic-all-ops", "mappable-primary-buffers")


def your_device():
    """A wgpu device as an application that wants dmlgpu at its best would request it."""
    adapter = wgpu.gpu.request_adapter_sync(power_preference="high-performance")
    limits = {name: adapter.limits[name] for name in ("max-storage-buffer-binding-size", "max-buffer-size")}
    return adapter.request_device_sync(required_features=[f for f in OPTIONAL if f in adapter.features],
                                       required_limits=limits)


def latency(gpu, device, calls: int) -> bool:
    x = np.random.default_rng(0).standard_normal((1, 151936)).astype(np.float32)
    op = device.compile(dmlgpu.ArgMaxOperatorDesc(dmlgpu.TensorDesc("FLOAT32", x.shape), axes=[1]))
    want = int(np.argmax(x))
    t = device.upload(x)
    out = op.run(t)  # the output run would make (in mappable memory where dmlgpu can have it)
    ids = gpu.create_buffer(size=4, usage=U.STORAGE | U.COPY_SRC)
    readback = gpu.create_buffer(size=4, usage=U.MAP_READ | U.COPY_DST)
    table = op.binding_table(input=t, output=ids)
    got: dict[str, int] = {}

    def record_copy_map() -> None:
        encoder = gpu.create_command_encoder()
        op.record(encoder, table)
        encoder.copy_buffer_to_buffer(ids, 0, readback, 0, 4)
        gpu.queue.submit([encoder.finish()])
        readback.map_sync(wgpu.MapMode.READ)
        got["record+copy+map"] = int(np.frombuffer(readback.read_mapped(copy=False), np.uint32)[0])
        readback.unmap()

    def record_work_done() -> None:
        encoder = gpu.create_command_encoder()
        op.record(encoder, table)
        gpu.queue.submit([encoder.finish()])
        gpu.queue.on_submitted_work_done_sync()

    def run_numpy() -> None:
        got["run().numpy()"] = int(op.run(t, out).numpy()[0, 0])

    wrapped = device.wrap(ids, op.output_desc)  # your output as a dmlgpu tensor (nothing copied)

    def record_read_by_dmlgpu() -> None:
        encoder = gpu.create_command_encoder()
        op.record(encoder, table)
        gpu.queue.submit([encoder.finish()])
        got["record+dmlgpu read"] = int(wrapped.numpy()[0, 0])

    def bare_copy_map() -> None:  # the bound: wgpu-py's submit and map alone, nothing recorded
        encoder = gpu.create_command_encoder()
        encoder.copy_buffer_to_buffer(ids, 0, readback, 0, 4)
        gpu.queue.submit([encoder.finish()])
        readback.map_sync(wgpu.MapMode.READ)
        readback.read_mapped(copy=False)
        readback.unmap()

    timers = {"record+copy+map": call_timer(record_copy_map), "run().numpy()": call_timer(run_numpy),
              "record+dmlgpu read": call_timer(record_read_by_dmlgpu), "copy+map only": call_timer(bare_copy_map)}
    try:
        record_work_done()
        timers["record+work_done"] = call_timer(record_work_done)
    except TypeError as err:  # wgpu-py 0.32.0: its work-done callback has the wrong signature
        print(f"  (record+work_done left out: queue.on_submitted_work_done_sync() raised {err!s:.60}...)")
    if "mappable-primary-buffers" in gpu.features:
        mapped = gpu.create_buffer(size=16, usage=U.STORAGE | U.MAP_READ | U.COPY_DST)
        in_place = op.binding_table(input=t, output=dmlgpu.BufferBinding(mapped, 0, 4))

        def record_map_out() -> None:
            encoder = gpu.create_command_encoder()
            op.record(encoder, in_place)
            gpu.queue.submit([encoder.finish()])
            mapped.map_sync(wgpu.MapMode.READ, 0, 16)
            got["record+map out"] = int(np.frombuffer(mapped.read_mapped(0, 4, copy=False), np.uint32)[0])
            mapped.unmap()

        timers["record+map out"] = call_timer(record_map_out)
    for timer in timers.values():  # untimed once each
        timer(3)
    times = interleaved(timers, calls)
    print(f"latency: ARGMAX (1, 151936) FLOAT32, resident input, {calls} calls each, interleaved", flush=True)
    stats = {name: percentiles(s) for name, s in times.items()}
    for name, s in stats.items():
        print(f"  {name:18s} p50 {s['p50_s'] * 1e6:9.1f} us   p99 {s['p99_s'] * 1e6:9.1f} us")
    ours = stats["run().numpy()"]["p50_s"]
    best = min(stats[n]["p50_s"] for n in ("record+copy+map", "record+map out") if n in stats)
    print(f"  recording, your own wait (wgpu-py's map) / run().numpy(), p50: {best / ours:.3f}")
    print(f"  recording, read by dmlgpu (Device.wrap of your output) / run().numpy(), p50: "
          f"{stats['record+dmlgpu read']['p50_s'] / ours:.3f} (target <= 1.10)")
    print(f"  what recording adds to your own submit and map: "
          f"{(stats['record+copy+map']['p50_s'] - stats['copy+map only']['p50_s']) * 1e6:.1f} us at p50")
    ok = all(v == want for v in got.values())
    print(f"  answers: {'all ' + str(want) if ok else got} (NumPy {want})", flush=True)
    return ok


def bracketed_gpu_times(gpu, op, table, repeats: int) -> np.ndarray:
    """Seconds of ``op.record`` between two empty passes of yours that write timestamps, one
    encoder and one submit a repeat, each waited for (as ``gpu_times`` waits: a read of 4
    bytes of the output, which lands after the submit has run)."""
    queries = gpu.create_query_set(type="timestamp", count=2 * repeats)
    resolved = gpu.create_buffer(size=16 * repeats, usage=U.QUERY_RESOLVE | U.COPY_SRC)
    for i in range(repeats):
        encoder = gpu.create_command_encoder()
        encoder.begin_compute_pass(timestamp_writes={"query_set": queries, "beginning_of_pass_write_index": 2 * i}).end()
        op.record(encoder, table)
        encoder.begin_compute_pass(timestamp_writes={"query_set": queries, "end_of_pass_write_index": 2 * i + 1}).end()
        gpu.queue.submit([encoder.finish()])
        gpu.queue.read_buffer(table.outputs[0].buffer, 0, 4)
    encoder = gpu.create_command_encoder()
    encoder.resolve_query_set(queries, 0, 2 * repeats, resolved, 0)
    gpu.queue.submit([encoder.finish()])
    ticks = np.frombuffer(gpu.queue.read_buffer(resolved), np.uint64).reshape(repeats, 2)
    resolved.destroy()
    queries.destroy()
    return (ticks[:, 1] - ticks[:, 0]).astype(np.float64) * 1e-9


def gpu_time(gpu, device, shape, repeats: int) -> bool:
    if "timestamp-query" not in gpu.features:
        print("gpu time: the adapter has no timestamp-query; skipped")
        return True
    rng = np.random.default_rng(1)
    x = rng.standard_normal(shape, dtype=np.float32)
    op = device.compile(dmlgpu.ArgMaxOperatorDesc(dmlgpu.TensorDesc("FLOAT32", shape), axes=[1]))
    t, ours_out = device.upload(x), device.empty(op.output_desc)
    out_bytes = op.output_desc.total_tensor_size_in_bytes
    theirs_out = gpu.create_buffer(size=out_bytes, usage=U.STORAGE | U.COPY_SRC)
    size = op.binding_properties.temporary_resource_size
    temporary = gpu.create_buffer(size=size, usage=U.STORAGE) if size else None
    table = op.binding_table(input=t, output=theirs_out, temporary=temporary)
    steps = op._program.bound(*table.validate()[:3])[1]  # what record records, on your buffers
    warm_up(device.runner, min(x.nbytes, 256 << 20), 0.5)
    times = interleaved({
        "ours": lambda n: operator_gpu_times(op, t, ours_out, n),
        "recorded passes": lambda n: gpu_times(device.runner, steps, repeats=n),
        "your bracket": lambda n: bracketed_gpu_times(gpu, op, table, n),
    }, repeats)
    want = np.argmax(x, axis=1)
    ok = np.array_equal(ours_out.numpy().ravel(), want)
    ok &= np.array_equal(np.frombuffer(gpu.queue.read_buffer(theirs_out), np.uint32), want)
    gib = x.nbytes / 2**30
    print(f"gpu time: ARGMAX {shape} FLOAT32 ({gib:.3f} GiB), axis 1, {repeats} repeats each, interleaved, median; "
          f"{len(steps)} passes, temporary {size} bytes", flush=True)
    base = float(np.median(times["ours"]))
    for name, s in times.items():
        m = float(np.median(s))
        print(f"  {name:16s} {m * 1e6:10.1f} us  {x.nbytes / m / 1e9:8.1f} GB/s  {100 * (m / base - 1):+6.2f}% vs ours")
    print(f"  answers: {'match NumPy' if ok else 'DIFFER from NumPy'}", flush=True)
    return ok


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--small", action="store_true", help="small shapes and few calls, for lavapipe")
    parser.add_argument("--calls", type=int, default=None, help="latency calls per variant (default 2000, --small 200)")
    parser.add_argument("--repeats", type=int, default=None, help="GPU-time repeats per variant (default 30, --small 5)")
    args = parser.parse_args()
    calls = args.calls or (200 if args.small else 2000)
    repeats = args.repeats or (5 if args.small else 30)
    start = time.perf_counter()
    gpu = your_device()
    device = dmlgpu.Device.from_wgpu(gpu)
    print(f"{device.name} ({device.runner.backend}), runner path {device.runner.path.name}, features used "
          f"{sorted(device.runner.features)}", flush=True)
    ok = latency(gpu, device, calls)
    ok &= gpu_time(gpu, device, (256, 4096) if args.small else (4096, 65536), repeats)
    device.close()
    print(f"{'ok' if ok else 'WRONG'} in {time.perf_counter() - start:.1f} s")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
