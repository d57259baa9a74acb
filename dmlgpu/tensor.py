"""``Tensor``: a tensor resident on a device, held in one or more GPU buffers.

Owns the tensor's descriptor and buffers (its own, or ranges of the caller's: ``Device.wrap``),
its reads and writes (through the device's runner), its buffers as bindings for the caller's
own passes (``bindings``) and its NumPy protocols; and ``check_layout``, which says whether a
tensor may stand for a descriptor an operator was compiled for.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any, Callable

import numpy as np

from . import layout
from .axes import NOVALUE, nan_rule, normalize_axis, result_shape, truth
from .binding import BufferBinding
from .desc import operator_for
from .errors import DataError
from .pieces import buffer_spans, tensor_needs
from .tensor_desc import TensorDesc
from .types import AxisDirection, DataType

if TYPE_CHECKING:
    from .device import Device


class Storage:
    """The GPU buffers that hold one tensor's memory, shared by the tensor and its views
    (``Tensor.with_sizes``): given back to the device's pool when the last of them is collected, or
    at once by ``release``.

    A collected storage only appends its buffers to ``Memory.returned`` (an atomic deque
    append, safe from a finalizer that runs in any thread, at any point, during interpreter
    shutdown too); the runner takes them up under its lock at its next allocation. A buffer
    that work in flight still uses is safe to hand out again: the next user's work runs after
    it on the queue. On a closed device they are simply dropped with it."""

    __slots__ = ("buffers", "memory")

    def __init__(self, memory, buffers: list):
        self.memory, self.buffers = memory, buffers

    def release(self) -> None:
        """Give the buffers back now; every tensor sharing them sees none from here on."""
        buffers = list(self.buffers)
        self.buffers.clear()
        for buffer in buffers:
            self.memory.free(buffer)

    def __del__(self) -> None:
        if self.buffers:
            self.memory.returned.extend(self.buffers)


class Tensor:
    """A tensor resident on a device: its ``TensorDesc`` and the GPU buffers that hold it.

    A tensor larger than one buffer of the adapter is held in several, the cells of a
    grid (``pieces.buffer_grid``); most tensors have one. Its memory goes back to the
    device's pool when it (and every view of it) is collected, as ``release()`` gives it back
    at once; a tensor made over buffers it does not own (``storage`` None) never frees them.
    A tensor over the caller's buffers (``Device.wrap``) starts at an offset in each.
    """

    def __init__(self, device: "Device", desc: TensorDesc, buffers: list, spans: list | None = None,
                 storage: Storage | None = None, where: tuple | None = None):
        """``buffers``: the buffers holding its memory (``storage.buffers`` where it owns them,
        through ``storage``, alone or with views of it). ``where``: (offsets, sizes), the byte
        range of each buffer that holds the tensor's part, for ranges of the caller's buffers;
        None: each from its start, the buffers dmlgpu made for it."""
        self.device = device
        self.desc = desc
        self._buffers = buffers
        self._storage = storage
        self._where = where
        # (first byte, bytes) of the tensor's memory that each buffer holds: pieces.buffer_spans
        self._spans = spans or [(0, desc.total_tensor_size_in_bytes)]

    @property
    def shape(self) -> tuple[int, ...]:
        return self.desc.sizes

    @property
    def dtype(self) -> np.dtype:
        return self.desc.data_type.numpy

    @property
    def _offsets(self) -> tuple[int, ...]:
        """The byte offset in each buffer at which the tensor's part starts."""
        return self._where[0] if self._where is not None else (0,) * len(self._buffers)

    def _bindings(self) -> list[BufferBinding]:
        """Each buffer's range that holds the tensor (its part's bytes, in whole words, for the
        buffers dmlgpu made), flushing nothing."""
        if self._where is not None:
            return [BufferBinding(b, o, n) for b, o, n in zip(self._buffers, *self._where)]
        return [BufferBinding(b, 0, n) for b, n in zip(self._buffers, tensor_needs(self.desc, self._spans))]

    @property
    def bindings(self) -> list[BufferBinding]:
        """The tensor's ``wgpu.GPUBuffer`` ranges, as ``BufferBinding`` (one, or one a buffer for a
        tensor beyond one buffer), for the caller's own passes or a binding table. Reading it
        submits the work dmlgpu has recorded on the device (``Device.flush``), so that passes
        the caller submits afterwards see the tensor's contents; what they write must be
        submitted before dmlgpu reads the tensor. The buffers stay the tensor's: valid while
        it (or a view of it) lives and is not released."""
        self._alive()
        self.device.runner.flush()
        return self._bindings()

    @property
    def _buffer(self):
        """The buffer of a tensor held in one (the benchmarks bind it directly)."""
        (buffer,) = self._buffers
        return buffer

    def _alive(self, field: str = "tensor") -> None:
        self.device.runner.check()
        if not self._buffers:
            raise DataError(f"{field} was released (Tensor.release()); it holds no GPU memory any more")

    def write(self, data, on_chunk: Callable[[int, int], Any] | None = None) -> None:
        """Write the bytes of the tensor's memory span (``layout.bytes_for``) to its buffers,
        or a view's elements gathered as they cross the bus (``layout.Gather``, for a packed
        tensor).

        ``on_chunk(buffer index, bytes of it written so far)``: see ``Transfers.upload``."""
        self._alive()
        offsets = self._offsets
        if isinstance(data, layout.Gather):
            if len(self._buffers) == 1:
                self.device.runner.transfers.upload(self._buffers[0], data, offsets[0], on_chunk=on_chunk and
                                                    functools.partial(on_chunk, 0))
                return
            data = np.ascontiguousarray(data.x)  # a tensor in several buffers: packed first
        raw = np.frombuffer(memoryview(data).cast("B"), np.uint8)
        for k, (buffer, offset, (first, nbytes)) in enumerate(zip(self._buffers, offsets, self._spans)):
            part = raw[first:first + nbytes]
            if on_chunk is None:
                self.device.runner.transfers.write(buffer, part, offset)
            else:
                self.device.runner.transfers.upload(buffer, part, offset, on_chunk=functools.partial(on_chunk, k))

    def numpy(self) -> np.ndarray:
        """Read the tensor back into a NumPy array that owns its memory."""
        self._alive()
        runner = self.device.runner
        desc = self.desc
        if desc.strides is None and len(self._buffers) == 1:  # packed: its bytes are the array
            out = np.empty(desc.sizes, desc.data_type.numpy)
            runner.transfers.read_into(self._buffers[0], out.reshape(-1).view(np.uint8), self._offsets[0])
            return out
        raw = np.empty(desc.total_tensor_size_in_bytes, np.uint8)
        for buffer, offset, (first, nbytes) in zip(self._buffers, self._offsets, self._spans):
            size = min(nbytes, raw.size - first)
            runner.transfers.read_into(buffer, raw[first:first + size], offset)
        return np.array(layout.view(desc, raw))

    def release(self) -> None:
        """Free the GPU memory now rather than when the object is collected; later use raises
        (of every view of it too)."""
        if self._storage is not None:
            self._storage.release()
        else:
            self._buffers = []

    def with_sizes(self, sizes) -> "Tensor":
        """The same GPU memory seen with axes of size 1 dropped or added (no copy, no dispatch):
        a view that shares this tensor's buffers (and their lifetime)."""
        sizes = tuple(sizes)
        desc = self.desc
        if sizes == desc.sizes:
            return self
        seen = self.device._views.get((desc, sizes))  # (every dmlgpu.numpy call on a tensor makes one)
        if seen is None:
            if [n for n in sizes if n != 1] != [n for n in desc.sizes if n != 1]:
                raise ValueError(f"sizes {list(sizes)} are not {list(desc.sizes)} with axes of size 1 added or dropped")
            strides = None
            if desc.strides is not None:
                kept = iter([s for n, s in zip(desc.sizes, desc.strides) if n != 1])
                strides = tuple(next(kept) if n != 1 else 0 for n in sizes)
            view = TensorDesc(desc.data_type, sizes, strides, total_tensor_size_in_bytes=desc.total_tensor_size_in_bytes)
            seen = self.device._views[(desc, sizes)] = (view, buffer_spans(view, self.device.runner.capabilities))
        view, spans = seen
        if spans != self._spans:
            raise DataError(f"a tensor of sizes {list(desc.sizes)} held in {len(self._spans)} buffers cannot be "
                            f"seen as sizes {list(sizes)}: its buffers would split differently")
        return Tensor(self.device, view, self._buffers, spans, self._storage, self._where)

    def numpy_arg(self, op: str, axis=None, out=None, keepdims=NOVALUE) -> "Tensor":
        """``numpy.argmax`` / ``argmin`` (``op``) of this tensor with NumPy's arguments and
        rules (``intp`` indices, NaN propagating, the reduced axes dropped unless
        ``keepdims``; dmlgpu's tuple of axes), run on the GPU, the result left there. A result
        NumPy would give as 0-d has shape (1,): a DirectML tensor has 1 to 8 dimensions. What
        ``dmlgpu.numpy`` and ``np.argmax(tensor)`` run.

        ``op`` "nanargmax" / "nanargmin" (``numpy.nanargmax``): NaN skipped, and NumPy's
        ``ValueError("All-NaN slice encountered")`` raised by this call. That needs the values
        the GPU chose, so a float tensor's indices are read back, and the elements they point
        at (the bytes from the first to the last of them: ``_elements_at``); the result is still
        a ``Tensor`` (uploaded again where NumPy's rule changed an index: ``axes.nan_rule``)."""
        if out is not None:
            if not isinstance(out, np.ndarray):
                raise TypeError("output must be an array")
            raise TypeError(f"out must be None when {op} runs on a dmlgpu Tensor (the result is a new Tensor)")
        axes = normalize_axis(axis, self.desc.rank)
        device = self.device
        base = op.removeprefix("nan")
        nan = base != op and self.desc.data_type.numpy.kind == "f"  # an integer tensor has no NaN to skip
        key = ("numpy", base, nan, axes, self.desc)
        compiled = device.by_call.get(key)
        if compiled is None:
            desc = operator_for(base, self.desc, axes, AxisDirection.INCREASING, _INTP)
            compiled = device.by_call[key] = device.compile(desc, nan_mode="ignore" if nan else "propagate")
        result = compiled.run(self)
        if nan:
            found = result.numpy()
            checked = nan_rule(base, found, _elements_at(self, axes, found))
            result = result if checked is found else device.upload(checked)
        return result.with_sizes(result_shape(self.desc.sizes, axes, truth(keepdims)) or (1,))

    # NumPy's protocols: np.asarray reads back, np.argmax / np.argmin run on the GPU
    # (``numpy_arg``), and anything else NumPy is asked to do raises a TypeError naming np.asarray.
    def __array__(self, dtype=None, copy=None) -> np.ndarray:
        if copy is False:
            raise ValueError("a dmlgpu.Tensor lives on the GPU: reading it back always copies (copy=False)")
        x = self.numpy()
        return x if dtype is None else x.astype(dtype, copy=False)

    def __array_function__(self, func, types, args, kwargs):
        op = _ON_GPU.get(func)
        if op is None:
            raise _cpu_only(f"numpy.{getattr(func, '__name__', func)}")
        a, axis, out, keepdims = _numpy_arg_args(*args, **kwargs)
        if not isinstance(a, Tensor):
            raise TypeError(f"numpy.{op} cannot write into a dmlgpu.Tensor: a Tensor goes in as a, never as out")
        return a.numpy_arg(op, axis, out, keepdims)

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        name = getattr(ufunc, "__name__", ufunc)
        raise _cpu_only(f"numpy.{name}" if method == "__call__" else f"numpy.{name}.{method}")

    def __repr__(self) -> str:
        state = "" if self._buffers else ", released"
        if self._where is not None:
            state += f", over the caller's buffer at offset {self._where[0][0]}" if len(self._buffers) == 1 else \
                ", over the caller's buffers"
        return f"Tensor({self.desc.data_type.name}, sizes={list(self.desc.sizes)}, device={self.device.name!r}{state})"


