"""Where a small call's time goes: waiting for the GPU, or host work (Python, cffi, wgpu-native).

    python benchmarks/studies/latency_parts.py [--calls 1000] [--rows 1] [--width 151936]

On the default adapter, in one process, after warm-up, each of these is called ``--calls``
times, interleaved in rounds: the wgpu-native bound (``dmlgpu.bench.gpu_timers.bare_round_trips``: one
dispatch and a 16-byte read-back with nothing of dmlgpu's in between), our runner's floor (the
same dispatch and read-back through the runner), a compiled argmax of a FLOAT32 (rows, width)
tensor on resident buffers with a 4-byte read, the resident API call
(``dmlgpu.argmax(t, 1).numpy()`` and release) and the NumPy call (``dmlgpu.argmax(x, 1)``);
and the bound again from C (``bare_round_trips(in_c=True)``: wgpu-native's calls with no
Python between them, what the bound's own Python costs shown by the difference).
For each: p50 and p99 of the wall time, and for ours the p50 of the time spent waiting for the
result (polling the device, then the result's few bytes copied out and unmapped: ``path.read``)
and of the rest, the host's own work. The bound's wall time is
split the same way only as a whole (its loop is wgpu-native's calls alone).
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import dmlgpu
from dmlgpu.bench import Ceiling
from dmlgpu.bench.gpu_timers import bare_round_trips


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=1000)
    parser.add_argument("--rows", type=int, default=1)
    parser.add_argument("--width", type=int, default=151936)
    args = parser.parse_args()
    device = dmlgpu.Device()
    runner = device.runner
    x = np.random.default_rng(0).standard_normal((args.rows, args.width)).astype(np.float32)
    resident = device.upload(x)
    compiled = device.compile(dmlgpu.ArgMaxOperatorDesc(dmlgpu.TensorDesc("FLOAT32", x.shape), axes=[1]))
    out = compiled.run(resident)  # an output where the operator makes its own (small: in mappable memory)
    small = np.empty(4 * args.rows, np.uint8)
    ceiling = Ceiling(runner, "read", runner.memory.storage(16), 16, readable=runner.in_place)
    sixteen = np.empty(16, np.uint8)

    waited = [0.0]
    path = runner.path
    wait, read = path.wait, path.read

    def timed_wait(m, ticket):  # every wait of ours goes through here or timed_read
        start = time.perf_counter()
        wait(m, ticket)
        waited[0] += time.perf_counter() - start

    def timed_read(m, ticket, out):  # (the wait, then a copy of a few bytes and an unmap)
        start = time.perf_counter()
        read(m, ticket, out)
        waited[0] += time.perf_counter() - start

    path.wait, path.read = timed_wait, timed_read

    def floor():
        runner.dispatch(ceiling.steps)
        runner.transfers.read_into(ceiling.dst, sixteen)

    def compiled_run():
        compiled.run(resident, out)
        runner.transfers.read_into(out._buffers[0], small)

    def api_resident():
        t = dmlgpu.argmax(resident, 1, device=device)
        t.numpy()
        t.release()

    def api_numpy():
        dmlgpu.argmax(x, 1, device=device)

    calls = {"our floor": floor, "compiled, resident": compiled_run, "argmax(t).numpy()": api_resident,
             "argmax(x), NumPy": api_numpy}
    for fn in calls.values():
        for _ in range(100):
            fn()
    bare_round_trips(runner, 100)
    wall = {name: [] for name in ["wgpu-native bound", "the same from C", *calls]}
    waits = {name: [] for name in calls}
    rounds = 10
    per_round = max(1, args.calls // rounds)
    for _ in range(rounds):
        for name, in_c in (("wgpu-native bound", False), ("the same from C", True)):
            bare = bare_round_trips(runner, per_round, in_c=in_c)
            if bare is not None:
                wall[name].extend(bare)
        for name, fn in calls.items():
            for _ in range(per_round):
                waited[0] = 0.0
                start = time.perf_counter()
                fn()
                wall[name].append(time.perf_counter() - start)
                waits[name].append(waited[0])
    print(f"{device.name}; ({args.rows}, {args.width}) FLOAT32, {per_round * rounds} calls each; us")
    print(f"{'':22} {'p50':>8} {'p99':>8} {'waiting':>8} {'host':>8}")
    for name, times in wall.items():
        if not times:
            continue
        t = np.array(times)
        line = f"{name:22} {np.percentile(t, 50) * 1e6:8.1f} {np.percentile(t, 99) * 1e6:8.1f}"
        if name in waits:
            w = np.array(waits[name])
            line += f" {np.median(w) * 1e6:8.1f} {np.median(t - w) * 1e6:8.1f}"
        print(line)
    path.wait, path.read = wait, read


if __name__ == "__main__":
    main()
