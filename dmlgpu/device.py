"""The descriptor-level API, in DirectML's shape.

A ``Device`` opens an adapter; ``Device.compile`` turns an operator descriptor into a
``CompiledOperator`` (validated, planned, its pipelines compiled once); a compiled
operator runs on NumPy arrays (upload, dispatch, read back) or on ``Tensor`` objects
that stay on the GPU, so chains of calls do not cross the bus each time.

Any number of threads may share a ``Device``: what the runner orders is guarded there
(``runtime/runner.py``); here, each NumPy call takes GPU buffers of its own from a pool, and the
caches are locked.
"""

from __future__ import annotations

import dataclasses
import threading
from collections import OrderedDict

import numpy as np

from . import layout
from .desc import TensorDesc, lower
from .errors import DataError, GPUMemoryError
from .pieces import Schedule, buffer_spans, schedule
from .plan import Plan, Tuning
from .runtime.adapters import adapter_summary
from .runtime.interrupts import interrupts_held
from .runtime.native import Steps
from .runtime.kits import IN_PLACE_OUTPUT_MAX, Kit
from .runtime.runner import Runner
from .types import DEFAULT_FEATURE_LEVEL, FeatureLevel, NanMode
from .wgsl import params_words, shader_sources


#: Compiled operators a device keeps (least recently used go first); a dropped one that a
#: caller still holds keeps working.
KEPT_OPERATORS = 64
#: NumPy inputs larger than this many staging chunks are reduced piece by piece while the
#: next piece is still crossing the bus (``pieces.schedule`` with one chunk per binding).
STREAM_PIECES_ABOVE_CHUNKS = 2
#: NumPy inputs up to this size run through a kit of the operator's own (``CompiledOperator._small``):
#: each thread making such calls at once keeps one, with a copy of the input on the GPU.
HOT_CALL_MAX = 4 << 20


class LruCache(OrderedDict):
    """A dict that keeps its ``size`` most recently used entries; safe to share between threads."""

    def __init__(self, size: int):
        super().__init__()
        self.size = size
        self._lock = threading.Lock()

    def get(self, key, default=None):
        # (locked: a key's __eq__ may be Python code, during which another thread could evict)
        with self._lock:
            try:
                self.move_to_end(key)
                return OrderedDict.__getitem__(self, key)
            except KeyError:
                return default

    def __setitem__(self, key, value):
        with self._lock:
            super().__setitem__(key, value)
            if len(self) > self.size:
                self.popitem(last=False)


