"""Compare planner tunings on one GPU, interleaved in one process, beside the read ceiling and torch.

    python benchmarks/compare_tunings.py [cases=rows,rows_64] "loads_per_thread=1" "subgroups=0" ...

Each argument is a set of ``dmlgpu.plan.Tuning`` fields (comma-separated ``name=value``; an empty
string is the default tuning), for every case, or for one case only when written ``CASE:fields``
(``cols:columns_unroll=4``); ``cases=`` limits the run to those cases of the full suite. The
variant ``calibrated`` is a ``Device`` that calibrates as a new user's does (an empty tuning
cache, the cases compiled in the suite's order), and its line says what it chose: run beside
``""`` (the built-in defaults, as ``DMLGPU_TUNE=0``), it is the tuner held to never losing
(docs/tuning.md). ``--json FILE`` keeps every sample. Every variant gets its own ``Device``; per case, five rounds time
each variant, the ceiling and torch (when importable) in turn, and the medians are printed as
GB/s, or for latency cases (``llm_argmax``) as microseconds of GPU time (no ceiling). Runs between machine starts differ by up to 20% (benchmarks/LOG.md): only compare
figures from one run.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile

import numpy as np

import dmlgpu
from dmlgpu import oracle
from dmlgpu.bench import Ceiling, find_peers, host_data, load_suite, warm_up
from dmlgpu.plan import Tuning
from dmlgpu.bench.gpu_timers import operator_gpu_times
from dmlgpu.tuning import tuning_changes, tuning_from_spec

CALIBRATED = "calibrated"


def torch_timer(x: np.ndarray, case):
    """Seconds of the case on torch (the bench's own torch peer), or None without it."""
    peer = next((p for p in find_peers() if p.name == "torch"), None)
    if peer is None:
        return None
    fn = peer.op(case, peer.upload(x))
    return lambda: float(np.median(peer.gpu_times(fn, 5)))


def make_device(spec: str) -> dmlgpu.Device:
    """A device with the tuning ``spec`` names; ``calibrated``: one that measures its own."""
    return dmlgpu.Device() if spec == CALIBRATED else dmlgpu.Device(tuning=tuning_from_spec(spec))


def main(specs: list[str], json_path: str | None = None) -> None:
    if any(s.rpartition(":")[2] == CALIBRATED for s in specs):
        os.environ["DMLGPU_CACHE_DIR"] = tempfile.mkdtemp(prefix="dmlgpu-tuning-")  # nothing measured before
        os.environ["DMLGPU_TUNE"] = "1"  # it calibrates, whatever the environment says (on a GPU, as by default)
    record: list[dict] = []
    wanted = [s[len("cases="):].split(",") for s in specs if s.startswith("cases=")]
    specs = [s for s in specs if not s.startswith("cases=")] or [""]
    per_case: dict[str, list[str]] = {}
    for spec in specs:
        case, _, fields = spec.rpartition(":")
        per_case.setdefault(case, []).append(fields)
    devices = {spec or "default": make_device(spec) for spec in dict.fromkeys(
        fields for fields_list in per_case.values() for fields in fields_list)}
    first = devices.get("default") or next(iter(devices.values()))
    rng = np.random.default_rng(0)
    warm_up(first.runner, 256 << 20, 1.5)
    print(f"{first.name}; GB/s (latency cases: us of GPU time), median of 5 interleaved rounds")
    if not set(per_case) - {""}:
        print(f"{'case':14} " + " ".join(f"{name:>18}" for name in devices) + "   ceiling     torch")
    for case in load_suite("full").cases:
        if wanted and case.name not in wanted[0]:
            continue
        need = case.descriptor().lower().input.total_tensor_size_in_bytes
        if need > first.runner.capabilities.max_storage_binding:
            print(f"{case.name:14} skipped: {need} bytes exceed one binding, which the ceiling reads whole")
            continue
        x = host_data(case, rng)
        runs = {}
        wanted_specs = per_case.get("", []) + per_case.get(case.name, [])
        if not wanted_specs:
            continue
        if set(per_case) - {""}:
            print(f"{case.name:14} " + " ".join(f"{spec or 'default':>18}" for spec in wanted_specs) + "   ceiling     torch")
        for name, device in ((spec or "default", devices[spec or "default"]) for spec in wanted_specs):
            compiled = device.compile(case.descriptor())
            source, result = device.upload(x, compiled.input_desc), device.empty(compiled.output_desc)
            operator_gpu_times(compiled, source, result, 2)
            runs[name] = (compiled, source, result)
        compiled, source, result = runs[next(iter(runs))]
        ceiling = None if case.latency else Ceiling(first.runner, "copy" if case.op == "hardmax" else "read",
                                                    source._buffer, compiled.input_desc.total_tensor_size_in_bytes)
        peer = torch_timer(x, case)
        times = {name: [] for name in [*runs, "ceiling", "torch"]}
        for _ in range(5):
            for name, (c, s, r) in runs.items():
                times[name].append(np.median(operator_gpu_times(c, s, r, 3)))
            if ceiling:
                times["ceiling"].append(np.median(ceiling.gpu_times(3)))
            if peer:
                times["torch"].append(peer())
        nbytes = x.nbytes * (2 if case.op == "hardmax" else 1)

        def rate(seconds, latency=case.latency, nbytes=nbytes) -> str:  # GB/s, or microseconds for a latency case
            return f"{np.median(seconds) * 1e6:7.1f}us" if latency else f"{nbytes / np.median(seconds) / 1e9:9.0f}"

        want = oracle.evaluate(case.descriptor(), x)
        cells, chose, correct = [], "", {}
        for name, (c, _s, r) in runs.items():
            ok = correct[name] = bool(np.array_equal(r.numpy(), want.astype(r.dtype)))
            cells.append(f"{rate(times[name]).strip():>8} {c.plan.kernel[7:]:>6}/{c.plan.segment:<3}{'' if ok else '!'}")
            if name == CALIBRATED:
                chose = f"   calibrated chose {tuning_changes(c.tuning, Tuning()) or 'the defaults'}"
        torch_cell = rate(times["torch"]) if peer else "        -"
        ceiling_cell = f"{ceiling.bytes / np.median(times['ceiling']) / 1e9:9.0f}" if ceiling else "        -"
        print(f"{case.name:14} " + " ".join(cells) + f" {ceiling_cell} {torch_cell}{chose}")
        record.append({"case": case.name, "bytes": nbytes, "ceiling_bytes": ceiling.bytes if ceiling else None,
                       "latency": case.latency, "correct": correct,
                       "chose": chose.strip(), "seconds": {k: [float(t) for t in v] for k, v in times.items() if v}})
        for _c, s, r in runs.values():
            s.release()
            r.release()
        if ceiling:
            ceiling.release()
    if json_path:
        with open(json_path, "w") as f:
            json.dump({"device": first.name, "specs": specs, "cases": record}, f, indent=1)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("specs", nargs="*", metavar="SPEC",
                        help='a tuning: comma-separated dmlgpu.plan.Tuning fields name=value ("" is the default '
                             'tuning; "calibrated": a device that measures its own); or cases=NAME,... to run only '
                             'those cases of the full suite')
    parser.add_argument("--json", help="write every sample here")
    args = parser.parse_args()
    main(args.specs, args.json)
