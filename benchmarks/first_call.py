"""A fresh process's first call: ``python -c`` that imports dmlgpu and runs one argmax on a
(1, 151936) FLOAT32 array, timed from the process's start to its end by the parent, the
median of ``--runs`` fresh processes after one untimed (warm caches: the OS's, the driver's
shader cache). Each child also reports where its time went: NumPy's import, dmlgpu's, the
device (wgpu's import, the instance, the adapter, the device), the first call (pipelines
compiled, the kit made, the call).

    python benchmarks/first_call.py [--runs 5] [--json out.json]

Issue 26's targets: <= 0.8 s on the H100, <= 0.6 s on lavapipe.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time

CHILD = """
import time
t0 = time.perf_counter()
import numpy as np
t1 = time.perf_counter()
import dmlgpu
t2 = time.perf_counter()
device = dmlgpu.default_device()
t3 = time.perf_counter()
x = np.random.default_rng(0).standard_normal((1, 151936)).astype(np.float32)
t4 = time.perf_counter()
index = int(dmlgpu.argmax(x, 1)[0, 0])
t5 = time.perf_counter()
assert index == int(x.argmax()), (index, int(x.argmax()))
print({"numpy": t1 - t0, "dmlgpu": t2 - t1, "device": t3 - t2, "first_call": t5 - t4, "adapter": device.name,
       "path": device.runner.path.name})
"""


def one() -> tuple[float, dict]:
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True, timeout=120)
    wall = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"the child failed:\n{done.stderr[-3000:]}")
    return wall, eval(done.stdout.strip().splitlines()[-1])  # (our own child's dict literal)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--json")
    args = parser.parse_args()
    one()  # untimed: warm caches
    runs = [one() for _ in range(args.runs)]
    walls = [w for w, _ in runs]
    parts = {k: statistics.median(p[k] for _, p in runs) for k in ("numpy", "dmlgpu", "device", "first_call")}
    report = {"adapter": runs[0][1]["adapter"], "path": runs[0][1]["path"], "runs": args.runs,
              "wall_s": walls, "median_wall_s": statistics.median(walls), "median_parts_s": parts}
    print(f"{report['adapter']} ({report['path']} path): first call in a fresh process, median of {args.runs}: "
          f"{report['median_wall_s']:.3f} s from process start to end ({', '.join(f'{w:.3f}' for w in walls)}); "
          f"inside: " + ", ".join(f"{k} {v:.3f} s" for k, v in parts.items()))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=2)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
