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
from .plan import Plan, Tuning, plan
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
    """A tensor resident on a device: a GPU buffer and the ``TensorDesc`` that reads it."""

    def __init__(self, device: "Device", desc: TensorDesc, buffer):
        self.device = device
        self.desc = desc
        self._buffer = buffer

    @property
    def shape(self) -> tuple[int, ...]:
        return self.desc.sizes

    @property
    def dtype(self) -> np.dtype:
        return self.desc.data_type.numpy

    def numpy(self) -> np.ndarray:
        """Read the tensor back into a packed NumPy array."""
        raw = self.device.runner.read(self._buffer, self.desc.total_tensor_size_in_bytes)
        return np.array(layout.view(self.desc, raw))

    def release(self) -> None:
        """Free the GPU memory now rather than when the object is collected."""
        if self._buffer is not None:
            self.device.runner.release(self._buffer)
            self._buffer = None

    def __repr__(self) -> str:
        return f"Tensor({self.desc.data_type.name}, sizes={list(self.desc.sizes)}, device={self.device.name!r})"


def _check_layout(tensor: Tensor, desc: TensorDesc, field: str) -> None:
    """A tensor may stand for ``desc`` when it addresses its elements the same way."""
    if not isinstance(tensor, Tensor):
        raise TypeError(f"{field} must be a dmlgpu Tensor, not {type(tensor).__name__}")
    if tensor._buffer is None:
        raise DataError(f"{field} was released")
    mine, theirs = tensor.desc, desc
    for name in ("data_type", "sizes", "element_strides"):
        if getattr(mine, name) != getattr(theirs, name):
            raise DataError(
                f"{field}.{name} is {getattr(mine, name)}, but the operator was compiled for {getattr(theirs, name)}"
            )
    if tensor._buffer.size < theirs.total_tensor_size_in_bytes:
        raise DataError(
            f"{field} holds {tensor._buffer.size} bytes, but the operator's total_tensor_size_in_bytes "
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
        self.plan: Plan = plan(reduction, runner.capabilities, self.nan_mode, device.tuning)
        self.sources = shader_sources(self.plan)
        grids = [self.plan.grid, self.plan.merge_grid][: len(self.sources)]
        self._passes = [
            (runner.pipeline(source), runner.uniform(params_words(self.plan, grid)), grid)
            for source, grid in zip(self.sources, grids)
        ]
        self._scratch = runner.storage(self.plan.partial_bytes) if self.plan.partial_bytes else None
        self._io = None  # (input, output, steps) of the NumPy-in, NumPy-out path, kept if small

    def _steps(self, input: Tensor, output: Tensor) -> list:
        """The passes bound to their buffers: through the scratch pairs when the plan splits."""
        buffers = [input._buffer, self._scratch, output._buffer] if self._scratch else [input._buffer, output._buffer]
        bind = self.device.runner.bind
        return [(pipeline, bind(params, buffers[i], buffers[i + 1]), grid)
                for i, (pipeline, params, grid) in enumerate(self._passes)]

    def _clear(self, output: Tensor):
        return output._buffer if self.plan.clears_output else None

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
        runner.write(source._buffer, data)
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
                 tuning: Tuning = Tuning()):
        """``adapter``: a substring of the adapter's name (default: ``DMLGPU_ADAPTER``, else
        the high-performance adapter). ``int64=False`` forces the 32-bit-word path for
        64-bit inputs even where the adapter has ``shader-int64``. ``tuning`` changes the
        planner's thresholds (the tests use it to reach every kernel on small inputs)."""
        self.feature_level = FeatureLevel.parse(feature_level, "feature_level")
        self.tuning = tuning
        self.runner = Runner(adapter, int64=int64)
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
        buffer = self.runner.storage(max(desc.total_tensor_size_in_bytes, span.nbytes), span)
        return Tensor(self, desc, buffer)

    def empty(self, desc: TensorDesc) -> Tensor:
        """An uninitialised tensor of this descriptor's size."""
        return Tensor(self, desc, self.runner.storage(desc.total_tensor_size_in_bytes))

    def __repr__(self) -> str:
        return f"Device({self.name!r}, backend={self.runner.backend!r}, feature_level={self.feature_level.value!r})"


_default: Device | None = None


def default_device() -> Device:
    """The device the module-level functions use when none is given, opened on first use."""
    global _default
    if _default is None:
        _default = Device()
    return _default
