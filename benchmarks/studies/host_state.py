"""Small calls as the process changes state: which part of a call moves, and why.

    python benchmarks/studies/host_state.py [STATE,STATE,...] [--calls 1000]

In one process, a (1, 151936) FLOAT32 argmax is timed in each state in turn, after the step
that makes it (default: fresh,big,free,trim,sleep,torch,cupy,threads,fresh):

- ``fresh``: nothing done (again later: time alone);
- ``big``: a 1 GiB host array made and kept; ``free``: it dropped; ``trim``: ``malloc_trim(0)``;
- ``upload``, ``call``: that array uploaded, or reduced by a NumPy argmax (made if not kept);
- ``sleep``: 3 s idle; ``threads``: 16 threads made and joined;
- ``torch``, ``cupy``: that library imported and a CUDA context made (skipped without it).

Each state prints p50 us of the NumPy call's kit steps one by one (``dmlgpu/runtime/_hot.c`` behind
each: waiting for the upload staging, the copy into it, record + submit, waiting for the
result and copying it out), of the NumPy call and the resident call through the API, and of the
bare wgpu-native round trip (``dmlgpu.bench.gpu_timers.bare_round_trips``); then per call, from ``getrusage``,
minor and major page faults and voluntary and involuntary context switches of each. First,
a host-to-host ``np.copyto`` of the row's bytes, beside which to read the copy into staging.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import ctypes
import ctypes.util
import gc
import resource
import statistics
import time

import numpy as np

import dmlgpu
from dmlgpu.bench.gpu_timers import bare_round_trips

STATES = ("fresh", "big", "free", "trim", "upload", "call", "sleep", "threads", "torch", "cupy")


def usage() -> np.ndarray:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return np.array([r.ru_minflt, r.ru_majflt, r.ru_nvcsw, r.ru_nivcsw], float)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("states", nargs="?", default="fresh,big,free,trim,sleep,torch,cupy,threads,fresh")
    parser.add_argument("--calls", type=int, default=1000)
    args = parser.parse_args()
    states = args.states.split(",")
    if unknown := [s for s in states if s not in STATES]:
        raise SystemExit(f"unknown states {unknown}; known: {','.join(STATES)}")
    device = dmlgpu.Device()
    runner, path = device.runner, device.runner.path
    if path.name != "native":
        raise SystemExit(f"the {path.name} path has no kits: run on the native path")
    x = np.random.default_rng(0).standard_normal((1, 151936)).astype(np.float32)
    resident = device.upload(x)
    for _ in range(300):
        dmlgpu.argmax(x, 1, device=device)
    kit = device.by_call.get(next(iter(device.by_call)))._kits[0]
    data, out = x.reshape(-1).view(np.uint8), np.empty(4, np.uint8)
    clock = time.perf_counter_ns
    copy, host = np.empty_like(data), []
    for _ in range(args.calls):
        t0 = clock()
        np.copyto(copy, data)
        host.append((clock() - t0) / 1e3)
    print(f"np.copyto of the same {data.nbytes} bytes, host to host: {statistics.median(host):.1f} us")
    print(f"{device.name}; (1, 151936) FLOAT32, {args.calls} calls a measure; p50 us; "
          "faults/major/voluntary/involuntary switches a call")

    def measure(label: str) -> None:
        steps = {k: [] for k in ("wait staging", "copy in", "submit", "wait + copy out")}
        api, res = [], []
        u0 = usage()
        for _ in range(args.calls):
            t0 = clock()
            path.wait(kit.wmap, None)
            t1 = clock()
            path.fill(kit.wmap, data)  # (its wait returns at once: landed)
            t2 = clock()
            runner.commits.commit(kit.c)
            t3 = clock()
            path.read(kit.rmap, kit.ticket, out)
            t4 = clock()
            for k, a, b in zip(steps, (t0, t1, t2, t3), (t1, t2, t3, t4)):
                steps[k].append((b - a) / 1e3)
        u1 = usage()
        for _ in range(args.calls):
            t0 = clock()
            dmlgpu.argmax(x, 1, device=device)
            api.append((clock() - t0) / 1e3)
        u2 = usage()
        for _ in range(args.calls):
            t0 = clock()
            r = dmlgpu.argmax(resident, 1, device=device)
            r.numpy()
            r.release()
            res.append((clock() - t0) / 1e3)
        u3 = usage()
        bare = bare_round_trips(runner, args.calls)
        u4 = usage()

        def per(d):
            return "/".join(f"{v / args.calls:.2f}" for v in d)

        print(f"{label:8} " + "  ".join(f"{k} {statistics.median(v):5.1f}" for k, v in steps.items())
              + f" | NumPy {statistics.median(api):6.1f}  resident {statistics.median(res):6.1f}"
              + f"  wgpu-native {np.median(bare) * 1e6:5.1f} | kit {per(u1 - u0)}  NumPy {per(u2 - u1)}"
              + f"  resident {per(u3 - u2)}  bare {per(u4 - u3)}", flush=True)

    big = None
    for state in states:
        if state in ("big", "upload", "call") and big is None:
            big = np.ones((4096, 65536), np.float32)
        if state == "free":
            big = None
            gc.collect()
        elif state == "trim":
            ctypes.CDLL(ctypes.util.find_library("c")).malloc_trim(0)
        elif state == "upload":
            device.upload(big).release()
        elif state == "call":
            dmlgpu.argmax(big, 1, device=device)
        elif state == "sleep":
            time.sleep(3)
        elif state == "threads":
            with concurrent.futures.ThreadPoolExecutor(16) as pool:
                list(pool.map(lambda i: sum(range(200_000)), range(64)))
        elif state == "torch":
            try:
                import torch
            except ImportError:
                print("torch: not importable, skipped")
                continue
            torch.zeros(1, device="cuda")
            torch.cuda.synchronize()
        elif state == "cupy":
            try:
                import cupy
            except ImportError:
                print("cupy: not importable, skipped")
                continue
            cupy.zeros(1)
            cupy.cuda.Device().synchronize()
        measure(state)


if __name__ == "__main__":
    main()
