"""ARGMAX, ARGMIN and HARDMAX on Dask arrays: dmlgpu reduces each chunk, Dask distributes.

``argmax(x, axes, ...)``, ``argmin`` and ``hardmax`` take a ``dask.array.Array`` and return a
lazy one, with exactly the semantics of the NumPy-level functions (docs/semantics.md): rank
kept, the flat index over the reduced axes in ascending axis order, direction-aware ties,
both NaN modes, every input and output type, whatever the chunking. Dask's scheduler runs
the chunks: its threads, or ``dask.distributed`` workers across processes and machines
(``local_cluster`` starts one worker process per GPU of a host). There is no scheduler here.
``dmlgpu.dask.numpy`` (``dask/numpy.py``) gives dask.array's own ``argmax``, ``argmin``,
``nanargmax`` and ``nanargmin`` (its signatures, NumPy's answers) on this module's graph.

How an arg-reduction is built:

1. **Per chunk, on the GPU.** Each chunk is reduced over the reduced axes it holds, as
   ``dmlgpu.argmax`` / ``argmin`` with the requested direction and NaN mode. A chunk of at most
   32-bit numbers is reduced with each winner's shader key written beside its index
   (``desc.KeyedIndexDesc``), and those keys are its pairs' keys; other chunks' winning values
   are gathered from the chunk on the host and keyed by ``oracle.order_keys``. Both keys
   order values alike (the larger key wins; ``-0.0`` and ``+0.0`` share a key; NaN's key is
   the lowest under "ignore", the highest under "propagate"; 64-bit integers exact), and one
   array's chunks are all keyed one way. The local flat index is decomposed over the chunk's
   reduced sizes, the chunk's offsets along the reduced axes are added (Dask's
   ``block_info``), and it is recomposed over the whole array's reduced sizes: a global
   index (with one reduced axis: the offset added). A chunk's partial is a structured array
   of ``PAIR`` (key, index) with size 1 on the reduced axes.
2. **One merge rule** (``merge_pairs``) combines partials, in Dask's tree (``split_every``,
   its partials handed over as a list, not concatenated) and in the final aggregate alike: the larger key wins; on equal keys the smaller index
   (INCREASING) or the larger (DECREASING). Within a chunk the GPU already picked by the same
   rule, and offsets preserve row-major order, so the chunk's winner is the best of its
   elements under the global order too. The rule is associative and commutative, so the
   answer depends neither on the chunking nor on the order in which chunks finish. An
   all-NaN slice under "ignore" has key 0 in every chunk and so resolves by the tie rule:
   global index 0 (INCREASING) or the last (DECREASING), as on one GPU.
3. **The aggregate** keeps the index, cast to ``output_data_type``, rank kept.

Where no chunk is split along a reduced axis, each chunk's result is already final: the
graph is then one ``map_blocks`` of the NumPy-level function (no keys, no merge).

The output type is checked against the whole reduction, which may exceed one DirectML
tensor: more than 2^32 - 1 reduced elements need INT64 or UINT64. Each chunk must itself be a
valid DirectML tensor (at most 2^32 - 1 elements); larger chunks are refused when computed.

HARDMAX (FLOAT32, FLOAT16): the global index of the first maximum (ARGMAX, INCREASING, the
same ``nan_mode``) is found as above, then ``map_blocks`` over the input writes each block's
part of the one-hot output from the block's offsets, so the output has the input's chunking.
Where no chunk splits a reduced axis, each chunk is simply ``dmlgpu.hardmax`` of it.

**Chunk types.** A chunk is reduced as NumPy's method would reduce it, or refused by name,
never reduced as something else: ``numpy.ndarray`` chunks as they are; masked chunks
(``dask.array.ma``, or a ``map_blocks`` that returns ``numpy.ma`` arrays) as
``MaskedArray.argmax`` / ``argmin`` reduce them, their masked elements filled with the
extreme of their type (``api.unmasked``: the per-chunk result and the (key, index) partials
alike come from the filled values); HARDMAX refuses masked chunks. Any other chunk type
(sparse, CuPy, an ndarray subclass with an ``argmax`` of its own) raises ``TypeError`` naming
it, when the graph is built where ``x._meta`` shows it, else when the chunk is computed; so
does a chunk whose dtype is not ``x.dtype``, and a chunk whose shape is not the one ``x.chunks``
gives it raises ``ValueError``. Chunks are checked before anything reaches the GPU.

**Devices.** A chunk runs on ``device`` if one is given (a ``dmlgpu.Device``: for Dask's
threaded or synchronous scheduler only, as a device does not travel to other processes),
else on ``dmlgpu.default_device()`` of the process that runs it, which ``DMLGPU_ADAPTER``
pins to one adapter (``"#1"``: the adapter at index 1). ``local_cluster`` sets it for each
worker. Threads of one process may share a device (the runner is thread-safe), each with its
chunk in flight: while one waits for its chunk's result, another's upload goes on (the
runtime's waits never hold the queue: docs/dask.md, "Transfers beside reductions"). Two GPUs
driven from one process reach about 1.2x one GPU, so use one worker process per GPU.

Needs the ``dask`` extra: ``pip install dmlgpu[dask]`` (``dask[array]`` and ``distributed``).
"""

