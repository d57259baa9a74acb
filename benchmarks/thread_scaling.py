"""Calls per second from 1 to 16 threads, to find what keeps small calls from overlapping: our
calls (GPU-resident in as users write them, NumPy in and out) under several spin settings
(``dmlgpu.configure(spin_us=...)``: how long a wait polls without blocking first), beside the
bare wgpu-native round trip (``gpu_timers.bare_round_trips``: a dispatch, a 16-byte read-back,
a map polled, nothing of ours in between) from as many threads, each with its own buffers:
from Python (``bare``: each of wgpu-native's calls a cffi call, which lets go of the
interpreter's lock and takes it back) and from C (``bare C``: ``bench/_round_trips.c``'s ``dml_round_trips``,
one C call a thread for all its round trips, the interpreter's lock let go throughout). Our
calls are also timed under one lock a call (``locked``: the calls of all threads taken one at a
time, as a user's own lock would): where that does more than the unlocked calls, what threads
cost us is contention (for the interpreter's lock, handed over at every call into C, and ours),
not the GPU's work. ``--rounds N`` repeats every variant at every
thread count N times, interleaved, and prints each round's figure (the JSON keeps the medians).

    python benchmarks/thread_scaling.py [--seconds 0.5] [--spins 500,0,50] [--rounds 1] [--json out.json]

If the round trips from C do not get more done from more threads, the limit is wgpu-native's
(its locks), not Python's; if those from C do and those from Python do not, it is the
interpreter's lock, taken back after each of wgpu-native's calls.
"""

from __future__ import annotations

import argparse
import json
import threading
import time

import numpy as np

import dmlgpu
from dmlgpu.bench.gpu_timers import bare_round_trips
from dmlgpu.bench.throughput import rate
from dmlgpu.runtime.hot import configured

THREADS = (1, 2, 4, 8, 16)


def bare_rate(runner, threads: int, seconds: float, in_c: bool = False) -> float:
    """Bare wgpu-native round trips per second from ``threads`` threads, each running its own
    loop (``in_c``: in one C call)."""
    per_call = float(np.median(bare_round_trips(runner, 50, in_c=in_c)))
    calls = max(10, int(seconds / per_call / threads))
    done = []
    start = threading.Barrier(threads + 1)

    def loop() -> None:
        start.wait()
        done.append(len(bare_round_trips(runner, calls, in_c=in_c)))

    workers = [threading.Thread(target=loop) for _ in range(threads)]
    for w in workers:
        w.start()
    began = time.perf_counter()
    start.wait()
    for w in workers:
        w.join()
    return sum(done) / (time.perf_counter() - began)


def _locked(lock: threading.Lock, fn):
    with lock:
        return fn()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=0.5)
    parser.add_argument("--spins", default="500,0,50", help="spin_us settings to try, comma-separated")
    parser.add_argument("--rounds", type=int, default=1, help="rounds of every variant at every thread count")
    parser.add_argument("--json")
    args = parser.parse_args()
    x = np.random.default_rng(0).standard_normal((1, 151936)).astype(np.float32)
    report: dict = {"seconds": args.seconds, "threads": THREADS, "results": {}}
    for spin in (int(s) for s in args.spins.split(",")):
        with configured(spin_us=spin):
            device = dmlgpu.Device()
        t = device.upload(x)
        one_at_a_time = threading.Lock()
        variants = {"resident": lambda t=t: dmlgpu.argmax(t, 1).numpy(),
                    "numpy": lambda device=device: dmlgpu.argmax(x, 1, device=device)}
        for name in ("resident", "numpy"):
            fn = variants[name]
            variants[f"{name} locked"] = lambda fn=fn, lock=one_at_a_time: _locked(lock, fn)
        rates: dict = {name: {n: [] for n in THREADS} for name in variants}
        for fn in variants.values():
            rate(fn, 1, 0.2)  # warm
        for _ in range(args.rounds):  # interleaved: every variant at a thread count, then the next count
            for n in THREADS:
                for name, fn in variants.items():
                    rates[name][n].append(rate(fn, n, args.seconds))
        for name, by_threads in rates.items():
            report["results"][f"{name} spin={spin}"] = {n: float(np.median(r)) for n, r in by_threads.items()}
            print(f"{name:<22} spin {spin:>4} us: " + ", ".join(
                f"{n}: " + "/".join(f"{v:,.0f}" for v in r) for n, r in by_threads.items()), flush=True)
        if device.runner.path.name == "native":
            for name, in_c in (("bare", False), ("bare C", True)):
                bare = {n: bare_rate(device.runner, n, args.seconds, in_c) for n in THREADS}
                report["results"][f"{name} spin={spin}"] = bare
                print(f"{name:<22} spin {spin:>4} us: " + ", ".join(f"{n}: {r:,.0f}" for n, r in bare.items()),
                      flush=True)
        t.release()
        device.close()
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=2)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
