"""One run of ``dmlgpu bench``: ``main`` (the CLI's entry point: the suite, the warm-up, one
line per case, the JSON report and the plot) and ``Bench``, the run's state (the device, the
peers, the host data), which hands each case to the module of its kind: ``gpu_cases`` for "gpu",
``transfers`` for "numpy" and "loop", ``throughput`` for "throughput"."""

from __future__ import annotations

import dataclasses
import math
import sys

import numpy as np

from . import gpu_cases, throughput, transfers
from .cases import Case, Suite, host_data, load_suite
from .ceilings import warm_up
from .peers import Peer, TorchPeer, find_peers
from ..types import DataType
from .report import header, line, plot, report_header, write_json


#: Printed under the table, and kept in the report's ``method``, when the adapter is a software
#: one (lavapipe, WARP, SwiftShader): what its figures mean there. Measured on lavapipe, 2 cores
#: (benchmarks/LOG.md, 2026-11-28): timestamps are the driver's clock around the passes, below the
#: wall time of the same dispatch and of the NumPy call when sampled in turn with them; HARDMAX's
#: passes 549 us and the clear of its 4 MiB output 181 us (wall, with its submit) against the copy
#: ceiling's 1062 us; the ceiling's own time moving 1.8x between runs a few seconds apart.
CPU_ADAPTER_NOTE = (
    "note: on a CPU adapter the shaders run on this machine's cores, and so: 'ours GPU' is the driver's clock "
    "around the passes as the CPU ran them;",
    "  the ceilings are kernels shaped for a GPU, which a CPU's plans can pass (above 100%; HARDMAX's output is "
    "cleared by the driver's fill, a memset here, not by a shader's stores);",
    "  'ours GPU' and 'e2e' are medians of samples timed seconds apart, so where the CPU's speed drifts, e2e can "
    "come out below the GPU time.",
    "  A check that every operator runs, not a speed to quote (docs/benchmarks.md#on-a-cpu-adapter).",
)


class Bench:
    """One run: the device, the suite, the peers and the host data cache; ``main`` keeps the results."""

    def __init__(self, device, suite: Suite, repeats: int | None, peers: list[Peer]):
        self.device = device
        self.runner = device.runner
        self.suite = suite
        self.repeats = repeats
        self.peers = peers
        self.rng = np.random.default_rng(0)
        self._host: tuple[tuple[DataType, int], np.ndarray] | None = None  # (type and size, data)

    def host(self, case: Case) -> np.ndarray:
        """Random data for a case, generated once and reused by cases of the same type and size;
        for a case ``within`` a larger array, the leading part of that array's data."""
        shape = case.within or case.shape
        key = (case.dtype, math.prod(shape))
        if self._host is None or self._host[0] != key:
            self._host = None  # free the last one first
            self._host = (key, host_data(case, self.rng, shape).reshape(-1))
        return self._host[1].reshape(shape)[tuple(slice(0, n) for n in case.shape)]

    def run_case(self, case: Case) -> dict:
        """A case of kind "gpu" (``gpu_cases.run``)."""
        return gpu_cases.run(self, case)

    def run_transfer(self, case: Case) -> dict:
        """A case of kind "numpy" or "loop" (``transfers.run``), or "throughput" (``throughput.run``)."""
        return throughput.run(self, case) if case.kind == "throughput" else transfers.run(self, case)


def calibration_report(device) -> dict:
    """What the device's calibration did in this run: the families it measured (probe, each
    candidate's seconds, the choice, the wall seconds it took), and the choices it used."""
    calibration = device.calibration
    if calibration is None:
        return {"mode": "a tuning was given"}
    return {"mode": calibration.mode, "cache": str(calibration.path), "chosen": calibration.chosen,
            "measured": [dataclasses.asdict(r) for r in calibration.reports],
            "cost_s": sum(r.cost_s for r in calibration.reports)}


