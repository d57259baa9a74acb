"""Where a Dask worker's chunk task spends its time, without Dask: one to three threads of one
process each reduce 256 MiB FLOAT32 chunks (1024, 65536) over axis 0 from NumPy
(``dmlgpu.argmax``, as ``dmlgpu.dask``'s chunk task calls it), or merely upload them
(``dask_gpus.upload_only``'s way), in rounds; per variant the rate of all threads together and
the calls' wall times (issue 49: 13.4 ms a chunk of "other task time" on the H200 beside 15.3
of upload, against 0.8 for the upload alone); and ``partials``,
the reduction followed by the chunk task's own host work (the winners' values gathered from
the chunk, keyed), that work timed alone per thread.

    python benchmarks/studies/h49_chunk_phases.py [--chunks 8] [--rounds 3]
"""
import argparse
import statistics
import os
import sys
import threading
import time

import numpy as np

import dmlgpu

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from dask_gpus import upload_only  # noqa: E402  (benchmarks/dask_gpus.py's upload-only task)


def reduce(block):
    dmlgpu.argmax(block, 0, output_data_type="uint32")


GATHER = threading.local()


def partials(block):
    """What ``dmlgpu.dask``'s chunk task does after the reduction: the winners' values gathered
    from the chunk on the host and keyed (``oracle.order_keys``); the gather and keys timed
    on their own (``GATHER.seconds``, per thread)."""
    from dmlgpu import oracle

    local = dmlgpu.argmax(block, 0, output_data_type="uint32")
    t = time.perf_counter()
    values = block[local.reshape(-1).astype(np.intp), np.arange(block.shape[1])]
    oracle.order_keys(values, want_max=True)
    GATHER.seconds = getattr(GATHER, "seconds", []) + [time.perf_counter() - t]


def run(fn, blocks, threads, rounds):
    """(seconds, each call's wall time, each gather's: ``partials``)."""
    walls, failed, gathers = [], [], []
    lock = threading.Lock()

    def work(mine):
        try:
            for _ in range(rounds):
                for b in mine:
                    t = time.perf_counter()
                    fn(b)
                    with lock:
                        walls.append(time.perf_counter() - t)
            gathers.extend(getattr(GATHER, "seconds", []))
            GATHER.seconds = []
        except BaseException as err:  # noqa: BLE001 - reported, then the run fails
            failed.append(err)

    began = time.perf_counter()
    ts = [threading.Thread(target=work, args=(blocks[i::threads],)) for i in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    total = time.perf_counter() - began
    if failed:
        raise failed[0]
    return total, walls, gathers


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--chunks", type=int, default=8)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    blocks = [rng.random((1024, 65536), dtype=np.float32) for _ in range(args.chunks)]
    nbytes = sum(b.nbytes for b in blocks) * args.rounds
    print(dmlgpu.default_device().name)
    for fn in (reduce, upload_only, partials):  # warm up: compile, pool, staging rings of two threads
        run(fn, blocks[:4], 2, 1)
    for threads in (1, 2, 3, 1, 2, 3):
        for fn in (reduce, upload_only, partials):
            total, walls, gathers = run(fn, blocks, threads, args.rounds)
            print(f"{fn.__name__:12s} threads={threads}: {nbytes / total / 1e9:6.2f} GB/s, a call "
                  f"{statistics.median(walls) * 1e3:.1f} ms at p50 ({min(walls) * 1e3:.1f}-{max(walls) * 1e3:.1f})"
                  + (f"; the gather and keys {statistics.median(gathers) * 1e3:.2f} ms at p50" if gathers else ""))


if __name__ == "__main__":
    main()
