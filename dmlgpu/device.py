"""``Device``: an adapter opened for these operators (DirectML's IDMLDevice), and the default one.

A ``Device`` opens an adapter (through its runner); ``Device.compile`` turns an operator
descriptor into a ``CompiledOperator`` (``operator.py``: validated, planned, its pipelines
compiled once); a compiled operator runs on NumPy arrays (upload, dispatch, read back) or on
``Tensor`` objects (``tensor.py``) that stay on the GPU, so chains of calls do not cross the
bus each time.

A ``Device`` opens a wgpu device of its own, or runs on one of the caller's
(``Device.from_wgpu``: DirectML's device made on the application's D3D12 device), whose
buffers it can then wrap as tensors (``wrap``) and whose command encoders its operators
record into (``CompiledOperator.record``, ``binding.py``).

Any number of threads may share a ``Device``: what the runner orders is guarded there
(``runtime/runner.py``); here, each NumPy call takes GPU buffers of its own from a pool, and
the caches are locked.
"""

from __future__ import annotations

import os
import threading

import numpy as np

from . import layout
from .binding import BufferBinding, checked_bindings
from .caches import LruCache
from .desc import TensorDesc, lower
from .errors import GPUMemoryError, SoftwareAdapterWarning, warn_at_caller
from .operator import CompiledOperator
from .pieces import buffer_spans
from .calibration import Calibration
from .calibration import setting as calibration_setting
from .plan import Tuning, Tunings
from .runtime import Runner, adapter_summary, required_limits
from .tensor import Storage, Tensor
from .types import DEFAULT_FEATURE_LEVEL, FeatureLevel, NanMode


