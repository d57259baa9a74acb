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

Each option is given at most once; direction= and out= are argmax's and argmin's only. A call
means what ``dmlgpu.numpy`` runs for it (NumPy's defaults); a descriptor means itself, with
``nan_mode`` "ignore" (DirectML's) unless given.

Planning depends on the adapter's limits: the capabilities are those of ``device`` (or of
``capabilities``) when given, else ``DEFAULT_CAPABILITIES``: WebGPU's default limits and no
optional features. Pure Python: nothing here opens an adapter or imports wgpu.

Bad input raises a ``DescriptorError`` that names the part of the text, the JSON field or the
limit at fault (a ``TypeError`` for an argument or field of the wrong kind); so does a schedule
of more than ``MAX_PIECES`` pieces (a tiny binding limit on a large tensor), which the
scheduler refuses as soon as it is sure of it, before any piece is made.
"""

from __future__ import annotations

import dataclasses
import json
import re
from typing import Any

from .desc import (
    ActivationHardmax1OperatorDesc,
    ActivationHardmaxOperatorDesc,
    ArgMaxOperatorDesc,
    ArgMinOperatorDesc,
    ReduceOperatorDesc,
    TensorDesc,
    lower,
    operator_for,
    operator_from_json,
)
from .errors import DescriptorError
from .pieces import Schedule, TooManyPieces, schedule
from .plan import Capabilities, Dim, Plan, Tuning, Tunings, family_of
from .tuning import default_tuning, tuning_changes
from .types import AxisDirection, DataType, NanMode
from .wgsl import shader_sources

#: WebGPU's default limits (128 MiB per storage binding, 256 MiB per buffer, 65535 workgroups
#: per dimension, 256-byte offset alignment) and no optional features: what any adapter offers.
OPERATOR_TYPES = (ArgMaxOperatorDesc, ArgMinOperatorDesc, ActivationHardmax1OperatorDesc,
                  ActivationHardmaxOperatorDesc, ReduceOperatorDesc)

DEFAULT_CAPABILITIES = Capabilities(max_storage_binding=128 << 20, max_buffer=256 << 20,
                                    max_workgroups_per_dim=65535, shader_int64=False,
                                    offset_alignment=256, subgroups=False)

#: What a call reads like, for messages.
_LIKE = "it must read like 'argmax float32 (4096, 65536) axis=1' (OP TYPE SHAPE [option=value ...])"
_OPTIONS = ("axis", "strides", "direction", "out", "nan")
_INTEGER = re.compile(r"[+-]?\d+")
_NAME = re.compile(r"(\w+)\s*=\s*")
#: The most pieces ``explain`` plans and prints; a schedule of more is refused before it is made
#: (a tiny --binding on a large tensor would otherwise take minutes and print megabytes).
MAX_PIECES = 1024


def _shown(text, limit: int = 80) -> str:
    """The repr of (part of) what the caller wrote, cut to ``limit`` characters."""
    shown = repr(text)
    return shown if len(shown) <= limit else shown[: limit - 4] + "..." + shown[-1]


def _ints(text: str, what: str, separators: str = ",") -> tuple[int, ...]:
    """Integers written as ``(a, b, ...)`` (a trailing comma allowed, ``()`` empty) or bare,
    ``a`` or ``a<sep>b...`` (``4x5`` for a shape, ``0,2`` for axes)."""
    body = text.strip()
    if body.startswith("("):
        if not body.endswith(")"):
            raise DescriptorError(f"{what} is {_shown(text)}: its '(' has no ')'")
        parts = body[1:-1].split(",")
        if len(parts) > 1 and not parts[-1].strip():
            parts.pop()  # (3,)
        if len(parts) == 1 and not parts[0].strip():
            return ()
    else:
        parts = re.split(f"[{re.escape(separators)}]", body)
    numbers = []
    for part in parts:
        part = part.strip()
        if not _INTEGER.fullmatch(part):
            raise DescriptorError(f"{what} is {_shown(text)}, but {_shown(part)} in it is not an integer; "
                                  f"it must be integers like (4, 5){' or 4x5' if 'x' in separators else ''}")
        if len(part) > 40:
            raise DescriptorError(f"{what} is {_shown(text)}, but {_shown(part)} in it is far too large")
        numbers.append(int(part))
    return tuple(numbers)


def _split_call(text: str) -> tuple[str, str, str, str]:
    """(op, type, shape, options) of a call, each as written."""
    words = text.strip().split(None, 2)
    if len(words) < 3:
        missing = ("an operator, a type and a shape", "a type and a shape", "a shape")[len(words)]
        raise DescriptorError(f"call is {_shown(text)}, which lacks {missing}; {_LIKE}")
    op, type_name, rest = words
    if rest.startswith("("):
        close = rest.find(")")
        if close < 0:
            raise DescriptorError(f"the shape in {_shown(text)} has a '(' but no ')'")
        return op, type_name, rest[: close + 1], rest[close + 1:]
    shape = re.match(r"\d+(?:\s*x\s*\d+)*", rest)
    if not shape:
        raise DescriptorError(f"the shape is {_shown(rest.split()[0])}, but it must be like (4, 5) or 4x5; {_LIKE}")
    return op, type_name, shape.group(), rest[shape.end():]


def _options(text: str) -> dict[str, str]:
    """``name=value`` options: each value a word or a parenthesized list; each name once."""
    options: dict[str, str] = {}
    pos = 0
    while True:
        while pos < len(text) and text[pos].isspace():
            pos += 1
        if pos == len(text):
            return options
        name = _NAME.match(text, pos)
        if not name:
            word = text[pos:].split()[0]
            raise DescriptorError(f"{_shown(word)} is not an option; options are axis=, strides=, direction=, out=, nan=")
        key, pos = name.group(1), name.end()
        if text.startswith("(", pos):
            close = text.find(")", pos)
            if close < 0:
                raise DescriptorError(f"option {key}= is {_shown(text[pos:])}: its '(' has no ')'")
            value, pos = text[pos: close + 1], close + 1
        else:
            value = re.match(r"[^\s()]*", text[pos:]).group()  # type: ignore[union-attr]  # * always matches
            pos += len(value)
            if not value:
                raise DescriptorError(f"option {key}= has no value")
        if key in options:
            raise DescriptorError(f"option {key!r} is given twice ({key}={options[key]} and {key}={value})")
        options[key] = value


def parse_call(text: str):
    """The descriptor and NaN mode of a NumPy-style call (the grammar in this module's doc)."""
    if not isinstance(text, str):
        raise TypeError(f"call must be a string, not {type(text).__name__}")
    op_text, type_text, shape_text, options_text = _split_call(text)
    op = op_text.lower()
    if op not in ("argmax", "argmin", "hardmax"):
        raise DescriptorError(f"the operator is {_shown(op_text)}, but it must be argmax, argmin or hardmax")
    data_type = DataType.parse("uint8" if type_text.lower() == "bool" else type_text, "the input type")
    shape = _ints(shape_text, "the shape", ",x")
    options = _options(options_text)
    unknown = [key for key in options if key not in _OPTIONS]
    if unknown:
        raise DescriptorError(f"option {unknown[0]!r} is unknown; options are {', '.join(_OPTIONS)}")
    if op == "hardmax":
        extra = [key for key in options if key in ("direction", "out")]
        if extra:
            raise DescriptorError(f"option {extra[0]!r} is not one of hardmax's; hardmax takes axis, strides and nan")
    strides = _ints(options["strides"], "strides") if "strides" in options else None
    input_tensor = TensorDesc(data_type, shape, strides)
    rank = len(shape)
    axis = options.get("axis", "-1" if op == "hardmax" else "None")
    if axis.strip().lower() == "none":
        axes = tuple(range(rank))
    else:
        axes = _ints(axis, "axis")
        for a in axes:
            if not -rank <= a < rank:
                raise DescriptorError(f"axis is {_shown(axis)}, but {a} is not an axis of a rank-{rank} shape; "
                                      f"axes are in [{-rank}, {rank - 1}]")
        axes = tuple(a + rank if a < 0 else a for a in axes)
    direction = AxisDirection.parse(options.get("direction", "increasing"), "direction")
    out_type = DataType.parse(options.get("out", "int64"), "out")
    nan_mode = NanMode.parse(options.get("nan", "propagate"), "nan")
    return operator_for(op, input_tensor, axes, direction, out_type), nan_mode


def _describe(what):
    """(descriptor, NaN mode or None) for any of the accepted forms."""
    if isinstance(what, dict):
        return operator_from_json(what), None
    if isinstance(what, str):
        return (operator_from_json(what), None) if what.lstrip()[:1] in ("{", "[") else parse_call(what)
    if not isinstance(what, OPERATOR_TYPES):
        raise TypeError(f"what to explain must be a call (str), an operator's JSON (str or dict) or an operator "
                        f"descriptor, not {type(what).__name__}")
    return what, None


def _check_capabilities(caps: Capabilities) -> None:
    """The limits the planner divides by and fits into, each a positive integer it can use."""
    for field in ("max_storage_binding", "max_buffer", "max_workgroups_per_dim", "offset_alignment"):
        value = getattr(caps, field)
        if isinstance(value, bool) or not isinstance(value, int):
            raise TypeError(f"capabilities.{field} must be an int, not {type(value).__name__} ({_shown(value)})")
    align = caps.offset_alignment
    if align < 4 or align & (align - 1):
        raise DescriptorError(f"capabilities.offset_alignment is {align}, but it must be a power of two of at least 4")
    if caps.max_workgroups_per_dim < 1:
        raise DescriptorError(f"capabilities.max_workgroups_per_dim is {caps.max_workgroups_per_dim}, but it must be "
                              f"at least 1")
    _check_limit("capabilities.max_storage_binding", caps.max_storage_binding, align + 16,
                 f"the offset alignment ({align}) and one 16-byte quad")
    _check_limit("capabilities.max_buffer", caps.max_buffer, 16, "one 16-byte quad")


def _check_limit(name: str, value, least: int, why: str) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int (bytes), not {type(value).__name__} ({_shown(value)})")
    if value < least:
        raise DescriptorError(f"{name} is {value}, but it must be at least {least} bytes: {why}")


def _dims(dims: tuple[Dim, ...]) -> str:
    if not dims:
        return "none"
    return ", ".join(f"{d.size} (in stride {d.in_stride}, out stride {d.out_stride}"
                     + (f", index stride {d.index_stride})" if d.index_stride else ")") for d in dims)


def _plan_lines(p: Plan) -> list[str]:
    lines = []
    if p.kernel:
        lines += [
            f"kernel {p.kernel}, loader {p.loader}{' (quads in 64-bit halves)' if p.wide_loads else ''}, "
            f"workgroup {p.workgroup_size}, segment {p.segment}",
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


def explain_schedule(desc, sched: Schedule, caps: Capabilities, nan_mode: NanMode, source: str,
                     tuning_line: str | None = None) -> str:
    """The text of ``explain`` for a schedule already made."""
    out = [
        f"operator: {json.dumps(desc.to_json())}",
        f"nan_mode: {nan_mode.value}",
        f"capabilities ({source}): storage binding {caps.max_storage_binding} B, buffer {caps.max_buffer} B, "
        f"{caps.max_workgroups_per_dim} workgroups per dimension, offset alignment {caps.offset_alignment} B, "
        f"shader-int64 {'yes' if caps.shader_int64 else 'no'}, subgroups {'yes' if caps.subgroups else 'no'}"
        f"{', a CPU adapter' if caps.software else ''}",
        *([tuning_line] if tuning_line else []),
        f"schedule: {len(sched.pieces)} piece(s), {sched.merges} merge(s) across pieces, "
        f"scratch {sched.scratch_bytes} B",
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
    the call implies (a descriptor's default is "ignore"). Bad input raises
    ``DescriptorError`` (or ``TypeError`` for an argument of the wrong kind) naming the part
    that is wrong; so does a schedule of more than ``MAX_PIECES`` pieces."""
    if capabilities is not None and not isinstance(capabilities, Capabilities):
        raise TypeError(f"capabilities must be a dmlgpu.plan.Capabilities, not {type(capabilities).__name__}")
    if tuning is not None and not isinstance(tuning, (Tuning, Tunings)):
        raise TypeError(f"tuning must be a dmlgpu.plan.Tuning or Tunings, not {type(tuning).__name__}")
    if device is not None:
        try:
            device_caps, device_tuning, device_name = device.runner.capabilities, device.tuning, device.name
        except AttributeError:
            raise TypeError(f"device must be a dmlgpu.Device, not {type(device).__name__}") from None
    if capabilities is not None:
        caps, source = capabilities, "given"
    elif device is not None:
        caps, source = device_caps, device_name
    else:
        caps, source = DEFAULT_CAPABILITIES, "no adapter: WebGPU's default limits, no optional features"
    tuning = tuning or (device_tuning if device is not None else default_tuning(caps))
    desc, mode, sched = planned(what, caps, nan_mode, tuning)
    return explain_schedule(desc, sched, caps, mode, source, _tuning_line(lower(desc), caps, tuning))


def planned(what, caps: Capabilities, nan_mode=None, tuning: Tuning | Tunings = Tuning(), command: str = "explain"):
    """(descriptor, NaN mode, schedule) of ``what`` (any form ``explain`` takes) on ``caps``:
    what ``explain`` prints and ``export`` exports. ``nan_mode`` overrides the one the call
    implies; ``command`` is what a refusal of too many pieces names."""
    desc, implied = _describe(what)
    mode = NanMode.parse(nan_mode if nan_mode is not None else implied or NanMode.IGNORE, "nan_mode")
    _check_capabilities(caps)
    try:
        return desc, mode, schedule(lower(desc), caps, mode, tuning, most=MAX_PIECES)
    except TooManyPieces as e:
        raise DescriptorError(
            f"the schedule for these limits (storage binding {caps.max_storage_binding} B, buffer {caps.max_buffer} B) "
            f"has {e.count} pieces or more, but {command} plans at most {MAX_PIECES}; raise the limits") from None


def _tuning_line(red, caps: Capabilities, tuning: Tuning | Tunings) -> str:
    """Which family the reduction is of, and how its tuning differs from the adapter's default."""
    base = default_tuning(caps)
    family = family_of(red, caps, tuning.default if isinstance(tuning, Tunings) else tuning)
    chosen = tuning.for_family(family) if isinstance(tuning, Tunings) else tuning
    changes = ", ".join(f"{k}={v}" for k, v in tuning_changes(chosen, base).items())
    kind = "a CPU adapter's" if caps.software else "a GPU's"
    where = "chosen for this adapter" if isinstance(tuning, Tunings) and family in dict(tuning.families) else "given"
    return f"tuning: family {family}; " + (f"{kind} built-in defaults" if not changes else f"{where}: {changes}")


def with_limits(caps: Capabilities, binding: int | None, buffer: int | None,
                names: tuple[str, str] = ("binding", "buffer")) -> Capabilities:
    """Capabilities with the binding and buffer limits replaced where given; ``names`` are
    what messages call the two (the command's flags: ``("--binding", "--buffer")``)."""
    if binding is not None:
        _check_limit(names[0], binding, caps.offset_alignment + 16,
                     f"the offset alignment ({caps.offset_alignment}) and one 16-byte quad")
    if buffer is not None:
        _check_limit(names[1], buffer, 16, "one 16-byte quad")
    changes: dict[str, Any] = {k: v for k, v in (("max_storage_binding", binding), ("max_buffer", buffer)) if v is not None}
    return dataclasses.replace(caps, **changes)


__all__ = ["explain", "parse_call", "with_limits", "DEFAULT_CAPABILITIES", "MAX_PIECES"]
