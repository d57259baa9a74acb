"""``TensorDesc``, DirectML's DML_BUFFER_TENSOR_DESC, validated when it is made, and what any
descriptor's fields share: ``calc_buffer_tensor_size`` (DMLCalcBufferTensorSize), packed
strides, whether a layout places two elements at one address (``first_overlap``), and how
fields read from JSON are checked (with messages that name the field).

The operator descriptors that hold tensor descriptors are in ``desc.py``.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Optional, Sequence

from .errors import DescriptorError
from .types import MAX_ELEMENTS, MAX_RANK, DataType, TensorFlags


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


def int_tuple(value, field: str) -> tuple[int, ...]:
    if isinstance(value, (str, bytes)) or not hasattr(value, "__iter__"):
        raise TypeError(f"{field} must be a sequence of integers, not {type(value).__name__} ({value!r})")
    items = tuple(value)
    for i, item in enumerate(items):
        if isinstance(item, bool) or not isinstance(item, int) and not hasattr(item, "__index__"):
            raise TypeError(f"{field}[{i}] must be an integer, not {type(item).__name__} ({item!r})")
    return tuple(int(item) for item in items)


def int_scalar(value, field: str) -> int:
    if isinstance(value, bool) or not hasattr(value, "__index__"):
        raise TypeError(f"{field} must be an integer, not {type(value).__name__} ({value!r})")
    return int(value)


def set_field(obj, name, value):
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
        set_field(self, "data_type", DataType.parse(self.data_type, "data_type"))
        set_field(self, "flags", TensorFlags.parse(self.flags, "flags"))
        sizes = int_tuple(self.sizes, "sizes")
        set_field(self, "sizes", sizes)
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
            strides = int_tuple(self.strides, "strides")
            set_field(self, "strides", strides)
            if len(strides) != len(sizes):
                raise DescriptorError(
                    f"strides has {len(strides)} entries, but sizes has {len(sizes)}; they must match"
                )
            for i, stride in enumerate(strides):
                if stride < 0:
                    raise DescriptorError(f"strides[{i}] is {stride}, but a stride must be at least 0")
        needed = calc_buffer_tensor_size(self.data_type, sizes, self.strides)
        if self.total_tensor_size_in_bytes is None:
            set_field(self, "total_tensor_size_in_bytes", needed)
        else:
            total = int_scalar(self.total_tensor_size_in_bytes, "total_tensor_size_in_bytes")
            set_field(self, "total_tensor_size_in_bytes", total)
            if total < needed:
                raise DescriptorError(
                    f"total_tensor_size_in_bytes is {total}, but these sizes and strides need at "
                    f"least {needed} (calc_buffer_tensor_size)"
                )
            if total % 4:
                raise DescriptorError(
                    f"total_tensor_size_in_bytes is {total}, but it must be a multiple of 4"
                )
        align = int_scalar(self.guaranteed_base_offset_alignment, "guaranteed_base_offset_alignment")
        set_field(self, "guaranteed_base_offset_alignment", align)
        if align != 0 and (align & (align - 1) or align < self.data_type.size):
            raise DescriptorError(
                f"guaranteed_base_offset_alignment is {align}, but it must be 0 or a power of two "
                f"of at least the element size ({self.data_type.size})"
            )

    def __hash__(self) -> int:
        """The fields' hash, found once: a descriptor is part of the keys small calls look
        up (the call cache's, ``api._run``). Not pickled: an enum's hash differs between
        processes."""
        found = self.__dict__.get("_hash")
        if found is None:
            found = hash(tuple(getattr(self, f.name) for f in dataclasses.fields(self)))
            set_field(self, "_hash", found)
        return found

    def __getstate__(self) -> dict:
        return {k: v for k, v in self.__dict__.items() if k != "_hash"}

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
        check_keys(obj, TENSOR_KEYS, "TensorDesc", ("DataType", "Sizes"))
        sizes = json_list(obj["Sizes"], "Sizes")
        if obj.get("Strides") is not None:
            json_list(obj["Strides"], "Strides")
        if "DimensionCount" in obj:
            count = json_int(obj["DimensionCount"], "DimensionCount")
            if count != len(sizes):
                raise DescriptorError(f"DimensionCount is {count}, but Sizes has {len(sizes)} entries")
        for key in ("DataType", "Flags"):
            if key in obj and not isinstance(obj[key], str):
                raise TypeError(f"{key} must be a string such as {'FLOAT32' if key == 'DataType' else 'NONE'!r}, "
                                f"not {type(obj[key]).__name__} ({shown(obj[key])})")
        return cls(
            data_type=obj["DataType"],
            sizes=obj["Sizes"],
            strides=obj.get("Strides"),
            flags=obj.get("Flags", "NONE"),
            total_tensor_size_in_bytes=obj.get("TotalTensorSizeInBytes"),  # type: ignore[arg-type]  # None: inferred
            guaranteed_base_offset_alignment=obj.get("GuaranteedBaseOffsetAlignment", 0),
        )


TENSOR_KEYS = {
    "DataType", "Flags", "DimensionCount", "Sizes", "Strides",
    "TotalTensorSizeInBytes", "GuaranteedBaseOffsetAlignment",
}


def check_keys(obj: dict, allowed: set, what: str, required: tuple = ()) -> None:
    if not isinstance(obj, dict):
        raise TypeError(f"{what} JSON must be an object, not {type(obj).__name__} ({shown(obj)})")
    unknown = sorted((key for key in obj if key not in allowed), key=repr)
    if unknown:
        raise DescriptorError(f"{what} has unknown field(s) {shown(unknown)}; known: {sorted(allowed)}")
    missing = [key for key in required if key not in obj]
    if missing:
        raise DescriptorError(f"{what} is missing field(s) {missing}; required: {list(required)}")


def shown(value, limit: int = 80) -> str:
    """The repr of a value from the caller's JSON, cut to ``limit`` characters (and safe for any depth)."""
    try:
        text = repr(value)
    except RecursionError:
        text = f"<{type(value).__name__} nested too deep to show>"
    return text if len(text) <= limit else text[: limit - 3] + "..."


def json_list(value, field: str) -> list:
    """A JSON array field (Sizes, Strides, Axes), or a TypeError naming it."""
    if not isinstance(value, (list, tuple)):
        raise TypeError(f"{field} must be an array of integers, not {type(value).__name__} ({shown(value)})")
    return list(value)


def json_int(value, field: str) -> int:
    """A JSON integer field (DimensionCount, AxisCount), or a TypeError naming it."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{field} must be an integer, not {type(value).__name__} ({shown(value)})")
    return value


def tensor_field(value, field: str) -> TensorDesc:
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


def check_no_self_overlap(t: TensorDesc, field: str) -> None:
    """An output may not have two elements at one address (``first_overlap``)."""
    overlap = first_overlap(t)
    if overlap is not None:
        axis, stride, extent = overlap
        raise DescriptorError(
            f"{field}.strides[{axis}] is {stride}, but an output may not have two elements "
            f"at one address; it must be greater than {extent}"
        )
