"""The NumPy reference for ARGMAX, ARGMIN and HARDMAX (docs/semantics.md: the rule).

GPU results are held to this module bit for bit. It reads the same descriptors as the
rest of the library (through ``ArgReduction``) and never imports wgpu.

How a slice is reduced, written with plain comparisons rather than bit tricks:

1. the reduced axes move to the front in ascending order, so each slice is one column
   of length N and a position in it is the row-major index within the sub-tensor;
2. the extreme of each slice is taken with NaN left out (NaN read as -inf for the maximum,
   +inf for the minimum: NumPy's ``fmax`` reduction can lose a number beside a signalling NaN);
3. the candidates are the positions equal to it (NaN equals nothing; ``-0.0 == +0.0``);
   under ``nan_mode="propagate"`` a slice holding a NaN has its NaNs as the candidates
   instead; a slice with no candidate (all NaN) has every position as one;
4. the first candidate wins for INCREASING, the last for DECREASING.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Sequence, Union

import numpy as np

from .desc import (
    ActivationHardmax1OperatorDesc,
    ArgMaxOperatorDesc,
    ArgMinOperatorDesc,
    ArgReduction,
    TensorDesc,
    lower,
)
from .errors import DataError
from .layout import view  # noqa: F401  (re-exported: the oracle reads buffers the same way)
from .types import AxisDirection, DataType, NanMode

Axes = Union[int, Sequence[int]]


def evaluate(desc, x: np.ndarray, *, nan_mode: Union[str, NanMode] = "ignore") -> np.ndarray:
    """The logical output of the operator ``desc`` (any descriptor or an ``ArgReduction``) on ``x``."""
    red = desc if isinstance(desc, ArgReduction) else lower(desc)
    mode = NanMode.parse(nan_mode, "nan_mode")
    _check_input(red.input, x)
    columns, order = _columns(x, red.axes)
    want_max = red.op in ("argmax", "hardmax")
    index = _column_index(columns, want_max, red.direction, mode)
    if red.op == "hardmax":
        return _one_hot(index, columns, x.shape, order)
    return index.astype(red.output.data_type.numpy).reshape(red.output.sizes)


def _check_input(desc: TensorDesc, x: np.ndarray) -> None:
    """Raise DataError unless ``x`` has the input's shape and dtype."""
    if not isinstance(x, np.ndarray):
        raise TypeError(f"x must be a NumPy array, not {type(x).__name__}")
    if x.shape != desc.sizes:
        raise DataError(f"x has shape {x.shape}, but input_tensor.sizes is {list(desc.sizes)}")
    if x.dtype != desc.data_type.numpy:
        raise DataError(
            f"x has dtype {x.dtype.str}, but input_tensor.data_type {desc.data_type.name} "
            f"needs {desc.data_type.numpy.str}"
        )


def _columns(x: np.ndarray, axes: tuple[int, ...]) -> tuple[np.ndarray, list[int]]:
    """``x`` as a contiguous (N, slices) array, one slice per column; also the axis order used.

    The reduced axes come first in ascending order, so row ``i`` of a column is the element
    at row-major index ``i`` of that slice's sub-tensor. Reducing over the leading axis of a
    contiguous array keeps NumPy fast however short the slices are.
    """
    order = list(axes) + [axis for axis in range(x.ndim) if axis not in axes]
    moved = np.ascontiguousarray(x.transpose(order))
    return moved.reshape(math.prod(x.shape[a] for a in axes), -1), order


def _column_index(
    columns: np.ndarray, want_max: bool, direction: AxisDirection, mode: NanMode
) -> np.ndarray:
    """The winning position in each column of ``columns`` (int64, one per column)."""
    candidates = _candidates(columns, want_max, mode)
    if direction is AxisDirection.INCREASING:
        return np.argmax(candidates, axis=0)
    return columns.shape[0] - 1 - np.argmax(candidates[::-1], axis=0)


def _candidates(columns: np.ndarray, want_max: bool, mode: NanMode) -> np.ndarray:
    """Boolean mask of the positions tied for the extreme of each column, per
    docs/semantics.md#index-ties-floats-nan-integers."""
    nan = np.isnan(columns) if columns.dtype.kind == "f" else None
    numbers = columns if nan is None else np.where(nan, -np.inf if want_max else np.inf, columns)
    extreme = (np.maximum if want_max else np.minimum).reduce(numbers, axis=0, keepdims=True)
    candidates = columns == extreme  # NaN equals nothing, so it is never a candidate here
    if mode is NanMode.PROPAGATE and nan is not None:
        candidates = np.where(nan.any(axis=0, keepdims=True), nan, candidates)
    # An all-NaN slice has no candidate under "ignore": all its positions tie (docs/semantics.md).
    return candidates | ~candidates.any(axis=0, keepdims=True)


def _one_hot(
    index: np.ndarray, columns: np.ndarray, shape: tuple[int, ...], order: list[int]
) -> np.ndarray:
    """HARDMAX's output of ``shape``: 1 at ``index`` of each column, 0 elsewhere, axes put back."""
    hot = np.zeros(columns.shape, columns.dtype)
    hot[index, np.arange(index.size)] = 1
    moved = hot.reshape([shape[a] for a in order])
    return np.ascontiguousarray(moved.transpose(np.argsort(order)))


