"""Descriptors mirroring DirectML's structs, validated when they are made.

| class                              | DirectML struct                          |
|------------------------------------|------------------------------------------|
| ``TensorDesc``                     | DML_BUFFER_TENSOR_DESC                   |
| ``ArgMaxOperatorDesc``             | DML_ARGMAX_OPERATOR_DESC                 |
| ``ArgMinOperatorDesc``             | DML_ARGMIN_OPERATOR_DESC                 |
| ``ActivationHardmax1OperatorDesc`` | DML_ACTIVATION_HARDMAX1_OPERATOR_DESC    |
| ``ActivationHardmaxOperatorDesc``  | DML_ACTIVATION_HARDMAX_OPERATOR_DESC     |
| ``ReduceOperatorDesc``             | DML_REDUCE_OPERATOR_DESC (ARGMAX/ARGMIN) |

Deviations from DirectML, all deliberate:

- Field names are snake_case; counts (DimensionCount, AxisCount) are the lengths of
  the sequences and are not stored.
- ``output_tensor`` may be left out (``None``): it is then inferred, packed, with the
  input's type for HARDMAX and UINT32 for the index operators.
- A descriptor checks every rule of SPEC.md sections 1-4 when it is constructed, so an
  invalid descriptor cannot exist. What depends on the device's feature level (whether the
  operator exists there, and the types and dimension counts it takes: ``OPERATOR_SUPPORT``
  in ``types.py``) is checked by ``check_feature_level`` when an operator is compiled.

Every descriptor lowers to an ``ArgReduction``, the one form the planner and the oracle
read.
"""

from __future__ import annotations

import dataclasses
import json
import math
from typing import Any, Optional, Sequence

from .errors import DescriptorError
from .types import (
    HARDMAX_TYPES,
    INDEX_TYPE_CAPACITY,
    MAX_ELEMENTS,
    MAX_RANK,
    AxisDirection,
    DataType,
    FeatureLevel,
    NanMode,
    ReduceFunction,
    TensorFlags,
    describe,
    first_level,
    introduced,
    support_at,
)


def packed_strides(sizes: Sequence[int]) -> tuple[int, ...]:
    """Row-major strides, in elements, of a packed tensor of these sizes."""
    strides, step = [], 1
    for size in reversed(sizes):
        strides.append(step)
        step *= size
    return tuple(reversed(strides))


def calc_buffer_tensor_size(
    data_type, sizes: Sequence[int], strides: Optional[Sequence[int]] = None
) -> int:
    """DMLCalcBufferTensorSize: the bytes a buffer must hold for this tensor.

    The index of the last element is ``sum((sizes[i]-1)*strides[i])`` (``prod(sizes)-1``
    when packed); the bytes are (that + 1) * element size, rounded up to a multiple of 4.
    """
    data_type = DataType.parse(data_type, "data_type")
    if strides is None:
        last = math.prod(sizes) - 1
    else:
        last = sum((size - 1) * stride for size, stride in zip(sizes, strides))
    nbytes = (last + 1) * data_type.size
    return (nbytes + 3) & ~3


def _int_tuple(value, field: str) -> tuple[int, ...]:
    if isinstance(value, (str, bytes)) or not hasattr(value, "__iter__"):
        raise TypeError(f"{field} must be a sequence of integers, not {type(value).__name__} ({value!r})")
    items = tuple(value)
    for i, item in enumerate(items):
        if isinstance(item, bool) or not isinstance(item, int) and not hasattr(item, "__index__"):
            raise TypeError(f"{field}[{i}] must be an integer, not {type(item).__name__} ({item!r})")
    return tuple(int(item) for item in items)


def _int_scalar(value, field: str) -> int:
    if isinstance(value, bool) or not hasattr(value, "__index__"):
        raise TypeError(f"{field} must be an integer, not {type(value).__name__} ({value!r})")
    return int(value)


