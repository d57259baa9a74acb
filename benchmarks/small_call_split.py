"""Where a small NumPy call's time goes on the native path: its kit's steps timed apart.

    python benchmarks/small_call_split.py [--calls 2000]

In one process, after warm-up, an argmax of a FLOAT32 (1, 151936) row is run ``--calls``
times through its kit's steps one by one (``dmlgpu/_hot.c`` behind each): waiting for the
upload staging to be mapped again, the copy of the input into it, recording + finishing +
submitting + starting the maps, waiting for the read-back, and copying it out; then the same
call through ``dmlgpu.argmax``, whose excess over the steps is the Python above them. Beside
them, a host-to-host ``np.copyto`` of the same bytes. p50 in microseconds.
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

import dmlgpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=2000)
    args = parser.parse_args()
    device = dmlgpu.Device()
    runner, path = device.runner, device.runner.path
    if path.name != "native":
        raise SystemExit(f"the {path.name} path has no kits: run on the native path")
    x = np.random.default_rng(0).standard_normal((1, 151936)).astype(np.float32)
    for _ in range(200):
        dmlgpu.argmax(x, 1, device=device)
    compiled = device.by_call.get(next(iter(device.by_call)))
    kit = compiled._kits[0].call
    data, out = x.reshape(-1).view(np.uint8), np.empty(4, np.uint8)
    steps = ("wait for staging", "copy in", "record+submit", "wait for result", "copy out", "steps", "API call")
    times: dict[str, list] = {k: [] for k in steps}
    clock = time.perf_counter_ns
    for _ in range(args.calls):
        t0 = clock()
        path.wait(kit.wmap, None)
        t1 = clock()
        path.fill(kit.wmap, data)
        t2 = clock()
        with runner._lock:
            path.call(kit.c, [], kit.handles)
        t3 = clock()
        path.wait(kit.rmap, kit.ticket)
        t4 = clock()
        path.drain(kit.rmap, out)
        t5 = clock()
        dmlgpu.argmax(x, 1, device=device)
        t6 = clock()
        for k, v in zip(steps, (t1 - t0, t2 - t1, t3 - t2, t4 - t3, t5 - t4, t5 - t0, t6 - t5)):
            times[k].append(v / 1e3)
    assert out.view(np.uint32)[0] == np.argmax(x)
    copy = np.empty_like(data)
    host = []
    for _ in range(args.calls):
        t0 = clock()
        np.copyto(copy, data)
        host.append((clock() - t0) / 1e3)
    print(f"{device.name}; (1, 151936) FLOAT32, {args.calls} calls; p50 us")
    print("  ".join(f"{k} {statistics.median(v):.1f}" for k, v in times.items()))
    print(f"np.copyto of the same {data.nbytes} bytes, host to host: {statistics.median(host):.1f}")


if __name__ == "__main__":
    main()
