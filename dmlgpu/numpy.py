"""``numpy.argmax`` and ``numpy.argmin`` on the GPU, with NumPy's signature and behaviour.

    import dmlgpu.numpy as dnp
    dnp.argmax(x)                      # the index into x.ravel(), as np.argmax(x)
    dnp.argmin(x, axis=1, keepdims=True)

Each call is ``dmlgpu.argmax`` / ``argmin`` with NumPy's choices: INCREASING (the first of
equal extremes), ``nan_mode="propagate"`` (the first NaN wins), ``intp`` indices, the
reduced axes dropped unless ``keepdims``; ``axis=None`` reduces every axis, whose flat
row-major index is the C-order index into the flattened array. Results, result types,
``out`` and the errors NumPy raises (``ValueError`` for an empty reduction, ``AxisError``
for a bad axis, ``TypeError`` for a bad ``out``) are NumPy's. Extension: ``axis`` may be a
tuple of axes, and the index is then the row-major flat index over those axes.

``bool`` input is read as UINT8 through a view (no copy). A type DirectML's operators do not
take (float64, complex, object, ...) raises ``TypeError``; nothing falls back to the CPU.

A ``dmlgpu.Tensor`` argument stays on the GPU and gives a ``Tensor`` back. This module also
serves the NumPy protocols of ``Tensor`` (``__array__``, ``__array_function__``,
``__array_ufunc__``).
"""

from __future__ import annotations

import operator

import numpy as np

from . import api
from .device import Tensor
from .desc import TensorDesc
from .errors import DataError
from .pieces import buffer_spans
from .types import DataType

try:
    from numpy.exceptions import AxisError
except ImportError:  # NumPy < 1.25
    AxisError = np.AxisError  # type: ignore[attr-defined,misc]

__all__ = ["argmax", "argmin"]

#: The NumPy types these functions take; bool is read as uint8.
SUPPORTED = ("bool",) + tuple(t.value for t in DataType)


def argmax(a, axis=None, out=None, *, keepdims=False):
    """Indices of the maximum values along an axis, as ``numpy.argmax``, computed on the GPU.

    ``axis`` may also be a tuple of axes (the row-major flat index over them). NaN is the
    maximum (the first NaN wins), as in NumPy.
    """
    return _arg("argmax", a, axis, out, keepdims)


def argmin(a, axis=None, out=None, *, keepdims=False):
    """Indices of the minimum values along an axis, as ``numpy.argmin``, computed on the GPU."""
    return _arg("argmin", a, axis, out, keepdims)


def _arg(op: str, a, axis, out, keepdims):
    if out is not None and not isinstance(out, np.ndarray):
        raise TypeError("output must be an array")
    if isinstance(a, Tensor):
        return _on_tensor(op, a, axis, out, keepdims)
    x = as_input(a, op)
    scalar = x.ndim == 0
    if scalar:
        x = x.reshape(1)
    axes = normalize_axis(axis, x.ndim)
    if any(x.shape[i] == 0 for i in axes):
        raise ValueError(f"attempt to get {op} of an empty sequence")
    shape = () if scalar else result_shape(x.shape, axes, _truth(keepdims))
    if x.size == 0:  # nothing to reduce into: an empty result, as NumPy gives
        result = np.empty(shape, np.intp)
    else:
        result = getattr(api, op)(x, axes, output_data_type=np.intp, nan_mode="propagate").reshape(shape)
    return _deliver(op, result, out)


def as_input(a, op: str) -> np.ndarray:
    """``a`` as an array of a type the operators take; bool becomes a uint8 view."""
    x = np.asarray(a)
    if x.dtype == np.bool_:
        return x.view(np.uint8)
    try:
        DataType.from_numpy(x.dtype)
    except TypeError:
        hint = " (cast with .astype(np.float32))" if x.dtype.kind in "fc" else ""
        raise TypeError(
            f"dmlgpu.numpy.{op} cannot take {x.dtype} input: DirectML's arg-reductions take "
            f"{', '.join(SUPPORTED)}{hint}; it never falls back to the CPU"
        ) from None
    return x


def normalize_axis(axis, ndim: int) -> tuple[int, ...]:
    """The reduced axes in ascending order, with NumPy's errors: ``None`` is every axis, an
    integer one axis, a tuple (dmlgpu's extension) several."""
    if axis is None:
        return tuple(range(ndim))
    if isinstance(axis, tuple):
        axes = tuple(_one_axis(a, ndim) for a in axis)
        if len(set(axes)) != len(axes):
            raise ValueError("repeated axis")
        if not axes:
            raise ValueError("axis is (), but an arg-reduction needs at least one axis")
        return tuple(sorted(axes))
    return (_one_axis(axis, ndim),)


