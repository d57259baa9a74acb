"""Which ``Tuning`` each family of shapes gets on an adapter: the built-in defaults, what a
calibration measures (a probe and its candidates per family), and the choice it makes.

Pure Python, like the planner: measurements go in, ``Tunings`` come out. ``calibration.py``
times the candidates on the adapter in hand and keeps the choice on disk; nothing here names
or assumes a GPU. A GPU and a CPU adapter (lavapipe, WARP, SwiftShader: ``Capabilities.software``)
start from different defaults, because a CPU runs a workgroup's invocations as the SIMD lanes
of one core: it wants few, long invocations that walk contiguous memory alone, and no
barriers where none are needed.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math

from . import kernels
from .desc import ArgMaxOperatorDesc, ArgReduction, TensorDesc, operator_for
from .pieces import schedule
from .plan import Capabilities, Tuning, Tunings, family_of, family_parts
from .types import DataType, NanMode
from .wgsl import shader_sources

#: A CPU adapter's defaults: each family's changes to a GPU's (kernels/*.py's ``SOFTWARE``).
SOFTWARE_TUNING = Tuning(**kernels.software_changes())

#: What a calibration tries for each family (``plan.family_of``, without its bits): changes to
#: the adapter's default tuning, the default itself first, each kernel family's own
#: (kernels/*.py's ``CANDIDATES``). On a GPU these are the settings that interleaved runs found
#: to differ between GPUs or between families (benchmarks/LOG.md); on a CPU adapter, the GPU's
#: default is a candidate too.
GPU_CANDIDATES = kernels.candidates(software=False)
SOFTWARE_CANDIDATES = kernels.candidates(software=True)

#: A candidate must beat the default by this fraction to be chosen (timing noise is about 1%).
MARGIN = 0.02

#: Data types of the probes, by element bits.
PROBE_TYPES = {8: "INT8", 16: "FLOAT16", 32: "FLOAT32", 64: "FLOAT64"}


def default_tuning(caps: Capabilities) -> Tuning:
    """The built-in tuning of an adapter with these capabilities (no calibration)."""
    return SOFTWARE_TUNING if caps.software else Tuning()


def candidates(caps: Capabilities, family: str) -> tuple[Tuning, ...]:
    """The tunings a calibration times for ``family`` (e.g. ``"rows/32"``), the default first;
    one (the default alone) where nothing is worth measuring."""
    base = default_tuning(caps)
    table = SOFTWARE_CANDIDATES if caps.software else GPU_CANDIDATES
    changes = table.get(family_parts(family)[0], ({},))
    found = [dataclasses.replace(base, **change) for change in changes]
    if caps.software and len(found) > 1:
        found.append(Tuning())
    return tuple(dict.fromkeys(found))


def probe_bytes(caps: Capabilities) -> int:
    """Input bytes of a probe at most: a call of up to 1 GiB is measured at its own size on a GPU
    (a probe of 128 MiB, its rows 8 times shorter, chose workgroups of 128 for rows of 64 Ki
    FLOAT32 that cost them 2% at full size: benchmarks/LOG.md, 2026-11-28); small on a CPU."""
    want = 1 << 20 if caps.software else 1 << 30
    return max(1 << 20, min(want, caps.max_storage_binding, caps.max_buffer // 2))


def probe(family: str, caps: Capabilities) -> ArgReduction:
    """The reduction a family's name and bits are measured on: about ``probe_bytes`` of input,
    shaped as one representative of the kernel's family, in one of its buckets (``family_of``
    says which; a calibration measures a family on it only where that is the family's own)."""
    name, bits, _bucket = family_parts(family)
    sizes, axes = kernels.owner(name).probe_shape(name, probe_bytes(caps), bits // 8, default_tuning(caps).rows_max_bytes)
    return ArgMaxOperatorDesc(TensorDesc(DataType.parse(PROBE_TYPES[bits], "data_type"), tuple(sizes)),
                              axes=tuple(axes)).lower()


def texts(red: ArgReduction, caps: Capabilities, nan_mode: NanMode, tuning: Tuning) -> frozenset[str]:
    """The WGSL texts a reduction's passes compile under ``tuning``: what the runner's pipeline
    cache keys on."""
    return frozenset(text for piece in schedule(red, caps, nan_mode, tuning).pieces for text in shader_sources(piece.plan))


def call_probe(red: ArgReduction, nan_mode: NanMode, caps: Capabilities) -> ArgReduction | None:
    """A probe shaped after a call: its reduction packed, the call's own sizes where it holds
    between an eighth of ``probe_bytes`` and all of it (half of that for HARDMAX, whose output
    is as large), else its sizes halved (the reduced axes first, so that it keeps the call's
    outputs, and so the work in flight, where it can) while it is larger, or its outermost kept
    size doubled while it is smaller, each step kept only where the family is the same and
    every candidate plans it with the call's own WGSL texts. So the pipelines a calibration
    compiles for it are those the call then runs: measuring costs the candidates' compiles
    other than the call's own. None where no such shape lies in that window (a call too small
    to grow unchanged), or where two candidates plan the call alike (it cannot tell them apart,
    and the choice holds for the whole family): the family's own ``probe`` is measured then."""
    base = default_tuning(caps)
    family = family_of(red, caps, base)
    tunings = candidates(caps, family)
    wanted = [texts(red, caps, nan_mode, t) for t in tunings]
    if len(set(wanted)) < len(wanted):  # candidates this call cannot tell apart: no measure of the family
        return None

    def shaped(sizes: list[int]) -> ArgReduction | None:
        desc = TensorDesc(red.input.data_type, tuple(sizes))
        like = operator_for(red.op, desc, red.axes, red.direction, red.output.data_type).lower()
        if family_of(like, caps, base) != family:
            return None
        return like if all(texts(like, caps, nan_mode, t) == w for t, w in zip(tunings, wanted)) else None

    sizes = list(red.input.sizes)
    target = probe_bytes(caps) // (2 if red.op == "hardmax" else 1)  # (HARDMAX's output is as large again)
    found = shaped(sizes)
    kept = [a for a in range(len(sizes)) if a not in red.axes]
    while found is not None and found.input.total_tensor_size_in_bytes > target:
        for axis in list(red.axes) + kept:
            trial = sizes[:axis] + [sizes[axis] // 2] + sizes[axis + 1:]
            smaller = shaped(trial) if sizes[axis] > 1 else None
            if smaller is not None:
                sizes, found = trial, smaller
                break
        else:
            break
    while found is not None and kept and found.input.total_tensor_size_in_bytes < target // 8:
        trial = sizes[:kept[0]] + [sizes[kept[0]] * 2] + sizes[kept[0] + 1:]
        larger = shaped(trial)
        if larger is None:
            break
        sizes, found = trial, larger
    if found is None or not target // 8 <= found.input.total_tensor_size_in_bytes <= target:
        return None
    return found


def families(caps: Capabilities) -> list[str]:
    """The families ``dmlgpu tune`` measures on such an adapter: each kernel family's probe
    (``probe``) for every element width, where its family (bucket included) is that kernel
    family's and has candidates to choose between (8-byte elements never take the short-rows
    or columns kernels, for one). Other buckets are measured on the first call of theirs."""
    table = SOFTWARE_CANDIDATES if caps.software else GPU_CANDIDATES
    found = [(name, family_of(probe(f"{name}/{bits}", caps), caps, default_tuning(caps)))
             for name in table for bits in PROBE_TYPES]
    return [f for name, f in found if family_parts(f)[0] == name and len(candidates(caps, f)) > 1]


def choose(seconds: list[float]) -> int:
    """The candidate to keep, from each one's median seconds (the default first): the fastest,
    unless the default is within ``MARGIN`` of it."""
    best = min(range(len(seconds)), key=lambda i: seconds[i])
    return 0 if seconds[0] <= seconds[best] * (1 + MARGIN) else best


def tuning_changes(tuning: Tuning, base: Tuning) -> dict:
    """The fields of ``tuning`` that differ from ``base``, as plain data."""
    return {f.name: getattr(tuning, f.name) for f in dataclasses.fields(Tuning)
            if getattr(tuning, f.name) != getattr(base, f.name)}


def tuning_from_spec(spec: str) -> Tuning:
    """A ``Tuning`` from comma-separated ``name=value`` fields, integers or 0/1 for the switches
    (``"columns_lanes=4,unroll=0"``; ``""``: the default), as the benchmarks' scripts take them."""
    fields = dict(item.split("=") for item in spec.split(",") if item)
    default = Tuning()
    kinds = {f.name: type(getattr(default, f.name)) for f in dataclasses.fields(Tuning)}
    return Tuning(**{k: kinds[k](int(v)) for k, v in fields.items()})


def from_choices(caps: Capabilities, chosen: dict[str, dict]) -> Tunings:
    """The ``Tunings`` of an adapter whose families chose these changes to its default; fields
    this version of ``Tuning`` does not have are ignored (a cache written by another version)."""
    base = default_tuning(caps)
    names = {f.name for f in dataclasses.fields(Tuning)}
    families = tuple(sorted((family, dataclasses.replace(base, **{k: v for k, v in changes.items() if k in names}))
                            for family, changes in chosen.items()))
    return Tunings(default=base, families=families)


#: How a cache's choices are keyed: 2, by family and bucket (``plan.family_of``); 1 was by
#: family alone, whose choices a cache of this version does not reuse.
KEYS = 2


def table_digest(caps: Capabilities) -> str:
    """A digest of what a calibration measures on such an adapter (defaults, candidates,
    probes, how choices are keyed): a cache made under another table is not reused."""
    table = SOFTWARE_CANDIDATES if caps.software else GPU_CANDIDATES
    text = json.dumps([dataclasses.asdict(default_tuning(caps)), table, probe_bytes(caps), MARGIN, PROBE_TYPES, KEYS],
                      sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def rate(nbytes: int, seconds: float) -> str:
    """GB/s, for reports."""
    return f"{nbytes / seconds / 1e9:.1f} GB/s" if seconds > 0 and math.isfinite(seconds) else "-"
