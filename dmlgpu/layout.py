"""Host-side layouts: NumPy arrays as DirectML buffer tensors, and back.

``describe`` turns an array (a view with any non-negative strides included) into the
``TensorDesc`` that addresses its memory and the bytes that memory spans, without a
copy; ``view`` reads a buffer through a ``TensorDesc`` as a NumPy array; ``lay_out``
writes a logical array into a fresh buffer of a descriptor's layout.
"""

from __future__ import annotations

from typing import Union

import numpy as np

from .tensor_desc import TensorDesc, first_overlap
from .errors import DataError
from .types import DataType

Buffer = Union[bytes, bytearray, memoryview, np.ndarray]


def as_bytes(buffer: Buffer) -> np.ndarray:
    """The bytes of ``buffer`` as a flat uint8 array (copied only if not contiguous)."""
    if isinstance(buffer, np.ndarray):
        return np.ascontiguousarray(buffer).reshape(-1).view(np.uint8)
    if isinstance(buffer, (bytes, bytearray, memoryview)):
        return np.frombuffer(memoryview(buffer).cast("B"), dtype=np.uint8)
    raise TypeError(
        f"buffer must be bytes, bytearray, memoryview or a NumPy array, not {type(buffer).__name__}"
    )


def view(desc: TensorDesc, buffer: Buffer) -> np.ndarray:
    """The logical tensor that ``desc`` describes over ``buffer``, as a read-only view."""
    raw = as_bytes(buffer)
    needed = desc.total_tensor_size_in_bytes
    if raw.size < needed:
        raise DataError(
            f"buffer holds {raw.size} bytes, but the tensor's total_tensor_size_in_bytes is {needed}"
        )
    return _strided(desc, raw[:needed], writeable=False)


