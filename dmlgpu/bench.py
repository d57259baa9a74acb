"""The benchmark behind ``dmlgpu bench``: each case's GPU time beside an in-run ceiling and the peers.

How it measures (shared/PERFORMANCE.md, "How to measure"):

- Once per run, a few hundred milliseconds of real work (the read-ceiling kernel) before
  anything is timed: the GPU starts at a low clock and ramps under load.
- Per case, every variant is dispatched twice untimed, then the variants (ours, the ceiling
  kernel, torch / CuPy when importable) are timed interleaved, in rounds, and medians are
  reported. GPU times come from timestamp queries (CUDA events for the peers).
- GB/s = the bytes that must move (the input read once, the output written once) / GPU time.
  Peers are divided by the same byte count, so "x torch" is simply their time over ours.
- The ceiling is a standalone WGSL kernel over the same input buffer in the same process:
  ``shaders/read_ceiling.wgsl`` (16-byte loads, grid-stride) for ARGMAX/ARGMIN,
  ``shaders/copy_ceiling.wgsl`` (read + write the same bytes) for HARDMAX.
- End-to-end wall time (NumPy in, NumPy out, through ``dmlgpu.argmax`` and friends) is
  reported apart, and only for small inputs and latency cases; latency cases also time a
  GPU-resident input with the result read back to NumPy.
- Each result is checked once against the oracle (``dmlgpu.oracle``); a wrong answer fails the run.

Suites are data: ``benchmarks/suites/<name>.json``, shipped as the package ``dmlgpu.suites``.
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import datetime
import json
import math
import os
import platform
import statistics
import subprocess
import sys
import time
from importlib import resources
from pathlib import Path
from typing import Callable

import numpy as np

from . import oracle
from .device import Tensor
from .desc import (
    ActivationHardmax1OperatorDesc,
    ArgMaxOperatorDesc,
    ArgMinOperatorDesc,
    TensorDesc,
    lower,
)
from .errors import DescriptorError
from .runtime.transfers import copy_in_parts
from .types import DataType
from .wgsl import template, unroll

OPS = ("argmax", "argmin", "hardmax")

#: End-to-end (NumPy in, NumPy out) timing only for inputs up to this size: above it the
#: figure measures the bus and host copies, not the library.
E2E_MAX_BYTES = 64 << 20
#: Wall-clock seconds spent on each end-to-end measurement (at least 3 calls, at most 100);
#: latency cases get more calls, so that their p99 means something.
E2E_BUDGET_S = 0.5
LATENCY_BUDGET_S = 1.0
LATENCY_MAX_CALLS = 2000
#: Timed rounds of each transfer case (whole NumPy calls of 256 MiB to 1 GiB), and the calls
#: of a back-to-back resident loop.
TRANSFER_ROUNDS = 5
LOOP_CALLS = 200
#: Without --repeats, fewer repetitions when one dispatch is slow: about this many GPU
#: seconds per variant and case (at least 3 repetitions).
VARIANT_BUDGET_S = 2.0
#: Timed rounds per case; the variants take turns within each round.
ROUNDS = 5

#: copy_ceiling.wgsl's UNROLL: each thread's loads in flight (its loops are written out for it).
COPY_CEILING_UNROLL = 4
#: The ceiling kernels' workgroup size (their WG constant) and grid.
CEILING_WG = 256
#: The most workgroups by kind. The copy ceiling takes a thread per CEILING_LOADS_PER_THREAD
#: quads up to the grid's limit: on the H100, 1 GiB copied with 65535 workgroups at 2979 GB/s
#: against 2849 with 4096 (any UNROLL alike), torch ``copy_`` 2884 in the same process. The
#: read ceiling writes a word a thread, so it keeps few.
CEILING_MAX_GROUPS = {"read": 4096, "copy": 65535}
CEILING_LOADS_PER_THREAD = 4


# ----------------------------------------------------------------------------- cases


@dataclasses.dataclass(frozen=True)
class Case:
    """One benchmark case: an operator over a packed tensor of one type and shape."""

    name: str
    op: str  # "argmax", "argmin" or "hardmax"
    dtype: DataType
    shape: tuple[int, ...]
    axes: tuple[int, ...]
    latency: bool = False  # report as a latency (one small call), not a bandwidth
    note: str = ""
    #: "gpu": GPU time beside the ceiling and the peers; "numpy": whole NumPy-in, NumPy-out
    #: calls beside NumPy on the CPU and torch's pageable path, with the upload (and read-back)
    #: rate alone; "loop": back-to-back GPU-resident calls against what their GPU time allows.
    kind: str = "gpu"

    _KEYS = ("name", "op", "dtype", "shape", "axes", "latency", "note", "kind")

    def __post_init__(self):
        if self.kind not in ("gpu", "numpy", "loop"):
            raise ValueError(f"case {self.name!r}: kind is {self.kind!r}, but it must be gpu, numpy or loop")
        if self.op not in OPS:
            raise ValueError(f"case {self.name!r}: op is {self.op!r}, but it must be one of {', '.join(OPS)}")
        object.__setattr__(self, "dtype", DataType.parse(self.dtype, f"case {self.name!r}: dtype"))
        object.__setattr__(self, "shape", tuple(int(n) for n in self.shape))
        object.__setattr__(self, "axes", tuple(sorted(int(a) for a in self.axes)))

    @classmethod
    def from_json(cls, d: dict) -> "Case":
        unknown = set(d) - set(cls._KEYS)
        if unknown:
            raise ValueError(f"case {d.get('name')!r} has unknown keys {sorted(unknown)}; known: {', '.join(cls._KEYS)}")
        return cls(**d)

    def descriptor(self):
        """The operator descriptor (packed input, output inferred)."""
        inp = TensorDesc(self.dtype, self.shape)
        if self.op == "hardmax":
            return ActivationHardmax1OperatorDesc(inp, None, self.axes)
        cls = ArgMaxOperatorDesc if self.op == "argmax" else ArgMinOperatorDesc
        return cls(inp, None, self.axes)

    @property
    def kept(self) -> list[int]:
        return [d for d in range(len(self.shape)) if d not in self.axes]

    @property
    def label(self) -> str:
        short = {"FLOAT32": "f32", "FLOAT16": "f16"}.get(self.dtype.name, self.dtype.name.lower())
        axes = "all" if len(self.axes) == len(self.shape) and len(self.shape) > 1 else ",".join(map(str, self.axes))
        op = "" if self.op == "argmax" else f"{self.op} "
        return f"{op}{short} ({','.join(map(str, self.shape))}) ax {axes}"

    def to_json(self) -> dict:
        return {"name": self.name, "op": self.op, "dtype": self.dtype.name, "shape": list(self.shape),
                "axes": list(self.axes), "latency": self.latency, "note": self.note, "kind": self.kind}


@dataclasses.dataclass(frozen=True)
class Suite:
    name: str
    description: str
    repeats: int
    warmup_s: float
    cases: tuple[Case, ...]


def load_suite(name: str) -> Suite:
    """``benchmarks/suites/<name>.json``, through the package ``dmlgpu.suites``."""
    data = json.loads(resources.files("dmlgpu.suites").joinpath(f"{name}.json").read_text())
    transfers = [Case.from_json({"kind": "numpy", **c}) for c in data.get("transfers", [])]
    return Suite(name, data.get("description", ""), int(data["repeats"]), float(data["warmup_s"]),
                 tuple(Case.from_json(c) for c in data["cases"]) + tuple(transfers))


def host_data(case: Case, rng: np.random.Generator) -> np.ndarray:
    """Random input for a case, drawn so that ties at the extremes are rare.

    Floats come from Student's t with 3 degrees of freedom: its heavy tails keep the
    largest (and smallest) values of a slice far apart, so even FLOAT16, with 1024 steps
    per octave, seldom ties. Integers are uniform over the type's range: for 8- and
    16-bit types, ties are then certain in long slices (they are broken by the first index).
    """
    n = math.prod(case.shape)
    dtype = case.dtype.numpy
    if case.dtype.is_float:
        values = rng.standard_t(3, size=n).astype(dtype)
    else:
        info = np.iinfo(dtype)
        values = rng.integers(info.min, info.max, size=n, dtype=dtype, endpoint=True)
    return values.reshape(case.shape)


# ----------------------------------------------------------------------------- ceilings


def _round16(n: int) -> int:
    return (n + 15) & ~15


class Ceiling:
    """A ceiling kernel (``shaders/<kind>_ceiling.wgsl``) bound to the first ``nbytes`` of ``src``.

    ``kind`` "read": reads the bytes in 16-byte loads and writes one word per thread;
    "copy": reads the bytes and writes them to a scratch buffer. ``bytes`` counts every
    byte the kernel moves, the way the operators' bytes are counted.
    """

    def __init__(self, runner, kind: str, src, nbytes: int, readable: bool = False):
        if kind not in ("read", "copy"):
            raise ValueError(f"kind is {kind!r}, but it must be 'read' or 'copy'")
        self.runner, self.kind, self.src = runner, kind, src
        vec4s = nbytes // 16
        groups = max(1, min(math.ceil(vec4s / (CEILING_WG * CEILING_LOADS_PER_THREAD)), CEILING_MAX_GROUPS[kind],
                             runner.capabilities.max_workgroups_per_dim))
        self.grid = (groups, 1, 1)
        text = f"const UNROLL: u32 = {COPY_CEILING_UNROLL}u;\n" + template(f"{kind}_ceiling")
        self.pipeline = runner.programs.pipeline(unroll(text))
        self.params = runner.programs.uniform(np.array([vec4s, 0, 0, 0], np.uint32))
        dst_bytes = groups * CEILING_WG * 4 if kind == "read" else vec4s * 16
        self.dst = runner.memory.storage(dst_bytes, readable=readable)  # (readable: see Memory.storage)
        self.bytes = vec4s * 16 + dst_bytes
        # bound once: a bind group made per call would count in the latency floor (40 us on
        # the H100), which no operator call pays (operators cache theirs)
        self.steps = [(self.pipeline, runner.programs.bind(self.params, self.src, self.dst), self.grid)]

    def run(self) -> None:
        self.runner.dispatch(self.steps)

    def gpu_times(self, repeats: int) -> np.ndarray:
        return self.runner.gpu_times(self.steps, repeats=repeats)

    def release(self) -> None:
        self.runner.memory.free(self.dst)
        self.runner.memory.free(self.params)


def warm_up(runner, nbytes: int, seconds: float) -> int:
    """Keep the GPU reading, back to back, for about ``seconds`` of wall time, so that its
    clock has ramped up before the first timing (PERFORMANCE.md); returns the reads made."""
    nbytes = max(16, min(nbytes, runner.capabilities.max_storage_binding) & ~15)
    src = runner.memory.storage(nbytes)
    ceiling = Ceiling(runner, "read", src, nbytes)
    steps, reads, start = ceiling.steps, 0, time.perf_counter()
    try:
        while time.perf_counter() - start < seconds:
            for _ in range(20):  # queued without waits; the read below waits for them all
                runner.dispatch(steps)
            runner.transfers.read(ceiling.dst, 4)
            reads += 20
    finally:
        ceiling.release()
        runner.memory.free(src)
    return reads


# ----------------------------------------------------------------------------- our operator


# ----------------------------------------------------------------------------- peers


class TorchPeer:
    """torch on CUDA: the same data, timed with CUDA events."""

    name = "torch"

    def __init__(self):
        import torch

        if not torch.cuda.is_available():
            raise ImportError("torch has no CUDA device")
        self.torch = torch
        self.version = torch.__version__
        self.device_name = torch.cuda.get_device_name()

    def upload(self, x: np.ndarray):
        return self.torch.from_numpy(np.ascontiguousarray(x)).cuda()

    def op(self, case: Case, x) -> Callable:
        """The case's operator on GPU-resident ``x``; torch has no multi-axis argmax, so
        several axes are permuted to the end and flattened first (a copy unless they already are)."""
        t, axes, kept = self.torch, list(case.axes), case.kept
        rows = math.prod(case.shape[d] for d in kept)
        perm = kept + axes
        if case.op in ("argmax", "argmin"):
            f = t.argmax if case.op == "argmax" else t.argmin
            if len(axes) == 1:
                return lambda: f(x, dim=axes[0])
            if not kept:
                return lambda: f(x.reshape(-1))
            return lambda: f(x.permute(perm).reshape(rows, -1), dim=1)
        if len(axes) == 1:
            a = axes[0]
            return lambda: t.zeros_like(x).scatter_(a, x.argmax(dim=a, keepdim=True), 1)
        inverse = [int(i) for i in np.argsort(perm)]

        def hardmax():
            flat = x.permute(perm).reshape(rows, -1)
            out = t.zeros_like(flat).scatter_(1, flat.argmax(dim=1, keepdim=True), 1)
            return out.reshape([case.shape[d] for d in perm]).permute(inverse).contiguous()

        return hardmax

    def gpu_times(self, fn: Callable, repeats: int) -> np.ndarray:
        events = [(self.torch.cuda.Event(enable_timing=True), self.torch.cuda.Event(enable_timing=True))
                  for _ in range(repeats)]
        for start, end in events:
            start.record()
            fn()
            end.record()
        events[-1][1].synchronize()
        return np.array([start.elapsed_time(end) for start, end in events]) * 1e-3

    def to_numpy(self, result) -> np.ndarray:
        return result.cpu().numpy()

    def pageable(self, case: Case, x: np.ndarray) -> Callable:
        """The case from a NumPy array in pageable host memory to a NumPy result, as a torch
        user writes it: ``torch.from_numpy(x).cuda()``, the operator, ``.cpu()``."""
        return lambda: self.to_numpy(self.op(case, self.torch.from_numpy(x).cuda())())

    def references(self, nbytes: int) -> dict:
        """GB/s of the physical references on ``nbytes`` of FLOAT32, timed like the cases:
        ``copy_`` (read + write counted), ``amax`` over rows of 65536 and ``sum``."""
        t = self.torch
        n = nbytes // 4 // 65536 * 65536
        x = t.randn(n // 65536, 65536, device="cuda")
        y = t.empty_like(x)
        refs = {"copy_": (lambda: y.copy_(x), 2 * 4 * n), "amax_rows": (lambda: x.amax(dim=1), 4 * n),  # noqa: F821
                "sum": (lambda: x.sum(), 4 * n)}  # noqa: F821  (called before the `del x, y` below)
        out = {}
        for name, (fn, moved) in refs.items():
            self.gpu_times(fn, 3)
            out[name] = moved / _median(self.gpu_times(fn, 20)) / 1e9
        del x, y
        self.release()
        return out

    def release(self) -> None:
        self.torch.cuda.synchronize()
        self.torch.cuda.empty_cache()


class CupyPeer:
    """CuPy: the same data, timed with CUDA events. CUPY_ACCELERATORS (e.g. "cub") decides
    which reduction kernels it uses, and so its speed; it is recorded with the results."""

    name = "cupy"

    def __init__(self):
        # As a CuPy user who cares about speed runs it: with CUB's reductions, unless the
        # environment says otherwise (read when CuPy is imported).
        os.environ.setdefault("CUPY_ACCELERATORS", "cub")
        import cupy

        if cupy.cuda.runtime.getDeviceCount() < 1:
            raise ImportError("CuPy sees no CUDA device")
        self.cupy = cupy
        self.version = f"{cupy.__version__} (CUPY_ACCELERATORS={os.environ.get('CUPY_ACCELERATORS', '')!r})"
        props = cupy.cuda.runtime.getDeviceProperties(cupy.cuda.Device().id)
        name = props.get("name", b"?")
        self.device_name = name.decode() if isinstance(name, bytes) else str(name)

    def upload(self, x: np.ndarray):
        return self.cupy.asarray(x)

    def op(self, case: Case, x) -> Callable:
        cp, axes, kept = self.cupy, list(case.axes), case.kept
        rows = math.prod(case.shape[d] for d in kept)
        perm = kept + axes
        if case.op in ("argmax", "argmin"):
            f = cp.argmax if case.op == "argmax" else cp.argmin
            if len(axes) == 1:
                return lambda: f(x, axis=axes[0])
            if not kept:
                return lambda: f(x)
            return lambda: f(x.transpose(perm).reshape(rows, -1), axis=1)
        inverse = [int(i) for i in np.argsort(perm)]

        def hardmax():
            flat = x.transpose(perm).reshape(rows, -1)
            out = cp.zeros_like(flat)
            out[cp.arange(rows), flat.argmax(axis=1)] = 1
            return cp.ascontiguousarray(out.reshape([case.shape[d] for d in perm]).transpose(inverse))

        return hardmax

    def gpu_times(self, fn: Callable, repeats: int) -> np.ndarray:
        cuda = self.cupy.cuda
        events = [(cuda.Event(), cuda.Event()) for _ in range(repeats)]
        for start, end in events:
            start.record()
            fn()
            end.record()
        events[-1][1].synchronize()
        return np.array([cuda.get_elapsed_time(start, end) for start, end in events]) * 1e-3

    def to_numpy(self, result) -> np.ndarray:
        return self.cupy.asnumpy(result)

    def release(self) -> None:
        self.cupy.cuda.Device().synchronize()
        self.cupy.get_default_memory_pool().free_all_blocks()


def find_peers() -> list:
    """The peers that can run here: torch with CUDA, CuPy with a device."""
    peers = []
    for cls in (TorchPeer, CupyPeer):
        try:
            peers.append(cls())
        except Exception:  # not installed, no CUDA, or a broken install: no peer
            pass
    return peers


# ----------------------------------------------------------------------------- timing


def interleaved(variants: dict[str, Callable[[int], np.ndarray]], repeats) -> dict[str, np.ndarray]:
    """Time the variants in rounds, taking turns (the order rotates each round), ``repeats``
    samples each (an int, or a dict of them by name); ``variants`` maps a name to a function
    that takes ``count`` samples (``gpu_times(count)``, a ``call_timer``)."""
    names = list(variants)
    counts = repeats if isinstance(repeats, dict) else dict.fromkeys(names, repeats)
    rounds = max(1, min(ROUNDS, max(counts.values())))
    samples: dict[str, list] = {n: [] for n in names}
    for r in range(rounds):
        for name in names[r % len(names):] + names[:r % len(names)]:
            count = counts[name] // rounds + (r < counts[name] % rounds)
            if count:
                samples[name].extend(variants[name](count))
    return {n: np.array(s) for n, s in samples.items()}


def _plan_summary(plan) -> dict:
    """What the planner chose, as plain data (the fields it has; the planner is still growing)."""
    fields = ("kernel", "loader", "split", "chunk", "grid", "merge_grid")
    return {f: (list(v) if isinstance(v, tuple) else v) for f in fields if (v := getattr(plan, f, None)) is not None}


def _median(a) -> float:
    return float(statistics.median(a))


def _latency(times: np.ndarray) -> dict:
    """p50 and p99 of wall times, in seconds."""
    return {"p50_s": float(np.percentile(times, 50)), "p99_s": float(np.percentile(times, 99)), "calls": len(times)}


def interleaved_walls(timers: dict[str, Callable[[int], np.ndarray]], budget_s: float, most: int) -> dict:
    """Wall seconds of calls of each timer, sampled in interleaved rounds (``interleaved``),
    so that a spell of a slow host falls on all of them alike; ``timers`` maps a name to
    ``timer(count)``, which times ``count`` calls and returns their seconds. Each gets as many
    calls as ``budget_s`` allows by its first three (3..``most``), which are not kept."""
    counts = {name: max(3, min(most, int(budget_s / max(float(np.median(timer(3))), 1e-6))))
              for name, timer in timers.items()}
    return interleaved(timers, counts)


def call_timer(fn: Callable) -> Callable[[int], np.ndarray]:
    """A timer for ``interleaved_walls``: the wall seconds of each of ``count`` calls of ``fn``."""

    def timer(count: int) -> np.ndarray:
        times = np.empty(count)
        for i in range(count):
            start = time.perf_counter()
            fn()
            times[i] = time.perf_counter() - start
        return times

    return timer


class FloorTimer:
    """The bare floor under any small call, through the runner: one dispatch of a
    1-workgroup kernel and a 16-byte read-back (record, submit, map, copy out), its output
    where a small output of ours is (``Runner.in_place``: in mappable memory). A timer for
    ``interleaved_walls``; ``release()`` when done."""

    def __init__(self, runner):
        self.runner = runner
        self.src = runner.memory.storage(16)
        self.ceiling = Ceiling(runner, "read", self.src, 16, readable=runner.in_place)
        self.out = np.empty(16, np.uint8)
        self.timer = call_timer(self.once)

    def once(self) -> None:
        self.runner.dispatch(self.ceiling.steps)
        self.runner.transfers.read_into(self.ceiling.dst, self.out)

    def __call__(self, count: int) -> np.ndarray:
        return self.timer(count)

    def release(self) -> None:
        self.ceiling.release()
        self.runner.memory.free(self.src)


def native_floor_timer(runner, upload: np.ndarray | None = None):
    """A timer for ``interleaved_walls`` of the same round trip straight through wgpu-native,
    with nothing of ours in between (``Runner.bare_round_trips``), after a queue write of
    ``upload`` if given: what bounds a small call on this machine. None on the public path."""
    if runner.bare_round_trips(1, upload) is None:
        return None
    return lambda count: runner.bare_round_trips(count, upload)


# ----------------------------------------------------------------------------- one case


class Bench:
    """One run: the device, the peers, the host data cache, and the results so far."""

    def __init__(self, device, suite: Suite, repeats: int | None, peers: list):
        self.device = device
        self.runner = device.runner
        self.suite = suite
        self.repeats = repeats
        self.peers = peers
        self.rng = np.random.default_rng(0)
        self._host_key = None
        self._host = None

    def host(self, case: Case) -> np.ndarray:
        """Random data for a case, generated once and reused by cases of the same type and size."""
        key = (case.dtype, math.prod(case.shape))
        if key != self._host_key:
            self._host = None  # free the last one first
            self._host = host_data(case, self.rng).reshape(-1)
            self._host_key = key
        return self._host.reshape(case.shape)

    def run_case(self, case: Case) -> dict:
        result = {**case.to_json(), "status": "ok"}
        red = lower(case.descriptor())
        caps = self.runner.capabilities
        need = max(red.input.total_tensor_size_in_bytes, red.output.total_tensor_size_in_bytes)
        if need > caps.max_storage_binding:
            return {**result, "status": "skipped",
                    "reason": f"{need} bytes exceed one binding ({caps.max_storage_binding}), which the bench "
                              f"and its ceiling read whole; see benchmarks/beyond_one_binding.py"}
        try:
            compiled = self.device.compile(case.descriptor())
        except DescriptorError as err:
            return {**result, "status": "skipped", "reason": str(err)}
        result["plan"] = _plan_summary(compiled.plan)
        nbytes = red.input.total_tensor_size_in_bytes + red.output.total_tensor_size_in_bytes
        result["bytes"] = nbytes

        x = self.host(case)
        buffers, variants, peer_data = [], {}, {}
        try:
            src = self.runner.memory.storage(_round16(red.input.total_tensor_size_in_bytes))
            buffers.append(src)
            self.runner.transfers.write(src, x)
            dst = self.runner.memory.storage(_round16(red.output.total_tensor_size_in_bytes))
            buffers.append(dst)
            inp, out = Tensor(self.device, red.input, [src]), Tensor(self.device, red.output, [dst])
            ceiling = Ceiling(self.runner, "copy" if case.op == "hardmax" else "read", src,
                              red.input.total_tensor_size_in_bytes)
            buffers += [ceiling.dst, ceiling.params]

            def ours(n):  # HARDMAX's clear of its output is timed with it
                return compiled.gpu_times(inp, out, n)
            variants.update(ours=ours, ceiling=ceiling.gpu_times)
            # Untimed: two of each variant (the first also compiles and allocates).
            first = {name: variant(2) for name, variant in variants.items()}
            peer_errors = {}
            for peer in self.peers:
                try:
                    data = peer.upload(x)
                    fn = peer.op(case, data)
                    variant = variants[peer.name] = lambda n, peer=peer, fn=fn: peer.gpu_times(fn, n)
                    first[peer.name] = variant(2)
                    peer_data[peer.name] = (data, fn)
                except Exception as err:  # a peer that cannot do a case must not lose ours
                    variants.pop(peer.name, None)
                    peer_errors[peer.name] = {"error": f"{type(err).__name__}: {err}"}
            live = [peer for peer in self.peers if peer.name in peer_data]

            # Our answer, checked once.
            compiled.run(inp, out)
            got = out.numpy()
            want = oracle.evaluate(case.descriptor(), x)
            result["correct"] = bool(got.shape == want.shape and np.array_equal(got, want.astype(got.dtype)))
            del got, want

            repeats = self.repeats
            if repeats is None:
                slowest = max(_median(t) for t in first.values())
                repeats = max(3, min(self.suite.repeats, int(VARIANT_BUDGET_S / max(slowest, 1e-9))))
            result["repeats"] = repeats
            samples = interleaved(variants, repeats)

            ours_s = _median(samples["ours"])
            result.update(gpu_s=ours_s, gpu_min_s=float(samples["ours"].min()), gbps=nbytes / ours_s / 1e9,
                          gpu_samples_s=samples["ours"].tolist())
            ceiling_s = _median(samples["ceiling"])
            result["ceiling"] = {"kernel": f"{ceiling.kind}_ceiling", "bytes": ceiling.bytes, "gpu_s": ceiling_s,
                                 "gbps": ceiling.bytes / ceiling_s / 1e9, "gpu_samples_s": samples["ceiling"].tolist()}
            result["pct_of_ceiling"] = 100.0 * result["gbps"] / result["ceiling"]["gbps"]

            result["peers"] = dict(peer_errors)
            for peer in live:
                peer_s = _median(samples[peer.name])
                result["peers"][peer.name] = {"gpu_s": peer_s, "gbps": nbytes / peer_s / 1e9, "speedup": peer_s / ours_s,
                                              "gpu_samples_s": samples[peer.name].tolist()}

            result["e2e_s"] = result["e2e_resident_s"] = None
            if case.latency or red.input.total_tensor_size_in_bytes <= E2E_MAX_BYTES:
                self._end_to_end(case, x, inp, result, live, peer_data)
        finally:
            variants.clear()  # the peers' closures hold their copies of the input
            peer_data.clear()
            for peer in self.peers:
                peer.release()
            for buffer in buffers:
                self.runner.memory.free(buffer)
        return result

    def _end_to_end(self, case: Case, x: np.ndarray, inp, result: dict, peers: list, peer_data: dict) -> None:
        """Wall times of whole calls: NumPy in and out, beside the peers'; for latency cases
        also a GPU-resident input with the result read back to NumPy, p50 and p99 of many
        calls, the bare floor of a dispatch and read-back through the same runner and
        straight through wgpu-native: all of them sampled in interleaved rounds
        (``interleaved_walls``)."""
        import dmlgpu

        op = getattr(dmlgpu, case.op)
        budget, most = (LATENCY_BUDGET_S, LATENCY_MAX_CALLS) if case.latency else (E2E_BUDGET_S, 100)
        timers = {"numpy": call_timer(lambda: op(x, case.axes, device=self.device))}
        floor = None
        if case.latency:
            def resident():
                r = op(inp, case.axes, device=self.device)
                r.numpy()
                r.release()

            timers["resident"] = call_timer(resident)
            floor = timers["floor"] = FloorTimer(self.runner)
            for name, upload in (("native_floor", None), ("native_floor_upload", x)):
                native = native_floor_timer(self.runner, None if upload is None else
                                            np.ascontiguousarray(upload).reshape(-1).view(np.uint8))
                if native is not None:
                    timers[name] = native
        for peer in peers:
            data, fn = peer_data[peer.name]
            timers[peer.name + " numpy"] = call_timer(lambda peer=peer: peer.to_numpy(peer.op(case, peer.upload(x))()))
            if case.latency:
                timers[peer.name + " resident"] = call_timer(lambda peer=peer, fn=fn: peer.to_numpy(fn()))
        try:
            walls = interleaved_walls(timers, budget, most)
        finally:
            if floor is not None:
                floor.release()
        result["e2e_s"] = _median(walls["numpy"])
        if case.latency:
            result["e2e_resident_s"] = _median(walls["resident"])
            result["latency_times"] = {name: _latency(walls[name]) for name in
                                       ("numpy", "resident", "floor", "native_floor", "native_floor_upload")
                                       if name in walls}
        for peer in peers:
            entry = result["peers"][peer.name]
            entry["e2e_s"] = _median(walls[peer.name + " numpy"])
            entry["e2e_resident_s"] = None
            if case.latency:
                entry["e2e_resident_s"] = _median(walls[peer.name + " resident"])
                entry["latency_times"] = {"numpy": _latency(walls[peer.name + " numpy"]),
                                          "resident": _latency(walls[peer.name + " resident"])}

    # ------------------------------------------------------------------ transfers

    def run_transfer(self, case: Case) -> dict:
        """A whole NumPy-in, NumPy-out call on a large input, beside NumPy on the CPU and torch's
        pageable path (interleaved rounds of wall times), with the upload alone and the
        read-back alone; or a loop of back-to-back resident calls against their GPU time."""
        import dmlgpu

        result = {**case.to_json(), "status": "ok"}
        x = self.host(case)
        desc = case.descriptor()
        want = oracle.evaluate(desc, x)
        op = getattr(dmlgpu, case.op)
        result["bytes"] = x.nbytes
        if case.kind == "loop":
            return self._loop(case, x, want, result)
        got = op(x, case.axes, device=self.device)
        result["correct"] = bool(np.array_equal(got, want.astype(got.dtype)))
        del got
        calls = {"ours": lambda: op(x, case.axes, device=self.device), "numpy": lambda: _numpy_op(case, x)}
        torch = next((p for p in self.peers if p.name == "torch"), None)
        if torch is not None:
            calls["torch_pageable"] = torch.pageable(case, x)

        def upload():
            self.device.upload(x).release()

        calls["upload"] = upload
        resident = self.device.upload(x)
        out = op(resident, case.axes, device=self.device)
        calls["read_back"] = out.numpy
        fill, fill_threads = None, self.runner.transfers.copy_threads[False]  # as many threads as the runner's reads
        if case.op == "hardmax":  # the read-back's bound: a new array filled from host memory
            fill = concurrent.futures.ThreadPoolExecutor(fill_threads)
            source = x.reshape(-1).view(np.uint8)
            calls["host_fill"] = lambda: _fill_new(source, fill, fill_threads)
        try:
            for fn in calls.values():  # untimed once: compiles, allocates, warms the paths
                fn()
            samples = {name: [] for name in calls}
            for r in range(TRANSFER_ROUNDS):
                names = list(calls)
                for name in names[r % len(names):] + names[:r % len(names)]:
                    start = time.perf_counter()
                    calls[name]()
                    samples[name].append(time.perf_counter() - start)
        finally:
            if fill is not None:
                fill.shutdown()
            out.release()
            resident.release()
            if torch is not None:
                torch.release()
        medians = {name: _median(t) for name, t in samples.items()}
        result.update(e2e_s=medians["ours"], numpy_s=medians["numpy"], samples_s=samples,
                      gbps=x.nbytes / medians["ours"] / 1e9,
                      upload_gbps=x.nbytes / medians["upload"] / 1e9,
                      read_back_gbps=want.nbytes / medians["read_back"] / 1e9,
                      **({"host_fill_gbps": x.nbytes / medians["host_fill"] / 1e9, "host_fill_threads": fill_threads}
                         if fill is not None else {}),
                      x_numpy=medians["numpy"] / medians["ours"])
        if "torch_pageable" in medians:
            result.update(torch_pageable_s=medians["torch_pageable"],
                          x_torch_pageable=medians["torch_pageable"] / medians["ours"])
        return result

    def _loop(self, case: Case, x: np.ndarray, want: np.ndarray, result: dict) -> dict:
        """LOOP_CALLS GPU-resident calls back to back (each result released), then one read:
        the wall time per call against the GPU time of one call."""
        import dmlgpu

        op = getattr(dmlgpu, case.op)
        inp = self.device.upload(x)
        try:
            first = op(inp, case.axes, device=self.device)
            result["correct"] = bool(np.array_equal(first.numpy(), want.astype(first.dtype)))
            gpu_s = _median(self.device.compile(case.descriptor()).gpu_times(inp, first, 10))
            first.release()
            walls = []
            for _ in range(3):
                start = time.perf_counter()
                for i in range(LOOP_CALLS):
                    last = op(inp, case.axes, device=self.device)
                    if i < LOOP_CALLS - 1:
                        last.release()
                last.numpy()  # waits for every call before it
                last.release()
                walls.append((time.perf_counter() - start) / LOOP_CALLS)
        finally:
            inp.release()
        wall = _median(walls)
        result.update(gpu_s=gpu_s, wall_per_call_s=wall, pct_of_gpu_rate=100.0 * gpu_s / wall, calls=LOOP_CALLS)
        return result


def _numpy_op(case: Case, x: np.ndarray) -> np.ndarray:
    """The case on the CPU with NumPy, as a NumPy user writes it."""
    (axis,) = case.axes
    if case.op == "hardmax":
        out = np.zeros_like(x)
        np.put_along_axis(out, np.expand_dims(np.argmax(x, axis), axis), 1, axis)
        return out
    return (np.argmax if case.op == "argmax" else np.argmin)(x, axis)


# ----------------------------------------------------------------------------- output


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


def header(peers: list) -> str:
    cols = f"{'case':<14} {'what':<34} {'ours GPU':>10} {'e2e':>10} {'GB/s':>7} {'% ceil':>7} {'ceil GB/s':>9}"
    for peer in peers:
        cols += f" {peer.name + ' GB/s':>11} {'x ' + peer.name:>9}"
    return cols


def _fill_new(source: np.ndarray, pool, parts: int) -> np.ndarray:
    """A new array filled from ``source`` in host memory, in ``parts`` on ``pool``'s threads
    (split as the runner's reads are): its page faults and copy, which bound a read-back into
    a new array on this host."""
    out = np.empty_like(source)
    copy_in_parts(pool, out, source, parts)
    return out


def line(result: dict, peers: list) -> str:
    head = f"{result['name']:<14} {Case.from_json({k: result[k] for k in Case._KEYS}).label:<34}"
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


def report_header(device, suite: Suite, peers: list) -> dict:
    import dmlgpu
    from .runtime.adapters import wgpu_version

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


# ----------------------------------------------------------------------------- entry point


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
    print(f"dmlgpu {report['dmlgpu_version']} bench, {suite.name} suite, on {device.name} ({device.runner.backend}); "
          f"peers: {', '.join(f'{p.name} {p.version} on {p.device_name}' for p in peers) or 'none importable'}", flush=True)
    warm_bytes = max(math.prod(c.shape) * c.dtype.size for c in cases)
    print(f"warm-up: {warm_up(device.runner, min(warm_bytes, 256 << 20), suite.warmup_s)} reads in {suite.warmup_s} s",
          file=sys.stderr)
    torch = next((p for p in peers if p.name == "torch"), None)
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
        print(line(result, peers), flush=True)
        if args.json:
            write_json(report, args.json)  # after every case, so a crash keeps what ran
    counts = {s: sum(r["status"] == s for r in report["results"]) for s in ("ok", "skipped", "error")}
    wrong = sum(r.get("correct") is False for r in report["results"])
    print(f"{counts['ok']} ran ({wrong} wrong), {counts['skipped']} skipped, {counts['error']} failed"
          + (f"; results in {args.json}" if args.json else ""))
    if args.plot:
        plot(report, args.plot)
        print(f"plot in {args.plot}")
    return 1 if failed else 0