from __future__ import annotations

import functools
import logging
import math
import operator

import numpy as np

try:
    import dask.array as da
except ImportError as err:  # the core does without Dask; this module needs it
    raise ImportError(
        f"dmlgpu.dask needs Dask ({err}); install it with: pip install dmlgpu[dask]"
    ) from err

from .. import api, layout, oracle
from ..axes import ALL_NAN
from ..desc import (ActivationHardmax1OperatorDesc, ArgMaxOperatorDesc, ArgMinOperatorDesc, KeyedIndexDesc, TensorDesc,
                    operator_for)
from ..device import Device, default_device
from ..errors import DataError, DescriptorError
from ..types import INDEX_TYPE_CAPACITY, MAX_ELEMENTS, MAX_RANK, AxisDirection, DataType, NanMode

#: A partial result per output position: the order-preserving key of the best value seen,
#: and its flat index over the whole array's reduced axes.
PAIR = np.dtype([("key", "<u8"), ("index", "<u8")])

_OPERATORS = {"argmax": ArgMaxOperatorDesc, "argmin": ArgMinOperatorDesc}


def argmax(x, axes, *, axis_direction="increasing", output_data_type="uint32", nan_mode="ignore",
           split_every=None, device: Device | None = None):
    """Indices of the maxima of the Dask array ``x`` over ``axes``, lazily (``dmlgpu.argmax``).

    ``split_every``: how many partials one merge takes (Dask's ``reduction``). ``device``:
    the device every chunk runs on, for in-process schedulers (default: each process's
    ``dmlgpu.default_device()``).
    """
    return _index_reduction("argmax", x, axes, axis_direction, output_data_type, nan_mode, split_every, device)


def argmin(x, axes, *, axis_direction="increasing", output_data_type="uint32", nan_mode="ignore",
           split_every=None, device: Device | None = None):
    """Indices of the minima of the Dask array ``x`` over ``axes``; arguments as ``argmax``."""
    return _index_reduction("argmin", x, axes, axis_direction, output_data_type, nan_mode, split_every, device)


def hardmax(x, axes, *, nan_mode="ignore", split_every=None, device: Device | None = None):
    """1 at the first maximum of each slice of ``x`` over ``axes``, 0 elsewhere, lazily, with
    ``x``'s chunking (``dmlgpu.hardmax``; FLOAT32 and FLOAT16)."""
    _check_array(x)
    axes = _axes(axes, x.ndim)
    data_type = DataType.from_numpy(x.dtype, "x.dtype")
    _chunk_values(x._meta, "hardmax", graph=True)
    stand_in = _stand_in(x, axes, data_type)
    ActivationHardmax1OperatorDesc(stand_in, TensorDesc(data_type, stand_in.sizes), axes)
    mode = NanMode.parse(nan_mode, "nan_mode")
    axes = tuple(sorted(axes))
    split_every = _split_every(split_every, axes, x.ndim)
    _check_device(device)
    meta = np.empty((0,) * x.ndim, x.dtype)
    if _whole(x, axes):
        return x.map_blocks(_chunk_hardmax, axes=axes, nan_mode=mode, device=device, x_dtype=x.dtype,
                            dtype=x.dtype, meta=meta, token="dmlgpu-hardmax")
    index = _tree("hardmax", x, axes, AxisDirection.INCREASING, DataType.UINT64, mode, split_every, device)
    return da.map_blocks(_one_hot, x, index, axes=axes, x_dtype=x.dtype, dtype=x.dtype, meta=meta,
                         token="dmlgpu-hardmax-one-hot")