#: Compiled operators a device keeps (least recently used go first); a dropped one that a
#: caller still holds keeps working.
KEPT_OPERATORS = 64


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
                 tuning: Tuning | Tunings | None = None, smaller: dict | None = None):
        """``adapter``: a substring of the adapter's name, or ``"#N"`` (default:
        ``DMLGPU_ADAPTER``, else the high-performance adapter); ``adapter_index=N`` is
        ``"#N"``, the Nth adapter that ``dmlgpu info`` lists. ``int64=False`` forces the 32-bit-word path for
        64-bit inputs even where the adapter has ``shader-int64``. ``tuning`` fixes the
        planner's thresholds (by default they are chosen for this adapter: ``calibration.py``;
        ``dmlgpu tune``), and ``smaller`` lowers the adapter's binding and buffer limits
        and the memory it may hold (``"memory"``: bytes): the tests use them to reach every
        kernel, the pieces path and memory exhaustion on small inputs."""
        spec = _adapter_spec(adapter, adapter_index)
        level, mode = FeatureLevel.parse(feature_level, "feature_level"), _tuning_mode(tuning)
        self._start(Runner(spec, int64=int64, smaller=smaller), level, tuning, mode)
        if spec is None and not os.environ.get("DMLGPU_ADAPTER"):
            _notice_software(self)

    @classmethod
    def from_wgpu(cls, gpu_device, *, feature_level=DEFAULT_FEATURE_LEVEL, tuning: Tuning | Tunings | None = None,
                  int64: bool | None = None, smaller: dict | None = None) -> "Device":
        """A device on the caller's own ``wgpu.GPUDevice`` (e.g. ``wgpu.utils.get_default_device()``),
        as DirectML's IDMLDevice is made on the application's D3D12 device: its queue and
        buffers are shared with the caller, whose buffers ``wrap`` makes tensors of and whose
        command encoders the operators ``record`` into.

        The device is used as it is: its limits are checked against what our passes need (an
        ``AdapterError`` names each one below, e.g. ``max-storage-buffers-per-shader-stage``, or
        ``max-compute-workgroup-size-x`` below the tuning's workgroup size), and the optional
        features dmlgpu can use (shader-int64, subgroup, timestamp-query,
        shader-int64-atomic-all-ops, mappable-primary-buffers) are used only where the caller
        enabled them; its binding and buffer limits decide where tensors are cut into pieces.
        ``close()`` gives back dmlgpu's own buffers and pipelines and leaves the caller's device
        working. ``int64`` and ``smaller`` as for ``Device``."""
        device = cls.__new__(cls)
        level, mode = FeatureLevel.parse(feature_level, "feature_level"), _tuning_mode(tuning)
        widest = tuning.default if isinstance(tuning, Tunings) else tuning or Tuning()
        device._start(Runner(int64=int64, smaller=smaller, device=gpu_device, needs=required_limits(widest.workgroup_size)),
                      level, tuning, mode)
        return device

    def _start(self, runner: Runner, feature_level: FeatureLevel, tuning: Tuning | Tunings | None, mode: str) -> None:
        self.feature_level = feature_level
        self.runner = runner
        self._tuning = tuning
        #: The choices of tunings measured on this adapter (None where ``tuning`` was given).
        self.calibration = Calibration(self, mode) if tuning is None else None
        self._compiled = LruCache(KEPT_OPERATORS)
        self.by_call = LruCache(KEPT_OPERATORS)  # the NumPy-level API's operators, by call signature
        self._spans = LruCache(KEPT_OPERATORS)  # pieces.buffer_spans by descriptor, for ``empty``
        self._views = LruCache(KEPT_OPERATORS)  # (descriptor, sizes) -> its view's and spans (Tensor.with_sizes)
        self._lock = threading.Lock()

    @property
    def name(self) -> str:
        return self.runner.name

    @property
    def tuning(self) -> Tuning | Tunings:
        """The planner's thresholds on this device: those given, or those chosen for this
        adapter so far (``calibration.py``)."""
        if self.calibration is not None:
            return self.calibration.tunings
        assert self._tuning is not None  # given, where there is no calibration
        return self._tuning

    def tuning_for(self, red, nan_mode: NanMode = NanMode.IGNORE) -> Tuning | Tunings:
        """The tuning a reduction (``desc.ArgReduction``, run with ``nan_mode``) is planned with
        here; on a device given no tuning, its family's, measured now where none was chosen yet."""
        if self.calibration is not None:
            return self.calibration.tuning_for(red, nan_mode)
        assert self._tuning is not None
        return self._tuning

    @property
    def wgpu_device(self):
        """The ``wgpu.GPUDevice`` this device runs on (the caller's, for ``from_wgpu``): make the
        buffers and command encoders you bind and record with on it."""
        return self.runner.device

    @property
    def owns_wgpu_device(self) -> bool:
        """False for a device made with ``from_wgpu``: ``close()`` leaves that wgpu device working."""
        return self.runner.owns_device

    def info(self) -> dict:
        """The adapter's name, backend, limits and features, and the features in use."""
        return {**adapter_summary(self.runner.adapter), "features_used": sorted(self.runner.features),
                "runner_path": self.runner.path.name, "owns_wgpu_device": self.runner.owns_device}

    def flush(self) -> None:
        """Submit the work dmlgpu has recorded on this device and not yet submitted (``run``s and
        writes wait for the next read otherwise), so that work the caller submits afterwards on
        the same wgpu device runs after it. (``CompiledOperator.record`` and ``Tensor.bindings``
        do this themselves.)"""
        self.runner.flush()

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

    def compile_with(self, desc, tuning: Tuning, *, nan_mode="ignore") -> CompiledOperator:
        """An operator descriptor compiled with this tuning, not kept (calibration, benchmarks)."""
        self.runner.check()
        return CompiledOperator(self, desc, NanMode.parse(nan_mode, "nan_mode"), tuning)

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
        return Tensor(self, desc, buffers, spans, Storage(self.runner.memory, buffers))

    def wrap(self, buffer, desc: TensorDesc, offset: int = 0, size: int | None = None) -> Tensor:
        """A ``Tensor`` over the caller's own ``wgpu.GPUBuffer``, from byte ``offset`` (``size``
        bytes of it; default: the rest of the buffer), laid out as ``desc``: no copy, and the
        buffer is never freed by dmlgpu (``release()`` only lets go of it). ``op.run``,
        ``dmlgpu.argmax``, ``tensor.numpy()`` and ``dmlgpu.numpy`` then work on it as on any
        tensor. The buffer is checked as a binding table checks one (``BindingTable``): of this
        device's wgpu device, with STORAGE usage, ``offset`` a multiple of the device's
        ``min_storage_buffer_offset_alignment``, ``size`` at least
        ``desc.total_tensor_size_in_bytes``. ``buffer`` may also be a ``BufferBinding`` (then
        ``offset`` and ``size`` are its own), or a list of them for a tensor beyond one buffer
        of the device (one a buffer of ``pieces.buffer_spans``).

        What the caller records into the buffer must have been submitted before dmlgpu reads
        it, and dmlgpu's work on it must be flushed (``flush``, ``Tensor.bindings``) before the
        caller submits work that reads what dmlgpu wrote."""
        if not isinstance(desc, TensorDesc):
            raise TypeError(f"desc must be a dmlgpu.TensorDesc, not {type(desc).__name__}")
        self.runner.check()
        if not isinstance(buffer, (BufferBinding, list, tuple)):
            buffer = BufferBinding(buffer, offset, size)
        elif offset or size is not None:
            raise ValueError("offset and size are a BufferBinding's own when buffer is one (or a list of them)")
        spans = buffer_spans(desc, self.runner.capabilities)
        bindings = checked_bindings("buffer", buffer, desc, spans, self)
        return Tensor(self, desc, [b.buffer for b in bindings], spans, None,
                      (tuple(b.offset for b in bindings), tuple(b.size for b in bindings)))

    def close(self) -> None:
        """Give back every GPU buffer, pipeline and thread this device holds (the memory of its
        tensors too); using the device or its tensors afterwards raises ``DeviceLostError``.
        On a device made with ``from_wgpu`` the wgpu device is left working, and so are the
        caller's buffers (wrapped tensors only let go of them); work the caller recorded with
        ``record`` must be submitted before, since it uses dmlgpu's buffers. Idempotent."""
        # the caches refer back to this device: cleared, nothing keeps it alive
        self._compiled.clear()
        self.by_call.clear()
        self._spans.clear()
        self.runner.close()

    def __enter__(self) -> "Device":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __repr__(self) -> str:
        borrowed = "" if self.runner.owns_device else ", on the caller's wgpu device"
        return (f"Device({self.name!r}, backend={self.runner.backend!r}, "
                f"feature_level={self.feature_level.value!r}{borrowed})")


