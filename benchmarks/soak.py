"""A stress and soak run: many calls of mixed operators, shapes, types and paths from several
threads sharing one Device, while other threads open and close devices of their own; every
answer checked against the oracle, resident memory sampled as it goes.

    python benchmarks/soak.py [--seconds 60 | --calls 100000] [--threads 16] [--device-threads 3]
                              [--json out.json]

The calling threads mix NumPy calls, GPU-resident chains (upload, a reduction, a reduction of
its result, read back; released or left to the garbage collector) and sizes from a few bytes
to a few MB. Each device thread opens a ``dmlgpu.Device`` in turn by default, by name and by
``#N``, makes one call on it and closes it. Reports wrong answers (must be 0), errors (must be
0), device cycles, calls per second and the process's resident memory over time (flat once the
caches are warm). An abort of the process is a failure too: ``tests/test_hardening.py`` runs
this script in a child process for 60 s on both runner paths.
"""

from __future__ import annotations

import argparse
import json
import os
import threading
import time

import numpy as np

import dmlgpu
from dmlgpu import oracle
from dmlgpu.runtime.adapters import adapters

SHAPES = [(1, 1000), (64, 1000), (7, 33), (128, 5), (3, 4, 50), (16, 16, 16), (2, 3000), (1, 151936), (512, 1024)]
DTYPES = [np.float32, np.float16, np.int32, np.uint8, np.int16, np.int64]


def rss_mb() -> float:
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmRSS")) / 1024


class Counts:
    """Outcomes of every call and device cycle, shared by the threads."""

    def __init__(self):
        self.lock = threading.Lock()
        self.right = self.wrong = self.errors = self.devices = 0
        self.messages: list[str] = []

    def add(self, key: str, message: str | None = None) -> None:
        with self.lock:
            setattr(self, key, getattr(self, key) + 1)
            if message is not None and len(self.messages) < 20:
                self.messages.append(message[:300])

    @property
    def calls(self) -> int:
        return self.right + self.wrong + self.errors


def same(got: np.ndarray, want: np.ndarray) -> bool:
    """Bit for bit, NaN included."""
    return got.dtype == want.dtype and got.shape == want.shape and \
        np.array_equal(got.view(f"u{got.itemsize}"), want.view(f"u{want.itemsize}"))


def one_call(device, rng: np.random.Generator) -> bool:
    """One random call on ``device``, checked against the oracle: whether it was right."""
    shape = SHAPES[rng.integers(len(SHAPES))]
    dtype = DTYPES[rng.integers(len(DTYPES))]
    floats = np.dtype(dtype).kind == "f"
    op = ("argmax", "argmin", "hardmax")[rng.integers(3 if floats else 2)]
    axes = tuple(sorted(rng.choice(len(shape), size=rng.integers(1, len(shape) + 1), replace=False).tolist()))
    x = rng.integers(-5, 6, shape).astype(dtype)  # ties on purpose
    if floats and rng.integers(4) == 0:
        x.flat[rng.integers(x.size)] = np.nan
    kwargs = {"nan_mode": ("ignore", "propagate")[rng.integers(2)]}
    if op != "hardmax":
        kwargs["axis_direction"] = ("increasing", "decreasing")[rng.integers(2)]
    want = getattr(oracle, op)(x, axes, **kwargs)
    if rng.integers(3):
        return same(getattr(dmlgpu, op)(x, axes, device=device, **kwargs), want)
    # resident: upload, reduce, and for an index result reduce that again, read back
    t = device.upload(x)
    r = getattr(dmlgpu, op)(t, axes, **kwargs)
    right = same(r.numpy(), want)
    if op != "hardmax":
        again = dmlgpu.argmin(r, 0)
        right = right and same(again.numpy(), oracle.argmin(want, 0))
        if rng.integers(2):
            again.release()
    if rng.integers(2):  # else left to the garbage collector
        r.release()
        t.release()
    return right


def caller(device, seed: int, until, counts: Counts) -> None:
    rng = np.random.default_rng(seed)
    while until():
        try:
            counts.add("right" if one_call(device, rng) else "wrong")
        except Exception as err:  # counted: any error here is a failure
            counts.add("errors", f"{type(err).__name__}: {err}")