class Tensor:
    """A tensor resident on a device: its ``TensorDesc`` and the GPU buffers that hold it.

    A tensor larger than one buffer of the adapter is held in several, the cells of a
    grid (``pieces.buffer_grid``); most tensors have one.
    """

    def __init__(self, device: "Device", desc: TensorDesc, buffers: list, spans: list | None = None):
        self.device = device
        self.desc = desc
        self._buffers = buffers
        # (first byte, bytes) of the tensor's memory that each buffer holds: pieces.buffer_spans
        self._spans = spans or [(0, desc.total_tensor_size_in_bytes)]

    @property
    def shape(self) -> tuple[int, ...]:
        return self.desc.sizes

    @property
    def dtype(self) -> np.dtype:
        return self.desc.data_type.numpy

    @property
    def _buffer(self):
        """The buffer of a tensor held in one (the benchmarks bind it directly)."""
        (buffer,) = self._buffers
        return buffer

    def _alive(self, field: str = "tensor") -> None:
        self.device.runner.check()
        if not self._buffers:
            raise DataError(f"{field} was released (Tensor.release()); it holds no GPU memory any more")

    def write(self, data, on_chunk=None) -> None:
        """Write the bytes of the tensor's memory span (``layout.bytes_for``) to its buffers.

        ``on_chunk(buffer index, bytes of it written so far)``: see ``Runner.upload``."""
        self._alive()
        raw = np.frombuffer(memoryview(data).cast("B"), np.uint8)
        for k, (buffer, (first, nbytes)) in enumerate(zip(self._buffers, self._spans)):
            part = raw[first:first + nbytes]
            if on_chunk is None:
                self.device.runner.transfers.write(buffer, part)
            else:
                self.device.runner.transfers.upload(buffer, part, on_chunk=lambda done, k=k: on_chunk(k, done))

    def numpy(self) -> np.ndarray:
        """Read the tensor back into a NumPy array that owns its memory."""
        self._alive()
        runner = self.device.runner
        desc = self.desc
        if desc.strides is None and len(self._buffers) == 1:  # packed: its bytes are the array
            out = np.empty(desc.sizes, desc.data_type.numpy)
            runner.transfers.read_into(self._buffers[0], out.reshape(-1).view(np.uint8))
            return out
        raw = np.empty(desc.total_tensor_size_in_bytes, np.uint8)
        for buffer, (first, nbytes) in zip(self._buffers, self._spans):
            size = min(nbytes, raw.size - first)
            runner.transfers.read_into(buffer, raw[first:first + size])
        return np.array(layout.view(desc, raw))

    def release(self) -> None:
        """Free the GPU memory now rather than when the object is collected; later use raises."""
        buffers, self._buffers = self._buffers, []
        for buffer in buffers:
            self.device.runner.memory.free(buffer)

    # NumPy's protocols (dmlgpu/numpy.py): np.asarray reads back, np.argmax / np.argmin run
    # on the GPU, and anything else NumPy is asked to do raises a TypeError naming np.asarray.
    def __array__(self, dtype=None, copy=None):
        from .numpy import tensor_array
        return tensor_array(self, dtype, copy)

    def __array_function__(self, func, types, args, kwargs):
        from .numpy import tensor_array_function
        return tensor_array_function(func, args, kwargs)

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        from .numpy import tensor_array_ufunc
        return tensor_array_ufunc(ufunc, method)

    def __repr__(self) -> str:
        state = "" if self._buffers else ", released"
        return f"Tensor({self.desc.data_type.name}, sizes={list(self.desc.sizes)}, device={self.device.name!r}{state})"


def _check_layout(tensor: Tensor, desc: TensorDesc, field: str) -> None:
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
    held = sum(buffer.size for buffer in tensor._buffers)
    if held < theirs.total_tensor_size_in_bytes:
        raise DataError(
            f"{field} holds {held} bytes, but the operator's total_tensor_size_in_bytes "
            f"is {theirs.total_tensor_size_in_bytes}"
        )


