"""``numpy.argmax``, ``argmin``, ``nanargmax`` and ``nanargmin`` on the GPU, with NumPy's
signatures and behaviour.

    import dmlgpu.numpy as dnp
    dnp.argmax(x)                      # the index into x.ravel(), as np.argmax(x)
    dnp.argmin(x, axis=1, keepdims=True)
    dnp.nanargmax(x, axis=1)           # NaN skipped; an all-NaN slice raises ValueError

Each call is ``dmlgpu.argmax`` / ``argmin`` with NumPy's choices: INCREASING (the first of
equal extremes), ``nan_mode="propagate"`` (the first NaN wins), ``intp`` indices, the
reduced axes dropped unless ``keepdims``; ``axis=None`` reduces every axis, whose flat
row-major index is the C-order index into the flattened array. Results, result types,
``out`` and the errors NumPy raises (``ValueError`` for an empty reduction, ``AxisError``
for a bad axis, ``TypeError`` for a bad ``out``) are NumPy's. Extension: ``axis`` may be a
tuple of axes, and the index is then the row-major flat index over those axes.

``bool`` input is read as UINT8 through a view (no copy); float64, NumPy's default type, is
reduced exactly, as every other type (FLOAT64: dmlgpu's extension beyond DirectML's types). A
type the operators do not take (complex, longdouble, object, datetime, strings, ...) raises
``TypeError``; nothing falls back to the CPU.

``nanargmax`` / ``nanargmin`` are NumPy's: NumPy replaces a float array's NaN by -inf (+inf),
raises ``ValueError("All-NaN slice encountered")`` where ``np.all(isnan(a), axis)`` finds a
slice of nothing but NaN (that check reads ``axis`` first, with ``np.all``'s errors, and comes
before ``out`` and ``keepdims`` are looked at), then takes ``numpy.argmax`` of the copy. Here
the GPU reduces with DirectML's ``nan_mode="ignore"`` (no copy) and the winners' values make
the answer NumPy's (``axes.nan_rule``): a winner that is NaN means an all-NaN slice, one that
is -inf a slice of -inf and NaN, whose NumPy index is 0. Integer and bool arrays are reduced
as by ``argmax``. A masked array is read as NumPy's ``nanargmax`` reads it: ``ValueError``
where a slice's unmasked elements are all NaN, 0 for a slice masked throughout; ``np.matrix``
and ndarray subclasses as ``argmax`` treats them; an object with an ``argmax`` of its own but
no ``__array_function__`` (pandas) is read through ``np.asanyarray``, as NumPy reads it.

A plain call seen before (a NumPy array, ``axis`` None or an int, no ``out``) skips the
checks it passed then (``_SEEN``): its cost over ``dmlgpu.argmax`` is a dictionary lookup.

NumPy's dispatch is kept: ``numpy.argmax`` hands an object to its ``__array_function__``,
else to its own ``argmax`` method, and so the answer is that method's:

- a masked array (``numpy.ma``): ``MaskedArray.argmax`` / ``argmin``, i.e. the data with the
  masked elements filled with the extreme of its type (``maximum_fill_value`` for argmax,
  ``minimum_fill_value`` for argmin; ``api.unmasked``), reduced on the GPU; a plain result;
- ``np.matrix``: ``matrix.argmax`` = ndarray's argmax of the matrix ``._align(axis)``: a
  (1, n) matrix for axis 0, (n, 1) for axis 1, a scalar for None, ``ValueError`` for other
  axes, ``AttributeError`` for ``out`` (NumPy's own failures); with ``keepdims`` given (which
  matrix.argmax lacks) NumPy retries on ``np.asarray(m)`` and wraps the result as a matrix;
- another ndarray subclass that keeps ndarray's ``argmax``: ndarray's method, whose result
  (unless 0-d, then a NumPy scalar) is an instance of the subclass made by NumPy, so that its
  ``__array_finalize__`` sees the input; ``out`` of any ndarray class is written through;
- refused with ``TypeError``, naming the type and the way out: a subclass that overrides the
  method (or ``MaskedArray.filled``, ``matrix._align``), and any object that is not a NumPy
  array but has an ``argmax`` of its own or ``__array_function__`` (pandas, CuPy, sparse,
  Dask: ``dmlgpu.dask``). dmlgpu neither runs their code nor guesses their meaning.

Sequences, scalars and buffers are read as NumPy reads them (``np.asarray``). NumPy allows
64 dimensions and a DirectML tensor 8: beyond 8 the array is reduced as 2-D (kept, reduced)
with the reduced axes moved last, which keeps the flat index. Every check (arguments,
axis, an empty reduction, ``out``) runs in NumPy's order before anything reaches the GPU.

A ``dmlgpu.Tensor`` argument stays on the GPU and gives a ``Tensor`` back
(``Tensor.numpy_arg``, which ``Tensor``'s own NumPy protocols use too).
"""