def device_cycler(specs: list, seed: int, until, counts: Counts) -> None:
    """Open a device by each spec in turn (None: the default), make one call on it, close it."""
    rng = np.random.default_rng(seed)
    i = seed
    while until():
        spec = specs[i % len(specs)]
        i += 1
        try:
            with dmlgpu.Device(spec) as device:
                right = one_call(device, rng)
            counts.add("right" if right else "wrong")
            counts.add("devices")
        except Exception as err:
            counts.add("errors", f"device {spec!r}: {type(err).__name__}: {err}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, help="run for this long (default: until --calls are made)")
    parser.add_argument("--calls", type=int, default=100_000, help="calls to make when --seconds is not given")
    parser.add_argument("--threads", type=int, default=8, help="threads calling on one shared device")
    parser.add_argument("--device-threads", type=int, default=0, help="threads opening and closing devices")
    parser.add_argument("--opengl", action="store_true",
                        help="the device threads open OpenGL adapters too (by the name 'opengl'; DMLGPU_OPENGL=1)")
    parser.add_argument("--json")
    args = parser.parse_args()
    if args.opengl:
        os.environ["DMLGPU_OPENGL"] = "1"
    device = dmlgpu.Device()
    index = next(i for i, a in enumerate(adapters()) if a.info == device.runner.adapter.info)
    specs = [None, device.name, f"#{index}"] + ["opengl"] * args.opengl  # by default, by name, by index
    counts = Counts()
    start = time.perf_counter()
    if args.seconds is not None:
        def until() -> bool:
            return time.perf_counter() - start < args.seconds
    else:
        def until() -> bool:
            return counts.calls < args.calls
    threads = [threading.Thread(target=caller, args=(device, s, until, counts), daemon=True)
               for s in range(args.threads)]
    threads += [threading.Thread(target=device_cycler, args=(specs, 1000 + s, until, counts), daemon=True)
                for s in range(args.device_threads)]
    for t in threads:
        t.start()
    samples = []
    print(f"{device.name} ({device.runner.path.name} path): {args.threads} calling threads, "
          f"{args.device_threads} opening devices by {specs}", flush=True)
    while any(t.is_alive() for t in threads):
        time.sleep(2.0)
        samples.append({"s": round(time.perf_counter() - start, 1), "calls": counts.calls, "devices": counts.devices,
                        "rss_mb": round(rss_mb(), 1), "held_bytes": device.runner.memory.held_bytes})
        print(f"  {samples[-1]['s']:7.1f} s  {counts.calls:7d} calls  {counts.devices:5d} devices  "
              f"rss {samples[-1]['rss_mb']:7.1f} MB  gpu held {samples[-1]['held_bytes']} B  "
              f"wrong {counts.wrong}  errors {counts.errors}", flush=True)
    elapsed = time.perf_counter() - start
    warm = [s["rss_mb"] for s in samples if s["calls"] >= counts.calls // 10] or [samples[-1]["rss_mb"]]
    summary = {"device": device.name, "path": device.runner.path.name, "seconds": elapsed, "calls": counts.calls,
               "threads": args.threads, "device_threads": args.device_threads, "device_specs": specs,
               "devices_opened": counts.devices, "wrong": counts.wrong, "errors": counts.errors,
               "calls_per_s": counts.calls / elapsed, "rss_warm_min_mb": min(warm), "rss_warm_max_mb": max(warm),
               "samples": samples, "messages": counts.messages}
    print(f"{counts.calls} calls and {counts.devices} devices in {elapsed:.1f} s ({summary['calls_per_s']:.0f} "
          f"calls/s): wrong {counts.wrong}, errors {counts.errors}; resident memory once warm "
          f"{min(warm):.1f}-{max(warm):.1f} MB")
    for message in counts.messages:
        print("  ", message)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(summary, f, indent=2)
    device.close()
    failed = counts.wrong or counts.errors or (args.device_threads and not counts.devices)
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