# ----------------------------------------------------------------------------- graph


def _index_reduction(op, x, axes, axis_direction, output_data_type, nan_mode, split_every, device):
    _check_array(x)
    axes = _axes(axes, x.ndim)
    direction, out_type = api._direction_and_type(axis_direction, output_data_type)
    data_type = DataType.from_numpy(x.dtype, "x.dtype")
    _chunk_values(x._meta, op, graph=True)
    stand_in = _stand_in(x, axes, data_type)
    # the descriptor rules (axes, types, direction) on a stand-in that holds the reduced axes
    _OPERATORS[op](stand_in, TensorDesc(out_type, [1 if i in axes else n for i, n in enumerate(stand_in.sizes)]),
                   axes, direction)
    count = math.prod(x.shape[a] for a in axes)
    if count > INDEX_TYPE_CAPACITY[out_type]:
        raise DescriptorError(
            f"output_data_type is {out_type.name}, but the {count} reduced elements need indices up "
            f"to {count - 1}, more than {out_type.name} holds (at most {INDEX_TYPE_CAPACITY[out_type]} elements)")
    mode = NanMode.parse(nan_mode, "nan_mode")
    axes = tuple(sorted(axes))
    split_every = _split_every(split_every, axes, x.ndim)
    _check_device(device)
    return _index_graph(op, x, axes, direction, out_type, mode, split_every, device)


def _index_graph(op, x, axes, direction, out_type, mode, split_every, device, rules=None):
    """The index of ``op`` over ``axes`` (ascending, checked): one ``map_blocks`` where every
    chunk holds the reduced axes whole (``_whole``: each chunk's result is final), else the
    partials merged in Dask's tree (``_tree``). ``rules``: those of ``dmlgpu.dask.numpy``
    (NumPy's result shape and NaN rules, dask.array's errors), or None for DirectML's."""
    if not _whole(x, axes):
        return _tree(op, x, axes, direction, out_type, mode, split_every, device, rules)
    keep = rules is None or rules.keepdims
    extra = {} if keep else {"drop_axis": axes}
    return x.map_blocks(_chunk_final, op=op, axes=axes, direction=direction, out_type=out_type, nan_mode=mode,
                        device=device, x_dtype=x.dtype, rules=rules, chunks=_reduced_chunks(x.chunks, axes, keep),
                        dtype=out_type.numpy, meta=np.empty((0,) * _out_ndim(x, axes, keep), out_type.numpy),
                        token=f"dmlgpu-{op}", **extra)


def _tree(op, x, axes, direction, out_type, mode, split_every, device, rules=None):
    """Partials per chunk, merged in Dask's tree into the index (``out_type``, rank kept unless
    ``rules`` say otherwise). ``op`` "hardmax" is ARGMAX for HARDMAX's sake (its chunks are
    checked as HARDMAX's)."""
    partials = x.map_blocks(_chunk_partials, op=op, axes=axes, direction=direction, nan_mode=mode, device=device,
                            x_dtype=x.dtype, rules=rules, chunks=_reduced_chunks(x.chunks, axes), dtype=PAIR,
                            meta=np.empty((0,) * x.ndim, PAIR), token=f"dmlgpu-{op}-chunk")
    increasing = direction is AxisDirection.INCREASING
    keep = rules is None or rules.keepdims
    worst = None if rules is None else rules.worst
    return da.reduction(
        partials, _identity, functools.partial(_aggregate, increasing=increasing, dtype=out_type.numpy, worst=worst),
        combine=functools.partial(_combine, increasing=increasing), axis=axes, keepdims=keep,
        dtype=PAIR, split_every=split_every, concatenate=False,  # dtype: the partials'; meta: the result's
        meta=np.empty((0,) * _out_ndim(x, axes, keep), out_type.numpy), name=f"dmlgpu-{op}")