from __future__ import annotations

import math

import numpy as np

from . import api
from .axes import NOVALUE, axes_in_range, axis_in_range, nan_rule, normalize_axis, parse_axis, result_shape, truth
from .tensor import Tensor
from .types import MAX_RANK, DataType

__all__ = ["argmax", "argmin", "nanargmax", "nanargmin"]

#: The NumPy types these functions take; bool is read as uint8.
SUPPORTED = ("bool",) + tuple(t.value for t in DataType)

_NDARRAY_FUNCTION = np.ndarray.__array_function__


def argmax(a, axis=None, out=None, *, keepdims=NOVALUE):
    """Indices of the maximum values along an axis, as ``numpy.argmax``, computed on the GPU.

    ``axis`` may also be a tuple of axes (the row-major flat index over them). NaN is the
    maximum (the first NaN wins), as in NumPy. Masked arrays, ``np.matrix`` and ndarray
    subclasses give what NumPy gives them (see the module's documentation).
    """
    return _call("argmax", a, axis, out, keepdims)


def argmin(a, axis=None, out=None, *, keepdims=NOVALUE):
    """Indices of the minimum values along an axis, as ``numpy.argmin``, computed on the GPU."""
    return _call("argmin", a, axis, out, keepdims)


def nanargmax(a, axis=None, out=None, *, keepdims=NOVALUE):
    """Indices of the maximum values along an axis, NaN skipped, as ``numpy.nanargmax``, on the GPU.

    A slice that is all NaN raises ``ValueError("All-NaN slice encountered")``, as NumPy's
    does; a slice of only -inf and NaN gives 0, as NumPy's (which reads NaN as -inf). Integer
    and bool arrays give what ``argmax`` gives. ``axis`` may be a tuple, as for ``argmax``.
    """
    return _nanarg("argmax", a, axis, out, keepdims)


def nanargmin(a, axis=None, out=None, *, keepdims=NOVALUE):
    """Indices of the minimum values along an axis, NaN skipped, as ``numpy.nanargmin``, on the GPU."""
    return _nanarg("argmin", a, axis, out, keepdims)


#: The plain calls seen before, by (op, dtype, shape, axis, keepdims): their checks passed, so
#: the same call again needs only its operator (``api._run``'s call, the result's shape, and
#: whether it is a NumPy scalar). Only NumPy arrays of 1 to 8 dimensions, not empty, not bool,
#: with ``axis`` None or an int, ``keepdims`` not given or a bool, and no ``out``.
_SEEN: dict = {}


def _call(op: str, a, axis, out, keepdims):
    """``argmax`` / ``argmin``: a call like one seen before (``_SEEN``) runs its operator with
    no checks again; any other is checked and run in full (``_first``)."""
    if out is None and type(a) is np.ndarray and (axis is None or type(axis) is int) and (
            keepdims is NOVALUE or type(keepdims) is bool):
        seen = _SEEN.get((op, a.dtype, a.shape, axis, keepdims))
        if seen is not None:
            result = api._run(seen[0], a, None, "propagate").reshape(seen[1])
            return result[()] if seen[2] else result
    return _first(op, a, axis, out, keepdims)


def _first(op: str, a, axis, out, keepdims):
    """A call not seen before: checked and run in full (``_arg``), then remembered in ``_SEEN``
    if it is plain."""
    result = _arg(op, a, axis, out, keepdims)
    if (out is None and type(a) is np.ndarray and (axis is None or type(axis) is int) and (
            keepdims is NOVALUE or type(keepdims) is bool) and 0 < a.ndim <= MAX_RANK and a.size
            and a.dtype != np.bool_):
        axes = normalize_axis(axis, a.ndim)
        if len(_SEEN) >= 1024:
            _SEEN.clear()
        shape = result_shape(a.shape, axes, truth(keepdims))
        call = (op, axes[0] if len(axes) == 1 else axes, "increasing", np.intp)
        _SEEN[(op, a.dtype, a.shape, axis, keepdims)] = (call, shape, not shape)
    return result