def _set(obj, name, value):
    object.__setattr__(obj, name, value)


@dataclasses.dataclass(frozen=True)
class TensorDesc:
    """DML_BUFFER_TENSOR_DESC. Strides and sizes are counted in elements."""

    data_type: DataType
    sizes: tuple[int, ...]
    strides: Optional[tuple[int, ...]] = None
    flags: TensorFlags = TensorFlags.NONE
    # None in the constructor means calc_buffer_tensor_size; always an int once built
    total_tensor_size_in_bytes: int = None  # type: ignore[assignment]
    guaranteed_base_offset_alignment: int = 0

    def __post_init__(self):
        _set(self, "data_type", DataType.parse(self.data_type, "data_type"))
        _set(self, "flags", TensorFlags.parse(self.flags, "flags"))
        sizes = _int_tuple(self.sizes, "sizes")
        _set(self, "sizes", sizes)
        if not 1 <= len(sizes) <= MAX_RANK:
            raise DescriptorError(
                f"sizes has {len(sizes)} entries, but a tensor has 1 to {MAX_RANK} dimensions"
            )
        for i, size in enumerate(sizes):
            if size < 1:
                raise DescriptorError(f"sizes[{i}] is {size}, but every size must be at least 1")
        if math.prod(sizes) > MAX_ELEMENTS:
            raise DescriptorError(
                f"sizes {list(sizes)} hold {math.prod(sizes)} elements, but DirectML caps a "
                f"tensor at {MAX_ELEMENTS} (2^32 - 1)"
            )
        if self.strides is not None:
            strides = _int_tuple(self.strides, "strides")
            _set(self, "strides", strides)
            if len(strides) != len(sizes):
                raise DescriptorError(
                    f"strides has {len(strides)} entries, but sizes has {len(sizes)}; they must match"
                )
            for i, stride in enumerate(strides):
                if stride < 0:
                    raise DescriptorError(f"strides[{i}] is {stride}, but a stride must be at least 0")
        needed = calc_buffer_tensor_size(self.data_type, sizes, self.strides)
        if self.total_tensor_size_in_bytes is None:
            _set(self, "total_tensor_size_in_bytes", needed)
        else:
            total = _int_scalar(self.total_tensor_size_in_bytes, "total_tensor_size_in_bytes")
            _set(self, "total_tensor_size_in_bytes", total)
            if total < needed:
                raise DescriptorError(
                    f"total_tensor_size_in_bytes is {total}, but these sizes and strides need at "
                    f"least {needed} (calc_buffer_tensor_size)"
                )
            if total % 4:
                raise DescriptorError(
                    f"total_tensor_size_in_bytes is {total}, but it must be a multiple of 4"
                )
        align = _int_scalar(self.guaranteed_base_offset_alignment, "guaranteed_base_offset_alignment")
        _set(self, "guaranteed_base_offset_alignment", align)
        if align != 0 and (align & (align - 1) or align < self.data_type.size):
            raise DescriptorError(
                f"guaranteed_base_offset_alignment is {align}, but it must be 0 or a power of two "
                f"of at least the element size ({self.data_type.size})"
            )

    @property
    def element_strides(self) -> tuple[int, ...]:
        """The strides in elements, packed ones filled in when ``strides`` is absent."""
        return self.strides if self.strides is not None else packed_strides(self.sizes)

    @property
    def rank(self) -> int:
        return len(self.sizes)

    @property
    def element_count(self) -> int:
        return math.prod(self.sizes)

    def to_json(self) -> dict:
        return {
            "DataType": self.data_type.name,
            "Flags": self.flags.name,
            "DimensionCount": self.rank,
            "Sizes": list(self.sizes),
            "Strides": None if self.strides is None else list(self.strides),
            "TotalTensorSizeInBytes": self.total_tensor_size_in_bytes,
            "GuaranteedBaseOffsetAlignment": self.guaranteed_base_offset_alignment,
        }

    @classmethod
    def from_json(cls, obj: dict) -> "TensorDesc":
        _check_keys(obj, _TENSOR_KEYS, "TensorDesc", ("DataType", "Sizes"))
        sizes = _json_list(obj["Sizes"], "Sizes")
        if obj.get("Strides") is not None:
            _json_list(obj["Strides"], "Strides")
        if "DimensionCount" in obj:
            count = _json_int(obj["DimensionCount"], "DimensionCount")
            if count != len(sizes):
                raise DescriptorError(f"DimensionCount is {count}, but Sizes has {len(sizes)} entries")
        for key in ("DataType", "Flags"):
            if key in obj and not isinstance(obj[key], str):
                raise TypeError(f"{key} must be a string such as {'FLOAT32' if key == 'DataType' else 'NONE'!r}, "
                                f"not {type(obj[key]).__name__} ({_shown(obj[key])})")
        return cls(
            data_type=obj["DataType"],
            sizes=obj["Sizes"],
            strides=obj.get("Strides"),
            flags=obj.get("Flags", "NONE"),
            total_tensor_size_in_bytes=obj.get("TotalTensorSizeInBytes"),  # type: ignore[arg-type]  # None: inferred
            guaranteed_base_offset_alignment=obj.get("GuaranteedBaseOffsetAlignment", 0),
        )