def _strided(desc: TensorDesc, raw: np.ndarray, writeable: bool) -> np.ndarray:
    """``desc``'s elements over the bytes ``raw`` (whose length is a multiple of 4)."""
    dtype = desc.data_type.numpy
    elements = raw[: raw.size // dtype.itemsize * dtype.itemsize].view(dtype)
    byte_strides = tuple(stride * dtype.itemsize for stride in desc.element_strides)
    return np.lib.stride_tricks.as_strided(elements, shape=desc.sizes, strides=byte_strides, writeable=writeable)


def describe(x: np.ndarray, field: str = "x") -> tuple[TensorDesc, np.ndarray]:
    """The descriptor of an array's own layout, and the bytes its elements span.

    Non-negative strides that are whole elements (padded rows, permuted axes,
    broadcast stride 0) are described as they are, without a copy. Negative or
    fractional strides and big-endian data are copied into a packed array first.
    """
    if not isinstance(x, np.ndarray):
        raise TypeError(f"{field} must be a NumPy array, not {type(x).__name__}")
    data_type = DataType.from_numpy(x.dtype, f"{field}.dtype")
    if x.ndim == 0:
        raise DataError(f"{field} has 0 dimensions, but a tensor has 1 to 8")
    if x.size == 0:
        raise DataError(f"{field}.shape is {x.shape}, but every size must be at least 1")
    itemsize = x.itemsize
    if not x.dtype.isnative or x.dtype.byteorder == ">" or any(s < 0 or s % itemsize for s in x.strides):
        x = np.ascontiguousarray(x, dtype=data_type.numpy)
    strides = tuple(s // itemsize for s in x.strides)
    packed = x.flags.c_contiguous
    desc = TensorDesc(data_type, x.shape, None if packed else strides)
    return desc, span(x)


def span(x: np.ndarray) -> np.ndarray:
    """The memory an array with non-negative, whole-element strides spans, as a 1-D view."""
    if x.flags.c_contiguous:
        return x.reshape(-1)
    last = sum((n - 1) * s for n, s in zip(x.shape, x.strides)) // x.itemsize
    return np.lib.stride_tricks.as_strided(x, shape=(last + 1,), strides=(x.itemsize,), writeable=False)


def bytes_for(desc: TensorDesc, x: np.ndarray, field: str = "x") -> np.ndarray:
    """The logical array ``x`` as bytes in ``desc``'s layout: ``x``'s own memory when the
    layouts agree (no copy), else a fresh buffer laid out."""
    check_logical(desc, x, field)
    own, span = describe(x, field)
    return span if own.element_strides == desc.element_strides else lay_out(desc, x, field)


def lay_out(desc: TensorDesc, x: np.ndarray, field: str = "x") -> np.ndarray:
    """A zeroed buffer of ``desc``'s size holding the logical array ``x`` in its layout.

    Where the layout places several elements at one address (a broadcast stride 0), ``x``
    must hold equal bits there: otherwise the memory could not hold ``x``, and a result
    computed from it would silently answer for other values."""
    check_logical(desc, x, field)
    raw = np.zeros(desc.total_tensor_size_in_bytes, dtype=np.uint8)
    laid = _strided(desc, raw, writeable=True)
    laid[...] = x
    if first_overlap(desc) is not None:
        unsigned = f"u{x.dtype.itemsize}"
        if not np.array_equal(laid.view(unsigned), np.ascontiguousarray(x).view(unsigned)):
            raise DataError(
                f"{field} holds different values at elements that the descriptor's strides "
                f"{list(desc.element_strides)} place at one address; it cannot be laid out there"
            )
    return raw


def check_logical(desc: TensorDesc, x: np.ndarray, field: str = "x") -> None:
    """Refuse an array whose type or shape differs from the descriptor's."""
    if not isinstance(x, np.ndarray):
        raise TypeError(f"{field} must be a NumPy array, not {type(x).__name__}")
    if DataType.from_numpy(x.dtype, f"{field}.dtype") is not desc.data_type:
        raise DataError(f"{field}.dtype is {x.dtype}, but the descriptor's data_type is {desc.data_type.name}")
    if tuple(x.shape) != desc.sizes:
        raise DataError(f"{field}.shape is {tuple(x.shape)}, but the descriptor's sizes are {list(desc.sizes)}")


#: A view whose memory span is more than this many times its elements' bytes crosses the bus
#: as its elements (``Gather``), from this size up: where the gaps are small, uploading the
#: span as it is costs no host-side copy and moves little more.
GATHER_SPAN_RATIO = 1.25
GATHER_ABOVE = 16 << 20


#: A gathered view is copied in rows of at most this many bytes where it can be (its first
#: axis's slabs, else every axis but the last merged), so that a staging chunk holds many.
GATHER_ROW_MAX = 16 << 20


class Gather:
    """The elements of a strided view in C order, copied into a destination block of rows at
    a time (``copy_rows``), so that an upload moves the elements and never the gaps between
    them, and no packed copy of the whole is made first. A row is a slab of the view's leading
    axes (``rows``: ``x`` with those axes merged into one, without a copy); ``row_bytes`` its
    bytes packed."""

    def __init__(self, x: np.ndarray, rows: np.ndarray):
        self.x, self.rows = x, rows
        self.count, self.row_bytes = rows.shape[0], rows[0].nbytes
        self.nbytes = x.nbytes

    def copy_rows(self, dst: np.ndarray, first: int, count: int) -> None:
        """Rows ``first`` to ``first + count`` into the bytes ``dst`` (a uint8 array of
        ``count * row_bytes`` bytes); NumPy lets go of the GIL while it copies."""
        out = dst.view(self.x.dtype).reshape((count,) + self.rows.shape[1:])
        np.copyto(out, self.rows[first:first + count])


def upload_desc(x: np.ndarray, field: str = "x") -> TensorDesc:
    """The descriptor an array crosses the bus as: packed where its elements are gathered
    (``gather``), else its own layout (``describe``)."""
    if gather(x) is not None:
        return TensorDesc(DataType.from_numpy(x.dtype, f"{field}.dtype"), x.shape)
    return describe(x, field)[0]


def gather(x: np.ndarray) -> Gather | None:
    """A ``Gather`` of ``x`` where it pays: a view of at least ``GATHER_ABOVE`` bytes whose span
    is over ``GATHER_SPAN_RATIO`` times its elements' bytes, with whole-element, non-negative
    strides. Its rows are the slabs of its first axis, or, where those exceed
    ``GATHER_ROW_MAX`` and it can be done without a copy, its rows of the last axis. Else None."""
    if not isinstance(x, np.ndarray) or x.nbytes < GATHER_ABOVE or x.ndim < 2 or x.flags.c_contiguous:
        return None
    if not x.dtype.isnative or any(s < 0 or s % x.itemsize for s in x.strides):
        return None
    span_bytes = (sum((n - 1) * s for n, s in zip(x.shape, x.strides)) + x.itemsize)
    if span_bytes <= GATHER_SPAN_RATIO * x.nbytes:
        return None
    rows = x
    if x[0].nbytes > GATHER_ROW_MAX:
        merged = x.view()
        try:
            merged.shape = (-1, x.shape[-1])  # in place: raises where merging the axes would copy
            rows = merged
        except AttributeError:
            pass
    return Gather(x, rows)
