"""Many record/submit cycles on your own device: dmlgpu's memory and the process's stay flat.

    python benchmarks/record_cycles.py                  # 10,000 cycles
    python benchmarks/record_cycles.py --cycles 1000    # fewer

Each cycle records ARGMAX (llm_argmax's shape, (1, 151936) FLOAT32) into a new encoder of
yours, copies the id into your read-back buffer, submits, maps it and checks the id. Half the
cycles reuse one binding table; the other half make a new table each cycle over one of 16
output buffers in turn (more sets of buffers than an operator keeps bind groups for, so bind
groups are made and dropped as it goes). Every tenth of the run prints what dmlgpu holds on
the GPU (``runner.memory.held_bytes``), the process's resident memory (RSS) and the wgpu
objects alive; at the end, whether they stayed flat: within each half from its first line (the
second half's kept bind groups are 8 sets, the first's one), and the RSS over the whole run.
"""

from __future__ import annotations

import argparse
import gc
import os
import time

import numpy as np
import wgpu

import dmlgpu

U = wgpu.BufferUsage
OPTIONAL = ("shader-int64", "subgroup", "timestamp-query", "shader-int64-atomic-all-ops", "mappable-primary-buffers")
#: How much the process's RSS may grow after the first tenth and still count as flat: the
#: allocator's arenas settle, and one cycle's Python objects come and go.
RSS_SLACK = 16 << 20


def rss_bytes() -> int:
    """The process's resident memory now (Linux: /proc/self/statm), else its peak."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except OSError:
        import resource
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def wgpu_objects() -> int:
    gc.collect()
    return sum(wgpu._classes.object_tracker.counts.values())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cycles", type=int, default=10_000)
    args = parser.parse_args()
    adapter = wgpu.gpu.request_adapter_sync(power_preference="high-performance")
    gpu = adapter.request_device_sync(required_features=[f for f in OPTIONAL if f in adapter.features])
    device = dmlgpu.Device.from_wgpu(gpu)
    x = np.random.default_rng(0).standard_normal((1, 151936)).astype(np.float32)
    want = int(np.argmax(x))
    op = device.compile(dmlgpu.ArgMaxOperatorDesc(dmlgpu.TensorDesc("FLOAT32", x.shape), axes=[1]))
    logits = gpu.create_buffer_with_data(data=x, usage=U.STORAGE)
    outputs = [gpu.create_buffer(size=4, usage=U.STORAGE | U.COPY_SRC) for _ in range(16)]
    readback = gpu.create_buffer(size=4, usage=U.MAP_READ | U.COPY_DST)
    same = op.binding_table(input=logits, output=outputs[0])
    print(f"{device.name}, runner path {device.runner.path.name}: {args.cycles} cycles of record, copy, submit, map")
    print(f"{'cycle':>7} {'held by dmlgpu':>15} {'process RSS':>13} {'wgpu objects':>13}  table")
    marks, rows, wrong = max(1, args.cycles // 10), [], 0
    start = time.perf_counter()
    for i in range(1, args.cycles + 1):
        fresh = i > args.cycles // 2
        table = op.binding_table(input=logits, output=outputs[i % 16]) if fresh else same
        out = table.outputs[0].buffer
        encoder = gpu.create_command_encoder()
        op.record(encoder, table)
        encoder.copy_buffer_to_buffer(out, 0, readback, 0, 4)
        gpu.queue.submit([encoder.finish()])
        readback.map_sync(wgpu.MapMode.READ)
        wrong += int(np.frombuffer(readback.read_mapped(copy=False), np.uint32)[0]) != want
        readback.unmap()
        if i % marks == 0 or i == args.cycles:
            rows.append((i, device.runner.memory.held_bytes, rss_bytes(), wgpu_objects(), fresh))
            print(f"{i:7d} {rows[-1][1]:15d} {rows[-1][2] / 2**20:10.1f} MiB {rows[-1][3]:13d}  "
                  f"{'new each cycle' if fresh else 'one'}", flush=True)
    seconds = time.perf_counter() - start
    first, last = rows[0], rows[-1]
    halves = [[r for r in rows if r[4] == fresh] for fresh in (False, True)]
    flat = last[1] == first[1] and last[2] - first[2] <= RSS_SLACK and \
        all(half[-1][3] <= half[0][3] for half in halves if half)
    print(f"{args.cycles} cycles in {seconds:.1f} s ({seconds / args.cycles * 1e6:.0f} us a cycle); {wrong} wrong "
          f"answers; held {first[1]} -> {last[1]} bytes, RSS {first[2] / 2**20:.1f} -> {last[2] / 2**20:.1f} MiB, "
          f"wgpu objects {' and '.join(f'{h[0][3]} -> {h[-1][3]}' for h in halves if h)}: "
          f"{'flat' if flat else 'GREW'}")
    device.close()
    return 0 if flat and not wrong else 1


if __name__ == "__main__":
    raise SystemExit(main())