_TENSOR_KEYS = {
    "DataType", "Flags", "DimensionCount", "Sizes", "Strides",
    "TotalTensorSizeInBytes", "GuaranteedBaseOffsetAlignment",
}


def _check_keys(obj: dict, allowed: set, what: str, required: tuple = ()) -> None:
    if not isinstance(obj, dict):
        raise TypeError(f"{what} JSON must be an object, not {type(obj).__name__} ({_shown(obj)})")
    unknown = sorted((key for key in obj if key not in allowed), key=repr)
    if unknown:
        raise DescriptorError(f"{what} has unknown field(s) {_shown(unknown)}; known: {sorted(allowed)}")
    missing = [key for key in required if key not in obj]
    if missing:
        raise DescriptorError(f"{what} is missing field(s) {missing}; required: {list(required)}")


def _shown(value, limit: int = 80) -> str:
    """The repr of a value from the caller's JSON, cut to ``limit`` characters (and safe for any depth)."""
    try:
        text = repr(value)
    except RecursionError:
        text = f"<{type(value).__name__} nested too deep to show>"
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _json_list(value, field: str) -> list:
    """A JSON array field (Sizes, Strides, Axes), or a TypeError naming it."""
    if not isinstance(value, (list, tuple)):
        raise TypeError(f"{field} must be an array of integers, not {type(value).__name__} ({_shown(value)})")
    return list(value)


