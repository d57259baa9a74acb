"""Calibration: ``tuning.py``'s candidates timed on the adapter in hand, and the choices kept
on disk.

A device that was given no tuning asks ``Calibration.tuning_for`` at each compile. The first
time an operator of a family of shapes (``plan.family_of``) is compiled, that family's probe
(``tuning.probe``) is timed under each of its candidates, interleaved in rounds (GPU timestamps
where the adapter has them, else the wall time of a run and its read), and the choice
(``tuning.choose``) is kept: for this process in the device, and for later ones in a JSON file
per adapter, driver, wgpu and dmlgpu version and candidate table, under the cache directory.
A cache that cannot be read is ignored and rewritten; several processes may write at once
(each writes a whole file under a new name, then renames it over the old one).

Settings (environment): ``DMLGPU_TUNE=0`` turns calibration off (the built-in defaults,
``tuning.default_tuning``); ``DMLGPU_TUNE=1`` calibrates on a CPU adapter too, which otherwise
keeps its built-in defaults unless ``dmlgpu tune`` was run; ``DMLGPU_CACHE_DIR`` moves the
cache (default: ``$XDG_CACHE_HOME/dmlgpu``, else ``~/.cache/dmlgpu``).
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import pathlib
import tempfile
import threading
import time
import weakref
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING

import numpy as np

from . import __version__
from .desc import ArgReduction, operator_for
from .errors import warn_at_caller
from .plan import Tuning, Tunings, family_of
from .tuning import (MARGIN, call_probe, candidates, choose, default_tuning, families, from_choices, probe, rate,
                     table_digest, tuning_changes)
from .types import AxisDirection, DataType, NanMode

if TYPE_CHECKING:
    from .device import Device

#: Rounds of a calibration's timing: each candidate timed once a round, in turn.
ROUNDS = 5


def setting() -> str:
    """``DMLGPU_TUNE`` read: "off", "on" (CPU adapters too) or "auto" (GPUs only)."""
    value = os.environ.get("DMLGPU_TUNE", "").strip().lower()
    if value in ("0", "off", "false", "no"):
        return "off"
    if value in ("1", "on", "true", "yes"):
        return "on"
    if value in ("", "auto"):
        return "auto"
    raise ValueError(f"DMLGPU_TUNE is {value!r}, but it must be 0 (off), 1 (on) or auto")


def cache_dir() -> pathlib.Path:
    """Where tuning caches live: ``DMLGPU_CACHE_DIR``, else ``$XDG_CACHE_HOME/dmlgpu``, else ``~/.cache/dmlgpu``."""
    if os.environ.get("DMLGPU_CACHE_DIR"):
        return pathlib.Path(os.environ["DMLGPU_CACHE_DIR"])
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return pathlib.Path(base) / "dmlgpu"


@dataclasses.dataclass
class FamilyReport:
    """What a calibration measured for one family: the probe, each candidate's changes and
    median seconds, and the index chosen."""

    family: str
    probe: str
    nbytes: int
    changes: list[dict]
    seconds: list[float]
    chosen: int
    cost_s: float  # wall seconds the family's calibration took
    parts_s: dict  # of which: compiling the candidates, making and uploading the probe, timing


class Calibration:
    """A device's tunings by family: chosen once per adapter, measured where no choice is kept."""

    def __init__(self, device: "Device", mode: str | None = None):
        # weak: the device holds its calibration, and a cycle would keep a closed device's
        # buffers until the garbage collector ran
        self.device: Device = weakref.proxy(device)
        caps = device.runner.capabilities
        self.caps = caps
        self.mode = mode or setting()
        self.default = default_tuning(caps)
        self.enabled = self.mode == "on" or (self.mode == "auto" and not caps.software)
        self.writes = self.mode != "off"  # the cache is neither read nor written when off
        self.path = cache_dir() / f"tunings-{_slug(device.name)}-{_digest(self.key())}.json"
        self._lock = threading.Lock()
        self._busy = False  # a calibration's own compiles plan with explicit tunings
        self.chosen: dict[str, dict] = self._read() if self.mode != "off" else {}
        self.reports: list[FamilyReport] = []

    def key(self) -> dict:
        """What a cache file holds choices for: the adapter, its driver, the versions and the table."""
        from .runtime import wgpu_version  # of the wgpu-native that compiles the shaders

        info = self.device.runner.adapter.info
        return {"adapter": info.get("device", ""), "vendor_id": info.get("vendor_id", 0),
                "device_id": info.get("device_id", 0), "backend": info.get("backend_type", ""),
                "driver": info.get("description", ""), "architecture": info.get("architecture", ""),
                "wgpu": wgpu_version(), "dmlgpu": __version__, "table": table_digest(self.caps),
                "capabilities": dataclasses.asdict(self.caps)}

    @property
    def tunings(self) -> Tunings:
        """The choices so far, as the planner takes them."""
        return from_choices(self.caps, self.chosen)

    def tuning_for(self, red: ArgReduction, nan_mode: NanMode = NanMode.IGNORE) -> Tuning:
        """The tuning for a reduction (run with ``nan_mode``): its family's choice, measured now
        if none is kept, on a probe shaped after this call where one can be
        (``tuning.call_probe``)."""
        family = family_of(red, self.caps, self.default)
        if family in self.chosen:
            return self.tunings.for_family(family)
        if not self.enabled or self._busy or len(candidates(self.caps, family)) < 2:
            return self.default
        with self._lock:
            if family not in self.chosen:
                self.calibrate([family], (red, nan_mode))
        return self.tunings.for_family(family)

    def calibrate(self, families: list[str], call: tuple[ArgReduction, NanMode] | None = None) -> list[FamilyReport]:
        """Measure these families now, keep the choices and write the cache; a family that
        cannot be measured (too little memory, say) keeps the default, with a warning.
        ``call``: the reduction (and NaN mode) of the call that asked: its family is measured
        on a probe shaped after it (``tuning.call_probe``) where there is one and it can be
        measured, else on the kernel family's own ``probe`` where that is of the same family
        (its bucket included); where neither is, the family keeps the default unmeasured."""
        done = []
        self._busy = True
        try:
            for family in families:
                own = probe(family, self.caps)  # the kernel family's probe: this family's where its bucket is
                probes = [(own, NanMode.IGNORE)] if family_of(own, self.caps, self.default) == family else []
                if call is not None and family_of(call[0], self.caps, self.default) == family:
                    shaped = call_probe(call[0], call[1], self.caps)
                    if shaped is not None:
                        probes.insert(0, (shaped, call[1]))
                if not probes:  # no shape of this family to measure on: it keeps the default, never losing
                    self.chosen[family] = {}
                    continue
                report, error = None, None
                for red, nan_mode in probes:  # the call's shape first, the family's own where it fails
                    try:  # (e.g. a feature level below the shaped probe's operator, too little memory)
                        report = self._measure(family, red, nan_mode)
                        break
                    except Exception as err:  # noqa: BLE001 - calibration must never break a call
                        error = err
                if report is None:
                    warn_at_caller(f"dmlgpu: calibrating {family} on {self.device.name!r} failed ({error}); "
                                   "it keeps the built-in tuning", UserWarning)
                    self.chosen[family] = {}
                    continue
                self.chosen[family] = report.changes[report.chosen]
                self.reports.append(report)
                done.append(report)
        finally:
            self._busy = False
        self._write()
        return done

    def _measure(self, family: str, red: ArgReduction, nan_mode: NanMode) -> FamilyReport:
        """Time the family's candidates on the probe ``red`` (run with ``nan_mode``)."""
        from .runtime import interleaved_gpu_times

        start = time.perf_counter()
        tunings = candidates(self.caps, family)
        desc = operator_for(red.op, red.input, red.axes, red.direction, red.output.data_type)
        device = self.device
        with ThreadPoolExecutor(len(tunings)) as pool:  # compiled at once, outside the runner's lock
            ops = list(pool.map(lambda tuning: device.compile_with(desc, tuning, nan_mode=nan_mode), tunings))
        compiled = time.perf_counter()
        seed, source = _probe_input(device, red)
        result = device.empty(ops[0].output_desc)
        uploaded = time.perf_counter()
        try:
            if "timestamp-query" in device.runner.features:
                steps = [op.passes(source, result)[0] for op in ops]
                warm = [float(t[0]) for t in interleaved_gpu_times(device.runner, steps, 1)]  # clocks up
                # a candidate twice as slow as the fastest is out: timed no further
                kept = [i for i, t in enumerate(warm) if t <= 2 * min(warm)]
                timed = dict(zip(kept, interleaved_gpu_times(device.runner, [steps[i] for i in kept], ROUNDS)))
                times = [timed.get(i, np.array([warm[i]])) for i in range(len(ops))]
            else:
                times = [np.array(t) for t in _wall_times(ops, source, result)]
        finally:
            for tensor in (seed, source, result):
                tensor.release()
        seconds = [float(np.median(t)) for t in times]
        done = time.perf_counter()
        return FamilyReport(family, _probe_text(red, nan_mode),
                            red.input.total_tensor_size_in_bytes,
                            [tuning_changes(t, self.default) for t in tunings], seconds, choose(seconds),
                            done - start, {"compile": compiled - start, "data": uploaded - compiled, "timing": done - uploaded})

    def _read(self) -> dict[str, dict]:
        try:
            text = json.loads(self.path.read_text())
            if text.get("key") != json.loads(json.dumps(self.key())):
                return {}
            return {str(f): dict(c) for f, c in text["chosen"].items()}
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            return {}  # none yet, or unreadable: measured again and rewritten

    def _write(self) -> None:
        """Keep every choice: those of other processes written meanwhile, and ours."""
        if not self.writes:
            return
        chosen = {**self._read(), **self.chosen}
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with tempfile.NamedTemporaryFile("w", dir=self.path.parent, prefix=".tunings-", suffix=".json",
                                             delete=False) as f:
                json.dump({"key": self.key(), "chosen": chosen}, f, indent=1, sort_keys=True)
            os.replace(f.name, self.path)
        except OSError as err:
            warn_at_caller(f"dmlgpu: could not write the tuning cache {self.path} ({err}); "
                           "the choices hold for this process only", UserWarning)


