"""The NumPy-level API: ``argmax``, ``argmin`` and ``hardmax``.

Each call builds the operator descriptor for the array's own layout, compiles it on
the device (once per distinct descriptor) and runs it. A ``Tensor`` argument stays on
the GPU and gives a ``Tensor`` back; a NumPy array gives a NumPy array back. The result
keeps the input's rank, with size 1 on each reduced axis.

A masked array (``numpy.ma``) is reduced as ``MaskedArray.argmax`` / ``argmin`` reduce it:
its masked elements take the fill value of its type (``unmasked``); HARDMAX refuses one.
"""

from __future__ import annotations

from typing import Sequence, Union

import numpy as np

from . import layout
from .desc import TensorDesc, operator_for
from .device import Device, default_device
from .tensor import Tensor
from .types import AxisDirection, DataType

Axes = Union[int, Sequence[int]]


def unmasked(x, op: str, who: str = "dmlgpu"):
    """The array that an arg-reduction ``op`` of ``x`` reduces: for a masked array, what
    ``MaskedArray.argmax`` / ``argmin`` reduce, ``x.filled(fill).view(np.ndarray)`` with
    ``numpy.ma.maximum_fill_value`` (argmax) or ``minimum_fill_value`` (argmin) of its type,
    so that a masked element never wins unless its whole slice is masked (then the tie rule
    picks among the fill values); anything else is returned as it is.

    The one place where that rule lives: ``dmlgpu.argmax``/``argmin``, ``dmlgpu.numpy`` and
    ``dmlgpu.dask``'s chunks all reduce through it. HARDMAX (``op`` "hardmax") of a masked
    array is refused: a one-hot output has no place for the mask. ``who`` names the caller
    in messages.
    """
    if not isinstance(x, np.ma.MaskedArray):
        return x
    kind = type(x)
    if op not in ("argmax", "argmin"):
        fill = "dask.array.ma.filled(x, value)" if who.endswith("dask") else "x.filled(value)"
        raise TypeError(
            f"{who}.{op} cannot take a masked array ({kind.__module__}.{kind.__qualname__}): a one-hot "
            f"output has no place for the mask; fill it first ({fill}) or take its data, whichever "
            f"you mean")
    for name in ("filled", op):  # a subclass that fills or reduces its own way means something else
        if getattr(kind, name) is not getattr(np.ma.MaskedArray, name) or name in vars(x):
            raise TypeError(
                f"{who}.{op} cannot take {kind.__module__}.{kind.__qualname__}: it overrides "
                f"MaskedArray.{name}, so its masked {op} is its own, which dmlgpu does not run; "
                f"pass x.filled(value) or np.asarray(x) for the values you mean")
    fill = np.ma.maximum_fill_value(x.dtype) if op == "argmax" else np.ma.minimum_fill_value(x.dtype)
    return np.ma.MaskedArray.filled(x, fill).view(np.ndarray)


def _normalize_axes(axes, rank: int) -> tuple[int, ...]:
    """Axes as a tuple; negative axes count from the end, as in NumPy."""
    if isinstance(axes, (int, np.integer)) and not isinstance(axes, bool):
        axes = (axes,)
    if isinstance(axes, (str, bytes)) or not hasattr(axes, "__iter__"):
        raise TypeError(f"axes must be an int or a sequence of ints, not {type(axes).__name__} ({axes!r})")
    return tuple(a + rank if isinstance(a, (int, np.integer)) and -rank <= a < 0 else a for a in axes)


def _axes_key(axes):
    """``axes`` as part of a cache key: hashable, and apart from values that compare equal to
    it but are not valid alike (``True`` and ``1``, ``1.0`` and ``1``: only ints are axes)."""
    if type(axes) is int:
        return axes
    if type(axes) is tuple and all(type(a) is int for a in axes):  # (as the bench and Dask pass them)
        return axes
    if isinstance(axes, (str, bytes)) or not hasattr(axes, "__iter__"):
        return type(axes), axes
    return tuple((type(a), a) for a in axes)


def _output_type(value) -> DataType:
    if isinstance(value, (str, DataType)):
        return DataType.parse(value, "output_data_type")
    try:
        if value is None:  # np.dtype(None) is float64, which no one means by None
            raise TypeError
        np.dtype(value)
    except (TypeError, ValueError):  # NumPy's message would not name the argument
        raise TypeError(f"output_data_type must be a DataType, a string or a NumPy integer type, not "
                        f"{type(value).__name__} ({value!r})") from None
    return DataType.from_numpy(value, "output_data_type")


def _direction_and_type(axis_direction, output_data_type) -> tuple[AxisDirection, DataType]:
    return AxisDirection.parse(axis_direction, "axis_direction"), _output_type(output_data_type)


def _describe(call: tuple, desc: TensorDesc):
    """The operator descriptor of ``call`` = (op, axes, axis_direction, output_data_type), as
    the caller gave them, for an input laid out as ``desc``."""
    op, axes, axis_direction, output_data_type = call
    axes = _normalize_axes(axes, desc.rank)
    if op == "hardmax":
        return operator_for(op, desc, axes)
    return operator_for(op, desc, axes, *_direction_and_type(axis_direction, output_data_type))


def _run(call: tuple, x, device: Device | None, nan_mode):
    """Compile (once per call signature: the arguments as given and ``x``'s layout) the
    descriptor of ``call`` (``_describe``) for ``x``, and run it: a ``Tensor`` stays on the
    GPU, a NumPy array comes back."""
    resident = isinstance(x, Tensor)
    if resident:
        device = device or x.device
        layout_key = x.desc
    else:
        x = unmasked(x, call[0])
        device = device or default_device()
        if not isinstance(x, np.ndarray):
            x = np.asarray(x)
        layout_key = (x.dtype.str, x.shape, x.strides)
    key = (call[0], _axes_key(call[1]), *call[2:], nan_mode, layout_key)
    try:
        compiled = device.by_call.get(key)
        kept = True
    except TypeError:  # an argument that is not hashable: not kept (compiling says what is wrong)
        compiled, kept = None, False
    if compiled is None:
        compiled = device.compile(_describe(call, x.desc if resident else layout.upload_desc(x)), nan_mode=nan_mode)
        if kept:
            device.by_call[key] = compiled
    return compiled.run(x) if resident else compiled(x)


def argmax(x, axes: Axes, *, axis_direction="increasing", output_data_type="uint32", nan_mode="ignore",
           device: Device | None = None):
    """Indices of the maxima over ``axes`` (DML_OPERATOR_ARGMAX).

    The index is the row-major position within the reduced axes, taken in ascending
    order. ``axis_direction`` picks the first ("increasing") or last ("decreasing") of
    equal maxima; ``nan_mode`` is "ignore" (DirectML) or "propagate" (NumPy).
    """
    return _run(("argmax", axes, axis_direction, output_data_type), x, device, nan_mode)


def argmin(x, axes: Axes, *, axis_direction="increasing", output_data_type="uint32", nan_mode="ignore",
           device: Device | None = None):
    """Indices of the minima over ``axes`` (DML_OPERATOR_ARGMIN); arguments as ``argmax``."""
    return _run(("argmin", axes, axis_direction, output_data_type), x, device, nan_mode)


def hardmax(x, axes: Axes, *, nan_mode="ignore", device: Device | None = None):
    """1 at the first maximum of each slice over ``axes``, 0 elsewhere (DML_OPERATOR_ACTIVATION_HARDMAX1).

    FLOAT32 and FLOAT16 only; the result has the input's type and shape.
    """

    return _run(("hardmax", axes, None, None), x, device, nan_mode)
