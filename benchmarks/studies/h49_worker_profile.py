"""Where a Dask worker's time goes in ``dmlgpu.dask.argmax(x, 0).compute()`` and in the
upload-only run (issue 49): one worker on one adapter (``dmlgpu.dask.local_cluster``), the
array made on it as ``benchmarks/dask_gpus.py`` makes it, every run once untimed, then the
worker profiled (cProfile, every thread of the process: Python 3.12's profiler sees them all)
over ``--runs`` runs of each; per variant the wall times and the functions by cumulative and by
own time. As run (H200, 2026-11-28) its times turned out not to be per call: that profiler
keeps one call stack for all threads, so two threads' calls mix; its call counts hold. ``h49_chunk_phases.py`` measured the same calls without Dask: a 256 MiB chunk's
argmax from NumPy as fast as its upload alone on one thread; in a worker the task took 13 ms
more.

    python benchmarks/studies/h49_worker_profile.py [--gib 4] [--runs 3] [--top 30]
"""
import argparse
import io
import os
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import dask_gpus  # noqa: E402  (benchmarks/dask_gpus.py: the array, the upload-only task)


def profile_start():
    import cProfile

    import dmlgpu
    dmlgpu._h49_profile = cProfile.Profile()
    dmlgpu._h49_profile.enable()


def profile_stop(top: int) -> str:
    import pstats

    import dmlgpu
    prof = dmlgpu._h49_profile
    prof.disable()
    out = io.StringIO()
    stats = pstats.Stats(prof, stream=out)
    stats.sort_stats("cumulative").print_stats(top)
    stats.sort_stats("tottime").print_stats(top)
    return "\n".join(line for line in out.getvalue().splitlines() if line.strip())


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--gib", type=float, default=4)
    ap.add_argument("--chunk-mib", type=int, default=256)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--top", type=int, default=30)
    args = ap.parse_args()
    from distributed import Client

    import dmlgpu.dask as dd

    cols = 262144 if args.chunk_mib >= 64 else 16384
    rows = int(args.gib * 2**30 / 4 / cols)
    chunk_rows = args.chunk_mib * 2**20 // 4 // (cols // 4)
    shape, chunks = (rows, cols), (chunk_rows, cols // 4)
    with dd.local_cluster([0], threads_per_worker=2) as cluster, Client(cluster) as client:
        x, held, futures = dask_gpus.generate(client, shape, chunks, 1)
        runs = {
            "dmlgpu": lambda: dd.argmax(x, 0).compute(),
            "upload": lambda: x.map_blocks(dask_gpus.upload_only, chunks=tuple((1,) * len(c) for c in x.chunks),
                                           dtype=np.float32).compute(),
        }
        print(f"FLOAT32 {shape} in chunks {chunks}; worker: {client.run(lambda: __import__('dmlgpu').default_device().name)}")
        for name, fn in runs.items():
            fn()
            walls = []
            client.run(profile_start)
            for _ in range(args.runs):
                t = time.perf_counter()
                fn()
                walls.append(time.perf_counter() - t)
            text = list(client.run(profile_stop, args.top).values())[0]
            print(f"\n=== {name}: {x.nbytes / statistics.median(walls) / 1e9:.2f} GB/s, walls "
                  + ", ".join(f"{w * 1e3:.0f}" for w in walls) + " ms")
            print(text)


if __name__ == "__main__":
    main()