class _Program:
    """An operator's schedule on given capabilities, its passes compiled: what binds where."""

    def __init__(self, runner: Runner, sched: Schedule):
        self.runner, self.schedule = runner, sched
        self.sources: list[str] = []
        # per piece: its window of the input and output (None: the scratch), and its passes
        self.pieces = [(piece.input, piece.output, self._passes(piece.plan)) for piece in sched.pieces]
        scratch = max([sched.partial_bytes] + [p.plan.partial_bytes for p in sched.pieces])
        self.scratch = runner.memory.storage(scratch) if scratch else None
        # Words a racing plan's first pass keeps between dispatches (zeroed here, since a
        # pooled buffer holds what it held; each dispatch leaves them zero): binding 3.
        race = max(p.plan.race_bytes for p in sched.pieces)
        self.race = runner.memory.storage(race) if race else None
        if self.race is not None:
            runner.transfers.write(self.race, np.zeros(race, np.uint8))
        self._steps = LruCache(8)  # by the buffers bound: (input buffers, output buffers)

    def _passes(self, p: Plan) -> list:
        """(pipeline, parameters, grid, reads partial pairs, writes partial pairs, races) per pass."""
        runner = self.runner
        sources = shader_sources(p)
        self.sources += sources
        grids = ([p.grid] if p.kernel else []) + ([p.merge_grid] if p.merge_kernel else [])
        passes = []
        for i, (source, grid) in enumerate(zip(sources, grids)):
            merging = not p.kernel or i == 1
            writes_pairs = not merging and (p.partials_only or (p.split > 1 and not p.race))
            passes.append((runner.programs.pipeline(source), runner.programs.uniform(params_words(p, grid, merging)), grid,
                           merging, writes_pairs, p.race and not merging))
        return passes

    def steps(self, input: Tensor, output: Tensor) -> list:
        """Per piece, its passes bound to its windows of the input and output (and the scratch
        pairs between a first pass and its merge): a list of step lists, made once per pair
        of buffer sets (a buffer object is never reused for other memory, so a cached bind
        group never points at a stranger's buffer)."""
        return self._bound(input, output)[0]

    def flat_steps(self, input: Tensor, output: Tensor) -> Steps:
        """Every piece's steps in one list, made once like ``steps`` (a ``Steps`` list keeps the
        C form the native path records from)."""
        return self._bound(input, output)[1]

    def _bound(self, input: Tensor, output: Tensor) -> tuple:
        key = (tuple(input._buffers), tuple(output._buffers))
        bound = self._steps.get(key)
        if bound is None:
            by_piece = self._bind(input, output)
            bound = self._steps[key] = (by_piece, Steps(s for piece in by_piece for s in piece))
        return bound

    def _bind(self, input: Tensor, output: Tensor) -> list:
        bind = self.runner.programs.bind
        scratch = (self.scratch, 0, self.scratch.size) if self.scratch else None

        def window(tensor: Tensor, w):
            return scratch if w is None else (tensor._buffers[w.buffer], w.offset, w.size)

        by_piece = []
        for in_window, out_window, passes in self.pieces:
            src, dst = window(input, in_window), window(output, out_window)
            by_piece.append([(pipeline, bind(params, scratch if merging else src, scratch if writes_pairs else dst,
                                             self.race if races else None), grid)
                             for pipeline, params, grid, merging, writes_pairs, races in passes])
        return by_piece

    def release(self) -> None:
        for kept in ("scratch", "race"):
            if getattr(self, kept) is not None:
                self.runner.memory.free(getattr(self, kept))
                setattr(self, kept, None)


