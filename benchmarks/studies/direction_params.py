"""Does reading the direction and the tie rule from the parameters (h44, issue 36: ARGMAX and
ARGMIN, INCREASING and DECREASING of a plan share one WGSL text) cost GPU time against writing
them into the text as constants? Each bandwidth case of the full suite (kind "gpu", not a
latency) is timed as the suite has it, as ARGMIN, and as its op with DECREASING ties, through
``dmlgpu bench``'s own timing (``gpu_cases.run``: GPU timestamps, interleaved with the read
ceiling, the answer checked against the oracle). ``--install NAME=DIR`` (repeated) compares
versions of dmlgpu importable from each DIR (installed there with ``pip install --target``):
each round runs every version once, in a fresh process, in turns; the medians over the rounds
of each (case, variant) are printed as each version's time and GB/s, and the ratio to the first.

    python benchmarks/studies/direction_params.py --install main=/tmp/v-main --install h44=/tmp/v-h44 \\
        [--rounds 2] [--case rows --case cols ...] [--suite full] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys

CHILD = r"""
import dataclasses, json, sys
import dmlgpu
from dmlgpu.bench.cases import load_suite
from dmlgpu.bench.run import Bench
from dmlgpu.bench.ceilings import warm_up
from dmlgpu.types import AxisDirection

wanted = json.loads(sys.argv[1])
suite = load_suite(sys.argv[2])
device = dmlgpu.Device()
bench = Bench(device, suite, None, [])
cases = [c for c in suite.cases if c.kind == "gpu" and not c.latency and (not wanted or any(w in c.name for w in wanted))]
warm_up(device.runner, 256 << 20, suite.warmup_s)


class Decreasing:
    # A case whose descriptor asks DECREASING ties (the bench's cases have no direction).
    def __init__(self, case):
        self.case = case

    def __getattr__(self, name):
        return getattr(self.case, name)

    def descriptor(self):
        return dataclasses.replace(self.case.descriptor(), axis_direction=AxisDirection.DECREASING)


for case in cases:
    variants = [("as is", case)]
    if case.op != "hardmax":
        variants += [("argmin", dataclasses.replace(case, op="argmin")), ("decreasing", Decreasing(case))]
    for name, c in variants:
        r = bench.run_case(c)
        print(json.dumps({"case": case.name, "variant": name, "status": r["status"], "correct": r.get("correct"),
                          "gpu_s": r.get("gpu_s"), "gbps": r.get("gbps"), "kernel": r.get("plan", {}).get("kernel")}),
              flush=True)
"""


def child(path: str, wanted: list[str], suite: str) -> list[dict]:
    """One fresh process importing dmlgpu from ``path``: its lines, one per (case, variant)."""
    pythonpath = os.pathsep.join(p for p in (path, os.environ.get("PYTHONPATH")) if p)
    env = dict(os.environ, PYTHONPATH=pythonpath, DMLGPU_SOFTWARE_NOTICE="0")
    done = subprocess.run([sys.executable, "-c", CHILD, json.dumps(wanted), suite], env=env, capture_output=True, text=True,
                          timeout=1200, check=False, cwd="/")
    if done.returncode != 0:
        raise SystemExit(f"child ({path}) failed:\n{done.stderr[-3000:]}")
    return [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--install", action="append", required=True, metavar="NAME=DIR")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--case", action="append", default=[], help="cases whose name contains this (repeatable)")
    parser.add_argument("--suite", default="full", help="full, or quick (small inputs: for lavapipe)")
    parser.add_argument("--json", metavar="PATH")
    args = parser.parse_args()
    installs = dict(spec.split("=", 1) for spec in args.install)
    runs: dict[str, list[dict]] = {name: [] for name in installs}
    for round_ in range(args.rounds):
        for name, path in installs.items():
            lines = child(path, args.case, args.suite)
            runs[name] += lines
            wrong = [f"{r['case']} {r['variant']}" for r in lines if r["status"] != "ok" or r["correct"] is False]
            print(f"round {round_ + 1} {name}: {len(lines)} timings" + (f"; NOT OK: {wrong}" if wrong else ""),
                  flush=True)
        if args.json:  # after every round, so that a run cut short keeps what it timed
            with open(args.json, "w") as f:
                json.dump({"installs": installs, "runs": runs}, f, indent=1)
    first = next(iter(installs))
    keys = list(dict.fromkeys((r["case"], r["variant"]) for r in runs[first]))
    print(f"{'case':14} {'variant':11} " + " ".join(f"{n + ' us':>12} {'GB/s':>6}" for n in installs)
          + " " + " ".join(f"{n + '/' + first:>14}" for n in list(installs)[1:]))
    table = []
    for case, variant in keys:
        med = {}
        for name in installs:
            got = [r for r in runs[name] if (r["case"], r["variant"]) == (case, variant) and r["gpu_s"]]
            med[name] = (statistics.median(r["gpu_s"] for r in got), statistics.median(r["gbps"] for r in got)) if got else None
        table.append({"case": case, "variant": variant, **{n: m for n, m in med.items()}})
        cells = " ".join(f"{m[0] * 1e6:12.1f} {m[1]:6.1f}" if m else f"{'-':>12} {'-':>6}" for m in med.values())
        ratios = " ".join(f"{med[n][0] / med[first][0]:14.3f}" if med[n] and med[first] else f"{'-':>14}"
                          for n in list(installs)[1:])
        print(f"{case:14} {variant:11} {cells} {ratios}", flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"installs": installs, "runs": runs, "medians": table}, f, indent=1)


if __name__ == "__main__":
    main()