def _one_axis(axis, ndim: int) -> int:
    if isinstance(axis, (bool, np.bool_)):
        raise TypeError("an integer is required for the axis")
    index = operator.index(axis)  # NumPy's TypeError for a float, a string, a list
    if not -(2**63) <= index < 2**63:
        raise OverflowError("Python int too large to convert to C long")
    if not -ndim <= index < ndim:
        raise AxisError(index, ndim)
    return index % ndim


def result_shape(shape, axes, keepdims) -> tuple[int, ...]:
    """The shape of the result: reduced axes of size 1 with ``keepdims``, else dropped."""
    if keepdims:
        return tuple(1 if i in axes else n for i, n in enumerate(shape))
    return tuple(n for i, n in enumerate(shape) if i not in axes)


def _deliver(op: str, result: np.ndarray, out):
    """The result as NumPy returns it: a scalar for a 0-d result, or written into ``out``."""
    if out is None:
        return result[()] if result.ndim == 0 else result
    if type(out) is not np.ndarray or out.shape != result.shape:
        raise ValueError(f"output array does not match result of np.{op}.")
    if not np.can_cast(out.dtype, np.intp, "safe"):
        raise TypeError(f"Cannot cast array data from {out.dtype!r} to {np.dtype(np.intp)!r} according to the rule 'safe'")
    if not out.flags.writeable:
        raise ValueError("WRITEBACKIFCOPY base is read-only")
    np.copyto(out, result, casting="unsafe")
    return out


def _on_tensor(op: str, t: Tensor, axis, out, keepdims) -> Tensor:
    """The reduction of a GPU-resident tensor, left on the GPU. A result NumPy would give
    as 0-d has shape (1,): a DirectML tensor has 1 to 8 dimensions."""
    if out is not None:
        raise TypeError(f"out must be None when {op} runs on a dmlgpu Tensor (the result is a new Tensor)")
    axes = normalize_axis(axis, t.desc.rank)
    result = getattr(api, op)(t, axes, output_data_type=np.intp, nan_mode="propagate")
    return with_sizes(result, result_shape(t.desc.sizes, axes, _truth(keepdims)) or (1,))


def _truth(keepdims) -> bool:
    """``keepdims`` as NumPy reads it: its truth, and NumPy's own "not given" as False."""
    return keepdims is not getattr(np, "_NoValue", None) and bool(keepdims)


def with_sizes(t: Tensor, sizes) -> Tensor:
    """The same GPU memory seen with axes of size 1 dropped or added (no copy, no dispatch):
    a view that shares ``t``'s buffers."""
    sizes = tuple(sizes)
    if sizes == t.desc.sizes:
        return t
    desc = t.desc
    if [n for n in sizes if n != 1] != [n for n in desc.sizes if n != 1]:
        raise ValueError(f"sizes {list(sizes)} are not {list(desc.sizes)} with axes of size 1 added or dropped")
    strides = None
    if desc.strides is not None:
        kept = iter([s for n, s in zip(desc.sizes, desc.strides) if n != 1])
        strides = tuple(next(kept) if n != 1 else 0 for n in sizes)
    view = TensorDesc(desc.data_type, sizes, strides, total_tensor_size_in_bytes=desc.total_tensor_size_in_bytes)
    spans = buffer_spans(view, t.device.runner.capabilities)
    if spans != t._spans:
        raise DataError(f"a tensor of sizes {list(desc.sizes)} held in {len(t._spans)} buffers cannot be "
                        f"seen as sizes {list(sizes)}: its buffers would split differently")
    return Tensor(t.device, view, t._buffers, spans, t._storage)


# -- The NumPy protocols of dmlgpu.Tensor ---------------------------------------------------

_ON_GPU = {np.argmax: argmax, np.argmin: argmin}


def _cpu_only(what: str) -> TypeError:
    return TypeError(
        f"{what} cannot run on a dmlgpu.Tensor, which lives on the GPU: read it back with "
        f"np.asarray(tensor) first (np.argmax and np.argmin run on the GPU and need no read-back)"
    )


def tensor_array(t: Tensor, dtype=None, copy=None) -> np.ndarray:
    """``Tensor.__array__``: the tensor read back (always a copy: it lives on the GPU)."""
    if copy is False:
        raise ValueError("a dmlgpu.Tensor lives on the GPU: reading it back always copies (copy=False)")
    x = t.numpy()
    return x if dtype is None else x.astype(dtype, copy=False)


def tensor_array_function(func, args, kwargs):
    """``Tensor.__array_function__``: np.argmax and np.argmin on the GPU, nothing else."""
    implementation = _ON_GPU.get(func)
    if implementation is None:
        raise _cpu_only(f"numpy.{getattr(func, '__name__', func)}")
    return implementation(*args, **kwargs)


def tensor_array_ufunc(ufunc, method: str):
    """``Tensor.__array_ufunc__``: no ufunc runs on a Tensor."""
    name = getattr(ufunc, "__name__", ufunc)
    raise _cpu_only(f"numpy.{name}" if method == "__call__" else f"numpy.{name}.{method}")