def _json_int(value, field: str) -> int:
    """A JSON integer field (DimensionCount, AxisCount), or a TypeError naming it."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{field} must be an integer, not {type(value).__name__} ({_shown(value)})")
    return value


def _tensor(value, field: str) -> TensorDesc:
    if not isinstance(value, TensorDesc):
        raise TypeError(f"{field} must be a TensorDesc, not {type(value).__name__}")
    return value


def first_overlap(t: TensorDesc) -> tuple[int, int, int] | None:
    """Where a layout may place two elements at one address (e.g. stride 0 with size > 1):
    (axis, its stride, the last index the smaller dimensions reach), or None.

    Dimensions are taken from the smallest stride up; each stride must step past every
    element the smaller dimensions reach. Layouts that interleave dimensions without
    overlapping fail this test too; DirectML's own outputs never use them.
    """
    extent = 0  # index of the last element reached by the dimensions seen so far
    for stride, size, axis in sorted(
        (s, n, i) for i, (n, s) in enumerate(zip(t.sizes, t.element_strides)) if n > 1
    ):
        if stride <= extent:
            return axis, stride, extent
        extent += (size - 1) * stride
    return None


def _check_no_self_overlap(t: TensorDesc, field: str) -> None:
    """An output may not have two elements at one address (``first_overlap``)."""
    overlap = first_overlap(t)
    if overlap is not None:
        axis, stride, extent = overlap
        raise DescriptorError(
            f"{field}.strides[{axis}] is {stride}, but an output may not have two elements "
            f"at one address; it must be greater than {extent}"
        )


def _normalize_axes(axes, rank: int, field: str = "axes") -> tuple[int, ...]:
    axes = _int_tuple(axes, field)
    if not axes:
        raise DescriptorError(f"{field} is empty, but at least one axis must be reduced")
    for i, axis in enumerate(axes):
        if not 0 <= axis <= rank - 1:
            raise DescriptorError(
                f"{field}[{i}] is {axis}, but it must be in [0, {rank - 1}] for a rank-{rank} input"
            )
    seen = set()
    for i, axis in enumerate(axes):
        if axis in seen:
            raise DescriptorError(f"{field}[{i}] is {axis}, but axis {axis} is listed twice")
        seen.add(axis)
    return axes


def _check_output_shape(inp: TensorDesc, out: TensorDesc, axes: tuple[int, ...]) -> None:
    if out.rank != inp.rank:
        raise DescriptorError(
            f"output_tensor has {out.rank} dimensions, but input_tensor has {inp.rank}; they must match"
        )
    for i, (n_in, n_out) in enumerate(zip(inp.sizes, out.sizes)):
        if i in axes and n_out != 1:
            raise DescriptorError(
                f"output_tensor.sizes[{i}] is {n_out}, but axis {i} is reduced, so it must be 1"
            )
        if i not in axes and n_out != n_in:
            raise DescriptorError(
                f"output_tensor.sizes[{i}] is {n_out}, but axis {i} is not reduced, so it must "
                f"equal input_tensor.sizes[{i}] ({n_in})"
            )


@dataclasses.dataclass(frozen=True)
class ArgReduction:
    """The one form every operator lowers to: what the planner and the oracle read.

    ``op`` is "argmax", "argmin" or "hardmax"; ``axes`` are sorted ascending.
    """

    op: str
    input: TensorDesc
    output: TensorDesc
    axes: tuple[int, ...]
    direction: AxisDirection

    @property
    def reduced_count(self) -> int:
        return math.prod(self.input.sizes[a] for a in self.axes)


@dataclasses.dataclass(frozen=True)
class _IndexOperatorDesc:
    """Shared body of DML_ARGMAX_OPERATOR_DESC and DML_ARGMIN_OPERATOR_DESC."""

    input_tensor: TensorDesc
    output_tensor: TensorDesc = None  # type: ignore[assignment]  # None: inferred; a TensorDesc once built
    axes: tuple[int, ...] = ()
    axis_direction: AxisDirection = AxisDirection.INCREASING

    _op = ""  # "argmax" or "argmin", set by the subclasses
    _type_name = ""

    def __post_init__(self):
        inp = _tensor(self.input_tensor, "input_tensor")
        axes = _normalize_axes(self.axes, inp.rank)
        _set(self, "axes", axes)
        _set(self, "axis_direction", AxisDirection.parse(self.axis_direction, "axis_direction"))
        if self.output_tensor is None:
            sizes = tuple(1 if i in axes else n for i, n in enumerate(inp.sizes))
            _set(self, "output_tensor", TensorDesc(DataType.UINT32, sizes))
        out = _tensor(self.output_tensor, "output_tensor")
        _check_index_operator(inp, out, axes)

    def lower(self) -> ArgReduction:
        return ArgReduction(
            self._op, self.input_tensor, self.output_tensor, tuple(sorted(self.axes)), self.axis_direction
        )

    def check_feature_level(self, level) -> None:
        _check_at_level(self._type_name, self.input_tensor, self.output_tensor, level)

    def to_json(self) -> dict:
        return {
            "Type": self._type_name,
            "Desc": {**_tensors_and_axes_json(self), "AxisDirection": self.axis_direction.name},
        }

    @classmethod
    def _from_json_desc(cls, d: dict):
        _check_keys(
            d, {"InputTensor", "OutputTensor", "AxisCount", "Axes", "AxisDirection"}, cls._type_name,
            ("InputTensor", "Axes"),
        )
        _check_axis_count(d)
        return cls(
            input_tensor=_tensor_from_json(d, "InputTensor"),
            output_tensor=_tensor_from_json(d, "OutputTensor"),
            axes=d["Axes"],
            axis_direction=d.get("AxisDirection", "INCREASING"),
        )


def _tensors_and_axes_json(desc) -> dict:
    """The JSON fields that every operator with axes shares, in DirectML's spelling."""
    return {
        "InputTensor": desc.input_tensor.to_json(),
        "OutputTensor": desc.output_tensor.to_json(),
        "AxisCount": len(desc.axes),
        "Axes": list(desc.axes),
    }


