"""``dask.array.argmax``, ``argmin``, ``nanargmax`` and ``nanargmin`` on GPUs: dask.array's
signatures and answers, computed by ``dmlgpu.dask``'s machinery.

    import dmlgpu.dask.numpy as ddn
    ddn.argmax(x, axis=0)                    # as da.argmax(x, axis=0): lazy, intp, axis 0 dropped
    ddn.nanargmin(x, axis=1, keepdims=True)  # as da.nanargmin

``dmlgpu.dask.numpy`` is to ``dmlgpu.dask`` what ``dmlgpu.numpy`` is to ``dmlgpu.argmax``:
replacing ``da.argmax(x, 0)`` (or ``x.argmax(axis=0)``) by ``ddn.argmax(x, 0)`` gives the same
array: the same values, ``intp`` dtype, shape and chunks (the reduced axes' chunks dropped, or
``(1,)`` with ``keepdims``), a NumPy scalar from ``compute()`` where no axis is left, and the
same errors, at the same time:

- the signature ``(a, axis=None, keepdims=False, split_every=None, out=None)``. ``axis`` None
  is the index into the flattened array (C order); an int one axis; a tuple of ints is
  dmlgpu's extension (the row-major flat index over those axes, as ``dmlgpu.numpy``'s).
  ``split_every`` goes to Dask's tree as dask.array's own does (an int, or a dict by axis);
  ``out`` is dask.array's (a Dask array of the result's shape, which is then the result).
- NaN as NumPy: ``argmax`` / ``argmin`` take the first NaN; ``nanargmax`` / ``nanargmin``
  skip NaN, and a slice that is all NaN raises ``ValueError("All-NaN slice encountered")`` at
  ``compute()`` (NumPy's message, after the name of the chunk where one chunk holds the whole
  slice; dask.array's reads "All NaN slice encountered"). A slice of only -inf (+inf for
  ``nanargmin``) and NaN gives 0, as NumPy's.
- errors when the graph is built, as dask.array's: ``AxisError`` for an axis out of range
  (0-d arrays take only ``axis=None``), ``TypeError`` for an axis that is neither None nor an
  int, dask.array's ``ValueError`` for chunks of unknown size along a reduced axis that has
  more than one chunk, and dask.array's errors for ``out``.
- errors at ``compute()``, as dask.array's: a chunk that is empty along an axis dask.array's
  chunk step reduces (every axis, for a flat index) raises ``ValueError`` (dask.array's chunks
  call ``np.max``, which has no identity; this includes a reduction over an empty axis), and a
  flat index (``axis=None``, or any axis of a 1-D array) over an axis of unknown size raises
  ``TypeError``. Unknown sizes along the axes not reduced, and along a reduced axis held in one
  chunk, are taken.

Every type of ``dmlgpu.numpy`` is taken: bool (read as uint8; any nonzero byte is True),
float64 (exactly), float32, float16 and the eight integer types, in chunks of any rank
(beyond 8, a chunk is reduced as 2-D). Other types (complex, longdouble, datetime, ..., which
dask.array would take) raise ``TypeError`` when the graph is built: nothing falls back to the
CPU. Masked chunks
(``dask.array.ma``) are reduced by ``argmax`` / ``argmin`` as dask.array reduces them (masked
elements take the fill value of their type); ``nanargmax`` / ``nanargmin`` refuse them
(``TypeError``). Other chunk types are refused as ``dmlgpu.dask`` refuses them.

Where dask.array's answer differs from NumPy's, NumPy's is given: ``da.nanargmax`` raises
"All NaN slice encountered" for a slice whose first chunk is all NaN and whose other elements
are -inf and NaN (its merge keeps that chunk's NaN), where NumPy, and this, give 0.

How: the graph is ``dmlgpu.dask``'s (``_index_graph``: per-chunk GPU partials merged in
Dask's tree by ``merge_pairs``, or one ``map_blocks`` where no chunk splits a reduced axis),
with the same number of tasks as ``dmlgpu.dask.argmax`` on the same array; ``_Rules`` is what
changes: INCREASING ties, ``intp`` indices, NaN propagating (or ignored and checked by
``axes.nan_rule``), the reduced axes kept or dropped, dask.array's compute-time errors. Chunks
run on ``dmlgpu.default_device()`` of the process that runs them (``DMLGPU_ADAPTER``).
"""

from __future__ import annotations

import dataclasses
import math
import numbers

import numpy as np
from dask.array.core import handle_out

from .. import numpy as dnp
from .. import oracle
from ..axes import ALL_NAN, AxisError, result_shape
from ..types import AxisDirection, DataType, NanMode
from . import _chunk_input, _chunk_values, _index_graph, _naming_the_chunk, da

__all__ = ["argmax", "argmin", "nanargmax", "nanargmin"]

