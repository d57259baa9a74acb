"""The NumPy-level API: ``argmax``, ``argmin`` and ``hardmax``.

Each call builds the operator descriptor for the array's own layout, compiles it on
the device (once per distinct descriptor) and runs it. A ``Tensor`` argument stays on
the GPU and gives a ``Tensor`` back; a NumPy array gives a NumPy array back. The result
keeps the input's rank, with size 1 on each reduced axis.
"""

from __future__ import annotations

from typing import Sequence, Union

import numpy as np

from . import layout
from .desc import TensorDesc, operator_for
from .device import Device, Tensor, default_device
from .types import AxisDirection, DataType

Axes = Union[int, Sequence[int]]


def _normalize_axes(axes, rank: int) -> tuple[int, ...]:
    """Axes as a tuple; negative axes count from the end, as in NumPy."""
    if isinstance(axes, (int, np.integer)) and not isinstance(axes, bool):
        axes = (axes,)
    if isinstance(axes, (str, bytes)) or not hasattr(axes, "__iter__"):
        raise TypeError(f"axes must be an int or a sequence of ints, not {type(axes).__name__} ({axes!r})")
    return tuple(a + rank if isinstance(a, (int, np.integer)) and -rank <= a < 0 else a for a in axes)


def _axes_key(axes):
    """``axes`` in a hashable form for the call cache (what it holds is checked later)."""
    if isinstance(axes, (str, bytes)) or not hasattr(axes, "__iter__"):
        return axes
    return tuple(axes)


def _output_type(value) -> DataType:
    if isinstance(value, (str, DataType)):
        return DataType.parse(value, "output_data_type")
    return DataType.from_numpy(value, "output_data_type")


def _run(make_desc, signature: tuple, x, device: Device | None, nan_mode):
    """Compile (once per call signature) the descriptor ``make_desc`` builds for ``x``'s
    layout, and run it: a ``Tensor`` stays on the GPU, a NumPy array comes back."""
    if isinstance(x, Tensor):
        device = device or x.device
        key: tuple = (signature, str(nan_mode), x.desc)
        compiled = device.by_call.get(key)
        if compiled is None:
            compiled = device.by_call[key] = device.compile(make_desc(x.desc), nan_mode=nan_mode)
        return compiled.run(x)
    device = device or default_device()
    if not isinstance(x, np.ndarray):
        x = np.asarray(x)
    key = (signature, str(nan_mode), x.dtype.str, x.shape, x.strides)
    compiled = device.by_call.get(key)
    if compiled is None:
        desc, _ = layout.describe(x)
        compiled = device.by_call[key] = device.compile(make_desc(desc), nan_mode=nan_mode)
    return compiled(x)


_parsed: dict = {}  # (axis_direction, output_data_type) as given -> parsed, for hashable arguments


def _direction_and_type(axis_direction, output_data_type):
    try:
        return _parsed[axis_direction, output_data_type]
    except (KeyError, TypeError):  # not seen yet, or not hashable
        parsed = (AxisDirection.parse(axis_direction, "axis_direction"), _output_type(output_data_type))
        try:
            _parsed[axis_direction, output_data_type] = parsed
        except TypeError:
            pass
        return parsed


def _index_operator(op: str, x, axes, axis_direction, output_data_type, nan_mode, device):
    direction, out_type = _direction_and_type(axis_direction, output_data_type)

    def make_desc(desc: TensorDesc):
        return operator_for(op, desc, _normalize_axes(axes, desc.rank), direction, out_type)

    return _run(make_desc, (op, _axes_key(axes), direction, out_type), x, device, nan_mode)


def argmax(x, axes: Axes, *, axis_direction="increasing", output_data_type="uint32", nan_mode="ignore",
           device: Device | None = None):
    """Indices of the maxima over ``axes`` (DML_OPERATOR_ARGMAX).

    The index is the row-major position within the reduced axes, taken in ascending
    order. ``axis_direction`` picks the first ("increasing") or last ("decreasing") of
    equal maxima; ``nan_mode`` is "ignore" (DirectML) or "propagate" (NumPy).
    """
    return _index_operator("argmax", x, axes, axis_direction, output_data_type, nan_mode, device)


def argmin(x, axes: Axes, *, axis_direction="increasing", output_data_type="uint32", nan_mode="ignore",
           device: Device | None = None):
    """Indices of the minima over ``axes`` (DML_OPERATOR_ARGMIN); arguments as ``argmax``."""
    return _index_operator("argmin", x, axes, axis_direction, output_data_type, nan_mode, device)


def hardmax(x, axes: Axes, *, nan_mode="ignore", device: Device | None = None):
    """1 at the first maximum of each slice over ``axes``, 0 elsewhere (DML_OPERATOR_ACTIVATION_HARDMAX1).

    FLOAT32 and FLOAT16 only; the result has the input's type and shape.
    """

    def make_desc(desc: TensorDesc):
        return operator_for("hardmax", desc, _normalize_axes(axes, desc.rank))

    return _run(make_desc, ("hardmax", _axes_key(axes)), x, device, nan_mode)
