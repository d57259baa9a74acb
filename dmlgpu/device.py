"""The descriptor-level API, in DirectML's shape.

A ``Device`` opens an adapter; ``Device.compile`` turns an operator descriptor into a
``CompiledOperator`` (validated, planned, its pipeline compiled once); a compiled
operator runs on NumPy arrays (upload, dispatch, read back) or on ``Tensor`` objects
that stay on the GPU, so chains of calls do not cross the bus each time.
"""

from __future__ import annotations

from collections import OrderedDict

import numpy as np

from . import layout
from .desc import TensorDesc, lower
from .errors import DataError
from .pieces import Schedule, buffer_spans, schedule
from .plan import Plan, Tuning
from .runner import Runner, adapter_summary
from .types import FeatureLevel, NanMode
from .wgsl import params_words, shader_sources


#: Compiled operators a device keeps (least recently used go first); a dropped one that a
#: caller still holds keeps working.
KEPT_OPERATORS = 64
#: The NumPy path keeps its GPU buffers between calls for inputs up to this size: small
#: calls are where allocation costs show, and large buffers are not held for good.
KEPT_IO_BYTES = 16 << 20


class LruCache(OrderedDict):
    """A dict that keeps its ``size`` most recently used entries."""

    def __init__(self, size: int):
        super().__init__()
        self.size = size

    def get(self, key, default=None):
        if key in self:
            self.move_to_end(key)
            return self[key]
        return default

    def __setitem__(self, key, value):
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

    def write(self, data) -> None:
        """Write the bytes of the tensor's memory span (``layout.bytes_for``) to its buffers."""
        raw = np.frombuffer(memoryview(data).cast("B"), np.uint8)
        for buffer, (first, nbytes) in zip(self._buffers, self._spans):
            self.device.runner.write(buffer, raw[first:first + nbytes])

    def numpy(self) -> np.ndarray:
        """Read the tensor back into a packed NumPy array."""
        raw = np.zeros(self.desc.total_tensor_size_in_bytes, np.uint8)
        for buffer, (first, nbytes) in zip(self._buffers, self._spans):
            size = min(nbytes, raw.size - first)
            raw[first:first + size] = np.frombuffer(self.device.runner.read(buffer, size), np.uint8)
        return np.array(layout.view(self.desc, raw))

    def release(self) -> None:
        """Free the GPU memory now rather than when the object is collected."""
        for buffer in self._buffers:
            self.device.runner.release(buffer)
        self._buffers = []

    def __repr__(self) -> str:
        return f"Tensor({self.desc.data_type.name}, sizes={list(self.desc.sizes)}, device={self.device.name!r})"


def _check_layout(tensor: Tensor, desc: TensorDesc, field: str) -> None:
    """A tensor may stand for ``desc`` when it addresses its elements the same way."""
    if not isinstance(tensor, Tensor):
        raise TypeError(f"{field} must be a dmlgpu Tensor, not {type(tensor).__name__}")
    if not tensor._buffers:
        raise DataError(f"{field} was released")
    mine, theirs = tensor.desc, desc
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


