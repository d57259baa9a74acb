"""``dmlgpu explain``: the plan the planner chose for a descriptor, and the WGSL each pass runs.

    dmlgpu explain 'argmax float32 (4096, 65536) axis=1'
    dmlgpu explain --no-gpu '{"Type": "ARGMAX", "Desc": {"InputTensor": {...}, "Axes": [1]}}'
    dmlgpu.explain("hardmax float16 (8, 1000) axis=-1")     # the same text, as a string

What to explain is an operator descriptor (an object, its JSON form as a dict or a string,
as ``dmlgpu.operator_from_json`` reads it) or a NumPy-style call in this grammar:

    call    := OP TYPE SHAPE option*
    OP      := argmax | argmin | hardmax
    TYPE    := float32 | float16 | int8 | ... | uint64 | bool (read as uint8), or DirectML's names
    SHAPE   := "(" n, n, ... ")" | n x n x ...          e.g. (4096, 65536) or 4096x65536
    option  := axis=AXES          None (every axis; the default for argmax/argmin) | k | (k, j, ...)
                                  (HARDMAX defaults to the last axis); negative axes count from the end
             | strides=(s, ...)   the input's strides in elements (default: packed)
             | direction=increasing | decreasing     (default increasing)
             | out=TYPE           the index type (default int64, NumPy's intp)
             | nan=propagate | ignore                (default propagate, NumPy's rule)

A call means what ``dmlgpu.numpy`` runs for it (NumPy's defaults); a descriptor means itself,
with ``nan_mode`` "ignore" (DirectML's) unless given.

Planning depends on the adapter's limits: the capabilities are those of ``device`` (or of
``capabilities``) when given, else ``DEFAULT_CAPABILITIES``: WebGPU's default limits and no
optional features. Pure Python: nothing here opens an adapter or imports wgpu.
"""

from __future__ import annotations

import dataclasses
import json
import re
from typing import Any

from .desc import TensorDesc, lower, operator_for, operator_from_json
from .errors import DescriptorError
from .pieces import Schedule, schedule
from .plan import Capabilities, Dim, Plan, Tuning
from .types import AxisDirection, DataType, NanMode
from .wgsl import shader_sources

#: WebGPU's default limits (128 MiB per storage binding, 256 MiB per buffer, 65535 workgroups
#: per dimension, 256-byte offset alignment) and no optional features: what any adapter offers.
DEFAULT_CAPABILITIES = Capabilities(max_storage_binding=128 << 20, max_buffer=256 << 20,
                                    max_workgroups_per_dim=65535, shader_int64=False,
                                    offset_alignment=256, subgroups=False)

_CALL = re.compile(r"\s*(?P<op>\w+)\s+(?P<type>\w+)\s+(?P<shape>\([^)]*\)|\d+(?:\s*x\s*\d+)*)(?P<options>.*)$", re.I)
_OPTION = re.compile(r"\s*(\w+)\s*=\s*(\([^)]*\)|[^\s()]+)")


def _ints(text: str, what: str) -> tuple[int, ...]:
    parts = [p for p in re.split(r"[\s,x()]+", text) if p]
    try:
        return tuple(int(p) for p in parts)
    except ValueError:
        raise DescriptorError(f"{what} is {text!r}, but it must be integers like (4, 5) or 4x5") from None


def parse_call(text: str):
    """The descriptor and NaN mode of a NumPy-style call (the grammar in this module's doc)."""
    m = _CALL.match(text)
    if not m:
        raise DescriptorError(f"call is {text!r}, but it must read like 'argmax float32 (4096, 65536) axis=1'")
    op = m["op"].lower()
    if op not in ("argmax", "argmin", "hardmax"):
        raise DescriptorError(f"the operator is {m['op']!r}, but it must be argmax, argmin or hardmax")
    type_name = "uint8" if m["type"].lower() == "bool" else m["type"]
    data_type = DataType.parse(type_name, "the input type")
    shape = _ints(m["shape"], "the shape")
    options = dict(_OPTION.findall(m["options"]))
    leftover = _OPTION.sub("", m["options"]).strip()
    if leftover:
        raise DescriptorError(f"{leftover!r} is not an option; options are axis=, strides=, direction=, out=, nan=")
    unknown = sorted(set(options) - {"axis", "strides", "direction", "out", "nan"})
    if unknown:
        raise DescriptorError(f"option {unknown[0]!r} is unknown; options are axis, strides, direction, out, nan")
    rank = len(shape)
    axis = options.get("axis", "-1" if op == "hardmax" else "None")
    axes = tuple(range(rank)) if axis == "None" else _ints(axis, "axis")
    axes = tuple(a + rank if -rank <= a < 0 else a for a in axes)
    strides = _ints(options["strides"], "strides") if "strides" in options else None
    direction = AxisDirection.parse(options.get("direction", "increasing"), "direction")
    out_type = DataType.parse(options.get("out", "int64"), "out")
    nan_mode = NanMode.parse(options.get("nan", "propagate"), "nan")
    input_tensor = TensorDesc(data_type, shape, strides)
    return operator_for(op, input_tensor, axes, direction, out_type), nan_mode


def _describe(what):
    """(descriptor, NaN mode or None) for any of the accepted forms."""
    if isinstance(what, dict):
        return operator_from_json(what), None
    if isinstance(what, str):
        return (operator_from_json(what), None) if what.lstrip().startswith("{") else parse_call(what)
    lower(what)  # a TypeError for anything that is not a descriptor
    return what, None


