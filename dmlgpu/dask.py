"""ARGMAX, ARGMIN and HARDMAX on Dask arrays: dmlgpu reduces each chunk, Dask distributes.

``argmax(x, axes, ...)``, ``argmin`` and ``hardmax`` take a ``dask.array.Array`` and return a
lazy one, with exactly the semantics of the NumPy-level functions (SPEC.md section 2): rank
kept, the flat index over the reduced axes in ascending axis order, direction-aware ties,
both NaN modes, every input and output type, whatever the chunking. Dask's scheduler runs
the chunks: its threads, or ``dask.distributed`` workers across processes and machines
(``local_cluster`` starts one worker process per GPU of a host). There is no scheduler here.

How an arg-reduction is built:

1. **Per chunk, on the GPU.** Each chunk is reduced over the reduced axes it holds by
   ``dmlgpu.argmax`` / ``argmin`` with the requested direction and NaN mode. On the host,
   the winning values are gathered from the chunk (one element per output position) and
   turned into order-preserving keys by ``oracle.order_keys`` (the larger key wins; ``-0.0``
   and ``+0.0`` share a key; NaN's key is the lowest under "ignore", the highest under
   "propagate"; 64-bit integers exact). The local flat index is decomposed over the chunk's
   reduced sizes, the chunk's offsets along the reduced axes are added (Dask's
   ``block_info``), and it is recomposed over the whole array's reduced sizes: a global
   index. A chunk's partial is a structured array of ``PAIR`` (key, index) with size 1 on
   the reduced axes.
2. **One merge rule** (``merge_pairs``) combines partials, in Dask's tree (``split_every``)
   and in the final aggregate alike: the larger key wins; on equal keys the smaller index
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

**Devices.** A chunk runs on ``device`` if one is given (a ``dmlgpu.Device``: for Dask's
threaded or synchronous scheduler only, as a device does not travel to other processes),
else on ``dmlgpu.default_device()`` of the process that runs it, which ``DMLGPU_ADAPTER``
pins to one adapter (``"#1"``: the adapter at index 1). ``local_cluster`` sets it for each
worker. Threads of one process may share a device (the runner is thread-safe), but two GPUs
driven from one process reach about 1.2x one GPU, so use one worker process per GPU.

Needs the ``dask`` extra: ``pip install dmlgpu[dask]`` (``dask[array]`` and ``distributed``).
"""

from __future__ import annotations

import functools
import logging
import math

import numpy as np

try:
    import dask.array as da
except ImportError as err:  # the core does without Dask; this module needs it
    raise ImportError(
        f"dmlgpu.dask needs Dask ({err}); install it with: pip install dmlgpu[dask]"
    ) from err

from . import api, oracle
from .desc import ActivationHardmax1OperatorDesc, ArgMaxOperatorDesc, ArgMinOperatorDesc, TensorDesc
from .device import Device, default_device
from .errors import DescriptorError
from .types import INDEX_TYPE_CAPACITY, MAX_ELEMENTS, AxisDirection, DataType, NanMode

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
    axes = api._normalize_axes(axes, x.ndim)
    data_type = DataType.from_numpy(x.dtype, "x.dtype")
    stand_in = _stand_in(x, axes, data_type)
    ActivationHardmax1OperatorDesc(stand_in, TensorDesc(data_type, stand_in.sizes), axes)
    mode = NanMode.parse(nan_mode, "nan_mode")
    axes = tuple(sorted(axes))
    if _whole(x, axes):
        return x.map_blocks(_chunk_hardmax, axes=axes, nan_mode=mode, device=device, dtype=x.dtype,
                            token="dmlgpu-hardmax")
    index = _tree("argmax", x, axes, AxisDirection.INCREASING, DataType.UINT64, mode, split_every, device)
    return da.map_blocks(_one_hot, x, index, axes=axes, dtype=x.dtype, token="dmlgpu-hardmax-one-hot")


# ----------------------------------------------------------------------------- graph


