"""Enumerations mirroring DirectML's, and the tables that belong to them.

Each enum accepts the library's lowercase spelling, DirectML's short spelling
("FLOAT32") and its full spelling ("DML_TENSOR_DATA_TYPE_FLOAT32") through
``parse``; the JSON form always uses the short upper-case spelling.
"""

from __future__ import annotations

import dataclasses
import enum
import functools

import numpy as np

from .errors import DescriptorError


class _Parsable(enum.Enum):
    """An enum whose members parse from any of DirectML's spellings."""

    # Members are singletons compared by identity: hashing by identity is consistent, and
    # a C slot where Enum's own hash is Python code (12 hashes a call key the caches).
    __hash__ = object.__hash__

    @classmethod
    def parse(cls, value, field: str):
        """Return the member that `value` names; `field` is used in the error."""
        if isinstance(value, cls):
            return value
        if not isinstance(value, str):
            raise TypeError(
                f"{field} must be a {cls.__name__} or a string, not {type(value).__name__} ({value!r})"
            )
        name = value.strip().upper()
        prefix = cls._prefix_of()
        if prefix and name.startswith(prefix):
            name = name[len(prefix):]
        for member in cls:
            if name in (member.name, str(member.value).upper()):
                return member
        choices = ", ".join(m.name for m in cls)
        raise DescriptorError(f"{field} is {value!r}, but it must be one of {choices}") from None

    @classmethod
    def _prefix_of(cls) -> str:
        return _PREFIXES.get(cls.__name__, "")


_NUMPY_DTYPES: dict = {}  # DataType -> its NumPy dtype (DataType.numpy)


class DataType(_Parsable):
    """DML_TENSOR_DATA_TYPE, restricted to the types these operators know: the ten of their
    reference pages, and FLOAT64, which those pages do not list and dmlgpu takes as an
    extension beyond DirectML (``EXTENSION_TYPES``)."""

    FLOAT32 = "float32"
    FLOAT16 = "float16"
    UINT32 = "uint32"
    UINT16 = "uint16"
    UINT8 = "uint8"
    INT32 = "int32"
    INT16 = "int16"
    INT8 = "int8"
    UINT64 = "uint64"
    INT64 = "int64"
    FLOAT64 = "float64"  # an extension beyond DirectML's tables for these operators

    @property
    def numpy(self) -> np.dtype:
        """The little-endian NumPy dtype with the same bit layout."""
        dtype = _NUMPY_DTYPES.get(self)
        if dtype is None:  # made once: a small call asks for it on every call
            dtype = _NUMPY_DTYPES[self] = np.dtype(self.value).newbyteorder("<")
        return dtype

    @property
    def size(self) -> int:
        """Element size in bytes."""
        return self.numpy.itemsize

    @property
    def is_float(self) -> bool:
        return self in (DataType.FLOAT32, DataType.FLOAT16, DataType.FLOAT64)

    @classmethod
    def from_numpy(cls, dtype, field: str = "dtype") -> "DataType":
        dt = np.dtype(dtype)
        if dt.kind in "fiu":
            for member in cls:
                if np.dtype(member.value) == dt.newbyteorder("="):
                    return member
        directml = ", ".join(m.value for m in cls if m not in EXTENSION_TYPES)
        extensions = ", ".join(m.value for m in EXTENSION_TYPES)
        hint = ""
        if dt.kind == "f":
            hint = " (cast with .astype(np.float64))"
        elif dt.kind == "b":
            hint = " (cast with .astype(np.uint8); dmlgpu.numpy's functions take bool as it is)"
        raise TypeError(f"{field} is {dt}, but it must be one of DirectML's types ({directml}) or {extensions}, "
                        f"which dmlgpu takes beyond DirectML{hint}") from None


class TensorFlags(_Parsable):
    """DML_TENSOR_FLAGS: stored, with no effect on results."""

    NONE = "none"
    OWNED_BY_DML = "owned_by_dml"


class AxisDirection(_Parsable):
    """DML_AXIS_DIRECTION: which of several equal extremes wins."""

    INCREASING = "increasing"  # the smallest index
    DECREASING = "decreasing"  # the largest index


class ReduceFunction(_Parsable):
    """DML_REDUCE_FUNCTION. Only ARGMAX and ARGMIN are accepted by this library."""

    ARGMAX = "argmax"
    ARGMIN = "argmin"
    AVERAGE = "average"
    L1 = "l1"
    L2 = "l2"
    LOG_SUM = "log_sum"
    LOG_SUM_EXP = "log_sum_exp"
    MAX = "max"
    MIN = "min"
    MULTIPLY = "multiply"
    SUM = "sum"
    SUM_SQUARE = "sum_square"


class NanMode(_Parsable):
    """What a NaN does (docs/semantics.md#index-ties-floats-nan-integers). Not a DirectML field: a library option."""

    IGNORE = "ignore"  # DirectML: a NaN is never the extreme while a number is present
    PROPAGATE = "propagate"  # NumPy: the first (or last) NaN is the extreme


