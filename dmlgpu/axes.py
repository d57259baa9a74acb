"""NumPy's rules for ``axis`` and ``keepdims``, as ``numpy.argmax`` reads them (pure Python):
the errors and their classes, the order of the checks, and dmlgpu's one extension, a tuple
of axes; and ``nan_rule``, ``numpy.nanargmax``'s answer from a reduction that ignores NaN.
Read by ``dmlgpu.numpy``, ``dmlgpu.dask.numpy`` and the NumPy protocols of ``Tensor``."""

from __future__ import annotations

import operator

import numpy as np

try:
    from numpy.exceptions import AxisError
except ImportError:  # NumPy < 1.25
    AxisError = np.AxisError  # type: ignore[attr-defined,misc]

#: NumPy's "not given" default, which ``numpy.argmax`` uses for ``keepdims``: only a given
#: ``keepdims`` reaches the array's own method (``np.matrix.argmax`` has none).
NOVALUE = getattr(np, "_NoValue", None)

#: NumPy's ``NPY_RAVEL_AXIS``: an ``axis`` of this value means every axis, as ``None`` does
#: (NumPy 1.x: ``NPY_MAXDIMS``, 32).
RAVEL_AXIS = -(2**31) if np.lib.NumpyVersion(np.__version__) >= "2.0.0" else 32


def parse_axis(axis):
    """``axis`` as NumPy's argument parser reads it: None (every axis), an int, or (dmlgpu's
    extension) a tuple of ints; NumPy's errors for what is none of these."""
    if axis is None:
        return None
    if isinstance(axis, tuple):  # each entry read and checked in turn, as NumPy's tuple-axis reductions do
        return axis
    index = axis_int(axis)
    return None if index == RAVEL_AXIS else index


def axis_int(axis) -> int:
    if isinstance(axis, (bool, np.bool_)):
        raise TypeError("an integer is required for the axis")
    index = operator.index(axis)  # NumPy's TypeError for a float, a string, a list
    if not -(2**63) <= index < 2**63:
        raise OverflowError("Python int too large to convert to C long")
    if not -(2**31) <= index < 2**31:
        raise ValueError("integer won't fit into a C int")
    return index


def axes_in_range(index, ndim: int) -> tuple[int, ...]:
    """The reduced axes, ascending, from a parsed ``axis``; ``AxisError`` out of range."""
    if index is None:
        return tuple(range(ndim))
    if isinstance(index, tuple):
        axes = tuple(axis_in_range(axis_int(a), ndim) for a in index)
        if len(set(axes)) != len(axes):
            raise ValueError("repeated axis")
        if not axes:
            raise ValueError("axis is (), but an arg-reduction needs at least one axis")
        return tuple(sorted(axes))
    return (axis_in_range(index, ndim),)


def axis_in_range(index: int, ndim: int) -> int:
    if not -ndim <= index < ndim:
        raise AxisError(index, ndim)
    return index % ndim


def normalize_axis(axis, ndim: int) -> tuple[int, ...]:
    """The reduced axes in ascending order, with NumPy's errors: ``None`` is every axis, an
    integer one axis, a tuple (dmlgpu's extension) several."""
    return axes_in_range(parse_axis(axis), ndim)


def result_shape(shape, axes, keepdims) -> tuple[int, ...]:
    """The shape of the result: reduced axes of size 1 with ``keepdims``, else dropped."""
    if keepdims:
        return tuple(1 if i in axes else n for i, n in enumerate(shape))
    return tuple(n for i, n in enumerate(shape) if i not in axes)


def truth(keepdims) -> bool:
    """``keepdims`` as NumPy reads it: its truth, and NumPy's own "not given" as False."""
    return keepdims is not NOVALUE and bool(keepdims)


#: What ``numpy.nanargmax`` / ``nanargmin`` raise (``ValueError``) for a slice of nothing but NaN.
ALL_NAN = "All-NaN slice encountered"


def nan_rule(op: str, index: np.ndarray, values: np.ndarray, covered: np.ndarray | None = None) -> np.ndarray:
    """``numpy.nanargmax`` (``op`` "argmax") or ``nanargmin`` ("argmin") from an arg-reduction
    that ignores NaN (DirectML's ``nan_mode="ignore"``, INCREASING): ``index`` holds the winners
    (flat indices over the reduced axes), ``values`` the elements they point at (same shape).

    NumPy raises ``ValueError(ALL_NAN)`` if a slice is all NaN, else replaces NaN by -inf
    (argmax; +inf for argmin) and takes ``numpy.argmax``. So: a winner that is NaN means its
    slice holds only NaN (NaN never wins otherwise): the ``ValueError``; a winner that is -inf
    (+inf) means its slice holds only -inf and NaN, which NumPy's replacement makes all equal:
    the first, index 0 (where ignoring NaN gives the first -inf); any other winner is NumPy's
    too. ``covered`` (masked arrays): slices that are masked throughout, which NumPy neither
    refuses nor reduces but as equal fill values: index 0 (their ``values`` were NaN).
    """
    lost = np.isnan(values)
    if covered is not None:
        lost &= ~covered
    if lost.any():
        raise ValueError(ALL_NAN)
    first = values == (-np.inf if op == "argmax" else np.inf)
    if covered is not None:
        first |= covered
    return np.where(first, 0, index).astype(index.dtype, copy=False) if first.any() else index