def _index_reduction(op, x, axes, axis_direction, output_data_type, nan_mode, split_every, device):
    _check_array(x)
    axes = api._normalize_axes(axes, x.ndim)
    direction, out_type = api._direction_and_type(axis_direction, output_data_type)
    data_type = DataType.from_numpy(x.dtype, "x.dtype")
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
    if _whole(x, axes):
        return x.map_blocks(_chunk_final, op=op, axes=axes, direction=direction, out_type=out_type, nan_mode=mode,
                            device=device, chunks=_reduced_chunks(x.chunks, axes), dtype=out_type.numpy,
                            token=f"dmlgpu-{op}")
    return _tree(op, x, axes, direction, out_type, mode, split_every, device)


def _tree(op, x, axes, direction, out_type, mode, split_every, device):
    """Partials per chunk, merged in Dask's tree into the index (``out_type``, rank kept)."""
    partials = x.map_blocks(_chunk_partials, op=op, axes=axes, direction=direction, nan_mode=mode, device=device,
                            chunks=_reduced_chunks(x.chunks, axes), dtype=PAIR, meta=np.empty((0,) * x.ndim, PAIR),
                            token=f"dmlgpu-{op}-chunk")
    increasing = direction is AxisDirection.INCREASING
    return da.reduction(
        partials, _identity, functools.partial(_aggregate, increasing=increasing, dtype=out_type.numpy),
        combine=functools.partial(_combine, increasing=increasing), axis=axes, keepdims=True,
        dtype=PAIR, split_every=split_every, concatenate=True,  # dtype: the partials'; meta: the result's
        meta=np.empty((0,) * x.ndim, out_type.numpy), name=f"dmlgpu-{op}")


def _check_array(x) -> None:
    if not isinstance(x, da.Array):
        raise TypeError(f"x must be a dask.array.Array, not {type(x).__name__} (NumPy arrays: the dmlgpu.* functions)")
    if any(math.isnan(n) for c in x.chunks for n in c):
        raise ValueError("x has chunks of unknown size; call x.compute_chunk_sizes() first")


def _stand_in(x, axes, data_type: DataType) -> TensorDesc:
    """A small tensor with ``x``'s rank and type, and the reduced axes' sizes where one DirectML
    tensor can hold them, so that the descriptor rules apply as they would to ``x``."""
    count = math.prod(x.shape[a] if isinstance(a, (int, np.integer)) and 0 <= a < x.ndim else 1 for a in axes)
    sizes = [n if i in axes and count <= MAX_ELEMENTS else min(n, 1) for i, n in enumerate(x.shape)]
    return TensorDesc(data_type, tuple(sizes))


def _whole(x, axes) -> bool:
    """Every chunk holds the whole of each reduced axis."""
    return all(len(x.chunks[a]) == 1 for a in axes)


def _reduced_chunks(chunks, axes) -> tuple:
    return tuple((1,) * len(c) if i in axes else c for i, c in enumerate(chunks))


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


@_naming_the_chunk
def _chunk_final(block, *, op, axes, direction, out_type, nan_mode, device, block_info=None):
    """A chunk that holds the whole of every reduced axis: its result is the answer."""
    if block.size == 0:
        return np.empty([1 if i in axes else n for i, n in enumerate(block.shape)], out_type.numpy)
    fn = api.argmax if op == "argmax" else api.argmin
    return fn(block, axes, axis_direction=direction, output_data_type=out_type, nan_mode=nan_mode,
              device=_device(device))


@_naming_the_chunk
def _chunk_hardmax(block, *, axes, nan_mode, device, block_info=None):
    if block.size == 0:
        return np.empty_like(block)
    return api.hardmax(block, axes, nan_mode=nan_mode, device=_device(device))


@_naming_the_chunk
def _chunk_partials(block, *, op, axes, direction, nan_mode, device, block_info=None):
    """The chunk's (key, index) pair per output position, with the index over the whole array."""
    out_shape = [1 if i in axes else n for i, n in enumerate(block.shape)]
    if block.size == 0:  # nothing to offer: a pair that never wins
        pairs = np.zeros(out_shape, PAIR)
        if direction is AxisDirection.INCREASING:
            pairs["index"] = np.iinfo(np.uint64).max
        return pairs
    fn = api.argmax if op == "argmax" else api.argmin
    local = fn(block, axes, axis_direction=direction, output_data_type="uint32", nan_mode=nan_mode,
               device=_device(device))
    coords = np.unravel_index(local.astype(np.intp), [block.shape[a] for a in axes])
    # the winning values: reduced axes indexed by the winners' positions, the others by aranges
    at = dict(zip(axes, coords))
    values = block[tuple(at[i] if i in at else _along(i, n, block.ndim) for i, n in enumerate(block.shape))]
    info = block_info[0]
    starts = [info["array-location"][a][0] for a in axes]
    pairs = np.empty(out_shape, PAIR)
    pairs["key"] = oracle.order_keys(values, want_max=op == "argmax", nan_mode=nan_mode)
    pairs["index"] = np.ravel_multi_index([c + s for c, s in zip(coords, starts)], [info["shape"][a] for a in axes])
    return pairs