@functools.total_ordering
class FeatureLevel(_Parsable):
    """DML_FEATURE_LEVEL: every level DirectML names (DirectML.h, 1_0 up to 6_4), in order.

    Members compare by level. What an operator takes at a level is the row of
    ``OPERATOR_SUPPORT`` at or below it, so a level where no row changes behaves as the
    nearest lower level that has one (``modelled``).
    """

    FL_1_0 = "1.0"
    FL_2_0 = "2.0"
    FL_2_1 = "2.1"
    FL_3_0 = "3.0"
    FL_3_1 = "3.1"
    FL_4_0 = "4.0"
    FL_4_1 = "4.1"
    FL_5_0 = "5.0"
    FL_5_1 = "5.1"
    FL_5_2 = "5.2"
    FL_6_0 = "6.0"
    FL_6_1 = "6.1"
    FL_6_2 = "6.2"
    FL_6_3 = "6.3"
    FL_6_4 = "6.4"

    @property
    def code(self) -> int:
        """DirectML's enum value: 0x4100 for DML_FEATURE_LEVEL_4_1."""
        major, minor = self.value.split(".")
        return int(major) << 12 | int(minor) << 8

    @property
    def directml_name(self) -> str:
        return "DML_FEATURE_LEVEL_" + self.value.replace(".", "_")

    @property
    def modelled(self) -> "FeatureLevel":
        """The level whose rows this one uses: the highest modelled level at or below it."""
        return max(level for level in MODELLED_LEVELS if level <= self)

    def __lt__(self, other: object) -> bool:
        if not isinstance(other, FeatureLevel):
            return NotImplemented
        return self.code < other.code

    @classmethod
    def parse(cls, value, field: str = "feature_level"):
        """A member from "4.1", 4.1, "4_1", "DML_FEATURE_LEVEL_4_1", 0x4100 or the member."""
        if isinstance(value, cls):
            return value
        if isinstance(value, bool) or not isinstance(value, (str, int, float)):
            raise TypeError(
                f"{field} must be a FeatureLevel, a string or a number, not {type(value).__name__} ({value!r})"
            )
        for member in cls:
            if isinstance(value, str):
                if value.strip().upper().removeprefix("DML_FEATURE_LEVEL_").replace("_", ".") == member.value:
                    return member
            elif value in (member.code, float(member.value)):  # DirectML's enum value, or 4.1
                return member
        levels = ", ".join(m.value for m in cls)
        raise DescriptorError(
            f"{field} is {value!r}, but it must be one of DirectML's feature levels {levels}"
        ) from None


_PREFIXES = {
    "DataType": "DML_TENSOR_DATA_TYPE_",
    "TensorFlags": "DML_TENSOR_FLAG_",
    "AxisDirection": "DML_AXIS_DIRECTION_",
    "ReduceFunction": "DML_REDUCE_FUNCTION_",
}

#: Output index types of ARGMAX / ARGMIN, with the largest element count each can hold.
INDEX_TYPE_CAPACITY = {
    DataType.INT32: 2**31 - 1,
    DataType.UINT32: 2**32 - 1,
    DataType.INT64: 2**63 - 1,
    DataType.UINT64: 2**64 - 1,
}

#: DirectML's cap on the elements of one buffer tensor.
MAX_ELEMENTS = 2**32 - 1
MAX_RANK = 8

#: Input types beyond DirectML's tables: DirectML has FLOAT64 (DML_TENSOR_DATA_TYPE_FLOAT64), but
#: no reference page of these operators lists it. dmlgpu takes it in every operator (for HARDMAX
#: the output is FLOAT64 too), at every feature level where the operator exists, reduced as
#: exactly as DirectML's own types: it is NumPy's default type. ``OPERATOR_SUPPORT`` stays as
#: the pages state it; ``check_feature_level`` lets these types through beside it.
EXTENSION_TYPES = (DataType.FLOAT64,)

_FLOATS = (DataType.FLOAT32, DataType.FLOAT16)
_DIRECTML = tuple(t for t in DataType if t not in EXTENSION_TYPES)
_NO_64_BIT = tuple(t for t in _DIRECTML if t not in (DataType.INT64, DataType.UINT64))


@dataclasses.dataclass(frozen=True)
class Support:
    """What an operator takes from one feature level on: a table of its reference page."""

    inputs: tuple[DataType, ...]
    outputs: tuple[DataType, ...]
    dimensions: tuple[int, int]  # the fewest and the most
    output_is_input_type: bool = False  # HARDMAX: the output has the input's type


_INDEX_3_0 = Support(_NO_64_BIT, tuple(INDEX_TYPE_CAPACITY), (1, MAX_RANK))
_INDEX_4_1 = Support(_DIRECTML, tuple(INDEX_TYPE_CAPACITY), (1, MAX_RANK))
_HARDMAX = Support(_FLOATS, _FLOATS, (1, MAX_RANK), output_is_input_type=True)