class CompiledOperator:
    """An operator descriptor compiled for one device: reusable, with its plan and pipeline."""

    def __init__(self, device: "Device", desc, nan_mode):
        desc.check_feature_level(device.feature_level)
        self.device = device
        self.desc = desc
        self.nan_mode = NanMode.parse(nan_mode, "nan_mode")
        reduction = lower(desc)
        self.input_desc: TensorDesc = reduction.input
        self.output_desc: TensorDesc = reduction.output
        runner = device.runner
        self.schedule: Schedule = schedule(reduction, runner.capabilities, self.nan_mode, device.tuning)
        self.plan: Plan = self.schedule.pieces[0].plan  # the first piece's (the only one, mostly)
        self.sources: list[str] = []
        # per piece: its window of the input and output (None: the scratch), and its passes
        self._pieces = [(piece.input, piece.output, self._passes(piece.plan)) for piece in self.schedule.pieces]
        scratch = max([self.schedule.partial_bytes] + [p.plan.partial_bytes for p in self.schedule.pieces])
        self._scratch = runner.storage(scratch) if scratch else None
        # Words a racing plan's first pass keeps between dispatches (zero when created, and
        # left zero by each dispatch): binding 3.
        race = max(p.plan.race_bytes for p in self.schedule.pieces)
        self._race = runner.storage(race) if race else None
        self._io = None  # (input, output, steps) of the NumPy-in, NumPy-out path, kept if small

    def _passes(self, p: Plan) -> list:
        """(pipeline, parameters, grid, reads partial pairs, writes partial pairs, races) per pass."""
        runner = self.device.runner
        sources = shader_sources(p)
        self.sources += sources
        grids = ([p.grid] if p.kernel else []) + ([p.merge_grid] if p.merge_kernel else [])
        passes = []
        for i, (source, grid) in enumerate(zip(sources, grids)):
            merging = not p.kernel or i == 1
            writes_pairs = not merging and (p.partials_only or (p.split > 1 and not p.race))
            passes.append((runner.pipeline(source), runner.uniform(params_words(p, grid, merging)), grid,
                           merging, writes_pairs, p.race and not merging))
        return passes

    def _steps(self, input: Tensor, output: Tensor) -> list:
        """Every pass bound to its buffers: each piece's window of the input and output, and
        the scratch pairs between a first pass and its merge."""
        bind = self.device.runner.bind
        scratch = (self._scratch, 0, self._scratch.size) if self._scratch else None

        def window(tensor: Tensor, w):
            return scratch if w is None else (tensor._buffers[w.buffer], w.offset, w.size)

        steps = []
        for in_window, out_window, passes in self._pieces:
            src, dst = window(input, in_window), window(output, out_window)
            for pipeline, params, grid, merging, writes_pairs, races in passes:
                steps.append((pipeline, bind(params, scratch if merging else src, scratch if writes_pairs else dst,
                                             self._race if races else None), grid))
        return steps

    def _clear(self, output: Tensor):
        return output._buffers if self.plan.clears_output else None

    def run(self, input: Tensor, output: Tensor | None = None) -> Tensor:
        """Dispatch on GPU-resident tensors; returns the output tensor (new if not given)."""
        _check_layout(input, self.input_desc, "input")
        if output is None:
            output = self.device.empty(self.output_desc)
        else:
            _check_layout(output, self.output_desc, "output")
        self.device.runner.dispatch(self._steps(input, output), clear=self._clear(output))
        return output

    def gpu_times(self, input: Tensor, output: Tensor, repeats: int = 10) -> np.ndarray:
        """Seconds each of ``repeats`` runs took on the GPU (timestamp queries), for benchmarks."""
        _check_layout(input, self.input_desc, "input")
        _check_layout(output, self.output_desc, "output")
        return self.device.runner.gpu_times(self._steps(input, output), clear=self._clear(output), repeats=repeats)

    def __call__(self, x: np.ndarray) -> np.ndarray:
        """NumPy in, NumPy out: the logical array ``x`` is laid out in the input descriptor's
        strides; the upload, the passes and the read-back share one submit, and the GPU
        buffers are kept for the next call."""
        data = layout.bytes_for(self.input_desc, x)
        source, result, steps = self._io or self._new_io()
        runner = self.device.runner
        source.write(data)
        runner.dispatch(steps, clear=self._clear(result))
        try:
            return result.numpy()
        finally:
            if self._io is None:
                source.release()
                result.release()

    def _new_io(self) -> tuple:
        source, result = self.device.empty(self.input_desc), self.device.empty(self.output_desc)
        io = (source, result, self._steps(source, result))
        if self.input_desc.total_tensor_size_in_bytes <= KEPT_IO_BYTES:
            self._io = io
        return io


class Device:
    """One adapter opened for these operators (DirectML's IDMLDevice)."""

    def __init__(self, adapter: str | None = None, *, feature_level="4.1", int64: bool | None = None,
                 tuning: Tuning = Tuning(), smaller: dict | None = None):
        """``adapter``: a substring of the adapter's name (default: ``DMLGPU_ADAPTER``, else
        the high-performance adapter). ``int64=False`` forces the 32-bit-word path for
        64-bit inputs even where the adapter has ``shader-int64``. ``tuning`` changes the
        planner's thresholds and ``smaller`` lowers the adapter's binding and buffer limits
        (the tests use them to reach every kernel and the pieces path on small inputs)."""
        self.feature_level = FeatureLevel.parse(feature_level, "feature_level")
        self.tuning = tuning
        self.runner = Runner(adapter, int64=int64, smaller=smaller)
        self._compiled = LruCache(KEPT_OPERATORS)
        self.by_call = LruCache(KEPT_OPERATORS)  # the NumPy-level API's operators, by call signature

    @property
    def name(self) -> str:
        return self.runner.name

    def info(self) -> dict:
        """The adapter's name, backend, limits and features, and the features in use."""
        return {**adapter_summary(self.runner.adapter), "features_used": sorted(self.runner.features)}

    def compile(self, desc, *, nan_mode="ignore") -> CompiledOperator:
        """The compiled form of an operator descriptor; compiled once per descriptor."""
        key = (desc, NanMode.parse(nan_mode, "nan_mode"))
        compiled = self._compiled.get(key)
        if compiled is None:
            lower(desc)  # a TypeError for anything that is not a descriptor, before hashing it
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
        tensor.write(span)
        return tensor

    def empty(self, desc: TensorDesc) -> Tensor:
        """An uninitialised tensor of this descriptor's size (in several buffers if it must)."""
        spans = buffer_spans(desc, self.runner.capabilities)
        return Tensor(self, desc, [self.runner.storage(nbytes) for _, nbytes in spans], spans)

    def __repr__(self) -> str:
        return f"Device({self.name!r}, backend={self.runner.backend!r}, feature_level={self.feature_level.value!r})"


_default: Device | None = None


def default_device() -> Device:
    """The device the module-level functions use when none is given, opened on first use."""
    global _default
    if _default is None:
        _default = Device()
    return _default
