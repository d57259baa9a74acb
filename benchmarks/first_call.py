"""A fresh process's first call: ``python -c`` that imports dmlgpu and runs one argmax on a
(1, 151936) FLOAT32 array, timed from the process's start to its end by the parent, the
median of ``--runs`` fresh processes after one untimed (warm caches: the OS's, the driver's
shader cache). Each child also reports where its time went: NumPy's import, wgpu-py's import
(its cffi parse of webgpu.h), dmlgpu's, the device (the instance, the adapter, the device, the
runner), the first call (pipelines compiled, the kit made, the call).

Beside it, in fresh processes taking turns with those, the floor of the stack: a child that
imports NumPy and wgpu-py and opens a device on the same adapter with a Vulkan/Metal/D3D12-only
instance (``set_instance_extras``, in that child alone), wgpu-py's public calls and nothing of
dmlgpu's. What dmlgpu adds is the difference of the medians.

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
import wgpu.backends.wgpu_native
t2 = time.perf_counter()
import dmlgpu
t3 = time.perf_counter()
device = dmlgpu.default_device()
t4 = time.perf_counter()
x = np.random.default_rng(0).standard_normal((1, 151936)).astype(np.float32)
t5 = time.perf_counter()
index = int(dmlgpu.argmax(x, 1)[0, 0])
t6 = time.perf_counter()
assert index == int(x.argmax()), (index, int(x.argmax()))
print({"numpy": t1 - t0, "wgpu": t2 - t1, "dmlgpu": t3 - t2, "device": t4 - t3, "first_call": t6 - t5,
       "adapter": device.name, "path": device.runner.path.name})
"""

FLOOR = """
import time
t0 = time.perf_counter()
import numpy as np
t1 = time.perf_counter()
import wgpu
from wgpu.backends.wgpu_native.extras import set_instance_extras
t2 = time.perf_counter()
set_instance_extras(backends=["Vulkan", "Metal", "DX12"])
adapter = wgpu.gpu.request_adapter_sync(power_preference="high-performance")
device = adapter.request_device_sync()
t3 = time.perf_counter()
print({"numpy": t1 - t0, "wgpu": t2 - t1, "device": t3 - t2, "adapter": adapter.info["device"]})
"""


def one(child: str = CHILD) -> tuple[float, dict]:
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", child], capture_output=True, text=True, timeout=120)
    wall = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"the child failed:\n{done.stderr[-3000:]}")
    return wall, eval(done.stdout.strip().splitlines()[-1])  # (our own child's dict literal)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--json")
    args = parser.parse_args()
    one(), one(FLOOR)  # untimed: warm caches
    runs, floors = [], []
    for _ in range(args.runs):
        runs.append(one())
        floors.append(one(FLOOR))
    walls, floor_walls = [w for w, _ in runs], [w for w, _ in floors]
    parts = {k: statistics.median(p[k] for _, p in runs) for k in ("numpy", "wgpu", "dmlgpu", "device", "first_call")}
    floor_parts = {k: statistics.median(p[k] for _, p in floors) for k in ("numpy", "wgpu", "device")}
    report = {"adapter": runs[0][1]["adapter"], "path": runs[0][1]["path"], "runs": args.runs,
              "wall_s": walls, "median_wall_s": statistics.median(walls), "median_parts_s": parts,
              "floor_adapter": floors[0][1]["adapter"], "floor_wall_s": floor_walls,
              "floor_median_wall_s": statistics.median(floor_walls), "floor_median_parts_s": floor_parts}
    print(f"{report['adapter']} ({report['path']} path): first call in a fresh process, median of {args.runs}: "
          f"{report['median_wall_s']:.3f} s from process start to end ({', '.join(f'{w:.3f}' for w in walls)}); "
          f"inside: " + ", ".join(f"{k} {v:.3f} s" for k, v in parts.items()))
    print(f"floor of the stack (NumPy, wgpu-py, a device on {report['floor_adapter']}), taking turns: "
          f"{report['floor_median_wall_s']:.3f} s ({', '.join(f'{w:.3f}' for w in floor_walls)}); inside: "
          + ", ".join(f"{k} {v:.3f} s" for k, v in floor_parts.items())
          + f"; dmlgpu adds {report['median_wall_s'] - report['floor_median_wall_s']:.3f} s")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=2)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