def _nanarg(op: str, a, axis, out, keepdims):
    """``numpy.nanargmax`` / ``nanargmin`` (``op`` "argmax" / "argmin"), as NumPy runs it: a
    float array's NaN replaced by -inf (+inf), ``np.all(isnan(a), axis)`` checked (its reading of
    ``axis`` first, then ``ValueError`` for an all-NaN slice), then ``numpy.argmax`` of the copy,
    with its own checks. Here the GPU reduces with NaN ignored, ``axes.nan_rule`` makes the
    answer NumPy's from the winners' values, and ``_arg`` checks the rest and shapes it."""
    name = "nan" + op
    if isinstance(a, Tensor):
        return a.numpy_arg(name, axis, out, keepdims)
    _refuse_foreign(name, a, None, methods=False)  # np.asanyarray reads what has only an argmax of its own
    x = np.asanyarray(a)
    if x.dtype.kind != "f" or x.size == 0:  # nothing NumPy would replace or check: numpy.argmax
        return _arg(op, x, axis, out, keepdims, name=name)
    _checked(np.ndarray.view(x, np.ndarray), name)
    np.all(np.ones((1,) * x.ndim, bool), axis=axis)  # np.all's errors for axis, which NumPy meets first
    return _arg(op, x, axis, out, keepdims, name=name, reduced=_nan_reduced(op, x, axis, name))


def _nan_reduced(op: str, x: np.ndarray, axis, name: str):
    """The NaN-skipping indices of the float array ``x`` over ``axis`` (the kept axes' shape),
    NumPy's ``ValueError`` raised for an all-NaN slice (``axes.nan_rule``); None for a 0-d
    array once checked (its argmax is 0). A masked array is read as NumPy's ``nanargmax``
    reads it: masked elements count as NaN for the check unless the whole slice is masked."""
    masked = isinstance(x, np.ma.MaskedArray)
    if type(x) is not np.ndarray:  # NumPy calls isnan and .all of x, then its .argmax: refused where its own
        base = np.ma.MaskedArray if masked else np.matrix if isinstance(x, np.matrix) else np.ndarray
        _refuse_own(name, x, base, ("all", "__array_ufunc__", op) + (("filled",) if masked else ()))
    mask = np.ma.getmaskarray(x) if masked else None
    data = np.ndarray.view(x, np.ndarray)
    if mask is not None:
        data = np.where(mask, np.array(np.nan, data.dtype), data)
    if x.ndim == 0:
        nan_rule(op, np.zeros((), np.intp), data, mask)
        return None
    axes = normalize_axis(axis, x.ndim)
    return _nan_indices(op, data, axes, None if mask is None else mask.all(axis=axes))


def _nan_indices(op: str, x: np.ndarray, axes: tuple[int, ...], covered=None, device=None) -> np.ndarray:
    """``numpy.nanargmax``'s indices over ``axes`` of the float array ``x`` (not empty; the
    kept axes' shape): reduced on the GPU (``device``) with NaN ignored, then made NumPy's from
    the winners' values (``axes.nan_rule``: ``ValueError`` for an all-NaN slice, 0 for one of
    -inf and NaN). ``covered``: the slices masked throughout (the kept axes' shape), if any."""
    index = _reduce(op, x, axes, nan_mode="ignore", device=device)
    values = _winners(x, axes, index.reshape(result_shape(x.shape, axes, True))).reshape(index.shape)
    return nan_rule(op, index, values, None if covered is None else covered.reshape(index.shape))


def _winners(x: np.ndarray, axes, index: np.ndarray) -> np.ndarray:
    """The elements of ``x`` at ``index`` (flat over ``axes``; ``x``'s rank, size 1 on ``axes``)."""
    if len(axes) == 1:
        return np.take_along_axis(x, index, axes[0])
    return _values_at(x, axes, index)


