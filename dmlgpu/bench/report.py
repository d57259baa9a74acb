"""What a run shows and keeps: the text lines (``header``, ``line``), the JSON report
(``report_header``, ``write_json``: the device, the peers, the method, every result) and the
bar chart (``plot``)."""

from __future__ import annotations

import datetime
import json
import os
import platform
import subprocess
from pathlib import Path

import numpy as np

from .cases import Case, Suite
from .peers import Peer


def _fmt_time(s) -> str:
    if s is None:
        return "-"
    if s < 1e-3:
        return f"{s * 1e6:.1f} us"
    if s < 1:
        return f"{s * 1e3:.2f} ms"
    return f"{s:.2f} s"


def _fmt_gbps(g) -> str:
    return f"{g:.0f}" if g >= 100 else f"{g:.1f}" if g >= 10 else f"{g:.2f}"


def header(peers: list[Peer]) -> str:
    cols = f"{'case':<14} {'what':<34} {'ours GPU':>10} {'e2e':>10} {'GB/s':>7} {'% ceil':>7} {'ceil GB/s':>9}"
    for peer in peers:
        cols += f" {peer.name + ' GB/s':>11} {'x ' + peer.name:>9}"
    return cols


#: How a line names the latency figures of calls as users write them (``gpu_cases._as_written``).
AS_WRITTEN_LABELS = (("resident_as_written", "argmax(t).numpy()"), ("numpy_module", "dmlgpu.numpy"),
                     ("numpy_module_resident", "np.asarray(dmlgpu.numpy(t))"), ("onnx", "onnx rep.run"),
                     ("numpy_quiet", "NumPy, no helpers or spin"), ("resident_quiet", "argmax(t).numpy(), no helpers or spin"))


def line(result: dict, peers: list[Peer]) -> str:
    head = f"{result['name']:<14} {Case.from_json({k: result[k] for k in Case._KEYS if k in result}).label:<34}"
    if result["status"] != "ok":
        return f"{head} {result['status']}: {result.get('reason', '')}"
    if result["kind"] == "numpy":
        text = (f"{head} NumPy in/out {_fmt_time(result['e2e_s'])} ({_fmt_gbps(result['gbps'])} GB/s); "
                f"np.{result['op'] if result['op'] != 'hardmax' else 'argmax+put'} {_fmt_time(result['numpy_s'])} "
                f"(x{result['x_numpy']:.2f})")
        if "torch_pageable_s" in result:
            text += f"; torch pageable {_fmt_time(result['torch_pageable_s'])} (x{result['x_torch_pageable']:.2f})"
        text += f"; upload {_fmt_gbps(result['upload_gbps'])} GB/s"
        if result["op"] == "hardmax":  # an output as large as the input comes back
            text += (f", read-back {_fmt_gbps(result['read_back_gbps'])} GB/s (a new array filled from host memory"
                     f" on {result['host_fill_threads']} threads: {_fmt_gbps(result['host_fill_gbps'])} GB/s)")
    elif result["kind"] == "throughput":
        text = f"{head} calls/s at " + "; ".join(
            f"{threads} threads: " + ", ".join(f"{name} {by_threads[threads]:.0f}" for name, by_threads in
                                               result["calls_per_s"].items())
            for threads in next(iter(result["calls_per_s"].values())))
    elif result["kind"] == "loop":
        text = (f"{head} {result['calls']} resident calls back to back: {_fmt_time(result['wall_per_call_s'])} a call, "
                f"GPU time {_fmt_time(result['gpu_s'])}: {result['pct_of_gpu_rate']:.0f}% of the rate it allows")
    else:
        text = (f"{head} {_fmt_time(result['gpu_s']):>10} {_fmt_time(result['e2e_s']):>10} {_fmt_gbps(result['gbps']):>7} "
                f"{result['pct_of_ceiling']:>6.0f}% {_fmt_gbps(result['ceiling']['gbps']):>9}")
        for peer in peers:
            entry = result["peers"].get(peer.name, {"error": "not run"})
            if "error" in entry:
                text += f" {'error':>11} {'-':>9}"
            else:
                text += f" {_fmt_gbps(entry['gbps']):>11} {entry['speedup']:>8.2f}x"
    extras = []
    if "latency_times" in result:
        lat = result["latency_times"]
        extras.append(f"p50/p99 NumPy in/out {_fmt_time(lat['numpy']['p50_s'])}/{_fmt_time(lat['numpy']['p99_s'])}, "
                      f"resident in {_fmt_time(lat['resident']['p50_s'])}/{_fmt_time(lat['resident']['p99_s'])}, "
                      f"bare dispatch + read floor {_fmt_time(lat['floor']['p50_s'])}")
        if "native_floor" in lat:
            extras.append(f"straight through wgpu-native {_fmt_time(lat['native_floor']['p50_s'])}, "
                          f"with the input's upload {_fmt_time(lat['native_floor_upload']['p50_s'])}")
        written = [f"{label} {_fmt_time(lat[name]['p50_s'])}" for name, label in AS_WRITTEN_LABELS if name in lat]
        if written:
            extras.append("as written: " + ", ".join(written))
        for peer in peers:
            entry = result["peers"].get(peer.name, {})
            if "latency_times" in entry:
                extras.append(f"{peer.name} {_fmt_time(entry['latency_times']['numpy']['p50_s'])}/"
                              f"{_fmt_time(entry['latency_times']['resident']['p50_s'])}")
    if result.get("correct") is False:
        extras.insert(0, "WRONG ANSWER")
    return text + (f"  [{'; '.join(extras)}]" if extras else "")


