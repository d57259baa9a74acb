"""The README's performance tables, from a full-suite JSON of ``dmlgpu bench``.

    python benchmarks/readme_table.py benchmarks/results/RUN.json            # print them
    python benchmarks/readme_table.py benchmarks/results/RUN.json --readme README.md

With ``--readme``, the text between ``<!-- bench-table -->`` and ``<!-- /bench-table -->``
in that file is replaced, so that the README's numbers are always those of one committed run.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys

START, END = "<!-- bench-table -->", "<!-- /bench-table -->"


def _us(seconds: float) -> str:
    return f"{seconds * 1e6:.0f} us" if seconds < 1e-3 else f"{seconds * 1e3:.1f} ms"


def _what(r: dict) -> str:
    shape = "(" + ", ".join(str(n) for n in r["shape"]) + ")"
    axes = "all" if len(r["axes"]) == len(r["shape"]) else ",".join(str(a) for a in r["axes"])
    op = "" if r["op"] == "argmax" else r["op"].upper() + " "
    return f"`{r['name']}`: {op}{r['dtype']} {shape} axis {axes}"


def tables(report: dict, source: str) -> str:
    results = report["results"]
    torch = next((p["version"] for p in report["peers"] if p["name"] == "torch"), None)
    lines = [f"On an {report['device']} through {report['backend']} (`{source}`, commit `{report['commit']}`,"
             f" the full suite{f', torch {torch} beside it' if torch else ''}; every answer checked against the oracle).",
             "GB/s = bytes that must move / GPU time; the ceiling is a WGSL kernel reading the same bytes in the",
             "same run (copying them, for HARDMAX).", "",
             "| case | dmlgpu GB/s | % of ceiling | torch GB/s | speed-up over torch |", "|---|---|---|---|---|"]
    for r in results:
        if r["kind"] != "gpu" or r["latency"] or r["status"] != "ok":
            continue
        t = r["peers"].get("torch", {})
        lines.append(f"| {_what(r)} | {r['gbps']:.0f} | {r['pct_of_ceiling']:.0f}% | {t.get('gbps', 0):.0f} |"
                     f" {t.get('speedup', 0):.2f} |")
    lines += ["", "Small calls (wall times, p50 / p99 of many calls, timed in one process; the floor is one",
              "1-workgroup dispatch and a 16-byte read-back through our runner; the wgpu-native floor is the",
              "same round trip straight through wgpu-native with nothing of ours in between, without and with",
              "a queue write of the call's input before it: what bounds a resident and a NumPy call there):", "",
              "| case | GPU time | NumPy in, NumPy out | GPU-resident in, NumPy out | floor | wgpu-native floor"
              " (resident / NumPy) | torch (NumPy in / resident) |",
              "|---|---|---|---|---|---|---|"]
    for r in results:
        if not r.get("latency") or r["status"] != "ok":
            continue
        lat, t = r["latency_times"], r["peers"].get("torch", {})
        torch_cell = f"{_us(t['e2e_s'])} / {_us(t['e2e_resident_s'])}" if t.get("e2e_s") else ""
        native_cell = (f"{_us(lat['native_floor']['p50_s'])} / {_us(lat['native_floor_upload']['p50_s'])}"
                       if "native_floor" in lat else "")
        lines.append(f"| {_what(r)} | {_us(r['gpu_s'])} | {_us(lat['numpy']['p50_s'])} / {_us(lat['numpy']['p99_s'])} |"
                     f" {_us(lat['resident']['p50_s'])} / {_us(lat['resident']['p99_s'])} |"
                     f" {_us(lat['floor']['p50_s'])} | {native_cell} | {torch_cell} |")
    lines += ["", "Transfers (NumPy in, NumPy out, median wall time; read-back into a new array, beside its bound:"
                  " a new array filled from host memory on as many threads):", "",
              "| case | dmlgpu | GB/s | np.argmax on the CPU (speed-up) | torch, pageable (speed-up) | upload GB/s |"
              " read-back GB/s (bound) |", "|---|---|---|---|---|---|---|"]
    for r in results:
        if r["kind"] != "numpy" or r["status"] != "ok":
            continue
        back = f"{r['read_back_gbps']:.1f} ({r['host_fill_gbps']:.1f})" if "host_fill_gbps" in r else "-"
        lines.append(f"| {_what(r)} | {_us(r['e2e_s'])} | {r['gbps']:.1f} | {_us(r['numpy_s'])} ({r['x_numpy']:.1f}x) |"
                     f" {_us(r['torch_pageable_s'])} ({r['x_torch_pageable']:.1f}x) | {r['upload_gbps']:.1f} | {back} |")
    for r in results:
        if r["kind"] == "loop" and r["status"] == "ok":
            lines += ["", f"{r['calls']} GPU-resident calls back to back on {r['dtype']} {tuple(r['shape'])}:"
                          f" {_us(r['wall_per_call_s'])} a call against {_us(r['gpu_s'])} of GPU time,"
                          f" {r['pct_of_gpu_rate']:.0f}% of the rate the GPU allows."]
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("json", help="a full-suite JSON from dmlgpu bench --json")
    parser.add_argument("--readme", help="replace the marked block of this file")
    args = parser.parse_args()
    with open(args.json) as f:
        report = json.load(f)
    source = os.path.relpath(args.json, os.path.dirname(os.path.abspath(args.readme)) if args.readme else ".")
    text = tables(report, source)
    if not args.readme:
        print(text)
        return 0
    with open(args.readme) as f:
        readme = f.read()
    block = re.compile(re.escape(START) + ".*?" + re.escape(END), re.S)
    if not block.search(readme):
        print(f"{args.readme} has no {START} ... {END} block", file=sys.stderr)
        return 1
    with open(args.readme, "w") as f:
        f.write(block.sub(lambda _: f"{START}\n{text}\n{END}", readme))
    return 0


if __name__ == "__main__":
    sys.exit(main())
