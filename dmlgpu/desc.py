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
- FLOAT64 inputs are taken by every operator, an extension beyond DirectML's tables
  (``types.EXTENSION_TYPES``); HARDMAX's output is then FLOAT64 too.
- A descriptor checks every rule of docs/semantics.md when it is constructed, so an
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
from typing import Any

from .errors import DescriptorError
from .tensor_desc import (TensorDesc, calc_buffer_tensor_size, check_keys, check_no_self_overlap, int_tuple,
                          json_int, json_list, packed_strides, set_field, shown, tensor_field)
from .types import (
    EXTENSION_TYPES,
    HARDMAX_TYPES,
    INDEX_TYPE_CAPACITY,
    AxisDirection,
    DataType,
    FeatureLevel,
    NanMode,
    ReduceFunction,
    describe,
    first_level,
    introduced,
    support_at,
)


def _normalize_axes(axes, rank: int, field: str = "axes") -> tuple[int, ...]:
    axes = int_tuple(axes, field)
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
    #: Each winner's shader key beside its index (``KeyedIndexDesc``): UINT64 output words,
    #: the index in the low half, the key in the high half.
    keyed: bool = False

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
        inp = tensor_field(self.input_tensor, "input_tensor")
        axes = _normalize_axes(self.axes, inp.rank)
        set_field(self, "axes", axes)
        set_field(self, "axis_direction", AxisDirection.parse(self.axis_direction, "axis_direction"))
        if self.output_tensor is None:
            sizes = tuple(1 if i in axes else n for i, n in enumerate(inp.sizes))
            set_field(self, "output_tensor", TensorDesc(DataType.UINT32, sizes))
        out = tensor_field(self.output_tensor, "output_tensor")
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
        check_keys(
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
    check_no_self_overlap(out, "output_tensor")
    count = math.prod(inp.sizes[a] for a in axes)
    capacity = INDEX_TYPE_CAPACITY[out.data_type]
    if count > capacity:
        raise DescriptorError(
            f"output_tensor.data_type is {out.data_type.name}, but the {count} reduced elements "
            f"need indices up to {count - 1}, more than {out.data_type.name} holds (at most {capacity} elements)"
        )


def _check_at_level(operator: str, inp: TensorDesc, out: TensorDesc, level) -> None:
    """Refuse what ``operator`` does not take at ``level``: the operator itself below the level
    it appeared at, then input type, output type and dimension count (``OPERATOR_SUPPORT``).
    The extension's types (FLOAT64) are taken wherever the operator exists."""
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
    if inp.data_type not in support.inputs and inp.data_type not in EXTENSION_TYPES:
        extension = ", ".join(t.name for t in EXTENSION_TYPES)
        raise DescriptorError(
            f"input_tensor.data_type is {inp.data_type.name}, but {at} takes {inputs}"
            f"{from_level(lambda s: inp.data_type in s.inputs)} (and {extension}, beyond DirectML)"
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
    axes = json_list(d["Axes"], "Axes")
    if "AxisCount" in d and json_int(d["AxisCount"], "AxisCount") != len(axes):
        raise DescriptorError(f"AxisCount is {d['AxisCount']}, but Axes has {len(axes)} entries")


def _tensor_from_json(d: dict, key: str) -> Any:  # a TensorDesc, or None for the constructor to infer
    if d.get(key) is None:
        return None
    if not isinstance(d[key], dict):
        raise TypeError(f"{key} must be an object (a TensorDesc's fields), not {type(d[key]).__name__} "
                        f"({shown(d[key])})")
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
        inp = tensor_field(self.input_tensor, "input_tensor")
        set_field(self, "axes", _normalize_axes(self.axes, inp.rank))
        if self.output_tensor is None:
            set_field(self, "output_tensor", TensorDesc(inp.data_type, inp.sizes))
        out = tensor_field(self.output_tensor, "output_tensor")
        if inp.data_type not in HARDMAX_TYPES:
            raise DescriptorError(
                f"input_tensor.data_type is {inp.data_type.name}, but HARDMAX takes FLOAT32 or FLOAT16 "
                f"(and FLOAT64, beyond DirectML)"
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
        check_no_self_overlap(out, "output_tensor")

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
        check_keys(
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
        inp = tensor_field(self.input_tensor, "input_tensor")
        one = ActivationHardmax1OperatorDesc(inp, self.output_tensor, (inp.rank - 1,))
        set_field(self, "output_tensor", one.output_tensor)

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
        check_keys(d, {"InputTensor", "OutputTensor"}, "ACTIVATION_HARDMAX", ("InputTensor",))
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
        set_field(self, "function", function)
        inner = self._index_desc()
        set_field(self, "axes", inner.axes)
        set_field(self, "output_tensor", inner.output_tensor)

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
        check_keys(
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
    check_keys(obj, {"Type", "Desc"}, "operator", ("Type", "Desc"))
    if not isinstance(obj["Type"], str):
        raise TypeError(f"Type must be a string such as 'ARGMAX', not {type(obj['Type']).__name__} "
                        f"({shown(obj['Type'])})")
    kind = obj["Type"].strip().upper().removeprefix("DML_OPERATOR_")
    if kind not in _BY_TYPE:
        raise DescriptorError(f"Type is {shown(obj['Type'])}, but it must be one of {', '.join(_BY_TYPE)}")
    if not isinstance(obj["Desc"], dict):
        raise TypeError(f"Desc must be an object with the {kind} fields, not {type(obj['Desc']).__name__} "
                        f"({shown(obj['Desc'])})")
    return _BY_TYPE[kind]._from_json_desc(obj["Desc"])


def _parse_json(text) -> Any:
    """``json.loads``, its refusals as DescriptorErrors that say where the text goes wrong."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as err:
        raise DescriptorError(f"the operator's JSON is not valid JSON: {err.msg} at line {err.lineno} column "
                              f"{err.colno} (near {shown(err.doc[max(0, err.pos - 10):err.pos + 10])})") from None
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


@dataclasses.dataclass(frozen=True)
class KeyedIndexDesc:
    """Not a DirectML operator: ``index`` (ARGMAX or ARGMIN, its output UINT64, its input of at
    most 32 bits) with each winner's key, as the shaders compare it, in the high half of its
    output word and the index in the low half (``ArgReduction.keyed``). ``dmlgpu.dask`` merges
    its chunks' results by the winners' keys: read from the GPU, they need no gather of the
    winning values from the chunk on the host."""

    index: OperatorDesc  # checked: ARGMAX or ARGMIN (operator_for's result, as it gives one)

    def __post_init__(self):
        if not isinstance(self.index, (ArgMaxOperatorDesc, ArgMinOperatorDesc)):
            raise TypeError(f"index must be an ARGMAX or ARGMIN descriptor, not {type(self.index).__name__}")
        inp, out = self.index.input_tensor, self.index.output_tensor
        if out.data_type is not DataType.UINT64:
            raise DescriptorError(f"index.output_tensor.data_type is {out.data_type.name}, but a keyed output "
                                  f"must be UINT64 (the index in its low half, the key in its high half)")
        if inp.data_type.size > 4:
            raise DescriptorError(f"index.input_tensor.data_type is {inp.data_type.name}, but a keyed output "
                                  f"takes inputs of at most 32 bits (their keys fill a half of its word)")

    def lower(self) -> ArgReduction:
        return dataclasses.replace(self.index.lower(), keyed=True)

    def check_feature_level(self, level) -> None:
        self.index.check_feature_level(level)


def lower(desc) -> ArgReduction:
    """The ``ArgReduction`` of any operator descriptor."""
    if not isinstance(desc, (ArgMaxOperatorDesc, ArgMinOperatorDesc, ActivationHardmax1OperatorDesc,
                             ActivationHardmaxOperatorDesc, ReduceOperatorDesc, KeyedIndexDesc)):
        raise TypeError(f"expected an operator descriptor, not {type(desc).__name__}")
    return desc.lower()


__all__ = [
    "TensorDesc", "ArgMaxOperatorDesc", "ArgMinOperatorDesc", "ActivationHardmax1OperatorDesc",
    "ActivationHardmaxOperatorDesc", "ReduceOperatorDesc", "ArgReduction", "OperatorDesc",
    "calc_buffer_tensor_size", "packed_strides", "operator_from_json", "operator_for", "lower", "NanMode",
]