def tune_lines(device: "Device", only: list[str] | None = None) -> list[str]:
    """``dmlgpu tune``: measure these families (default: all) on the device now, keep the
    choices in its cache, and say what was chosen and why."""
    calibration = device.calibration
    if calibration is None:
        raise ValueError("the device was given a tuning, so it calibrates nothing")
    calibration.enabled = calibration.writes = True
    wanted = families(calibration.caps)
    if only:
        wanted = [f for f in wanted if any(part in f for part in only)]
    start = time.perf_counter()
    reports = calibration.calibrate(wanted)
    took = time.perf_counter() - start
    timed = "GPU time" if "timestamp-query" in device.runner.features else "wall time"
    lines = [f"adapter: {device.name} ({device.runner.backend}){' , a CPU adapter' if calibration.caps.software else ''}",
             f"cache: {calibration.path}",
             f"each candidate's {timed}, median of {ROUNDS} interleaved rounds; a candidate is chosen "
             f"over the default only when faster by more than {MARGIN:.0%}"]
    for r in reports:
        names = [_changes_text(c, calibration.caps) for c in r.changes]
        cells = [f"{n} {s * 1e6:.1f} us ({rate(r.nbytes, s)})" for n, s in zip(names, r.seconds)]
        parts = ", ".join(f"{k} {v:.2f}" for k, v in r.parts_s.items())
        lines.append(f"{r.family:15} {r.probe}: " + " | ".join(cells) + f"  -> {names[r.chosen]}  [{r.cost_s:.2f} s: {parts}]")
    lines.append(f"{len(reports)} families measured in {took:.2f} s")
    if calibration.mode == "off":
        lines.append("DMLGPU_TUNE=0: devices use the built-in tunings, not these choices, while it is set")
    elif calibration.caps.software and calibration.mode == "auto":
        lines.append("a CPU adapter: devices use these choices from now on (they do not measure on their own)")
    return lines


