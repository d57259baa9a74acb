"""A long soak: many calls of mixed operators, shapes and types from several threads sharing one
Device, every answer checked against the oracle, resident memory sampled as it goes.

    python benchmarks/soak.py [--calls 100000] [--threads 8] [--json out.json]

Reports wrong answers (must be 0), errors (must be 0), calls per second, and the process's
resident memory over time (it must stay flat once the caches are warm). Not a CI test: it
runs for minutes on lavapipe; CI runs a short version (tests/test_hardening.py).
"""

from __future__ import annotations

import argparse
import json
import threading
import time

import numpy as np

import dmlgpu
from dmlgpu import oracle

SHAPES = [(1, 1000), (64, 1000), (7, 33), (128, 5), (3, 4, 50), (16, 16, 16), (2, 3000)]
DTYPES = [np.float32, np.float16, np.int32, np.uint8, np.int16, np.int64]


def rss_mb() -> float:
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmRSS")) / 1024


def worker(device, seed: int, calls: int, counts: dict, lock: threading.Lock) -> None:
    rng = np.random.default_rng(seed)
    for _ in range(calls):
        shape = SHAPES[rng.integers(len(SHAPES))]
        dtype = DTYPES[rng.integers(len(DTYPES))]
        floats = np.dtype(dtype).kind == "f"
        op = ("argmax", "argmin", "hardmax")[rng.integers(3 if floats else 2)]
        axes = tuple(sorted(rng.choice(len(shape), size=rng.integers(1, len(shape) + 1), replace=False).tolist()))
        x = rng.integers(-5, 6, shape).astype(dtype)
        if floats and rng.integers(4) == 0:
            x.flat[rng.integers(x.size)] = np.nan
        kwargs = {"nan_mode": ("ignore", "propagate")[rng.integers(2)]}
        if op != "hardmax":
            kwargs["axis_direction"] = ("increasing", "decreasing")[rng.integers(2)]
        try:
            if rng.integers(3) == 0:
                t = device.upload(x)
                r = getattr(dmlgpu, op)(t, axes, **kwargs)
                got = r.numpy()
                r.release()
                t.release()
            else:
                got = getattr(dmlgpu, op)(x, axes, device=device, **kwargs)
            right = np.array_equal(got.view(f"u{got.itemsize}"),
                                   getattr(oracle, op)(x, axes, **kwargs).view(f"u{got.itemsize}"))
            key = "right" if right else "wrong"
        except Exception as err:
            key = "errors"
            with lock:
                counts.setdefault("messages", []).append(f"{type(err).__name__}: {err}"[:200])
        with lock:
            counts[key] += 1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=100_000)
    parser.add_argument("--threads", type=int, default=8)
    parser.add_argument("--json")
    args = parser.parse_args()
    device = dmlgpu.Device()
    counts = {"right": 0, "wrong": 0, "errors": 0}
    lock = threading.Lock()
    per_thread = args.calls // args.threads
    threads = [threading.Thread(target=worker, args=(device, s, per_thread, counts, lock), daemon=True)
               for s in range(args.threads)]
    start = time.perf_counter()
    for t in threads:
        t.start()
    samples = []
    print(f"{device.name}: {args.threads} threads x {per_thread} calls", flush=True)
    while any(t.is_alive() for t in threads):
        time.sleep(2.0)
        done = counts["right"] + counts["wrong"] + counts["errors"]
        samples.append({"s": round(time.perf_counter() - start, 1), "calls": done, "rss_mb": round(rss_mb(), 1),
                        "held_bytes": device.runner.held_bytes})
        print(f"  {samples[-1]['s']:7.1f} s  {done:7d} calls  rss {samples[-1]['rss_mb']:7.1f} MB  "
              f"gpu held {samples[-1]['held_bytes']} B  wrong {counts['wrong']}  errors {counts['errors']}", flush=True)
    elapsed = time.perf_counter() - start
    total = counts["right"] + counts["wrong"] + counts["errors"]
    warm = [s["rss_mb"] for s in samples if s["calls"] >= total // 10] or [samples[-1]["rss_mb"]]
    summary = {"device": device.name, "calls": total, "threads": args.threads, "wrong": counts["wrong"],
               "errors": counts["errors"], "calls_per_s": total / elapsed, "rss_warm_min_mb": min(warm),
               "rss_warm_max_mb": max(warm), "samples": samples, "messages": counts.get("messages", [])[:10]}
    print(f"{total} calls in {elapsed:.1f} s ({summary['calls_per_s']:.0f}/s): wrong {counts['wrong']}, "
          f"errors {counts['errors']}; resident memory once warm {min(warm):.1f}-{max(warm):.1f} MB")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(summary, f, indent=2)
    device.close()
    return 1 if counts["wrong"] or counts["errors"] else 0


if __name__ == "__main__":
    raise SystemExit(main())
