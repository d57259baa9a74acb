"""Where a small call's time goes from 1, 8 and 16 threads: phases of the runner timed by
wrappers (median/p90 us, how many per call) and buffers made per call, for a resident call as
users write it (``argmax(t, 1).numpy()``), the same with ``release()``, and the NumPy call;
then with outputs in plain storage (``in_place`` off). A diagnosis, not a benchmark: the
wrappers add their own time.

    python benchmarks/studies/resident_phases.py
"""

from __future__ import annotations

import collections
import threading
import time

import numpy as np

import dmlgpu
from dmlgpu.bench.throughput import rate

TIMED = (("commit", "commits"), ("submit_calls", "path"), ("dispatch", None), ("wait", "path"), ("read", "path"),
         ("_read_in_place", "transfers"), ("_finish_read", "transfers"))
COUNTED = (("create", "memory"), ("destroy", "memory"), ("new_map", "path"))


def main() -> int:
    x = np.random.default_rng(0).standard_normal((1, 151936)).astype(np.float32)
    times: dict = collections.defaultdict(list)
    counts: collections.Counter = collections.Counter()
    lock = threading.Lock()

    def wrap(owner, name: str, count_only: bool) -> None:
        real = getattr(owner, name)

        def timed(*a, **k):
            if count_only:
                with lock:
                    counts[name] += 1
                return real(*a, **k)
            began = time.perf_counter()
            try:
                return real(*a, **k)
            finally:
                took = time.perf_counter() - began
                with lock:
                    times[name].append(took)
        setattr(owner, name, timed)

    for in_place in (True, False):
        device = dmlgpu.Device()
        runner = device.runner
        runner.in_place = runner.in_place and in_place
        t = device.upload(x)
        for names, count_only in ((TIMED, False), (COUNTED, True)):
            for name, where in names:
                wrap(getattr(runner, where) if where else runner, name, count_only)

        def released(t=t):
            r = dmlgpu.argmax(t, 1)
            a = r.numpy()
            r.release()
            return a
        variants = {"resident": lambda t=t: dmlgpu.argmax(t, 1).numpy(), "resident+release": released,
                    "numpy": lambda device=device: dmlgpu.argmax(x, 1, device=device)}
        for label, fn in variants.items():
            rate(fn, 8, 0.2)
            for n in (1, 8, 16):
                times.clear()
                counts.clear()
                began = time.perf_counter()
                r = rate(fn, n, 0.7)
                calls = r * (time.perf_counter() - began)
                parts = "; ".join(f"{k} {1e6 * np.median(v):.0f}/{1e6 * np.percentile(v, 90):.0f}us x{len(v) / calls:.2f}"
                                  for k, v in sorted(times.items()))
                made = " ".join(f"{k}={v / calls:.3f}" for k, v in sorted(counts.items()))
                print(f"in_place={runner.in_place} {label:17s} {n:2d} thr: {r:8,.0f}/s | {parts} | per call: {made}",
                      flush=True)
        t.release()
        device.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
