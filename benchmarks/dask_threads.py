"""dmlgpu.dask on one GPU with Dask's default threaded scheduler, as a Dask user on one machine
writes it: a NumPy array in host memory, ``da.from_array(x, chunks=...)``, an argmax over each
axis, beside Dask's own NumPy argmax on the same array and threads.

    python benchmarks/dask_threads.py                   # 4 GiB FLOAT32 (16384, 65536), chunks (4096, 16384)
    python benchmarks/dask_threads.py --json out.json
    python benchmarks/dask_threads.py --small           # 64 MiB, chunks (512, 4096): runs on lavapipe

The chunks are views of the one array, with gaps between their rows (a (4096, 16384) chunk of
a (16384, 65536) array spans 1 GiB for 256 MiB of elements): dmlgpu gathers each chunk's rows
as they cross the bus. Each variant runs once untimed, then ``--repeats`` times; the best wall
time is reported (as GB/s of the array's bytes), and dmlgpu's answer is checked against
Dask's NumPy one. Issue 29's targets: >= 20 GB/s on both axes, and faster than Dask's NumPy.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time

import numpy as np


def best(fn, repeats: int) -> float:
    fn()  # untimed: devices opened, pipelines compiled, buffers allocated
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--small", action="store_true", help="64 MiB in chunks of (512, 4096), for lavapipe")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--json")
    args = parser.parse_args()
    import dask
    import dask.array as da

    import dmlgpu
    import dmlgpu.dask as dd

    shape, chunks = ((2048, 8192), (512, 4096)) if args.small else ((16384, 65536), (4096, 16384))
    x = np.random.default_rng(0).random(shape, dtype=np.float32)
    d = da.from_array(x, chunks=chunks)
    device = dmlgpu.default_device()
    report = {"device": device.name, "backend": device.runner.backend, "host": platform.node(),
              "cores": os.cpu_count(), "dask": dask.__version__, "shape": list(shape), "chunks": list(chunks),
              "bytes": x.nbytes, "scheduler": "threads (Dask's default)", "results": {}}
    print(f"{device.name}: FLOAT32 {shape} ({x.nbytes / 2**30:.2f} GiB) in chunks of {chunks}, Dask's threaded "
          f"scheduler on {os.cpu_count()} cores, best of {args.repeats}", flush=True)
    ok = True
    for axis in (0, 1):
        ours = dd.argmax(d, axis).compute().reshape(-1)
        theirs = d.argmax(axis=axis).compute()
        right = bool(np.array_equal(ours, theirs))
        ok &= right
        t_ours = best(lambda axis=axis: dd.argmax(d, axis).compute(), args.repeats)
        t_dask = best(lambda axis=axis: d.argmax(axis=axis).compute(), args.repeats)
        entry = {"dmlgpu_s": t_ours, "dmlgpu_gbps": x.nbytes / t_ours / 1e9, "dask_numpy_s": t_dask,
                 "dask_numpy_gbps": x.nbytes / t_dask / 1e9, "speedup": t_dask / t_ours, "correct": right}
        report["results"][f"axis{axis}"] = entry
        print(f"argmax over axis {axis}: dmlgpu.dask {t_ours * 1e3:.0f} ms ({entry['dmlgpu_gbps']:.1f} GB/s), "
              f"Dask's NumPy {t_dask * 1e3:.0f} ms ({entry['dask_numpy_gbps']:.1f} GB/s): "
              f"{entry['speedup']:.2f}x{'' if right else '  WRONG ANSWER'}", flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=2)
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
