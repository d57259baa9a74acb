"""Small calls before and after the process touches GiBs of host memory.

    python benchmarks/host_state.py MODE

MODE is one of ``buffer`` (allocate and free a 1 GiB GPU buffer), ``hostcopy`` (copy 1 GiB
host to host on 16 threads, no GPU), ``upload`` (upload 1 GiB), ``call`` (a NumPy argmax of a
1 GiB array, three times); every mode first makes a 1 GiB host array. Run one mode per fresh
process. For each state (fresh, after, 3 s after): the p50 of a NumPy argmax and of a
resident one over a (1, 151936) FLOAT32 row, and the bare wgpu-native round trip
(``Runner.bare_round_trips``), in microseconds. On the H100 host every figure rose 30-60%
after any mode, and stayed so: docs/performance.md.
"""

from __future__ import annotations

import concurrent.futures
import statistics
import sys
import time

import numpy as np

import dmlgpu
from dmlgpu.runner import copy_in_parts

MODES = ("buffer", "hostcopy", "upload", "call")


def main() -> None:
    mode = sys.argv[1] if len(sys.argv) > 1 else ""
    if mode not in MODES:
        raise SystemExit(f"usage: host_state.py {{{','.join(MODES)}}}")
    device = dmlgpu.Device()
    runner = device.runner
    x = np.random.default_rng(0).standard_normal((1, 151936)).astype(np.float32)
    resident = device.upload(x)
    clock = time.perf_counter_ns

    def measure(label: str) -> None:
        for _ in range(200):
            dmlgpu.argmax(x, 1, device=device)
        numpy_times, resident_times = [], []
        for _ in range(20):
            for _ in range(25):
                t0 = clock()
                dmlgpu.argmax(x, 1, device=device)
                numpy_times.append((clock() - t0) / 1e3)
            for _ in range(25):
                t0 = clock()
                r = dmlgpu.argmax(resident, 1, device=device)
                r.numpy()
                r.release()
                resident_times.append((clock() - t0) / 1e3)
        bare = runner.bare_round_trips(500)
        bound = f"{np.median(bare) * 1e6:6.1f}" if bare is not None else "     -"
        print(f"{mode:9} {label:10} NumPy {statistics.median(numpy_times):6.1f}  "
              f"resident {statistics.median(resident_times):6.1f}  wgpu-native {bound}")

    measure("fresh")
    big = np.random.default_rng(1).standard_normal((4096, 65536)).astype(np.float32)
    if mode == "upload":
        for _ in range(3):
            device.upload(big).release()
    elif mode == "buffer":
        for _ in range(3):
            runner.free(runner.storage(big.nbytes), keep=False)
    elif mode == "hostcopy":
        dst = np.empty_like(big)
        with concurrent.futures.ThreadPoolExecutor(16) as pool:
            for _ in range(3):
                copy_in_parts(pool, dst.reshape(-1).view(np.uint8), big.reshape(-1).view(np.uint8), 16)
    else:
        for _ in range(3):
            dmlgpu.argmax(big, 1, device=device)
    measure("after")
    time.sleep(3)
    measure("after 3 s")


if __name__ == "__main__":
    main()