def _arg(op: str, a, axis, out, keepdims, *, name: str | None = None, reduced=None):
    """``numpy.argmax`` / ``argmin``'s dispatch, as NumPy makes it: ``__array_function__``
    first, then the array's own ``argmax`` method (``_wrapfunc``), here reproduced on the GPU
    for the NumPy classes whose method is known and refused for everything else. ``name``:
    the function called, for messages (``nanargmax`` calls this too); ``reduced``: its indices,
    already found (``_nan_reduced``), which the checks here then shape."""
    name = name or op
    if isinstance(a, Tensor):
        return a.numpy_arg(op, axis, out, keepdims)
    _refuse_foreign(name, a, out)
    if isinstance(a, np.ma.MaskedArray):
        return _masked(op, a, axis, out, keepdims, reduced)
    if isinstance(a, np.matrix):
        return _matrix(op, a, axis, out, keepdims, reduced)
    if isinstance(a, np.ndarray) and type(a) is not np.ndarray:
        _refuse_own(name, a, np.ndarray, (op,))
        view = _checked(np.ndarray.view(a, np.ndarray), name)
        return _method(op, view, axis, out, keepdims, like=a, reduced=reduced)
    result = _method(op, _checked(a, name), axis, out, keepdims, reduced=reduced)
    if isinstance(a, np.generic) and result is out:  # a NumPy scalar's method returns a scalar, even from out
        return np.ndarray.view(out, np.ndarray)[()]
    return result


# -- Which objects NumPy hands to semantics of their own ---------------------------------------


def _name(kind: type) -> str:
    return f"{kind.__module__}.{kind.__qualname__}"


def _refuse_foreign(op: str, a, out, *, methods: bool = True) -> None:
    """Refuse what ``numpy.argmax`` would hand to another implementation: an argument whose
    type overrides ``__array_function__`` (Dask, CuPy, sparse, xarray...), or (``methods``) an
    object that is not a NumPy array but has an ``argmax`` of its own (pandas...), which NumPy
    calls. Their semantics are theirs; dmlgpu neither reproduces them nor runs their code."""
    for field, obj in (("a", a), ("out", out)):
        handler = getattr(type(obj), "__array_function__", _NDARRAY_FUNCTION)
        if obj is not None and handler is not _NDARRAY_FUNCTION:
            raise TypeError(
                f"dmlgpu.numpy.{op} cannot take {field} of type {_name(type(obj))}: it defines "
                f"__array_function__, so numpy.{op} hands it to that type's own implementation, whose "
                f"semantics dmlgpu does not reproduce; {_way_out(type(obj), op)}")
    if methods and not isinstance(a, (np.ndarray, np.generic)) and getattr(a, op, None) is not None:
        raise TypeError(
            f"dmlgpu.numpy.{op} cannot take a of type {_name(type(a))}: it has an .{op} method of "
            f"its own, which numpy.{op} calls, and whose semantics (labels, skipped values, ...) dmlgpu "
            f"does not reproduce; {_way_out(type(a), op)}")


def _way_out(kind: type, op: str) -> str:
    if kind.__module__.split(".")[0] == "dask":
        return (f"for a Dask array use dmlgpu.dask.numpy.{op}(x, axis) (dask.array's signature)"
                + ("" if op.startswith("nan") else f" or dmlgpu.dask.{op}(x, axes)") + ", or reduce x.compute()")
    if kind.__module__.split(".")[0] == "dmlgpu":
        return "a dmlgpu.Tensor goes in as a, never as out"
    return ("convert it to a NumPy array first, e.g. np.asarray(x) (x.get() for CuPy, x.todense() "
            "for sparse arrays)")


def _refuse_own(op: str, a, base: type, names) -> None:
    """Refuse a subclass of ``base`` that overrides one of ``names`` (``argmax`` itself, or
    a method NumPy's answer goes through): NumPy would run its code, dmlgpu does not."""
    kind = type(a)
    for name in names:
        if getattr(kind, name) is not getattr(base, name) or name in getattr(a, "__dict__", ()):
            raise TypeError(
                f"dmlgpu.numpy.{op} cannot take {_name(kind)}: it overrides {base.__name__}.{name}, so "
                f"numpy.{op} runs that class's own code, which dmlgpu does not run on the GPU; pass "
                f"np.asarray(x) to reduce its values as a plain array")


# -- ndarray.argmax, masked arrays, np.matrix -------------------------------------------------


def _masked(op: str, a: np.ma.MaskedArray, axis, out, keepdims, reduced=None):
    """``MaskedArray.argmax``: the data with the masked elements filled (``api.unmasked``),
    reduced by ``ndarray.argmax``; the result is a plain array or scalar, as NumPy's.
    ``reduced``: the indices, found already (``nanargmax``): nothing to fill."""
    _checked(np.ndarray.view(a, np.ndarray), op)  # a type DirectML takes, before filling
    data = api.unmasked(a, op, "dmlgpu.numpy") if reduced is None else np.ndarray.view(a, np.ndarray)
    return _method(op, _checked(data, op), axis, out, truth(keepdims), reduced=reduced)  # keepdims read first


