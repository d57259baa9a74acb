"""Small calls from two installs of dmlgpu, in fresh processes taking turns: e.g. the installed
wheel (its hot loop compiled when the wheel was built) against an install of the checkout, with
no C compiler on PATH, CC unset and an empty home and cache, so that nothing could be compiled
at run time. Each process times ``--calls`` calls of llm_argmax's shape, (1, 151936) FLOAT32,
NumPy in and out and GPU-resident in, after a warm-up, and reports p50 / p99 and its path.

    python benchmarks/install_latency.py --install wheel=/tmp/wheel --install checkout=/tmp/new [--rounds 3] [--compiler]

Each install is a folder put first on PYTHONPATH (a ``pip install --target``). Issue 26's
target: the wheel's llm_argmax p50 within 10% of the checkout install's in the same run.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

CHILD = """
import time, sys, numpy as np, dmlgpu
calls = int(sys.argv[1])
x = np.random.default_rng(0).standard_normal((1, 151936)).astype(np.float32)
device = dmlgpu.default_device()
t = device.upload(x)
def numpy_in(): dmlgpu.argmax(x, 1, device=device)
def resident(): dmlgpu.argmax(t, 1).numpy()
out = {"path": device.runner.path.name, "file": dmlgpu.__file__}
for name, fn in (("numpy", numpy_in), ("resident", resident)):
    for _ in range(200): fn()
    times = []
    for _ in range(calls):
        s = time.perf_counter(); fn(); times.append(time.perf_counter() - s)
    out[name] = [float(np.percentile(times, 50)), float(np.percentile(times, 99))]
print(out)
"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--install", action="append", required=True, help="NAME=FOLDER (repeatable)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--compiler", action="store_true",
                        help="keep PATH and CC: for installs that compile their hot loop at run time (before issue 26)")
    parser.add_argument("--json")
    args = parser.parse_args()
    installs = dict(item.split("=", 1) for item in args.install)
    results: dict[str, list] = {name: [] for name in installs}
    with tempfile.TemporaryDirectory() as home:
        base = {k: v for k, v in os.environ.items() if k not in ("CC", "PYTHONPATH", "XDG_CACHE_HOME")}
        base.update(PATH=os.path.join(home, "bin"), HOME=home, XDG_CACHE_HOME=os.path.join(home, "cache"))
        if args.compiler:
            base.update({k: os.environ[k] for k in ("PATH", "CC") if k in os.environ})
        for _ in range(args.rounds):
            for name, folder in installs.items():
                env = dict(base, PYTHONPATH=os.pathsep.join([folder] + [p for p in sys.path if "site" in p]))
                done = subprocess.run([sys.executable, "-c", CHILD, str(args.calls)], env=env, cwd=home,
                                      capture_output=True, text=True, timeout=300)
                if done.returncode != 0:
                    raise SystemExit(f"{name} failed:\n{done.stderr[-3000:]}")
                results[name].append(eval(done.stdout.strip().splitlines()[-1]))  # (our own child's dict)
    report = {"rounds": args.rounds, "calls": args.calls, "installs": installs, "results": results}
    for name, runs in results.items():
        med = {k: statistics.median(r[k][0] for r in runs) for k in ("numpy", "resident")}
        report.setdefault("median_p50_s", {})[name] = med
        numpy_p50 = ", ".join(f"{r['numpy'][0] * 1e6:.1f}" for r in runs)
        resident_p50 = ", ".join(f"{r['resident'][0] * 1e6:.1f}" for r in runs)
        print(f"{name:<10} ({runs[0]['path']} path, {os.path.dirname(runs[0]['file'])}): p50 NumPy in/out "
              f"{numpy_p50} us, resident {resident_p50} us")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=2)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