def _commit() -> str | None:
    """The commit measured: ``DMLGPU_COMMIT`` (for a copy without .git), else git's word."""
    if os.environ.get("DMLGPU_COMMIT"):
        return os.environ["DMLGPU_COMMIT"]
    try:
        out = subprocess.run(["git", "describe", "--always", "--dirty"], cwd=Path(__file__).parent,
                             capture_output=True, text=True, timeout=5)
        return out.stdout.strip() or None
    except Exception:
        return None


def report_header(device, suite: Suite, peers: list[Peer]) -> dict:
    import dmlgpu
    from ..runtime import wgpu_version

    info = device.info()
    return {
        "dmlgpu_version": dmlgpu.__version__,
        "commit": _commit(),
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "suite": suite.name,
        "device": device.name,
        "backend": device.runner.backend,
        "adapter_type": info["type"],
        "limits": {k: info["limits"].get(k) for k in ("max-storage-buffer-binding-size", "max-buffer-size")},
        "features_used": info["features_used"],
        "host": {"python": platform.python_version(), "numpy": np.__version__, "wgpu": wgpu_version(),
                 "machine": platform.machine()},
        "method": {"gbps": "bytes that must move (input once + output once) / median GPU time",
                   "ceiling": "read_ceiling.wgsl (argmax/argmin) or copy_ceiling.wgsl (hardmax) over the same input",
                   "speedup": "peer's median GPU time / ours"},
        "peers": [{"name": p.name, "version": p.version, "device": p.device_name} for p in peers],
        "results": [],
    }


def write_json(report: dict, path: str) -> None:
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps(report, indent=2) + "\n")


def plot(report: dict, path: str) -> None:
    """A grouped bar chart of GB/s per case: ours, the peers, the ceiling (log scale)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = [r for r in report["results"] if r["status"] == "ok" and r.get("kind", "gpu") == "gpu"]
    series = [("dmlgpu", [r["gbps"] for r in rows], "tab:blue")]
    colours = iter(["tab:orange", "tab:green", "tab:purple"])
    for peer in report["peers"]:
        series.append((peer["name"], [r["peers"][peer["name"]]["gbps"] for r in rows], next(colours, "tab:red")))
    series.append(("ceiling (same bytes)", [r["ceiling"]["gbps"] for r in rows], "lightgray"))
    fig, ax = plt.subplots(figsize=(max(6.0, 1.1 * len(rows) + 2), 4.8))
    width = 0.8 / len(series)
    for i, (name, values, colour) in enumerate(series):
        xs = [j + (i - (len(series) - 1) / 2) * width for j in range(len(rows))]
        ax.bar(xs, values, width, label=name, color=colour)
        if i == 0:
            for x, r in zip(xs, rows):
                text = f"{r['pct_of_ceiling']:.0f}%" if r["correct"] else "WRONG"
                ax.annotate(text, (x, r["gbps"]), ha="center", va="bottom", fontsize=7,
                            color="black" if r["correct"] else "red")
    ax.set_xticks(range(len(rows)))
    ax.set_xticklabels([r["name"] + (" (latency)" if r["latency"] else "") for r in rows], rotation=30, ha="right")
    ax.set_yscale("log")
    ax.set_ylabel("GB/s (bytes that must move / GPU time)")
    ax.set_title(f"dmlgpu {report['dmlgpu_version']} on {report['device']} ({report['backend']}), "
                 f"{report['suite']} suite, {report['date'][:10]}\n% = of the in-run ceiling", fontsize=9)
    ax.legend(fontsize=8)
    ax.grid(axis="y", which="both", alpha=0.3)
    fig.tight_layout()
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(target, dpi=120)
    plt.close(fig)