def _check_index_operator(inp: TensorDesc, out: TensorDesc, axes: tuple[int, ...]) -> None:
    if out.data_type not in INDEX_TYPE_CAPACITY:
        raise DescriptorError(
            f"output_tensor.data_type is {out.data_type.name}, but it must be one of "
            f"{', '.join(t.name for t in INDEX_TYPE_CAPACITY)}"
        )
    _check_output_shape(inp, out, axes)
    _check_no_self_overlap(out, "output_tensor")
    count = math.prod(inp.sizes[a] for a in axes)
    capacity = INDEX_TYPE_CAPACITY[out.data_type]
    if count > capacity:
        raise DescriptorError(
            f"output_tensor.data_type is {out.data_type.name}, but the {count} reduced elements "
            f"need indices up to {count - 1}, more than {out.data_type.name} holds (at most {capacity} elements)"
        )


def _check_at_level(operator: str, inp: TensorDesc, out: TensorDesc, level) -> None:
    """Refuse what ``operator`` does not take at ``level``: the operator itself below the level
    it appeared at, then input type, output type and dimension count (``OPERATOR_SUPPORT``)."""
    level = FeatureLevel.parse(level, "feature_level")
    support = support_at(operator, level)
    if support is None:
        raise DescriptorError(
            f"{operator} needs feature level {introduced(operator).value}, but the device's "
            f"feature_level is {level.value}"
        )

    def from_level(accepts) -> str:
        first = first_level(operator, accepts)
        return f" (from feature level {first.value})" if first else ""

    at = f"{operator} at feature level {level.value}"
    inputs, outputs, dimensions = describe(support)
    if inp.data_type not in support.inputs:
        raise DescriptorError(
            f"input_tensor.data_type is {inp.data_type.name}, but {at} takes {inputs}"
            f"{from_level(lambda s: inp.data_type in s.inputs)}"
        )
    if not support.output_is_input_type and out.data_type not in support.outputs:
        raise DescriptorError(
            f"output_tensor.data_type is {out.data_type.name}, but {at} writes {outputs}"
            f"{from_level(lambda s: out.data_type in s.outputs)}"
        )
    low, high = support.dimensions
    if not low <= inp.rank <= high:
        raise DescriptorError(
            f"input_tensor has {inp.rank} dimensions, but {at} takes {dimensions}"
            f"{from_level(lambda s: s.dimensions[0] <= inp.rank <= s.dimensions[1])}"
        )


def _check_axis_count(d: dict) -> None:
    axes = _json_list(d["Axes"], "Axes")
    if "AxisCount" in d and _json_int(d["AxisCount"], "AxisCount") != len(axes):
        raise DescriptorError(f"AxisCount is {d['AxisCount']}, but Axes has {len(axes)} entries")


