"""Enumerations mirroring DirectML's, and the tables that belong to them.

Each enum accepts the library's lowercase spelling, DirectML's short spelling
("FLOAT32") and its full spelling ("DML_TENSOR_DATA_TYPE_FLOAT32") through
``parse``; the JSON form always uses the short upper-case spelling.
"""

from __future__ import annotations

import enum

import numpy as np

from .errors import DescriptorError


class _Parsable(enum.Enum):
    """An enum whose members parse from any of DirectML's spellings."""

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


class DataType(_Parsable):
    """DML_TENSOR_DATA_TYPE, restricted to the types these operators know."""

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

    @property
    def numpy(self) -> np.dtype:
        """The little-endian NumPy dtype with the same bit layout."""
        return np.dtype(self.value).newbyteorder("<")

    @property
    def size(self) -> int:
        """Element size in bytes."""
        return self.numpy.itemsize

    @property
    def is_float(self) -> bool:
        return self in (DataType.FLOAT32, DataType.FLOAT16)

    @classmethod
    def from_numpy(cls, dtype, field: str = "dtype") -> "DataType":
        dt = np.dtype(dtype)
        if dt.kind in "fiu":
            for member in cls:
                if np.dtype(member.value) == dt.newbyteorder("="):
                    return member
        supported = ", ".join(m.value for m in cls)
        raise TypeError(f"{field} is {dt}, but it must be one of {supported}") from None


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
    """What a NaN does (SPEC.md section 2). Not a DirectML field: a library option."""

    IGNORE = "ignore"  # DirectML: a NaN is never the extreme while a number is present
    PROPAGATE = "propagate"  # NumPy: the first (or last) NaN is the extreme


class FeatureLevel(_Parsable):
    """DML_FEATURE_LEVEL; decides which input types ARGMAX/ARGMIN accept."""

    FL_3_0 = "3.0"
    FL_4_1 = "4.1"

    @classmethod
    def parse(cls, value, field: str = "feature_level"):
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            value = f"{float(value):.1f}"
        if isinstance(value, str):
            value = value.strip().upper().replace("DML_FEATURE_LEVEL_", "").replace("_", ".")
        return super().parse(value, field)


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

#: Input types of ARGMAX / ARGMIN per feature level (the reference pages' tables).
ARG_INPUT_TYPES = {
    FeatureLevel.FL_3_0: tuple(t for t in DataType if t not in (DataType.INT64, DataType.UINT64)),
    FeatureLevel.FL_4_1: tuple(DataType),
}

#: Input (and output) types of HARDMAX / HARDMAX1.
HARDMAX_TYPES = (DataType.FLOAT32, DataType.FLOAT16)

#: DirectML's cap on the elements of one buffer tensor.
MAX_ELEMENTS = 2**32 - 1
MAX_RANK = 8