def calibration_line(found: dict) -> str:
    if "measured" not in found:
        return f"calibration: none ({found['mode']})"
    chosen = "; ".join(f"{f}: {','.join(f'{k}={v}' for k, v in c.items()) or 'default'}"
                       for f, c in sorted(found["chosen"].items()))
    return (f"calibration ({found['mode']}): {len(found['measured'])} families measured in this run, "
            f"{found['cost_s']:.2f} s in all; choices: {chosen or 'none'}")


def title(report: dict, suite: Suite, device, peers: list[Peer]) -> str:
    """The run's first line: the version, the suite, the adapter (and whether it is a CPU one), the peers."""
    cpu = ", a CPU adapter (see the note below the table)" if device.runner.capabilities.software else ""
    return (f"dmlgpu {report['dmlgpu_version']} bench, {suite.name} suite, on {device.name} ({device.runner.backend})"
            f"{cpu}; peers: {', '.join(f'{p.name} {p.version} on {p.device_name}' for p in peers) or 'none importable'}")


def main(device, args) -> int:
    """``dmlgpu bench``: 0 when every case ran (or was skipped) and answered right, 1 if any
    was wrong or failed, 2 for a bad request (no such case, --plot without matplotlib)."""
    if args.plot:
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            print("dmlgpu bench: --plot needs matplotlib, which is not importable here "
                  "(pip install matplotlib); nothing was run", file=sys.stderr)
            return 2
    suite = load_suite("quick" if args.quick else "full")
    cases = [c for c in suite.cases if not args.case or any(s in c.name for s in args.case)]
    if not cases:
        print(f"dmlgpu bench: no case of the {suite.name} suite matches {args.case}; cases: "
              f"{', '.join(c.name for c in suite.cases)}", file=sys.stderr)
        return 2
    if args.repeats is not None and args.repeats < 1:
        print(f"dmlgpu bench: --repeats is {args.repeats}, but it must be at least 1", file=sys.stderr)
        return 2

    peers = find_peers()
    report = report_header(device, suite, peers)
    software = device.runner.capabilities.software
    if software:
        report["method"]["cpu_adapter"] = " ".join(CPU_ADAPTER_NOTE)
    print(title(report, suite, device, peers), flush=True)
    warm_bytes = max(math.prod(c.shape) * c.dtype.size for c in cases)
    print(f"warm-up: {warm_up(device.runner, min(warm_bytes, 256 << 20), suite.warmup_s)} reads in {suite.warmup_s} s",
          file=sys.stderr)
    torch = next((p for p in peers if isinstance(p, TorchPeer)), None)
    if torch is not None:  # the physical references the ceilings should match, on this GPU
        report["references"] = torch.references(min(warm_bytes, 1 << 30))
        print("torch references (GB/s): " + ", ".join(f"{k} {v:.0f}" for k, v in report["references"].items()),
              flush=True)
    print(header(peers), flush=True)
    bench = Bench(device, suite, args.repeats, peers)
    failed = 0
    for i, case in enumerate(cases, 1):
        print(f"[{i}/{len(cases)}] {case.name} ...", file=sys.stderr, flush=True)
        try:
            result = bench.run_case(case) if case.kind == "gpu" else bench.run_transfer(case)
        except Exception as err:  # report and go on: one broken case must not hide the others
            result = {**case.to_json(), "status": "error", "reason": f"{type(err).__name__}: {err}"}
        failed += result["status"] == "error" or result.get("correct") is False
        report["results"].append(result)
        report["calibration"] = calibration_report(device)
        print(line(result, peers), flush=True)
        if args.json:
            write_json(report, args.json)  # after every case, so a crash keeps what ran
    if software:
        print("\n".join(CPU_ADAPTER_NOTE))
    counts = {s: sum(r["status"] == s for r in report["results"]) for s in ("ok", "skipped", "error")}
    wrong = sum(r.get("correct") is False for r in report["results"])
    print(f"{counts['ok']} ran ({wrong} wrong), {counts['skipped']} skipped, {counts['error']} failed"
          + (f"; results in {args.json}" if args.json else ""))
    print(calibration_line(report.get("calibration") or calibration_report(device)))
    if args.plot:
        plot(report, args.plot)
        print(f"plot in {args.plot}")
    return 1 if failed else 0
