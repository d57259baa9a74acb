"""What does the first-use calibration add to a fresh process's first calls (issue 33: at most
1 s once per adapter)? The calibration reports its own cost (``Calibration.reports``: the
candidates compiled, the probe made, the timing), but one of the candidates it compiles is the
built-in tuning, whose pipelines the calls use afterwards: that compile is not extra. So this
times what a user pays: fresh processes, each with an empty tuning cache and an empty shader
cache of the driver's, compile and run once every GPU case of the full suite on an input
left as allocated (the first call's planning, pipelines and dispatch), calibrating (``DMLGPU_TUNE=1``)
or not (``DMLGPU_TUNE=0``), taking turns. The calibration's cost is the difference of the
medians. ``--install NAME=DIR`` (repeated) compares versions of dmlgpu importable from each DIR
(installed there with ``pip install --target``), all of them taking turns within each run.

    python benchmarks/studies/calibration_cost.py [--runs 4] [--suite full] [--install new=DIR ...] [--json out.json]
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
import json, sys, time
import dmlgpu
from dmlgpu.bench.cases import load_suite
device = dmlgpu.Device()
cases = [c for c in load_suite(sys.argv[1]).cases if c.kind == "gpu"]
start = time.perf_counter()
for case in cases:  # compiled and run once: some drivers (lavapipe) compile at the first dispatch
    op = device.compile(case.descriptor())
    source, result = device.empty(op.input_desc), device.empty(op.output_desc)
    op.run(source, result).numpy()
    source.release()
    result.release()
seconds = time.perf_counter() - start
calibration = device.calibration
reported = sum(r.cost_s for r in calibration.reports) if calibration is not None else 0.0
print(json.dumps({"seconds": seconds, "cases": len(cases), "reported": reported,
                  "families": len(calibration.reports) if calibration is not None else 0,
                  "compile": sum(r.parts_s["compile"] for r in calibration.reports) if calibration is not None else 0.0}))
"""


def child(tune: str, suite: str, path: str | None = None) -> dict:
    """One fresh process with empty caches: the tuning cache and the drivers' shader caches
    (NVIDIA's, Mesa's); ``path``: where its dmlgpu is imported from (None: as this one's)."""
    with tempfile.TemporaryDirectory() as cache:
        pythonpath = os.pathsep.join(p for p in (path, os.environ.get("PYTHONPATH")) if p)
        env = dict(os.environ, DMLGPU_TUNE=tune, PYTHONPATH=pythonpath, DMLGPU_CACHE_DIR=os.path.join(cache, "dmlgpu"),
                   __GL_SHADER_DISK_CACHE_PATH=os.path.join(cache, "nv"), MESA_SHADER_CACHE_DIR=os.path.join(cache, "mesa"),
                   DMLGPU_SOFTWARE_NOTICE="0")
        for name in ("nv", "mesa"):
            os.makedirs(os.path.join(cache, name))
        done = subprocess.run([sys.executable, "-c", CHILD, suite], env=env, capture_output=True, text=True,
                              timeout=600, check=False)
        if done.returncode != 0:
            raise SystemExit(f"child (DMLGPU_TUNE={tune}) failed:\n{done.stderr[-3000:]}")
        return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=4)
    parser.add_argument("--suite", default="full")
    parser.add_argument("--install", action="append", default=[], metavar="NAME=DIR",
                        help="a version of dmlgpu importable from DIR (repeat to compare versions)")
    parser.add_argument("--json")
    args = parser.parse_args()
    versions = dict(v.split("=", 1) for v in args.install) or {"this": None}
    variants = [(name, tune) for name in versions for tune in ("1", "0")]
    found: dict[tuple[str, str], list[dict]] = {v: [] for v in variants}
    for k in range(args.runs):
        for name, tune in variants[k % len(variants):] + variants[:k % len(variants)]:  # taking turns
            r = child(tune, args.suite, versions[name])
            found[name, tune].append(r)
            print(f"run {k} {name} DMLGPU_TUNE={tune}: {r['cases']} cases compiled and run once in {r['seconds']:.3f} s "
                  f"(calibration reported {r['reported']:.3f} s over {r['families']} families, "
                  f"compiling {r.get('compile', 0.0):.3f} s)", flush=True)
    summary = {}
    for name in versions:
        on = statistics.median(r["seconds"] for r in found[name, "1"])
        off = statistics.median(r["seconds"] for r in found[name, "0"])
        reported = statistics.median(r["reported"] for r in found[name, "1"])
        print(f"{name} median: calibrating {on:.3f} s, not {off:.3f} s: the calibration adds {on - off:.3f} s "
              f"(it reports {reported:.3f} s of its own)")
        summary[name] = {"median_on_s": on, "median_off_s": off, "added_s": on - off, "reported_s": reported,
                         "runs": {tune: found[name, tune] for tune in ("1", "0")}}
    if args.json:
        with open(args.json, "w") as f:
            json.dump(summary, f, indent=2)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