#: Per operator (DML_OPERATOR_ name without the prefix), the feature level at which each
#: table of its reference page starts; the first is the level the operator appeared at.
#: ARGMAX, ARGMIN: seeds 000, 001, 003, 004. ACTIVATION_HARDMAX1: seed 002. The seeds do
#: not give ACTIVATION_HARDMAX and REDUCE; these rows are from their own pages
#: (learn.microsoft.com, DML_ACTIVATION_HARDMAX_OPERATOR_DESC and DML_REDUCE_OPERATOR_DESC,
#: REDUCE's tables for ARGMIN and ARGMAX).
OPERATOR_SUPPORT: dict[str, dict[FeatureLevel, Support]] = {
    "ARGMAX": {FeatureLevel.FL_3_0: _INDEX_3_0, FeatureLevel.FL_4_1: _INDEX_4_1},
    "ARGMIN": {FeatureLevel.FL_3_0: _INDEX_3_0, FeatureLevel.FL_4_1: _INDEX_4_1},
    "REDUCE": {
        FeatureLevel.FL_1_0: Support(_FLOATS, (DataType.UINT32,), (4, 4)),
        FeatureLevel.FL_2_1: Support(_NO_64_BIT, (DataType.UINT32,), (4, 4)),
        FeatureLevel.FL_3_0: _INDEX_3_0,
        FeatureLevel.FL_4_1: _INDEX_4_1,
    },
    "ACTIVATION_HARDMAX": {
        FeatureLevel.FL_1_0: dataclasses.replace(_HARDMAX, dimensions=(4, 4)),
        FeatureLevel.FL_2_0: dataclasses.replace(_HARDMAX, dimensions=(4, 5)),
        FeatureLevel.FL_3_0: _HARDMAX,
    },
    "ACTIVATION_HARDMAX1": {FeatureLevel.FL_5_1: _HARDMAX},
}

#: Input (and output) types of HARDMAX / HARDMAX1, at every level: DirectML's two, and the
#: extension's FLOAT64.
HARDMAX_TYPES = _FLOATS + EXTENSION_TYPES

#: The levels at which some operator's table changes, lowest first.
MODELLED_LEVELS = tuple(sorted({level for rows in OPERATOR_SUPPORT.values() for level in rows}))

#: A Device's level unless it is given one: the highest modelled, where every operator works.
DEFAULT_FEATURE_LEVEL = MODELLED_LEVELS[-1]


def introduced(operator: str) -> FeatureLevel:
    """The feature level at which ``operator`` appeared."""
    return min(OPERATOR_SUPPORT[operator])


def support_at(operator: str, level: FeatureLevel) -> Support | None:
    """What ``operator`` takes at ``level`` (its latest table at or below it), or None
    below the level it appeared at."""
    rows = OPERATOR_SUPPORT[operator]
    at_or_below = [start for start in rows if start <= level]
    return rows[max(at_or_below)] if at_or_below else None


def first_level(operator: str, accepts) -> FeatureLevel | None:
    """The lowest level at which ``accepts(support)`` holds for ``operator``, if any."""
    return next((start for start, support in sorted(OPERATOR_SUPPORT[operator].items()) if accepts(support)), None)


def describe(support: Support) -> tuple[str, str, str]:
    """(input types, output types, dimensions) in words: errors, the README, ``dmlgpu info``."""
    outputs = "the input's type" if support.output_is_input_type else ", ".join(t.name for t in support.outputs)
    low, high = support.dimensions
    return ", ".join(t.name for t in support.inputs), outputs, str(low) if low == high else f"{low} to {high}"


def level_table() -> list[dict]:
    """Every DirectML feature level with the modelled level it behaves as and what each
    operator takes there: what ``dmlgpu info`` shows."""
    table = []
    for level in FeatureLevel:
        operators = {}
        for operator in OPERATOR_SUPPORT:
            support = support_at(operator, level)
            if support is not None:
                operators[operator] = {
                    "input_types": [t.name for t in support.inputs],
                    "output_types": [t.name for t in support.outputs],
                    "output_is_input_type": support.output_is_input_type,
                    "dimensions": list(support.dimensions),
                }
        table.append({"level": level.value, "name": level.directml_name, "behaves_as": level.modelled.value,
                      "operators": operators})
    return table


def support_changes() -> list[tuple[FeatureLevel, tuple[str, ...], Support]]:
    """(level, operators, what they take from it on), one entry per table that starts at a
    level, operators with the same table grouped: the rows of the README's table."""
    grouped: dict[tuple[FeatureLevel, Support], tuple[str, ...]] = {}
    for level in MODELLED_LEVELS:
        for operator, tables in OPERATOR_SUPPORT.items():
            if level in tables:
                key = (level, tables[level])
                grouped[key] = grouped.get(key, ()) + (operator,)
    return [(level, operators, support) for (level, support), operators in grouped.items()]