#: dask.array's message for chunks of unknown size along a reduced axis (``arg_reduction``).
UNKNOWN_CHUNKS = ("Arg-reductions do not work with arrays that have unknown chunksizes. At some point in your "
                  "computation this array lost chunking information.\n\nA possible solution is with \n"
                  "  x.compute_chunk_sizes()")

_INTP = DataType.from_numpy(np.intp)


def argmax(a, axis=None, keepdims=False, split_every=None, out=None):
    """Indices of the maximum values of the Dask array ``a`` along ``axis``, lazily, as
    ``dask.array.argmax`` (the first NaN wins, as in NumPy), reduced on GPUs. ``axis`` may
    also be a tuple of axes (the row-major flat index over them)."""
    return _arg("argmax", a, axis, keepdims, split_every, out, nan=False)


def argmin(a, axis=None, keepdims=False, split_every=None, out=None):
    """Indices of the minimum values along ``axis``, lazily, as ``dask.array.argmin``."""
    return _arg("argmin", a, axis, keepdims, split_every, out, nan=False)


def nanargmax(a, axis=None, keepdims=False, split_every=None, out=None):
    """Indices of the maximum values along ``axis``, NaN skipped, lazily, as
    ``dask.array.nanargmax``; an all-NaN slice raises ``ValueError`` at ``compute()``."""
    return _arg("argmax", a, axis, keepdims, split_every, out, nan=True)


def nanargmin(a, axis=None, keepdims=False, split_every=None, out=None):
    """Indices of the minimum values along ``axis``, NaN skipped, lazily, as ``dask.array.nanargmin``."""
    return _arg("argmin", a, axis, keepdims, split_every, out, nan=True)


def _arg(op: str, a, axis, keepdims, split_every, out, *, nan: bool):
    """The graph of ``op`` (``nan``: NaN skipped), with dask.array's checks in its order."""
    name = ("nan" if nan else "") + op
    if not isinstance(a, da.Array):
        raise TypeError(f"dmlgpu.dask.numpy.{name} takes a dask.array.Array, not {type(a).__name__} "
                        f"(for NumPy arrays: dmlgpu.numpy.{name})")
    _check_type(a, name)
    axes, flat = _axes(axis, a.ndim)
    for ax in axes:
        if len(a.chunks[ax]) > 1 and any(math.isnan(n) for n in a.chunks[ax]):
            raise ValueError(UNKNOWN_CHUNKS)
    if split_every and not isinstance(split_every, (numbers.Integral, dict)):
        raise ValueError("split_every must be a int or a dict")  # dask.array's tree says so, whatever the chunks
    skip = nan and a.dtype.kind == "f"  # an integer or bool array has no NaN to skip: argmax
    worst = None
    if skip:
        inf = np.array([-np.inf if op == "argmax" else np.inf], a.dtype)
        worst = int(oracle.order_keys(inf, want_max=op == "argmax", nan_mode="ignore")[0])
    rules = _Rules(name, bool(keepdims), tuple(range(a.ndim)) if flat else axes,
                   flat and any(math.isnan(n) for n in a.shape), skip, worst)
    if a.ndim == 0:
        result = da.map_blocks(_chunk_zero_d, a, x_dtype=a.dtype, rules=rules, dtype=np.intp,
                               meta=np.empty((), np.intp), token=f"dmlgpu-{name}")
    else:
        mode = NanMode.IGNORE if skip else NanMode.PROPAGATE
        result = _index_graph(op, a, axes, AxisDirection.INCREASING, _INTP, mode, split_every or None, None, rules)
    return handle_out(out, result)


def _check_type(a, name: str) -> None:
    """``a``'s type is one the operators take, or bool; its chunks' type (``a._meta``) one
    that ``dmlgpu.dask`` reduces (masked chunks: not for ``nanargmax``)."""
    if a.dtype != np.bool_:
        try:
            DataType.from_numpy(a.dtype)
        except TypeError:
            raise TypeError(
                f"dmlgpu.dask.numpy.{name} cannot take {a.dtype} input: dmlgpu's arg-reductions take "
                f"{', '.join(dnp.SUPPORTED)}; it never falls back to the CPU"
            ) from None
    _refuse_masked(a._meta, name, graph=True)
    _chunk_values(a._meta, name.removeprefix("nan"), graph=True)


def _refuse_masked(block, name: str, graph: bool = False) -> None:
    if name.startswith("nan") and isinstance(block, np.ma.MaskedArray):
        where = "a's chunks are masked (a._meta shows it)" if graph else "the chunk is masked"
        raise TypeError(f"dmlgpu.dask.numpy.{name} cannot take masked chunks ({where}): NumPy's {name} of a "
                        f"masked array is not dask.array's; fill them first (dask.array.ma.filled(a, np.nan)) or "
                        f"use argmax/argmin, which honour the mask")