class CompiledOperator:
    """An operator descriptor compiled for one device: reusable, with its plan and pipelines."""

    def __init__(self, device: "Device", desc, nan_mode):
        desc.check_feature_level(device.feature_level)
        self.device = device
        self.desc = desc
        self.nan_mode = NanMode.parse(nan_mode, "nan_mode")
        self._reduction = lower(desc)
        self.input_desc: TensorDesc = self._reduction.input
        self.output_desc: TensorDesc = self._reduction.output
        runner = device.runner
        self._program = _Program(runner, schedule(self._reduction, runner.capabilities, self.nan_mode, device.tuning))
        self.schedule: Schedule = self._program.schedule
        self.plan: Plan = self.schedule.pieces[0].plan  # the first piece's (the only one, mostly)
        # What each resident call asks for, found once: whether it clears its output first,
        # the bytes it reads, the output's buffer spans.
        self._clears = self.plan.clears_output
        self._reads = self.input_desc.total_tensor_size_in_bytes
        self._output_spans = buffer_spans(self.output_desc, runner.capabilities)
        # a small output written with plain stores goes in mappable memory, read with no copy
        # (IN_PLACE_OUTPUT_MAX)
        self._output_in_place = runner.in_place and self.plan.op != "hardmax" and len(self._output_spans) == 1 \
            and self._output_spans[0][1] <= IN_PLACE_OUTPUT_MAX
        self.sources: list[str] = self._program.sources
        self._streamed_program: _Program | None = None
        self._own_layouts = LruCache(16)  # array layouts checked to be the input descriptor's
        # Kits of small NumPy calls (``_small``), one taken by each thread while it runs one;
        # False once known to have none.
        self._kits: list = []
        self._hot: bool | None = None

    def _clear(self, output: Tensor):
        return output._buffers if self._clears else None

    def run(self, input: Tensor, output: Tensor | None = None) -> Tensor:
        """Dispatch on GPU-resident tensors; returns the output tensor (new if not given)."""
        _check_layout(input, self.input_desc, "input")
        if input.device is not self.device:
            raise DataError(f"input is on {input.device!r}, but the operator was compiled for {self.device!r}")
        if output is None:
            output = self.device.empty(self.output_desc, self._output_spans, readable=self._output_in_place)
        else:
            _check_layout(output, self.output_desc, "output")
        steps = self._program.flat_steps(input, output)
        self.device.runner.dispatch(steps, clear=self._clear(output), reads=self._reads)
        return output

    def gpu_times(self, input: Tensor, output: Tensor, repeats: int = 10) -> np.ndarray:
        """Seconds each of ``repeats`` runs took on the GPU (timestamp queries), for benchmarks."""
        _check_layout(input, self.input_desc, "input")
        _check_layout(output, self.output_desc, "output")
        steps = self._program.flat_steps(input, output)
        return self.device.runner.gpu_times(steps, clear=self._clear(output), repeats=repeats)

    def __call__(self, x: np.ndarray) -> np.ndarray:
        """NumPy in, NumPy out: the logical array ``x`` is laid out in the input descriptor's
        strides. Small calls reuse GPU buffers of a pool (one set per thread at a time) and
        share one submit between upload, passes and read-back; large inputs stream through
        the staging ring, reduced piece by piece as they arrive."""
        data = self._bytes_of(x)
        with interrupts_held(), self.device.runner.calls:
            if data.nbytes > STREAM_PIECES_ABOVE_CHUNKS * self.device.runner.transfers.ring_chunk:
                return self._streamed(data)
            return self._small(data)

    def _bytes_of(self, x) -> np.ndarray:
        """``layout.bytes_for``, its checks made once per array layout (dtype, shape, strides):
        an array already laid out as the input descriptor says is passed as it is."""
        key = (x.dtype.str, x.shape, x.strides) if isinstance(x, np.ndarray) else None
        if key is not None and key in self._own_layouts:
            return layout.span(x)
        data = layout.bytes_for(self.input_desc, x)
        as_is = key is not None and x.dtype.isnative and all(s >= 0 and s % x.itemsize == 0 for s in x.strides)
        if as_is and layout.describe(x)[0].element_strides == self.input_desc.element_strides:
            self._own_layouts[key] = True  # describe passed x's own memory, not a copy
        return data

    def _small(self, data: np.ndarray) -> np.ndarray:
        """Upload, passes and read-back in one submit: on the native path through a kit of
        this operator's (``runtime.kits.Kit``: buffers, staging and bind groups made once,
        the call one sequence in C), else on buffers from the runner's pool (the same ones
        again on the next call, so that their bind groups are found cached)."""
        if data.nbytes <= HOT_CALL_MAX and self._hot is not False:
            try:
                kit = self._kits.pop()
            except IndexError:
                kit = self._new_kit()
            if kit is not None:
                out = np.empty(self.output_desc.sizes, self.output_desc.data_type.numpy)
                kit.run(data, out.reshape(-1).view(np.uint8))
                self._kits.append(kit)  # not given back after a failure: dropped with it
                return out
        source, result = self.device.empty(self.input_desc), None
        try:
            result = self.device.empty(self.output_desc)
            source.write(data)
            self.run(source, result)
            return result.numpy()
        finally:
            source.release()
            if result is not None:
                result.release()

    def _new_kit(self):
        """A kit for ``_small``'s hot call (``Kit.make``, which makes its buffers and
        has the passes bound to them here), or None where there is none (the public path, an
        output that is not one packed buffer, an input in several buffers)."""
        single = len(buffer_spans(self.input_desc, self.device.runner.capabilities)) == len(self._output_spans) == 1
        kit = None
        if self.output_desc.strides is None and single:
            def bind(input_buffer, output_buffer) -> Steps:
                return self._program.flat_steps(Tensor(self.device, self.input_desc, [input_buffer]),
                                                Tensor(self.device, self.output_desc, [output_buffer]))

            kit = Kit.make(self.device.runner, bind, self._reads, self.output_desc.total_tensor_size_in_bytes,
                           self._clears, self._output_in_place)
        if kit is None:
            self._hot = False
        return kit

    def _streamed(self, data: np.ndarray) -> np.ndarray:
        """Upload through the staging ring, recording each piece as soon as the bytes it reads
        have been submitted, so that the GPU reduces one piece while the next is filled."""
        program = self._streamed_program
        if program is None:
            caps = self.device.runner.capabilities
            caps = dataclasses.replace(caps, max_storage_binding=min(self.device.runner.transfers.ring_chunk, caps.max_storage_binding))
            program = self._streamed_program = _Program(
                self.device.runner, schedule(self._reduction, caps, self.nan_mode, self.device.tuning))
        source, result = self.device.empty(self.input_desc), self.device.empty(self.output_desc)
        runner = self.device.runner
        try:
            pieces = list(zip(program.schedule.pieces, program.steps(source, result)))
            if self.plan.clears_output:
                runner.dispatch([], clear=result._buffers)
            # bytes of each buffer's part of the data: a window may end past them (16-byte rounding)
            lengths = [max(0, min(nbytes, data.nbytes - first)) for first, nbytes in source._spans]
            next_piece = 0

            def arrived(buffer: int, done: int) -> None:
                """Record the pieces, in order, whose input bytes have all been submitted."""
                nonlocal next_piece
                while next_piece < len(pieces):
                    piece, steps = pieces[next_piece]
                    w = piece.input
                    if w is not None and (w.buffer > buffer or
                                          (w.buffer == buffer and min(w.offset + w.size, lengths[w.buffer]) > done)):
                        return
                    runner.dispatch(steps, reads=0 if w is None else w.size)
                    next_piece += 1

            source.write(data, on_chunk=arrived)
            arrived(len(lengths), 0)
            return result.numpy()
        finally:
            source.release()
            result.release()