def _tensor_from_json(d: dict, key: str) -> Any:  # a TensorDesc, or None for the constructor to infer
    if d.get(key) is None:
        return None
    if not isinstance(d[key], dict):
        raise TypeError(f"{key} must be an object (a TensorDesc's fields), not {type(d[key]).__name__} "
                        f"({_shown(d[key])})")
    try:
        return TensorDesc.from_json(d[key])
    except DescriptorError as err:
        raise err.within(key) from None
    except TypeError as err:
        raise TypeError(f"{key}.{err}") from None


@dataclasses.dataclass(frozen=True)
class ArgMaxOperatorDesc(_IndexOperatorDesc):
    """DML_ARGMAX_OPERATOR_DESC."""

    _op = "argmax"
    _type_name = "ARGMAX"


@dataclasses.dataclass(frozen=True)
class ArgMinOperatorDesc(_IndexOperatorDesc):
    """DML_ARGMIN_OPERATOR_DESC."""

    _op = "argmin"
    _type_name = "ARGMIN"


@dataclasses.dataclass(frozen=True)
class ActivationHardmax1OperatorDesc:
    """DML_ACTIVATION_HARDMAX1_OPERATOR_DESC: 1 at the first maximum of each slice, else 0."""

    input_tensor: TensorDesc
    output_tensor: TensorDesc = None  # type: ignore[assignment]  # None: inferred; a TensorDesc once built
    axes: tuple[int, ...] = ()

    def __post_init__(self):
        inp = _tensor(self.input_tensor, "input_tensor")
        _set(self, "axes", _normalize_axes(self.axes, inp.rank))
        if self.output_tensor is None:
            _set(self, "output_tensor", TensorDesc(inp.data_type, inp.sizes))
        out = _tensor(self.output_tensor, "output_tensor")
        if inp.data_type not in HARDMAX_TYPES:
            raise DescriptorError(
                f"input_tensor.data_type is {inp.data_type.name}, but HARDMAX takes FLOAT32 or FLOAT16"
            )
        if out.data_type != inp.data_type:
            raise DescriptorError(
                f"output_tensor.data_type is {out.data_type.name}, but it must equal "
                f"input_tensor.data_type ({inp.data_type.name})"
            )
        if out.rank != inp.rank or out.sizes != inp.sizes:
            raise DescriptorError(
                f"output_tensor.sizes is {list(out.sizes)}, but it must equal "
                f"input_tensor.sizes ({list(inp.sizes)})"
            )
        _check_no_self_overlap(out, "output_tensor")

    def lower(self) -> ArgReduction:
        return ArgReduction(
            "hardmax", self.input_tensor, self.output_tensor, tuple(sorted(self.axes)),
            AxisDirection.INCREASING,
        )

    def check_feature_level(self, level) -> None:
        _check_at_level("ACTIVATION_HARDMAX1", self.input_tensor, self.output_tensor, level)

    def to_json(self) -> dict:
        return {
            "Type": "ACTIVATION_HARDMAX1",
            "Desc": _tensors_and_axes_json(self),
        }

    @classmethod
    def _from_json_desc(cls, d: dict):
        _check_keys(
            d, {"InputTensor", "OutputTensor", "AxisCount", "Axes"}, "ACTIVATION_HARDMAX1", ("InputTensor", "Axes")
        )
        _check_axis_count(d)
        return cls(_tensor_from_json(d, "InputTensor"), _tensor_from_json(d, "OutputTensor"), d["Axes"])