def _matrix(op: str, m: np.matrix, axis, out, keepdims, reduced=None):
    """``numpy.argmax`` of a matrix: ``matrix.argmax(axis, out)``, i.e. ndarray's argmax of
    the matrix ``._align(axis)``; where that raises ``TypeError`` (``keepdims`` given, which
    matrix.argmax lacks, or a bad argument), NumPy's ``_wrapfunc`` retries on
    ``np.asarray(m)`` and wraps the result as a matrix, and so does this."""
    _refuse_own(op, m, np.matrix, (op, "_align", "__array_wrap__"))
    data = _checked(np.ndarray.view(m, np.ndarray), op)
    if keepdims is NOVALUE:
        try:
            return _matrix_method(op, m, data, axis, out, reduced)
        except TypeError:
            pass
    result = _method(op, data, axis, out, keepdims, reduced=reduced)
    if not isinstance(result, np.ndarray):
        result = np.asarray(result)
    return result if type(result) is type(m) else np.ndarray.view(result, type(m))


def _matrix_method(op: str, m: np.matrix, data: np.ndarray, axis, out, reduced=None):
    """``matrix.argmax(axis, out)`` = ``ndarray.argmax(m, axis, out)._align(axis)``, checked
    in NumPy's order, everything before anything reaches the GPU."""
    if isinstance(axis, tuple):  # dmlgpu's extension is ndarray.argmax's, through the retry
        raise TypeError("'tuple' object cannot be interpreted as an integer")
    index = parse_axis(axis)
    _parse_out(out)
    axes: tuple[int, ...]
    if index is None:  # ndarray.argmax ravels a matrix to (1, n): its result has shape (1,)
        axes, shape = (0, 1), (1,)
    else:
        axes = (axis_in_range(index, 2),)
        shape = (data.shape[1 - axes[0]],)
    _check_reduction(op, data.shape, axes)
    _check_out(op, out, shape)
    if out is not None:
        kind = "numpy.ndarray" if type(out) is np.ndarray else type(out).__name__
        raise AttributeError(
            f"'{kind}' object has no attribute '_align': matrix.{op} returns "
            f"out._align(axis), which only a matrix has, and out cannot be one (it must have shape "
            f"{shape}); NumPy raises this AttributeError too. Leave out, or give keepdims (then NumPy "
            f"reduces np.asarray(m) into out)")
    result = _reduce(op, data, axes) if reduced is None else reduced
    if axis is None:
        return result[()]
    if not (axis == 0 or axis == 1):
        raise ValueError(f"unsupported axis: matrix.{op} takes axis None, 0 or 1, not {axis!r}")
    result = _as_like(m, result)  # (1, n): a matrix is 2-D
    return result if axis == 0 else np.ndarray.transpose(result)


def _method(op: str, x: np.ndarray, axis, out, keepdims, *, like=None, reduced=None):
    """``ndarray.argmax(x, axis, out=out, keepdims=keepdims)``, with NumPy's checks in NumPy's
    order (the arguments' kinds, then the axis, an empty reduction, ``out``), all before
    anything reaches the GPU. ``like``: the subclass instance whose type a result that is not
    0-d takes, as ndarray's method gives a subclass (``__array_finalize__`` sees ``like``).
    ``reduced``: the indices over these axes, found already (by ``nanargmax``)."""
    index = parse_axis(axis)
    _parse_out(out)
    keep = truth(keepdims)
    scalar = x.ndim == 0
    if scalar:
        x = x.reshape(1)
    axes = axes_in_range(index, x.ndim)
    _check_reduction(op, x.shape, axes)
    shape = () if scalar else result_shape(x.shape, axes, keep)
    _check_out(op, out, shape)
    result = (_reduce(op, x, axes) if reduced is None else reduced).reshape(shape)
    if out is not None:
        np.copyto(np.ndarray.view(out, np.ndarray), result, casting="unsafe")
        return out
    if result.ndim == 0:
        return result[()]
    return result if like is None else _as_like(like, result)


def _as_like(like: np.ndarray, result: np.ndarray) -> np.ndarray:
    """``result`` as a new array of ``like``'s class, made as ndarray's own methods make one:
    ``__array_finalize__`` is called with ``like`` (np.matrix makes a 1-D result (1, n))."""
    made = np.empty_like(like, dtype=np.intp, shape=result.shape, order="C", subok=True)
    np.ndarray.view(made, np.ndarray)[...] = result.reshape(made.shape)
    return made