def _dims(dims: tuple[Dim, ...]) -> str:
    if not dims:
        return "none"
    return ", ".join(f"{d.size} (in stride {d.in_stride}, out stride {d.out_stride}"
                     + (f", index stride {d.index_stride})" if d.index_stride else ")") for d in dims)


def _plan_lines(p: Plan) -> list[str]:
    lines = []
    if p.kernel:
        lines += [
            f"kernel {p.kernel}, loader {p.loader}, workgroup {p.workgroup_size}, segment {p.segment}",
            f"split {p.split} chunk(s) of {p.chunk} element(s) per output; grid {p.grid}",
        ]
    lines += [
        f"kept dims: {_dims(p.kept)}",
        f"reduced dims: {_dims(p.reduced)}",
        f"merge: {p.merge_kernel} on grid {p.merge_grid}" if p.merge_kernel else "merge: none",
        f"keys: {p.input_type.name} {'native u64' if p.int64 else 'u32 words' if p.input_type.size == 8 else 'u32'}, "
        f"subgroups {'yes' if p.subgroups else 'no'}, "
        f"{'INCREASING' if p.increasing else 'DECREASING'}, nan_mode {p.nan_mode.value}",
    ]
    bases = {k: getattr(p, k) for k in ("in_base", "out_base", "index_offset", "slot_base") if getattr(p, k)}
    if bases or p.partials_only:
        lines.append("piece: " + ", ".join(f"{k} {v}" for k, v in bases.items())
                     + (" (writes partial pairs)" if p.partials_only else ""))
    return lines


def explain_schedule(desc, sched: Schedule, caps: Capabilities, nan_mode: NanMode, source: str) -> str:
    """The text of ``explain`` for a schedule already made."""
    out = [
        f"operator: {json.dumps(desc.to_json())}",
        f"nan_mode: {nan_mode.value}",
        f"capabilities ({source}): storage binding {caps.max_storage_binding} B, buffer {caps.max_buffer} B, "
        f"{caps.max_workgroups_per_dim} workgroups per dimension, offset alignment {caps.offset_alignment} B, "
        f"shader-int64 {'yes' if caps.shader_int64 else 'no'}, subgroups {'yes' if caps.subgroups else 'no'}",
        f"schedule: {len(sched.pieces)} piece(s), {sched.merges} merge(s) across pieces, "
        f"scratch {max([sched.partial_bytes] + [p.plan.partial_bytes for p in sched.pieces])} B",
    ]
    texts: dict[str, int] = {}  # each distinct WGSL text once, numbered
    plans: dict[tuple, list[int]] = {}  # pieces that differ only in their windows share a plan's text
    windows = []
    for i, piece in enumerate(sched.pieces):
        numbers = tuple(texts.setdefault(text, len(texts) + 1) for text in shader_sources(piece.plan))
        key = (tuple(_plan_lines(piece.plan)), numbers)
        plans.setdefault(key, []).append(i)
        windows.append(f"piece {i}: plan {list(plans).index(key) + 1}, " + ", ".join(
            f"{name} {'scratch pairs' if w is None else f'buffer {w.buffer} bytes [{w.offset}, {w.offset + w.size})'}"
            for name, w in (("input", piece.input), ("output", piece.output))))
    for n, ((lines, numbers), pieces) in enumerate(plans.items(), 1):
        out += ["", f"plan {n} (piece{'s' if len(pieces) > 1 else ''} {', '.join(map(str, pieces))}):"]
        out += [f"  {line}" for line in lines]
        out.append(f"  passes: {', '.join(f'WGSL #{k}' for k in numbers)}")
    out += [""] + windows
    for text, n in texts.items():
        out += ["", f"=== WGSL #{n} ===", text.rstrip()]
    return "\n".join(out) + "\n"


def explain(what, *, device=None, capabilities: Capabilities | None = None, nan_mode=None,
            tuning: Tuning | None = None) -> str:
    """The plan (pieces, kernel, grid, split, merge) and the final WGSL of each pass for a
    descriptor or a NumPy-style call, as text. ``device`` (a ``dmlgpu.Device``) lends its
    capabilities and tuning; ``capabilities`` replaces them; ``nan_mode`` overrides the one
    the call implies (a descriptor's default is "ignore")."""
    desc, implied = _describe(what)
    mode = NanMode.parse(nan_mode if nan_mode is not None else implied or NanMode.IGNORE, "nan_mode")
    if capabilities is not None:
        caps, source = capabilities, "given"
    elif device is not None:
        caps, source = device.runner.capabilities, device.name
    else:
        caps, source = DEFAULT_CAPABILITIES, "no adapter: WebGPU's default limits, no optional features"
    tuning = tuning or (device.tuning if device is not None else Tuning())
    return explain_schedule(desc, schedule(lower(desc), caps, mode, tuning), caps, mode, source)


def with_limits(caps: Capabilities, binding: int | None, buffer: int | None) -> Capabilities:
    """Capabilities with the binding and buffer limits replaced where given."""
    changes: dict[str, Any] = {k: v for k, v in (("max_storage_binding", binding), ("max_buffer", buffer)) if v is not None}
    return dataclasses.replace(caps, **changes)


__all__ = ["explain", "parse_call", "with_limits", "DEFAULT_CAPABILITIES"]