def _changes_text(changes: dict, caps) -> str:
    """A candidate's name: its changes to the adapter's default, or what it is."""
    if caps.software and from_choices(caps, {"f": changes}).for_family("f") == Tuning():
        return "the GPU default"
    return ",".join(f"{k}={v}" for k, v in changes.items()) or "default"


def _wall_times(ops, source, result) -> list:
    """Wall seconds of a run and its read, per candidate and round (no timestamp queries)."""
    times: list[list[float]] = [[] for _ in ops]
    for round_ in range(ROUNDS + 1):
        for i, op in enumerate(ops):
            began = time.perf_counter()
            op.run(source, result).numpy()
            if round_:  # the first round warms
                times[i].append(time.perf_counter() - began)
    return times


def _probe_input(device: "Device", red: ArgReduction):
    """(seed, input) of a probe on the GPU: a MiB of random values of the type's range (the
    seed), copied over the whole input on the GPU, which is quicker than making and uploading
    the input from the host. The seed must outlive the copies' submit."""
    desc = red.input
    dtype = desc.data_type.numpy
    rng = np.random.default_rng(0)
    count = min(math.prod(desc.sizes), (1 << 20) // dtype.itemsize)
    if np.issubdtype(dtype, np.floating):
        block = rng.random(count, dtype=np.float32).astype(dtype)
    else:
        info = np.iinfo(dtype)
        block = rng.integers(info.min, info.max, count, dtype=dtype, endpoint=True)
    seed = device.upload(block)
    source = device.empty(desc)
    (src,), (dst,) = seed.bindings, source.bindings
    device.runner.copy_repeated(src.buffer, block.nbytes, dst.buffer, desc.total_tensor_size_in_bytes & ~3)
    return seed, source


def _probe_text(red: ArgReduction, nan_mode: NanMode) -> str:
    """A probe as a report names it: its operator, type, sizes and axes, and what of its
    direction, output type and NaN mode is not the default."""
    text = f"{red.op} {red.input.data_type.name} {tuple(red.input.sizes)} axes {tuple(red.axes)}"
    if red.direction is not AxisDirection.INCREASING:
        text += f" {red.direction.value}"
    if red.op != "hardmax" and red.output.data_type is not DataType.UINT32:
        text += f" out {red.output.data_type.name}"
    return text + (f" nan {nan_mode.value}" if nan_mode is not NanMode.IGNORE else "")


def _slug(name: str) -> str:
    return "".join(c if c.isalnum() else "-" for c in name.lower()).strip("-")[:40] or "adapter"


def _digest(key: dict) -> str:
    import hashlib

    return hashlib.sha256(json.dumps(key, sort_keys=True, default=str).encode()).hexdigest()[:12]
