"""Where a Dask worker's chunk task spends its time, without Dask: one or two threads of one
process each reduce 256 MiB FLOAT32 chunks (1024, 65536) over axis 0 from NumPy
(``dmlgpu.argmax``, as ``dmlgpu.dask``'s chunk task calls it), or merely upload them
(``dask_gpus.upload_only``'s way), in rounds; per variant the calls' wall times and, for every
thread together, cProfile's functions by own time (issue 49: 13.4 ms a chunk of "other task
time" on the H200 beside 15.3 of upload, against 0.8 for the upload alone).

    python benchmarks/studies/h49_chunk_phases.py [--chunks 8] [--rounds 3] [--top 18]
"""
import argparse
import cProfile
import io
import pstats
import statistics
import threading
import time

import numpy as np

import dmlgpu


def upload_only(block):
    tensor = dmlgpu.default_device().upload(block)
    tensor.device.runner.transfers.read(tensor._buffers[-1], 4)
    tensor.release()


def reduce(block):
    dmlgpu.argmax(block, 0, output_data_type="uint32")


def run(fn, blocks, threads, rounds, profile=False):
    """(seconds, each call's wall time, the profile of every thread: one cProfile for the
    process, since Python 3.12's profiles every thread at once, or None when not ``profile``)."""
    walls, failed = [], []
    lock = threading.Lock()

    def work(mine):
        try:
            for _ in range(rounds):
                for b in mine:
                    t = time.perf_counter()
                    fn(b)
                    with lock:
                        walls.append(time.perf_counter() - t)
        except BaseException as err:  # noqa: BLE001 - reported, then the run fails
            failed.append(err)

    prof = cProfile.Profile() if profile else None
    began = time.perf_counter()
    if prof is not None:
        prof.enable()
    ts = [threading.Thread(target=work, args=(blocks[i::threads],)) for i in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    if prof is not None:
        prof.disable()
    total = time.perf_counter() - began
    if failed:
        raise failed[0]
    return total, walls, prof


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--chunks", type=int, default=8)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--top", type=int, default=18)
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    blocks = [rng.random((1024, 65536), dtype=np.float32) for _ in range(args.chunks)]
    nbytes = sum(b.nbytes for b in blocks) * args.rounds
    print(dmlgpu.default_device().name)
    for fn in (reduce, upload_only):  # warm up: compile, pool, staging rings of two threads
        run(fn, blocks[:4], 2, 1)
    for threads in (1, 2, 4, 1, 2, 4):
        for fn in (reduce, upload_only):
            profile = threads == 2 and fn is reduce
            total, walls, prof = run(fn, blocks, threads, args.rounds, profile)
            print(f"{fn.__name__:12s} threads={threads}: {nbytes / total / 1e9:6.2f} GB/s, a call "
                  f"{statistics.median(walls) * 1e3:.1f} ms at p50 ({min(walls) * 1e3:.1f}-{max(walls) * 1e3:.1f})")
            if prof is not None:
                out = io.StringIO()
                stats = pstats.Stats(prof, stream=out)
                stats.sort_stats("tottime").print_stats(args.top)
                print("\n".join(line for line in out.getvalue().splitlines() if line.strip())[-4000:])


if __name__ == "__main__":
    main()