def order_keys(values: np.ndarray, *, want_max: bool, nan_mode: Union[str, NanMode] = "ignore") -> np.ndarray:
    """Order-preserving uint64 keys of ``values``: the larger key is the better candidate.

    ``want_max`` (ARGMAX, HARDMAX) keeps the values' order, ``want_max=False`` (ARGMIN)
    reverses it. Equal keys are exactly the ties of docs/semantics.md: integers map one to
    one (64-bit included), floats (float64 included) keep IEEE order, ``-0.0`` and ``+0.0``
    share a key, every NaN gets one key, the lowest under ``nan_mode="ignore"`` and the
    highest under ``"propagate"``. So picking the
    largest key, then the smallest index (INCREASING) or the largest (DECREASING) among
    equal keys, is this module's reduction, in any order of merging; ``dmlgpu.dask``
    combines partial results that way. (The shaders build the same order in WGSL, in
    ``shaders/key_*.wgsl``; these keys need not equal theirs bit for bit.)
    """
    mode = NanMode.parse(nan_mode, "nan_mode")
    values = np.asarray(values)
    values = values.astype(values.dtype.newbyteorder("="), copy=False)
    kind, bits = values.dtype.kind, values.dtype.itemsize * 8
    if kind not in "uif" or bits > 64:
        raise TypeError(f"values have dtype {values.dtype}, but order_keys takes the input types of "
                        f"types.DataType (and bool read as uint8)")
    if kind in "ui":
        u = values.view(f"u{bits // 8}").astype(np.uint64)
        if kind == "i":
            u ^= np.uint64(1 << (bits - 1))  # two's complement to offset binary: order kept
        return u if want_max else ~u
    # Floats in their own width (every key fits it), widened once at the end: dmlgpu.dask keys
    # every chunk's winners with this, and a pass over 64-bit words cost it as much as the gather.
    word = np.dtype(f"u{bits // 8}").type
    sign = word(1 << (bits - 1))
    inf = np.array(np.inf, values.dtype).view(word)[()]
    u = values.view(word)
    u = np.where(u == sign, word(0), u)  # -0.0 takes +0.0's bits
    # Negative numbers reverse their order: [-inf, +inf] maps onto [low, high], ascending; a
    # NaN falls outside (above high with its sign clear, below low with it set). Without a
    # branch (np.where on the sign bit costs 5x on random signs): a negative number's bits all
    # flip (its sign, shifted arithmetically, is all ones), a positive number's sign alone.
    ordered = u ^ ((u.view(f"i{bits // 8}") >> (bits - 1)).view(word) | sign)
    low, high = ~(sign | inf), sign | inf
    keys = ordered - low + word(1) if want_max else high - ordered + word(1)  # in [1, high - low + 1]
    nan_key = word(0) if mode is NanMode.IGNORE else high - low + word(2)
    return np.where((ordered > high) | (ordered < low), nan_key, keys).astype(np.uint64)


def argmax(
    x: np.ndarray,
    axes: Axes,
    *,
    axis_direction: Union[str, AxisDirection] = "increasing",
    output_data_type: Union[str, DataType] = "uint32",
    nan_mode: Union[str, NanMode] = "ignore",
) -> np.ndarray:
    """ARGMAX of ``x`` over ``axes``; the result keeps the rank, reduced axes of size 1."""
    return _index_op(ArgMaxOperatorDesc, x, axes, axis_direction, output_data_type, nan_mode)


def argmin(
    x: np.ndarray,
    axes: Axes,
    *,
    axis_direction: Union[str, AxisDirection] = "increasing",
    output_data_type: Union[str, DataType] = "uint32",
    nan_mode: Union[str, NanMode] = "ignore",
) -> np.ndarray:
    """ARGMIN of ``x`` over ``axes``; the result keeps the rank, reduced axes of size 1."""
    return _index_op(ArgMinOperatorDesc, x, axes, axis_direction, output_data_type, nan_mode)


def hardmax(x: np.ndarray, axes: Axes, *, nan_mode: Union[str, NanMode] = "ignore") -> np.ndarray:
    """HARDMAX1 of ``x`` over ``axes``: 1 at the first maximum of each slice, 0 elsewhere."""
    x, inp = _input_of(x)
    desc = ActivationHardmax1OperatorDesc(inp, TensorDesc(inp.data_type, inp.sizes), tuple(_axes_tuple(axes)))
    return evaluate(desc, x, nan_mode=nan_mode)


def _index_op(cls, x, axes, axis_direction, output_data_type, nan_mode) -> np.ndarray:
    """Build an ARGMAX/ARGMIN descriptor for ``x`` (output type as asked) and evaluate it."""
    x, inp = _input_of(x)
    desc = cls(inp, None, _axes_tuple(axes), axis_direction)
    out = TensorDesc(output_data_type, desc.output_tensor.sizes)
    desc = dataclasses.replace(desc, output_tensor=out)
    return evaluate(desc, x, nan_mode=nan_mode)


def _input_of(x: np.ndarray) -> tuple[np.ndarray, TensorDesc]:
    """``x`` in its little-endian dtype, and the packed TensorDesc that describes it."""
    x = np.asarray(x)
    data_type = DataType.from_numpy(x.dtype, "x.dtype")
    return x.astype(data_type.numpy, copy=False), TensorDesc(data_type, x.shape)


def _axes_tuple(axes) -> Sequence[int]:
    """A single axis as a one-element tuple; sequences pass through for the descriptor to check."""
    if isinstance(axes, (int, np.integer)) and not isinstance(axes, bool):
        return (int(axes),)
    return axes


__all__ = ["view", "evaluate", "argmax", "argmin", "hardmax", "order_keys"]