@dataclasses.dataclass(frozen=True)
class ActivationHardmaxOperatorDesc:
    """DML_ACTIVATION_HARDMAX_OPERATOR_DESC: HARDMAX1 over the last axis."""

    input_tensor: TensorDesc
    output_tensor: TensorDesc = None  # type: ignore[assignment]  # None: inferred; a TensorDesc once built

    def __post_init__(self):
        inp = _tensor(self.input_tensor, "input_tensor")
        one = ActivationHardmax1OperatorDesc(inp, self.output_tensor, (inp.rank - 1,))
        _set(self, "output_tensor", one.output_tensor)

    def lower(self) -> ArgReduction:
        return ActivationHardmax1OperatorDesc(
            self.input_tensor, self.output_tensor, (self.input_tensor.rank - 1,)
        ).lower()

    def check_feature_level(self, level) -> None:
        _check_at_level("ACTIVATION_HARDMAX", self.input_tensor, self.output_tensor, level)

    def to_json(self) -> dict:
        return {
            "Type": "ACTIVATION_HARDMAX",
            "Desc": {"InputTensor": self.input_tensor.to_json(), "OutputTensor": self.output_tensor.to_json()},
        }

    @classmethod
    def _from_json_desc(cls, d: dict):
        _check_keys(d, {"InputTensor", "OutputTensor"}, "ACTIVATION_HARDMAX", ("InputTensor",))
        return cls(_tensor_from_json(d, "InputTensor"), _tensor_from_json(d, "OutputTensor"))


@dataclasses.dataclass(frozen=True)
class ReduceOperatorDesc:
    """DML_REDUCE_OPERATOR_DESC with function ARGMAX or ARGMIN (INCREASING ties)."""

    function: ReduceFunction
    input_tensor: TensorDesc
    output_tensor: TensorDesc = None  # type: ignore[assignment]  # None: inferred; a TensorDesc once built
    axes: tuple[int, ...] = ()

    def __post_init__(self):
        function = ReduceFunction.parse(self.function, "function")
        if function not in (ReduceFunction.ARGMAX, ReduceFunction.ARGMIN):
            raise DescriptorError(
                f"function is {function.name}, but this library implements only ARGMAX and ARGMIN"
            )
        _set(self, "function", function)
        inner = self._index_desc()
        _set(self, "axes", inner.axes)
        _set(self, "output_tensor", inner.output_tensor)

    def _index_desc(self) -> _IndexOperatorDesc:
        cls = ArgMaxOperatorDesc if self.function is ReduceFunction.ARGMAX else ArgMinOperatorDesc
        return cls(self.input_tensor, self.output_tensor, self.axes, AxisDirection.INCREASING)

    def lower(self) -> ArgReduction:
        return self._index_desc().lower()

    def check_feature_level(self, level) -> None:
        _check_at_level("REDUCE", self.input_tensor, self.output_tensor, level)

    def to_json(self) -> dict:
        return {
            "Type": "REDUCE",
            "Desc": {"Function": self.function.name, **_tensors_and_axes_json(self)},
        }

    @classmethod
    def _from_json_desc(cls, d: dict):
        _check_keys(
            d, {"Function", "InputTensor", "OutputTensor", "AxisCount", "Axes"}, "REDUCE",
            ("Function", "InputTensor", "Axes"),
        )
        _check_axis_count(d)
        return cls(d["Function"], _tensor_from_json(d, "InputTensor"), _tensor_from_json(d, "OutputTensor"), d["Axes"])


OperatorDesc = (
    ArgMaxOperatorDesc | ArgMinOperatorDesc | ActivationHardmax1OperatorDesc
    | ActivationHardmaxOperatorDesc | ReduceOperatorDesc
)

_BY_TYPE: dict[str, Any] = {
    "ARGMAX": ArgMaxOperatorDesc,
    "ARGMIN": ArgMinOperatorDesc,
    "ACTIVATION_HARDMAX1": ActivationHardmax1OperatorDesc,
    "ACTIVATION_HARDMAX": ActivationHardmaxOperatorDesc,
    "REDUCE": ReduceOperatorDesc,
}