#: The NumPy functions that run on a Tensor, by the name ``numpy_arg`` knows them by.
_ON_GPU = {np.argmax: "argmax", np.argmin: "argmin", np.nanargmax: "nanargmax", np.nanargmin: "nanargmin"}
_INTP = DataType.from_numpy(np.dtype(np.intp))


def _numpy_arg_args(a, axis=None, out=None, *, keepdims=NOVALUE) -> tuple:
    """``numpy.argmax``'s arguments, as its signature binds them."""
    return a, axis, out, keepdims


def _elements_at(t: Tensor, axes, index: np.ndarray) -> np.ndarray:
    """The elements of ``t`` that ``index`` (flat indices over ``axes``; ``t``'s rank, size 1
    on ``axes``) points at, read back: the bytes from the first of them to the last where
    ``t`` is held in one buffer (one element, for one slice), else the whole tensor."""
    desc = t.desc
    at = dict(zip(axes, np.unravel_index(index, [desc.sizes[a] for a in axes])))
    where = [at[i] if i in at else np.arange(n).reshape([n if j == i else 1 for j in range(desc.rank)])
             for i, n in enumerate(desc.sizes)]
    if len(t._buffers) != 1:
        return t.numpy()[tuple(where)]
    offset = sum(w * s for w, s in zip(where, desc.element_strides))
    size = desc.data_type.size
    lo = int(np.min(offset)) * size // 4 * 4  # a copy between buffers moves whole words
    hi = -(-(int(np.max(offset)) + 1) * size // 4) * 4
    raw = np.empty(hi - lo, np.uint8)
    t.device.runner.transfers.read_into(t._buffers[0], raw, lo)
    return raw.view(desc.data_type.numpy)[offset - lo // size]


def _cpu_only(what: str) -> TypeError:
    return TypeError(
        f"{what} cannot run on a dmlgpu.Tensor, which lives on the GPU: read it back with "
        f"np.asarray(tensor) first (np.argmax and np.argmin run on the GPU and need no read-back)"
    )


def check_layout(tensor: Tensor, desc: TensorDesc, field: str) -> None:
    """A tensor may stand for ``desc`` when it addresses its elements the same way."""
    if not isinstance(tensor, Tensor):
        raise TypeError(f"{field} must be a dmlgpu Tensor, not {type(tensor).__name__}")
    tensor._alive(field)
    mine, theirs = tensor.desc, desc
    if mine is theirs or mine == theirs:  # (made for this descriptor: it holds its bytes)
        return
    for name in ("data_type", "sizes", "element_strides"):
        if getattr(mine, name) != getattr(theirs, name):
            raise DataError(
                f"{field}.{name} is {getattr(mine, name)}, but the operator was compiled for {getattr(theirs, name)}"
            )
    held = sum(tensor._where[1]) if tensor._where is not None else sum(buffer.size for buffer in tensor._buffers)
    if held < theirs.total_tensor_size_in_bytes:
        raise DataError(
            f"{field} holds {held} bytes, but the operator's total_tensor_size_in_bytes "
            f"is {theirs.total_tensor_size_in_bytes}"
        )