def _out_ndim(x, axes, keep: bool) -> int:
    return x.ndim if keep else x.ndim - len(axes)


def _check_array(x) -> None:
    if not isinstance(x, da.Array):
        raise TypeError(f"x must be a dask.array.Array, not {type(x).__name__} (NumPy arrays: the dmlgpu.* functions)")
    if any(math.isnan(n) for c in x.chunks for n in c):
        raise ValueError("x has chunks of unknown size; call x.compute_chunk_sizes() first")
    if not 1 <= x.ndim <= MAX_RANK:
        raise DataError(f"x has {x.ndim} dimensions, but a tensor has 1 to {MAX_RANK}")
    if 0 in x.shape:
        raise DataError(f"x.shape is {x.shape}, but every size must be at least 1")


def _axes(axes, ndim: int) -> tuple[int, ...]:
    """``axes`` as ints, negative ones counted from the end; ``TypeError`` naming an entry that
    is not an integer. The descriptor checks the rest (range, repeats) and names it."""
    if isinstance(axes, (int, np.integer)) and not isinstance(axes, (bool, np.bool_)):
        axes = (axes,)
    if isinstance(axes, (str, bytes)) or not hasattr(axes, "__iter__"):
        raise TypeError(f"axes must be an int or a sequence of ints, not {type(axes).__name__} ({axes!r})")
    checked = []
    for i, a in enumerate(axes):
        try:
            if isinstance(a, (bool, np.bool_)):
                raise TypeError
            index = operator.index(a)
        except TypeError:
            raise TypeError(f"axes[{i}] must be an integer, not {type(a).__name__} ({a!r})") from None
        checked.append(index + ndim if -ndim <= index < 0 else index)
    return tuple(checked)


def _split_every(split_every, axes, ndim: int):
    """``split_every`` as Dask's ``reduction`` takes it: None, an int >= 2, or a dict from
    reduced axes to ints >= 2 (negative axes counted from the end)."""
    if split_every is None:
        return None
    if not isinstance(split_every, dict):
        return _partials_per_merge(split_every, "split_every")
    checked = {}
    for key, value in split_every.items():
        try:
            if isinstance(key, (bool, np.bool_)):
                raise TypeError
            axis = operator.index(key)
        except TypeError:
            axis = None
        if axis is None or not -ndim <= axis < ndim or axis % ndim not in axes:
            raise ValueError(f"split_every has the key {key!r}, but its keys must be reduced axes {list(axes)}")
        checked[axis % ndim] = _partials_per_merge(value, f"split_every[{key!r}]")
    return checked


def _partials_per_merge(value, field: str) -> int:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{field} must be an int of at least 2 (or a dict of them by axis), "
                        f"not {type(value).__name__} ({value!r})")
    if value < 2:
        raise ValueError(f"{field} is {value}, but a merge takes at least 2 partials")
    return int(value)


def _check_device(device) -> None:
    if device is not None and not isinstance(device, Device):
        raise TypeError(f"device must be a dmlgpu.Device or None, not {type(device).__name__} ({device!r})")


def _stand_in(x, axes, data_type: DataType) -> TensorDesc:
    """A small tensor with ``x``'s rank and type, and the reduced axes' sizes where one DirectML
    tensor can hold them, so that the descriptor rules apply as they would to ``x``."""
    count = math.prod(x.shape[a] if isinstance(a, (int, np.integer)) and 0 <= a < x.ndim else 1 for a in axes)
    sizes = [n if i in axes and count <= MAX_ELEMENTS else min(n, 1) for i, n in enumerate(x.shape)]
    return TensorDesc(data_type, tuple(sizes))


def _whole(x, axes) -> bool:
    """Every chunk holds the whole of each reduced axis."""
    return all(len(x.chunks[a]) == 1 for a in axes)


def _reduced_chunks(chunks, axes, keep: bool = True) -> tuple:
    """The chunks of a result over ``axes``: size 1 on them (``keep``), else without them."""
    return tuple((1,) * len(c) if i in axes else c for i, c in enumerate(chunks) if keep or i not in axes)


# ----------------------------------------------------------------------------- per chunk


def _device(device: Device | None) -> Device:
    return device if device is not None else default_device()


