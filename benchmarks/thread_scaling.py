"""Calls per second and each call's latency (p50, p99) from 1 to 16 threads, dmlgpu beside torch:
our calls (GPU-resident in as users write them, NumPy in and out) under several spin settings
(``dmlgpu.configure(spin_us=...)``: how long a wait polls without blocking first), torch's same
calls on CUDA where torch is importable (``torch resident``: ``torch.argmax(t, 1).cpu().numpy()``;
``torch numpy``: from ``torch.from_numpy(x).cuda()``), and, with ``--bare``, the bare
wgpu-native round trip (``gpu_timers.bare_round_trips``: a dispatch, a 16-byte read-back, a map
polled, nothing of ours in between) from as many threads, each with its own buffers: from Python
(``bare``: each of wgpu-native's calls a cffi call, which lets go of the interpreter's lock and
takes it back) and from C (``bare C``: ``bench/_round_trips.c``'s ``dml_round_trips``, one C
call a thread for all its round trips). With ``--locked`` our calls are also timed under one
lock a call (the calls of all threads taken one at a time, as a user's own lock would).
``--rounds N`` repeats every variant at every thread count N times, interleaved, and prints
each round's figure (the JSON keeps the medians of the rates and the percentiles over all
rounds' calls). It runs whichever dmlgpu is importable (``dmlgpu`` in the JSON says which), so
one script measures two versions installed apart, in turns.

    python benchmarks/thread_scaling.py [--seconds 0.5] [--spins 500,0,50] [--rounds 1] [--bare]
                                        [--locked] [--no-torch] [--json out.json]

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
from dmlgpu.bench.throughput import rate, timed_rate
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


def _torch_variants(x: np.ndarray) -> dict:
    """torch's resident and NumPy-in calls on CUDA, or none where torch or CUDA is missing."""
    try:
        import torch
    except ImportError:
        return {}
    if not torch.cuda.is_available():
        return {}
    resident = torch.from_numpy(x).cuda()
    return {"torch resident": lambda: torch.argmax(resident, 1).cpu().numpy(),
            "torch numpy": lambda: torch.argmax(torch.from_numpy(x).cuda(), 1).cpu().numpy()}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=0.5)
    parser.add_argument("--spins", default="500,0,50", help="spin_us settings to try, comma-separated")
    parser.add_argument("--rounds", type=int, default=1, help="rounds of every variant at every thread count")
    parser.add_argument("--bare", action="store_true", help="also wgpu-native's bare round trip, from Python and C")
    parser.add_argument("--locked", action="store_true", help="also our calls under one lock a call")
    parser.add_argument("--no-torch", action="store_true")
    parser.add_argument("--json")
    args = parser.parse_args()
    x = np.random.default_rng(0).standard_normal((1, 151936)).astype(np.float32)
    want = np.argmax(x, 1)
    report: dict = {"seconds": args.seconds, "threads": THREADS, "dmlgpu": dmlgpu.__file__, "results": {}}
    peers = {} if args.no_torch else _torch_variants(x)
    for spin in (int(s) for s in args.spins.split(",")):
        with configured(spin_us=spin):
            device = dmlgpu.Device()
        report["runner_path"] = device.runner.path.name
        t = device.upload(x)
        one_at_a_time = threading.Lock()
        variants = {"resident": lambda t=t: dmlgpu.argmax(t, 1).numpy(),
                    "numpy": lambda device=device: dmlgpu.argmax(x, 1, device=device)}
        if args.locked:
            for name in ("resident", "numpy"):
                fn = variants[name]
                variants[f"{name} locked"] = lambda fn=fn, lock=one_at_a_time: _locked(lock, fn)
        variants.update(peers)
        for name, fn in variants.items():
            rate(fn, 1, 0.2)  # warm
            if not np.array_equal(np.asarray(fn()).reshape(-1), want):
                raise AssertionError(f"{name} gave a wrong answer")
        rates: dict = {name: {n: [] for n in THREADS} for name in variants}
        lat: dict = {name: {n: [] for n in THREADS} for name in variants}
        for _ in range(args.rounds):  # interleaved: every variant at a thread count, then the next count
            for n in THREADS:
                for name, fn in variants.items():
                    r, times = timed_rate(fn, n, args.seconds)
                    rates[name][n].append(r)
                    lat[name][n].extend(times)
        for name, by_threads in rates.items():
            out = {}
            for n, r in by_threads.items():
                p50, p99 = (float(v) * 1e6 for v in np.percentile(lat[name][n], [50, 99]))
                out[n] = {"calls_per_s": float(np.median(r)), "rounds": [float(v) for v in r],
                          "p50_us": p50, "p99_us": p99}
            report["results"][f"{name} spin={spin}"] = out
            print(f"{name:<16} spin {spin:>4} us: " + ", ".join(
                f"{n}: " + "/".join(f"{v:,.0f}" for v in o["rounds"]) + f" (p50 {o['p50_us']:.0f} p99 {o['p99_us']:.0f} us)"
                for n, o in out.items()), flush=True)
        if args.bare and device.runner.path.name == "native":
            for name, in_c in (("bare", False), ("bare C", True)):
                bare = {n: bare_rate(device.runner, n, args.seconds, in_c) for n in THREADS}
                report["results"][f"{name} spin={spin}"] = bare
                print(f"{name:<16} spin {spin:>4} us: " + ", ".join(f"{n}: {r:,.0f}" for n, r in bare.items()),
                      flush=True)
        t.release()
        device.close()
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=2)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
