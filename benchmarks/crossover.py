"""From what size dmlgpu.argmax on a NumPy array beats np.argmax on the CPU, end to end.

    python benchmarks/crossover.py [--json out.json]

For FLOAT32 inputs of 16 KiB to 1 GiB (rows of up to 65536 elements, reduced over the last
axis), times whole calls, NumPy in and NumPy out, of dmlgpu.argmax and of np.argmax,
interleaved, and prints the median of each and their ratio. The crossover is the smallest
size from which dmlgpu is faster at every larger size measured.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

import numpy as np

import dmlgpu

SIZES_MIB = [1 / 64, 1 / 16, 1 / 4, 1, 4, 16, 64, 256, 1024]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json")
    args = parser.parse_args()
    device = dmlgpu.Device()
    rng = np.random.default_rng(0)
    rows = []
    print(f"{device.name}: FLOAT32 argmax over the last axis, NumPy in and out, medians")
    for mib in SIZES_MIB:
        n = int(mib * (1 << 20)) // 4
        width = min(n, 65536)
        x = rng.standard_normal((n // width, width), dtype=np.float32)
        want = np.argmax(x, 1)
        assert np.array_equal(dmlgpu.argmax(x, 1, device=device).ravel(), want)
        calls = {"dmlgpu": lambda x=x: dmlgpu.argmax(x, 1, device=device), "numpy": lambda x=x: np.argmax(x, 1)}
        repeats = max(5, min(200, int(0.5 / max(1e-5, mib * 1e-3))))
        samples = {k: [] for k in calls}
        for _ in range(repeats):
            for name, fn in calls.items():
                start = time.perf_counter()
                fn()
                samples[name].append(time.perf_counter() - start)
        ours, theirs = statistics.median(samples["dmlgpu"]), statistics.median(samples["numpy"])
        rows.append({"bytes": x.nbytes, "shape": list(x.shape), "dmlgpu_s": ours, "numpy_s": theirs,
                     "x_numpy": theirs / ours})
        print(f"  {x.nbytes / 2**20:9.3f} MiB {str(x.shape):>16}: dmlgpu {ours * 1e3:9.3f} ms, "
              f"np.argmax {theirs * 1e3:9.3f} ms, x{theirs / ours:6.2f}", flush=True)
    faster = [r["x_numpy"] > 1 for r in rows]
    cross = next((r["bytes"] for i, r in enumerate(rows) if all(faster[i:])), None)
    print(f"crossover: {'none in this range' if cross is None else f'{cross / 2**20:.3f} MiB'}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"device": device.name, "rows": rows, "crossover_bytes": cross}, f, indent=2)


if __name__ == "__main__":
    main()