def _naming_the_chunk(fn):
    """Errors raised on a chunk say which chunk (its block index) and which adapter: with
    many chunks on many workers, that is where to look."""

    @functools.wraps(fn)
    def run(block, *args, block_info=None, **kwargs):
        try:
            return fn(block, *args, block_info=block_info, **kwargs)
        except (TypeError, ValueError, RuntimeError, MemoryError) as err:
            where = "a chunk" if not block_info else f"chunk {tuple(block_info[0]['chunk-location'])}"
            try:
                adapter = f"adapter {_device(kwargs.get('device')).name!r}"
            except Exception:  # the device itself could not be opened: the error says so
                adapter = "no adapter"
            try:
                named = type(err)(f"{where} of x, on {adapter}: {err}")
            except Exception:  # an exception type that wants other arguments: as it was
                raise err from None
            raise named from err

    return run


def _chunk_values(block, op: str, *, graph: bool = False):
    """The NumPy array that ``op`` reduces for a chunk (or ``x._meta``, at graph time): a
    ``numpy.ndarray`` as it is, a masked one as ``MaskedArray.argmax`` / ``argmin`` reduce
    it (``api.unmasked``: masked elements filled; HARDMAX refuses it), an ndarray subclass
    that keeps ndarray's ``argmax``/``argmin`` seen as a plain array; anything else refused
    with ``TypeError`` naming its type (its own semantics are not dmlgpu's to guess). ``graph``:
    ``block`` is ``x._meta``, checked when the graph is built."""
    if isinstance(block, np.ma.MaskedArray):
        return api.unmasked(block, op, "dmlgpu.dask")
    if type(block) is np.ndarray:
        return block
    kind = type(block)
    name = f"{kind.__module__}.{kind.__qualname__}"
    if isinstance(block, np.ndarray):
        own = [m for m in ("argmax", "argmin", "__array_function__") if getattr(kind, m) is not getattr(np.ndarray, m)]
        if not own:
            return np.ndarray.view(block, np.ndarray)
        why = f"it overrides ndarray.{own[0]}, so NumPy would reduce it by that class's own code"
    else:
        why = "dmlgpu.dask reduces NumPy chunks (numpy.ndarray, or numpy.ma masked arrays for argmax and argmin)"
    where = f"x's chunks are {name} (x._meta shows it)" if graph else f"the chunk is {name}"
    raise TypeError(f"{where}, but {why}; convert the chunks to NumPy first, e.g. "
                    f"x.map_blocks(np.asarray) (for CuPy: cupy.asnumpy; for sparse: .todense())")


def _chunk_input(block, op: str, x_dtype, block_info, rules=None):
    """The chunk's values (``_chunk_values``), refused if its dtype is not ``x.dtype``
    (``x_dtype``) or its shape not the one ``x.chunks`` gives it (where ``x.chunks`` knows it):
    a chunk that differs from what the graph declares would be reduced as something else.
    ``rules`` (``dmlgpu.dask.numpy``'s) may refuse a chunk first (``rules.admit``)."""
    if rules is not None:
        rules.admit(block)
    values = _chunk_values(block, op)
    expected_type = np.dtype(x_dtype)
    if values.dtype != expected_type and (np.bool_ in (values.dtype, expected_type) or DataType.from_numpy(
            values.dtype, "x.dtype") is not DataType.from_numpy(expected_type, "x.dtype")):
        raise TypeError(f"the chunk's dtype is {values.dtype}, but x.dtype is {expected_type}: every chunk must "
                        f"hold x's declared type (a map_blocks that changes it must say so with dtype=)")
    info = (block_info or {}).get(0)
    if info is not None:
        expected = tuple(stop - start for start, stop in info["array-location"])
        if len(values.shape) != len(expected) or any(n != e for n, e in zip(values.shape, expected) if not math.isnan(e)):
            raise ValueError(f"the chunk's shape is {values.shape}, but x.chunks gives it {expected}: every chunk "
                             f"must have the shape x.chunks declares")
    return values