def _axes(axis, ndim: int) -> tuple[tuple[int, ...], bool]:
    """(the reduced axes, ascending; whether dask.array's index is a flat one over every axis:
    ``axis`` None, or a 1-D array), with dask.array's errors; a tuple is dmlgpu's extension."""
    if axis is None:
        return tuple(range(ndim)), True
    if isinstance(axis, tuple):
        axes = tuple(sorted(_axis(a, ndim) for a in axis))
        if len(set(axes)) != len(axes):
            raise ValueError("repeated axis")
        if not axes:
            raise ValueError("axis is (), but an arg-reduction needs at least one axis")
        return axes, ndim == 1
    if not isinstance(axis, numbers.Integral):
        raise TypeError(f"axis must be either `None` or int, got '{axis}'")
    return (_axis(axis, ndim),), ndim == 1


def _axis(axis, ndim: int) -> int:
    """One axis as dask.array reads it: an integer in range (``AxisError`` else); a bool is
    checked for range as the integer it is (as dask.array does), then refused."""
    if isinstance(axis, np.bool_) or not isinstance(axis, numbers.Integral):
        raise TypeError(f"an integer is required for the axis, not {type(axis).__name__} ({axis!r})")
    index = int(axis)
    if not -ndim <= index < ndim:
        raise AxisError(f"Axis {axis} is out of bounds for array of dimension {ndim}")
    if isinstance(axis, bool):
        raise TypeError(f"an integer is required for the axis, not bool ({axis!r})")
    return index % ndim


@dataclasses.dataclass(frozen=True)
class _Rules:
    """What ``dmlgpu.dask``'s chunk functions do differently for this module: NumPy's result
    (``intp``, reduced axes dropped unless ``keepdims``, NaN skipped and checked where ``nan``)
    and dask.array's compute-time errors. Travels in the graph (frozen, picklable)."""

    name: str  # the function, for messages
    keepdims: bool
    spans: tuple[int, ...]  # the axes dask.array's chunk step reduces: every axis for a flat index
    unknown: bool  # a flat index over an axis of unknown size: dask.array's TypeError at compute
    nan: bool  # NaN skipped (nanargmax of a float array): ``axes.nan_rule``
    worst: int | None  # with ``nan``: the key of -inf (+inf for argmin), whose winner is index 0

    def admit(self, block) -> None:
        """Refuse a chunk before it is read: masked chunks for ``nanargmax``."""
        _refuse_masked(block, self.name)

    def check(self, op: str, block: np.ndarray) -> None:
        """dask.array's errors for this chunk: empty along an axis its chunk step reduces
        (``np.max`` of nothing), then a flat index over a shape it does not know."""
        if any(block.shape[a] == 0 for a in self.spans):
            reduction = ("fmax" if self.nan else "maximum") if op == "argmax" else ("fmin" if self.nan else "minimum")
            raise ValueError(f"zero-size array to reduction operation {reduction} which has no identity "
                             f"(as dask.array.{self.name}: a chunk empty along a reduced axis)")
        if self.unknown:
            raise TypeError(f"dask.array.{self.name} cannot give the flat index over axes of unknown size, and neither "
                            f"can this; call x.compute_chunk_sizes() first")

    def local(self, op: str, block: np.ndarray, axes, nan_mode, device) -> np.ndarray:
        """The chunk's own indices over ``axes`` (size 1 on them), UINT32 as ``dmlgpu.dask``'s
        partials take them (a chunk holds fewer than 2**32 elements): the same operator runs."""
        mode = NanMode.parse(nan_mode, "nan_mode").value
        index = dnp._reduce(op, block, axes, nan_mode=mode, device=device, index_type=np.uint32)
        return index.reshape([1 if i in axes else n for i, n in enumerate(block.shape)])

    def final(self, op: str, block: np.ndarray, axes, device):
        """The result of a chunk that holds every reduced axis whole."""
        self.check(op, block)
        shape = result_shape(block.shape, axes, self.keepdims)
        if block.size == 0:
            return np.empty(shape, np.intp)
        if self.nan:
            index = dnp._nan_indices(op, block, axes, device=device)
        else:
            index = dnp._reduce(op, block, axes, device=device)
        index = index.reshape(shape)
        return index[()] if not shape else index


@_naming_the_chunk
def _chunk_zero_d(block, *, x_dtype, rules: _Rules, block_info=None):
    """A 0-d array's index: 0, unless ``nanargmax`` meets NaN."""
    value = _chunk_input(block, rules.name.removeprefix("nan"), x_dtype, block_info, rules)
    if rules.nan and np.isnan(value):
        raise ValueError(ALL_NAN)
    return np.intp(0)