def _adapter_spec(adapter: str | None, index: int | None) -> str | None:
    """``adapter``, or the ``"#N"`` form of ``index`` that ``runtime.adapters.choose_adapter`` reads."""
    if index is None:
        return adapter
    if not isinstance(index, (int, np.integer)) or isinstance(index, bool):
        raise TypeError(f"adapter_index must be an int, not {type(index).__name__} ({index!r})")
    if index < 0:
        raise ValueError(f"adapter_index is {index}, but it must be >= 0")
    if adapter is not None:
        raise ValueError(f"adapter is {adapter!r} and adapter_index is {index}, but only one may be given")
    return f"#{int(index)}"


class Device:
    """One adapter opened for these operators (DirectML's IDMLDevice).

    ``close()`` (or leaving a ``with Device() as dev:`` block) gives back everything it holds;
    using it afterwards raises ``DeviceLostError``, as does a device the GPU lost.
    """

    def __init__(self, adapter: str | None = None, *, adapter_index: int | None = None,
                 feature_level=DEFAULT_FEATURE_LEVEL, int64: bool | None = None,
                 tuning: Tuning = Tuning(), smaller: dict | None = None):
        """``adapter``: a substring of the adapter's name, or ``"#N"`` (default:
        ``DMLGPU_ADAPTER``, else the high-performance adapter); ``adapter_index=N`` is
        ``"#N"``, the Nth adapter that ``dmlgpu info`` lists. ``int64=False`` forces the 32-bit-word path for
        64-bit inputs even where the adapter has ``shader-int64``. ``tuning`` changes the
        planner's thresholds and ``smaller`` lowers the adapter's binding and buffer limits
        and the memory it may hold (``"memory"``: bytes): the tests use them to reach every
        kernel, the pieces path and memory exhaustion on small inputs."""
        self.feature_level = FeatureLevel.parse(feature_level, "feature_level")
        self.tuning = tuning
        self.runner = Runner(_adapter_spec(adapter, adapter_index), int64=int64, smaller=smaller)
        self._compiled = LruCache(KEPT_OPERATORS)
        self.by_call = LruCache(KEPT_OPERATORS)  # the NumPy-level API's operators, by call signature
        self._spans = LruCache(KEPT_OPERATORS)  # pieces.buffer_spans by descriptor, for ``empty``
        self._lock = threading.Lock()

    @property
    def name(self) -> str:
        return self.runner.name

    def info(self) -> dict:
        """The adapter's name, backend, limits and features, and the features in use."""
        return {**adapter_summary(self.runner.adapter), "features_used": sorted(self.runner.features),
                "runner_path": self.runner.path.name}

    def compile(self, desc, *, nan_mode="ignore") -> CompiledOperator:
        """The compiled form of an operator descriptor; compiled once per descriptor."""
        key = (desc, NanMode.parse(nan_mode, "nan_mode"))
        compiled = self._compiled.get(key)
        if compiled is None:
            self.runner.check()
            lower(desc)  # a TypeError for anything that is not a descriptor, before hashing it
            with self._lock:  # one compile per descriptor, even when threads ask at once
                compiled = self._compiled.get(key)
                if compiled is None:
                    compiled = self._compiled[key] = CompiledOperator(self, desc, key[1])
        return compiled

    def upload(self, x: np.ndarray, desc: TensorDesc | None = None) -> Tensor:
        """Put an array on the GPU.

        Without ``desc`` the tensor keeps the array's own layout (strided views travel
        without a host-side copy). With ``desc``, ``x`` is the logical tensor and is laid
        out in the descriptor's strides.
        """
        if desc is None:
            desc, span = layout.describe(x)
        else:
            span = layout.bytes_for(desc, x)
        tensor = self.empty(desc)
        try:
            tensor.write(span)
        except BaseException:
            tensor.release()
            raise
        return tensor

    def empty(self, desc: TensorDesc, spans: list | None = None, readable: bool = False) -> Tensor:
        """An uninitialised tensor of this descriptor's size (in several buffers if it must).
        If the GPU cannot hold it all, none of it is kept (``GPUMemoryError``). ``spans``:
        ``pieces.buffer_spans`` of ``desc``, where the caller has them; ``readable``: see
        ``Memory.storage``."""
        self.runner.check()
        if spans is None:
            spans = self._spans.get(desc)
        if spans is None:
            spans = self._spans[desc] = buffer_spans(desc, self.runner.capabilities)
        buffers = []
        try:
            for _, nbytes in spans:
                buffers.append(self.runner.memory.storage(nbytes, readable=readable))
        except GPUMemoryError as err:
            for buffer in buffers:
                self.runner.memory.free(buffer, keep=False)
            total = sum(nbytes for _, nbytes in spans)
            raise GPUMemoryError(
                f"a tensor of {total} bytes ({desc.data_type.name} {list(desc.sizes)}) does not fit: {err}; "
                f"after giving back the part allocated, dmlgpu holds {self.runner.memory.held_bytes} bytes") from None
        return Tensor(self, desc, buffers, spans)

    def close(self) -> None:
        """Give back every GPU buffer, pipeline and thread this device holds (the memory of its
        tensors too); using the device or its tensors afterwards raises ``DeviceLostError``.
        Idempotent."""
        # the caches refer back to this device: cleared, nothing keeps it alive
        self._compiled.clear()
        self.by_call.clear()
        self.runner.close()

    def __enter__(self) -> "Device":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Device({self.name!r}, backend={self.runner.backend!r}, feature_level={self.feature_level.value!r})"


_default: Device | None = None
_default_lock = threading.Lock()


def default_device() -> Device:
    """The device the module-level functions use when none is given, opened on first use
    (and again if it was closed or lost)."""
    global _default
    device = _default
    if device is None or not device.runner.usable:
        with _default_lock:
            if _default is None or not _default.runner.usable:
                _default = Device()
            device = _default
    return device