@_naming_the_chunk
def _chunk_final(block, *, op, axes, direction, out_type, nan_mode, device, x_dtype, rules=None, block_info=None):
    """A chunk that holds the whole of every reduced axis: its result is the answer."""
    block = _chunk_input(block, op, x_dtype, block_info, rules)
    if rules is not None:
        return rules.final(op, block, axes, _device(device))
    if block.size == 0:
        return np.empty([1 if i in axes else n for i, n in enumerate(block.shape)], out_type.numpy)
    fn = api.argmax if op == "argmax" else api.argmin
    return fn(block, axes, axis_direction=direction, output_data_type=out_type, nan_mode=nan_mode,
              device=_device(device))


@_naming_the_chunk
def _chunk_hardmax(block, *, axes, nan_mode, device, x_dtype, block_info=None):
    block = _chunk_input(block, "hardmax", x_dtype, block_info)
    if block.size == 0:
        return np.empty_like(block)
    return api.hardmax(block, axes, nan_mode=nan_mode, device=_device(device))


@_naming_the_chunk
def _chunk_partials(block, *, op, axes, direction, nan_mode, device, x_dtype, rules=None, block_info=None):
    """The chunk's (key, index) pair per output position, with the index over the whole array.
    ``op`` "hardmax" reduces as ARGMAX; keys come from the values reduced (a masked chunk's
    filled values; a bool chunk's truth), so every chunk's pairs compare alike. ``rules``
    (``dmlgpu.dask.numpy``'s): their errors first (``rules.check``), the chunk reduced by them.

    A chunk of at most 32-bit numbers takes its keys from the GPU (``_keyed_words``) and is
    written into its pairs in place: in a Dask worker, each fresh array a step makes costs its
    pages again (Dask's workers hand freed memory back to the system at once), and the steps
    that decoded the values and keyed them again took 18 ms a 256 MiB chunk where measured
    (benchmarks/LOG.md, fourteenth session)."""
    block = _chunk_input(block, op, x_dtype, block_info, rules)
    op = "argmin" if op == "argmin" else "argmax"
    if rules is not None:
        rules.check(op, block)
    out_shape = [1 if i in axes else n for i, n in enumerate(block.shape)]
    pairs = np.empty(out_shape, PAIR)
    if block.size == 0:  # nothing to offer: a pair that never wins
        pairs["key"] = 0
        pairs["index"] = np.iinfo(np.uint64).max if direction is AxisDirection.INCREASING else 0
        return pairs
    index, coords = pairs["index"], None
    if rules is None and block.dtype.kind in "uif" and block.dtype.itemsize <= 4:
        words = _keyed_words(block, op, axes, direction, nan_mode, _device(device))
        np.right_shift(words, np.uint64(32), out=pairs["key"])
        np.bitwise_and(words, np.uint64(0xFFFFFFFF), out=index)
    else:
        if rules is None:
            fn = api.argmax if op == "argmax" else api.argmin
            index[...] = fn(block, axes, axis_direction=direction, output_data_type="uint32", nan_mode=nan_mode,
                            device=_device(device))
        else:
            index[...] = rules.local(op, block, axes, nan_mode, _device(device))
        coords = _coords(index, block.shape, axes)
        values = _winners(block, dict(zip(axes, coords)))
        if values.dtype == np.bool_:  # any nonzero byte is True
            values = (values.view(np.uint8) != 0).view(np.uint8)
        pairs["key"] = oracle.order_keys(values, want_max=op == "argmax", nan_mode=nan_mode)
    info = block_info[0]
    starts = [info["array-location"][a][0] for a in axes]
    if len(axes) == 1:  # the chunk's offset along the one reduced axis
        index += np.uint64(starts[0])
    else:
        sizes = [block.shape[a] if math.isnan(info["shape"][a]) else info["shape"][a] for a in axes]  # unknown: one chunk
        coords = coords if coords is not None else _coords(index, block.shape, axes)  # (the gather's, where it made them)
        index[...] = np.ravel_multi_index([c + s for c, s in zip(coords, starts)], sizes)
    return pairs


def _coords(index: np.ndarray, shape, axes) -> tuple:
    """A chunk's flat indices over its reduced axes as positions along each of them."""
    return np.unravel_index(index.astype(np.intp), [shape[a] for a in axes])