def _along(axis: int, n: int, ndim: int) -> np.ndarray:
    """0..n-1 laid along ``axis`` of an ``ndim``-dimensional broadcast shape."""
    return np.arange(n).reshape([n if i == axis else 1 for i in range(ndim)])


# ----------------------------------------------------------------------------- merging


def merge_pairs(pairs: np.ndarray, axes, *, increasing: bool) -> np.ndarray:
    """The one merge rule: over ``axes`` of ``pairs`` (``PAIR``), the larger key wins, and on
    equal keys the smaller index (``increasing``) or the larger. Size 1 on ``axes`` after."""
    moved = np.moveaxis(pairs, axes, range(len(axes)))
    flat = moved.reshape((math.prod(moved.shape[:len(axes)]),) + moved.shape[len(axes):])
    keys, index = flat["key"], flat["index"]
    best = keys.max(axis=0)
    tied = keys == best
    if increasing:
        chosen = np.where(tied, index, np.iinfo(np.uint64).max).min(axis=0)
    else:
        chosen = np.where(tied, index, 0).max(axis=0)
    out = np.empty(best.shape, PAIR)
    out["key"], out["index"] = best, chosen
    return out.reshape([1 if i in axes else n for i, n in enumerate(pairs.shape)])


def _identity(partials, axis=None, keepdims=True, **kwargs):
    return partials


def _combine(pairs, axis, keepdims=True, *, increasing, computing_meta=False, **kwargs):
    if computing_meta:
        return pairs
    return merge_pairs(pairs, axis, increasing=increasing)


def _aggregate(pairs, axis, keepdims=True, *, increasing, dtype, computing_meta=False, **kwargs):
    if computing_meta:
        return np.empty((0,) * pairs.ndim, dtype)
    return merge_pairs(pairs, axis, increasing=increasing)["index"].astype(dtype)


def _one_hot(block, index, *, axes, block_info=None):
    """The block's part of HARDMAX's output: 1 where its element is the slice's chosen one."""
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
    from .runtime.adapters import adapters

    return _gpus_among(adapters())


def _gpus_among(found: list) -> list[int]:
    gpus = [i for i, a in enumerate(found) if a.info["adapter_type"] != "CPU" and a.info["backend_type"] != "OpenGL"]
    return gpus or [0][:len(found)]


def local_cluster(adapters=None, *, threads_per_worker: int = 2, memory_limit=None, worker_options=None,
                  scheduler_options=None, **kwargs):
    """A ``distributed`` cluster on this host with one worker process per adapter, each pinned
    to its adapter by ``DMLGPU_ADAPTER="#N"``; use it with ``distributed.Client(cluster)``.

    ``adapters``: adapter indices (``dmlgpu info`` lists them; an index may repeat, giving
    several workers on one adapter); default ``gpu_adapters()``. Two threads a worker let it
    upload one chunk while the GPU reduces another (on two H200s: 82-86% of the bare upload
    rate, against 64-75% with one thread). ``memory_limit`` per worker
    defaults to this host's memory shared among the workers. ``worker_options`` go to each
    ``distributed.Nanny``, ``scheduler_options`` to the ``Scheduler`` (default: dashboard on
    a free port), the other keyword arguments to ``distributed.SpecCluster``. On other hosts
    start workers yourself with ``DMLGPU_ADAPTER`` set; the same code runs on any cluster.
    """
    from distributed import Nanny, Scheduler, SpecCluster
    from distributed.system import MEMORY_LIMIT

    from .runtime.adapters import adapters as listed

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