_default: Device | None = None
_default_lock = threading.Lock()


def _tuning_mode(tuning) -> str:
    """How a device given this tuning chooses its plans' tunings (``calibration.setting``), or a
    TypeError for a tuning of the wrong kind, before anything is opened."""
    if tuning is not None and not isinstance(tuning, (Tuning, Tunings)):
        raise TypeError(f"tuning must be a dmlgpu.plan.Tuning or Tunings, not {type(tuning).__name__}")
    return calibration_setting()


_noticed = threading.Event()


def _notice_software(device: Device) -> None:
    """Say once a process that the default adapter is a software one (none was chosen by name)."""
    if not device.runner.capabilities.software or _noticed.is_set():
        return
    if os.environ.get("DMLGPU_SOFTWARE_NOTICE", "1").strip().lower() in ("0", "off", "false", "no"):
        return
    _noticed.set()
    warn_at_caller(  # at the user's line that opened it, whichever of our functions did
        f"dmlgpu: the default adapter is {device.name!r}, a software adapter: the CPU runs the shaders, and "
        "NumPy's own argmax may be faster on this machine. Choose another adapter with Device('name') or "
        "DMLGPU_ADAPTER ('dmlgpu info' lists them); choosing this one by name (DMLGPU_ADAPTER=llvmpipe, say) "
        "or DMLGPU_SOFTWARE_NOTICE=0 silences this.", SoftwareAdapterWarning)


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