def _keyed_words(block: np.ndarray, op: str, axes, direction, nan_mode, device: Device) -> np.ndarray:
    """One call whose output word per position holds the winner's flat index within the chunk
    in its low half and the winner's shader key in its high half (``KeyedIndexDesc``). The
    keys order the winners as ``oracle.order_keys`` orders their values (the same ties: -0.0
    with +0.0, every NaN alike, NaN lowest under "ignore" and highest under "propagate"), and
    one array's chunks are all keyed so, so they are the pairs' keys as they are."""
    index = operator_for(op, layout.upload_desc(block), axes, AxisDirection.parse(direction, "axis_direction"),
                         DataType.UINT64)
    return device.compile(KeyedIndexDesc(index), nan_mode=nan_mode)(block)


def _winners(block: np.ndarray, at: dict) -> np.ndarray:
    """The winning values of a chunk: its reduced axes indexed by the winners' positions
    (``at``: axis -> positions, shaped as the output), the others by aranges. A packed chunk
    is read through one flat index (``np.take``), which costs the page walks of its scattered
    reads alone; fancy indexing over several index arrays took twice as long on a 256 MiB chunk."""
    index = [at[i] if i in at else _along(i, n, block.ndim) for i, n in enumerate(block.shape)]
    if not block.flags.c_contiguous:
        return block[tuple(index)]
    flat = sum(ix * (stride // block.itemsize) for ix, stride in zip(index, block.strides))
    return np.take(block.reshape(-1), flat)


def _along(axis: int, n: int, ndim: int) -> np.ndarray:
    """0..n-1 laid along ``axis`` of an ``ndim``-dimensional broadcast shape."""
    return np.arange(n).reshape([n if i == axis else 1 for i in range(ndim)])


# ----------------------------------------------------------------------------- merging


def merge_pairs(pairs: np.ndarray, axes, *, increasing: bool) -> np.ndarray:
    """The one merge rule: over ``axes`` of ``pairs`` (``PAIR``), the larger key wins, and on
    equal keys the smaller index (``increasing``) or the larger. Size 1 on ``axes`` after."""
    moved = np.moveaxis(pairs, axes, range(len(axes)))
    flat = moved.reshape((math.prod(moved.shape[:len(axes)]),) + moved.shape[len(axes):])
    return _best(list(flat), increasing).reshape([1 if i in axes else n for i, n in enumerate(pairs.shape)])


def _best(parts: list, increasing: bool) -> np.ndarray:
    """``merge_pairs``'s rule over partials of one shape, position by position: a copy of the
    first, each later one's pairs written over it where they win. Dask's tree hands them over
    as they are (``_parts``), neither concatenated nor widened: in a worker each fresh array
    costs its pages anew (``_chunk_partials``)."""
    best = np.array(parts[0], PAIR, copy=True)
    key, index = best["key"], best["index"]
    for part in parts[1:]:
        wins = part["key"] > key
        tie = part["key"] == key
        tie &= part["index"] < index if increasing else part["index"] > index
        wins |= tie
        np.copyto(best, part, where=wins)
    return best


def _parts(nested) -> list:
    """The partials of one merge in Dask's tree, from its nested lists (a level per reduced axis)."""
    if isinstance(nested, (list, tuple)):
        return [p for n in nested for p in _parts(n)]
    return [nested]


def _identity(partials, axis=None, keepdims=True, **kwargs):
    return partials


def _combine(pairs, axis, keepdims=True, *, increasing, computing_meta=False, **kwargs):
    if computing_meta:
        return pairs
    return _best(_parts(pairs), increasing)


def _aggregate(pairs, axis, keepdims=True, *, increasing, dtype, worst=None, computing_meta=False, **kwargs):
    """The final merge: the index (``dtype``), the reduced axes kept or dropped (``keepdims``;
    a NumPy scalar where none is left, as dask.array's). ``worst`` (``numpy.nanargmax``'s rule,
    ``axes.nan_rule``, on keys): the key of -inf (+inf for argmin); a winner of key 0 (NaN)
    raises NumPy's ``ValueError``, a winner of the worst key is index 0."""
    if computing_meta:
        return np.empty((0,) * (pairs.ndim if keepdims else pairs.ndim - len(axis)), dtype)
    best = _best(_parts(pairs), increasing)
    index = best["index"].astype(dtype)
    if worst is not None:
        if (best["key"] == 0).any():
            raise ValueError(ALL_NAN)
        index[best["key"] == worst] = 0
    if keepdims:
        return index
    index = index.reshape([n for i, n in enumerate(index.shape) if i not in axis])
    return index[()] if index.ndim == 0 else index


@_naming_the_chunk
def _one_hot(block, index, *, axes, x_dtype, block_info=None):
    """The block's part of HARDMAX's output: 1 where its element is the slice's chosen one."""
    block = _chunk_input(block, "hardmax", x_dtype, block_info)
    info = block_info[0]
    coords = np.unravel_index(index.astype(np.intp), [info["shape"][a] for a in axes])
    hot = np.ones([1] * block.ndim, bool)
    for axis, coord in zip(axes, coords):
        start, stop = info["array-location"][axis]
        hot = hot & (_along(axis, stop - start, block.ndim) + start == coord)
    return np.broadcast_to(hot, block.shape).astype(block.dtype)


# ----------------------------------------------------------------------------- clusters


def gpu_adapters() -> list[int]:
    """Indices (``"#N"``) of the adapters a cluster should use: every GPU through a native
    backend, else the first adapter (lavapipe on a machine without a GPU)."""
    from ..runtime import all_adapters as adapters

    return _gpus_among(adapters())


def _gpus_among(found: list) -> list[int]:
    gpus = [i for i, a in enumerate(found) if a.info["adapter_type"] != "CPU" and a.info["backend_type"] != "OpenGL"]
    return gpus or [0][:len(found)]


def local_cluster(adapters=None, *, threads_per_worker: int = 4, memory_limit=None, worker_options=None,
                  scheduler_options=None, **kwargs):
    """A ``distributed`` cluster on this host with one worker process per adapter, each pinned
    to its adapter by ``DMLGPU_ADAPTER="#N"``; use it with ``distributed.Client(cluster)``.

    ``adapters``: adapter indices (``dmlgpu info`` lists them; an index may repeat, giving
    several workers on one adapter); default ``gpu_adapters()``. A worker's threads each have a
    chunk in flight on its device, so one chunk's host work goes on while others travel; four
    reduced 256 MiB chunks 14-20% faster than two, on one GPU and on two, where it was measured
    (benchmarks/LOG.md, thirteenth session, "Threads a worker"); pass another count to try yours.
    ``memory_limit`` per worker
    defaults to this host's memory shared among the workers. ``worker_options`` go to each
    ``distributed.Nanny``, ``scheduler_options`` to the ``Scheduler`` (default: dashboard on
    a free port), the other keyword arguments to ``distributed.SpecCluster``. On other hosts
    start workers yourself with ``DMLGPU_ADAPTER`` set; the same code runs on any cluster.
    """
    from distributed import Nanny, Scheduler, SpecCluster
    from distributed.system import MEMORY_LIMIT

    from ..runtime import all_adapters as listed

    found = listed()
    adapters = _gpus_among(found) if adapters is None else list(adapters)
    if not adapters:
        raise ValueError("adapters is empty, but a cluster needs at least one worker")
    for a in adapters:
        if not isinstance(a, (int, np.integer)) or isinstance(a, bool) or not 0 <= a < len(found):
            raise ValueError(f"adapters holds {a!r}, but an adapter is an index from 0 to {len(found) - 1} "
                             f"(dmlgpu info lists them)")
    memory_limit = memory_limit if memory_limit is not None else MEMORY_LIMIT // len(adapters)
    kwargs.setdefault("silence_logs", logging.WARN)
    workers = {}
    for n, index in enumerate(adapters):
        options = {"nthreads": threads_per_worker, "memory_limit": memory_limit,
                   "silence_logs": kwargs["silence_logs"], **(worker_options or {})}
        options["env"] = {**options.get("env", {}), "DMLGPU_ADAPTER": f"#{index}"}
        workers[f"gpu{n}-adapter{index}"] = {"cls": Nanny, "options": options}
    scheduler = {"cls": Scheduler, "options": {"dashboard_address": ":0", **(scheduler_options or {})}}
    return SpecCluster(workers=workers, scheduler=scheduler, **kwargs)


__all__ = ["argmax", "argmin", "hardmax", "merge_pairs", "PAIR", "local_cluster", "gpu_adapters"]
