"""The performance tables of the README and the docs, from a full-suite JSON of ``dmlgpu bench``.

    python benchmarks/readme_table.py benchmarks/results/RUN.json            # print the full tables
    python benchmarks/readme_table.py benchmarks/results/RUN.json [RUN2.json ...] --readme README.md

With ``--readme``, two marked blocks are replaced, both from the same runs (one a GPU), so that
the numbers are always those of committed runs: the README's headline (a few key rows, a
column a GPU, between ``<!-- bench-headline -->`` and ``<!-- /bench-headline -->``) and the
full tables of the performance page, each run's in turn (``docs/benchmarks.md`` beside the
README unless ``--page`` names another file; between ``<!-- bench-tables -->`` and
``<!-- /bench-tables -->``). ``--page`` alone writes only the page. Paths in the tables are
relative to the README's folder (the repository's root), or to the current folder without
``--readme``.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys

TABLES = "bench-tables"  # the performance page's block: every table
HEADLINE = "bench-headline"  # the README's block: the key rows

#: The bandwidth cases the README shows (the performance page shows them all): one of each
#: kernel shape (long rows, columns, tiny rows), the narrow types, HARDMAX.
HEADLINE_CASES = ("rows", "cols", "tiny_rows8", "axes02", "rows_f16", "rows_f64", "rows_int8", "hardmax_rows")


def _us(seconds: float) -> str:
    return f"{seconds * 1e6:.0f} us" if seconds < 1e-3 else f"{seconds * 1e3:.1f} ms"


def _what(r: dict) -> str:
    shape = "(" + ", ".join(str(n) for n in r["shape"]) + ")"
    axes = "all" if len(r["axes"]) == len(r["shape"]) else ",".join(str(a) for a in r["axes"])
    op = "" if r["op"] == "argmax" else r["op"].upper() + " "
    return f"`{r['name']}`: {op}{r['dtype']} {shape} axis {axes}"


def _intro(report: dict, source: str) -> list[str]:
    torch = next((p["version"] for p in report["peers"] if p["name"] == "torch"), None)
    return [f"On an {report['device']} through {report['backend']} (`{source}`, commit `{report['commit']}`,"
            f" the full suite{f', torch {torch} beside it' if torch else ''}; every answer checked against the oracle).",
            "GB/s = bytes that must move / GPU time; the ceiling is a WGSL kernel reading the same bytes in the",
            "same run (copying them, for HARDMAX)."]


def _bandwidth(results: list) -> list:
    return [r for r in results if r["kind"] == "gpu" and not r["latency"] and r["status"] == "ok"]


def tables(report: dict, source: str) -> str:
    """Every table of a run: bandwidth, small calls, transfers, the resident loop."""
    results = report["results"]
    lines = _intro(report, source) + ["",
             "| case | dmlgpu GB/s | % of ceiling | torch GB/s | speed-up over torch |", "|---|---|---|---|---|"]
    for r in _bandwidth(results):
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
    lines += _as_written(results) + _throughput(results)
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


#: The columns of calls as users write them: the run's name for each, and the header.
AS_WRITTEN_COLUMNS = (("resident", "`argmax(t).numpy(); release()`"), ("resident_as_written", "`argmax(t).numpy()`"),
                      ("numpy_module", "`dmlgpu.numpy.argmax(x)`"),
                      ("numpy_module_resident", "`np.asarray(dmlgpu.numpy.argmax(t))`"), ("onnx", "ONNX `rep.run`"),
                      ("numpy_quiet", "NumPy in, no helpers or spin"),
                      ("resident_quiet", "`argmax(t).numpy()`, no helpers or spin"))


def _as_written(results: list) -> list[str]:
    """The small calls as users write them, p50 / p99 (runs that timed them)."""
    rows = [r for r in results if r.get("latency") and r["status"] == "ok" and "resident_as_written" in r["latency_times"]]
    if not rows:
        return []
    columns = [(name, head) for name, head in AS_WRITTEN_COLUMNS if any(name in r["latency_times"] for r in rows)]
    lines = ["", "The same small calls as users write them (no `release()`), through the other doors, and on a device",
             "opened with `dmlgpu.configure(copy_helpers=0, spin_us=0)`; p50 / p99, timed in turn with the above:", "",
             "| case | " + " | ".join(head for _, head in columns) + " |", "|---" * (len(columns) + 1) + "|"]
    for r in rows:
        lat = r["latency_times"]
        cells = [f"{_us(lat[name]['p50_s'])} / {_us(lat[name]['p99_s'])}" if name in lat else "-" for name, _ in columns]
        lines.append(f"| {_what(r)} | " + " | ".join(cells) + " |")
    return lines


def _throughput(results: list) -> list[str]:
    """Calls per second from several threads on one device (``throughput`` cases)."""
    lines = []
    for r in results:
        if r["kind"] != "throughput" or r["status"] != "ok":
            continue
        calls = r["calls_per_s"]
        threads = list(next(iter(calls.values())))
        lines += ["", f"Calls per second from several threads at once on one device ({_what(r)}; resident as users"
                      " write it, no `release()`; the variants take turns):", "",
                  "| threads | " + " | ".join(calls) + " |", "|---" * (len(calls) + 1) + "|"]
        for n in threads:
            lines.append(f"| {n} | " + " | ".join(f"{by[n]:,.0f}" for by in calls.values()) + " |")
    return lines


def headline(runs: list[tuple[dict, str]]) -> str:
    """The README's few lines from one run a GPU: key bandwidth rows (a column a GPU), and for
    each GPU the range over every case, one small call and one large NumPy call, with the
    performance page for the rest."""
    lines = ["Full runs of `dmlgpu bench` (the full suite), every answer checked against the oracle:", ""]
    for report, source in runs:
        torch = next((p["version"] for p in report["peers"] if p["name"] == "torch"), None)
        lines.append(f"- {report['device']} through {report['backend']}: `{source}`, commit `{report['commit']}`"
                     + (f", torch {torch} beside it" if torch else ""))
    lines += ["", "GB/s = bytes that must move / GPU time; the ceiling is a WGSL kernel reading the same bytes in the",
              "same run (copying them, for HARDMAX). Each cell: GB/s, % of the ceiling, speed-up over torch.", "",
              "| case | " + " | ".join(report["device"] for report, _ in runs) + " |", "|---" * (len(runs) + 1) + "|"]
    by_run = [{r["name"]: r for r in _bandwidth(report["results"])} for report, _ in runs]
    names = [name for name in HEADLINE_CASES if any(name in cases for cases in by_run)]
    for name in names:
        what = _what(next(cases[name] for cases in by_run if name in cases))
        cells = []
        for cases in by_run:
            r = cases.get(name)
            speedup = r["peers"].get("torch", {}).get("speedup") if r else None
            cells.append("-" if r is None else f"{r['gbps']:.0f}, {r['pct_of_ceiling']:.0f}%"
                         + (f", {speedup:.2f}x" if speedup else ""))
        lines.append(f"| {what} | " + " | ".join(cells) + " |")
    lines.append("")
    for report, _ in runs:
        lines += _summary(report)
    return "\n".join(lines)


def _summary(report: dict) -> list[str]:
    """A run in a line: its range over every bandwidth case, its first small call and its large
    NumPy calls."""
    results = report["results"]
    parts = []
    gpu = _bandwidth(results)
    if gpu:
        pcts = [r["pct_of_ceiling"] for r in gpu]
        ups = [r["peers"]["torch"]["speedup"] for r in gpu if r["peers"].get("torch", {}).get("speedup")]
        over = f", {min(ups):.2f}x to {max(ups):.2f}x torch's speed" if ups else ""
        parts.append(f"all {len(gpu)} bandwidth cases at {min(pcts):.0f}% to {max(pcts):.0f}% of the ceiling{over}")
    small = next((r for r in results if r.get("latency") and r["status"] == "ok"), None)
    if small is not None:
        lat, t = small["latency_times"], small["peers"].get("torch", {})
        peer = f" (torch {_us(t['e2e_s'])})" if t.get("e2e_s") else ""
        peer_resident = f" (torch {_us(t['e2e_resident_s'])})" if t.get("e2e_resident_s") else ""
        parts.append(f"a small call (`{small['name']}`) NumPy in, NumPy out {_us(lat['numpy']['p50_s'])} p50{peer},"
                     f" GPU-resident in {_us(lat['resident']['p50_s'])}{peer_resident}")
    numpy_calls = [r for r in results if r["kind"] == "numpy" and r["status"] == "ok"]
    # the first, and the first of NumPy's default type (float64) where it is another
    for large in {id(r): r for r in numpy_calls[:1] + [r for r in numpy_calls if r["dtype"] == "FLOAT64"][:1]}.values():
        parts.append(f"`{large['name']}` NumPy in, NumPy out {_us(large['e2e_s'])}, {large['x_numpy']:.1f}x"
                     " `np.argmax` on the CPU")
    return [f"- {report['device']}: " + "; ".join(parts) + "."] if parts else []


def page_tables(runs: list[tuple[dict, str]]) -> str:
    """Every table of each run, one run after another."""
    return "\n\n".join(tables(report, source) for report, source in runs)


def _replace(path: str, name: str, text: str) -> bool:
    """Replace the block ``<!-- name -->`` ... ``<!-- /name -->`` of the file at ``path``."""
    start, end = f"<!-- {name} -->", f"<!-- /{name} -->"
    with open(path) as f:
        old = f.read()
    block = re.compile(re.escape(start) + ".*?" + re.escape(end), re.S)
    if not block.search(old):
        print(f"{path} has no {start} ... {end} block", file=sys.stderr)
        return False
    new = block.sub(lambda _: f"{start}\n{text}\n{end}", old)
    if new != old:
        with open(path, "w") as f:
            f.write(new)
    return True


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("json", nargs="+", help="full-suite JSONs from dmlgpu bench --json, one a GPU")
    parser.add_argument("--readme", help=f"replace this file's {HEADLINE} block, and the performance page's")
    parser.add_argument("--page", help=f"replace this file's {TABLES} block (default with --readme: "
                                       "docs/benchmarks.md beside the README)")
    args = parser.parse_args()
    root = os.path.dirname(os.path.abspath(args.readme)) if args.readme else "."
    runs = []
    for path in args.json:
        with open(path) as f:
            runs.append((json.load(f), os.path.relpath(path, root)))
    page = args.page or (os.path.join(root, "docs", "benchmarks.md") if args.readme else None)
    if not args.readme and not page:
        print(page_tables(runs))
        return 0
    ok = _replace(page, TABLES, page_tables(runs))
    if args.readme:
        ok = _replace(args.readme, HEADLINE, headline(runs)) and ok
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