def _parse_out(out) -> None:
    if out is not None and not isinstance(out, np.ndarray):
        raise TypeError("output must be an array")


def _check_reduction(op: str, shape, axes) -> None:
    if any(shape[i] == 0 for i in axes):
        raise ValueError(f"attempt to get {op} of an empty sequence")


def _check_out(op: str, out, shape) -> None:
    """NumPy's checks of ``out`` (an ndarray, or a subclass of one: it is written through)."""
    if out is None:
        return
    if out.shape != tuple(shape):
        raise ValueError(f"output array does not match result of np.{op}.")
    if not np.can_cast(out.dtype, np.intp, "safe"):
        raise TypeError(f"Cannot cast array data from {out.dtype!r} to {np.dtype(np.intp)!r} according to the rule 'safe'")
    if not out.flags.writeable:
        raise ValueError("WRITEBACKIFCOPY base is read-only")


def _reduce(op: str, x: np.ndarray, axes: tuple[int, ...], *, nan_mode: str = "propagate", device=None,
            index_type=np.intp) -> np.ndarray:
    """The indices over ``axes`` (ascending) of ``x``, the reduced axes dropped (INCREASING;
    NaN as ``nan_mode`` says; on ``device``, default the default device), as ``index_type``
    (``intp``; the GPU writes it, any output type the operators take).
    NumPy takes up to 64 dimensions, a DirectML tensor 1 to 8: beyond 8 the reduced axes
    are moved to the end and ``x`` is seen as 2-D (kept, reduced), which keeps the row-major
    flat index over the reduced axes."""
    kept = [i for i in range(x.ndim) if i not in axes]
    shape = tuple(x.shape[i] for i in kept)
    if x.size == 0:  # nothing to reduce into: an empty result, as NumPy gives
        return np.empty(shape, index_type)
    if x.ndim > MAX_RANK:
        x = x.transpose(kept + list(axes)).reshape(math.prod(shape), -1)
        axes = (1,)
    boolean = x.dtype == np.bool_
    if boolean:
        x = x.view(np.uint8)  # no copy
    result = getattr(api, op)(x, axes, output_data_type=index_type, nan_mode=nan_mode, device=device)
    if boolean:
        result = _as_bools(op, x, axes, result, device)
    return result.reshape(shape)


def _as_bools(op: str, x: np.ndarray, axes, result: np.ndarray, device=None) -> np.ndarray:
    """``result`` of reducing the bytes ``x`` of a bool array, made NumPy's: NumPy reads any
    nonzero byte as True (an array from ``np.empty``, or a view of other data, may hold
    other bytes than 0 and 1), the GPU compares bytes. The value at each winner tells whether
    the two differ, without another pass over ``x``: for argmax, a winner above 1 means its
    slice holds such bytes, and the slices are reduced again as ``x != 0`` (rare); for argmin,
    a winner that is not 0 means its slice has no False, so its first element wins."""
    values = _values_at(x, axes, result)
    if op == "argmin":
        return np.where(values == 0, result, 0)
    if np.any(values > 1):
        return api.argmax((x != 0).view(np.uint8), axes, output_data_type=np.intp, device=device)
    return result


def _values_at(x: np.ndarray, axes, index: np.ndarray) -> np.ndarray:
    """The elements of ``x`` that ``index`` (flat indices over ``axes``, of ``x``'s rank with
    size 1 on ``axes``) points at, one per output position."""
    coords = dict(zip(axes, np.unravel_index(index, [x.shape[a] for a in axes])))
    along = [np.arange(n).reshape([n if i == axis else 1 for i in range(x.ndim)]) for axis, n in enumerate(x.shape)]
    return x[tuple(coords.get(axis, along[axis]) for axis in range(x.ndim))]


def as_input(a, op: str) -> np.ndarray:
    """``a`` as an array of a type the operators take; bool becomes a uint8 view."""
    x = _checked(a, op)
    return x.view(np.uint8) if x.dtype == np.bool_ else x


def _checked(a, op: str) -> np.ndarray:
    """``np.asarray(a)``, refused with ``TypeError`` unless its type is one DirectML's
    arg-reductions take, or bool."""
    x = np.asarray(a)
    if x.dtype == np.bool_:
        return x
    try:
        DataType.from_numpy(x.dtype)
    except TypeError:
        raise TypeError(
            f"dmlgpu.numpy.{op} cannot take {x.dtype} input: dmlgpu's arg-reductions take "
            f"{', '.join(SUPPORTED)}; it never falls back to the CPU"
        ) from None
    return x