def operator_from_json(obj) -> OperatorDesc:
    """An operator descriptor from its JSON form (a dict or a JSON string).

    The form is ``{"Type": "ARGMAX", "Desc": {...}}`` with DirectML's field names;
    ``Type`` may carry DirectML's ``DML_OPERATOR_`` prefix. Text that is not JSON raises a
    ``DescriptorError`` naming where it goes wrong; a field of the wrong kind a ``TypeError``
    naming the field.
    """
    if isinstance(obj, (str, bytes, bytearray)):
        obj = _parse_json(obj)
    _check_keys(obj, {"Type", "Desc"}, "operator", ("Type", "Desc"))
    if not isinstance(obj["Type"], str):
        raise TypeError(f"Type must be a string such as 'ARGMAX', not {type(obj['Type']).__name__} "
                        f"({_shown(obj['Type'])})")
    kind = obj["Type"].strip().upper().removeprefix("DML_OPERATOR_")
    if kind not in _BY_TYPE:
        raise DescriptorError(f"Type is {_shown(obj['Type'])}, but it must be one of {', '.join(_BY_TYPE)}")
    if not isinstance(obj["Desc"], dict):
        raise TypeError(f"Desc must be an object with the {kind} fields, not {type(obj['Desc']).__name__} "
                        f"({_shown(obj['Desc'])})")
    return _BY_TYPE[kind]._from_json_desc(obj["Desc"])


def _parse_json(text) -> Any:
    """``json.loads``, its refusals as DescriptorErrors that say where the text goes wrong."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as err:
        raise DescriptorError(f"the operator's JSON is not valid JSON: {err.msg} at line {err.lineno} column "
                              f"{err.colno} (near {_shown(err.doc[max(0, err.pos - 10):err.pos + 10])})") from None
    except UnicodeDecodeError as err:
        raise DescriptorError(f"the operator's JSON is not UTF-8 text: {err.reason} at byte {err.start}") from None
    except RecursionError:
        raise DescriptorError("the operator's JSON nests arrays or objects deeper than Python's JSON reader "
                              "goes; an operator's JSON nests three levels") from None
    except ValueError as err:  # e.g. an integer of more digits than Python converts
        raise DescriptorError(f"the operator's JSON holds a value Python cannot read: {err}") from None


def operator_for(op: str, input_tensor: TensorDesc, axes, axis_direction=AxisDirection.INCREASING,
                 output_data_type=DataType.UINT32) -> OperatorDesc:
    """The descriptor of ``op`` ("argmax", "argmin" or "hardmax") over ``axes`` of a tensor,
    its output packed: the input's sizes with 1 on each reduced axis and ``output_data_type``
    for the index operators, the input's type and sizes for HARDMAX1."""
    if op == "hardmax":
        return ActivationHardmax1OperatorDesc(input_tensor, TensorDesc(input_tensor.data_type, input_tensor.sizes), axes)
    cls: type[ArgMaxOperatorDesc | ArgMinOperatorDesc] = ArgMaxOperatorDesc if op == "argmax" else ArgMinOperatorDesc
    sizes = tuple(1 if i in axes else n for i, n in enumerate(input_tensor.sizes))
    return cls(input_tensor, TensorDesc(output_data_type, sizes), axes, axis_direction)


def lower(desc) -> ArgReduction:
    """The ``ArgReduction`` of any operator descriptor."""
    if not isinstance(desc, (ArgMaxOperatorDesc, ArgMinOperatorDesc, ActivationHardmax1OperatorDesc,
                             ActivationHardmaxOperatorDesc, ReduceOperatorDesc)):
        raise TypeError(f"expected an operator descriptor, not {type(desc).__name__}")
    return desc.lower()


__all__ = [
    "TensorDesc", "ArgMaxOperatorDesc", "ArgMinOperatorDesc", "ActivationHardmax1OperatorDesc",
    "ActivationHardmaxOperatorDesc", "ReduceOperatorDesc", "ArgReduction", "OperatorDesc",
    "calc_buffer_tensor_size", "packed_strides", "operator_from_json", "operator_for", "lower", "NanMode",
]
