"""The runner: the only module that touches wgpu.

It opens an adapter and a device, creates buffers, compiles and caches pipelines
(keyed by their WGSL text), records dispatches and reads results back. It knows
nothing of operators: it is handed WGSL text, parameter words and buffers.
"""

from __future__ import annotations

import dataclasses
import os

import numpy as np
import wgpu

from .errors import AdapterError
from .plan import Capabilities

#: Features used when the adapter has them.
_WANTED_FEATURES = ("shader-int64", "shader-f16", "subgroup", "timestamp-query", "shader-int64-atomic-all-ops")
_STORAGE = wgpu.BufferUsage.STORAGE | wgpu.BufferUsage.COPY_DST | wgpu.BufferUsage.COPY_SRC

#: Binding 0: parameters; 1: the input (read-only); 2: the output; 3: scratch that a pass
#: keeps between dispatches (a plan's race words), else a small buffer no shader declares.
_LAYOUT_ENTRIES = [
    {"binding": 0, "visibility": wgpu.ShaderStage.COMPUTE, "buffer": {"type": wgpu.BufferBindingType.uniform}},
    {"binding": 1, "visibility": wgpu.ShaderStage.COMPUTE,
     "buffer": {"type": wgpu.BufferBindingType.read_only_storage}},
    {"binding": 2, "visibility": wgpu.ShaderStage.COMPUTE, "buffer": {"type": wgpu.BufferBindingType.storage}},
    {"binding": 3, "visibility": wgpu.ShaderStage.COMPUTE, "buffer": {"type": wgpu.BufferBindingType.storage}},
]

#: Read-back buffers up to this size are kept for the next read of the same size.
_STAGING_KEPT_BYTES = 1 << 20

NO_ADAPTER_HELP = (
    "no GPU adapter was found; on a machine without a GPU install Mesa's lavapipe "
    "(Debian: apt-get install mesa-vulkan-drivers libvulkan1)"
)


def wgpu_version() -> str:
    return wgpu.__version__


def adapters() -> list:
    """Every adapter wgpu can see."""
    return list(wgpu.gpu.enumerate_adapters_sync())


def adapter_summary(adapter) -> dict:
    """Name, backend, type, limits and features of an adapter, as plain data."""
    info = adapter.info
    return {
        "device": info["device"],
        "backend": info["backend_type"],
        "type": info["adapter_type"],
        "limits": dict(adapter.limits),
        "features": sorted(adapter.features),
    }


def choose_adapter(name: str | None = None):
    """The adapter whose name contains ``name`` (case-insensitive), else the high-performance one.

    ``name`` defaults to the environment variable ``DMLGPU_ADAPTER``. Among several
    matches, native backends (Vulkan, Metal, D3D12) come before OpenGL.
    """
    name = name if name is not None else os.environ.get("DMLGPU_ADAPTER") or None
    try:
        found = adapters()
        default = wgpu.gpu.request_adapter_sync(power_preference="high-performance") if name is None else None
    except Exception as err:  # wgpu could not load any backend
        raise AdapterError(f"{NO_ADAPTER_HELP} ({err})") from None
    if name is None:
        if default is None:
            raise AdapterError(NO_ADAPTER_HELP)
        return default
    matches = [a for a in found if name.lower() in a.info["device"].lower()]
    matches.sort(key=lambda a: a.info["backend_type"] == "OpenGL")
    if not matches:
        names = ", ".join(f"{a.info['device']} ({a.info['backend_type']})" for a in found) or "none"
        raise AdapterError(f"adapter is {name!r}, but no adapter's name contains it; adapters: {names}")
    return matches[0]


class Runner:
    """One wgpu device with its pipeline cache."""

    def __init__(self, adapter: str | None = None, *, int64: bool | None = None, smaller: dict | None = None):
        """``smaller``: act as if the adapter bound and held less (``max_storage_binding``,
        ``max_buffer``), so that tests reach the paths of tensors beyond one binding."""
        self.adapter = choose_adapter(adapter)
        available = set(self.adapter.features)
        wanted = [f for f in _WANTED_FEATURES if f in available]
        if int64 is False:
            wanted = [f for f in wanted if f != "shader-int64"]
        elif int64 is True and "shader-int64" not in available:
            raise AdapterError(f"int64 is True, but adapter {self.name!r} lacks shader-int64")
        self.features = frozenset(wanted)
        limits = self.adapter.limits
        self.device = self.adapter.request_device_sync(
            required_features=wanted,
            required_limits={
                "max-storage-buffer-binding-size": limits["max-storage-buffer-binding-size"],
                "max-buffer-size": limits["max-buffer-size"],
            },
        )
        self.capabilities = Capabilities(
            max_storage_binding=limits["max-storage-buffer-binding-size"],
            max_buffer=limits["max-buffer-size"],
            max_workgroups_per_dim=limits["max-compute-workgroups-per-dimension"],
            shader_int64="shader-int64" in self.features,
            offset_alignment=limits["min-storage-buffer-offset-alignment"],
            subgroups="subgroup" in self.features,
            int64_atomics={"shader-int64", "shader-int64-atomic-all-ops"} <= self.features,
        )
        for name, value in (smaller or {}).items():
            if value > getattr(self.capabilities, name):
                raise AdapterError(f"smaller[{name!r}] is {value}, above the adapter's {getattr(self.capabilities, name)}")
        self.capabilities = dataclasses.replace(self.capabilities, **(smaller or {}))
        self._bind_layout = self.device.create_bind_group_layout(entries=_LAYOUT_ENTRIES)
        self._pipeline_layout = self.device.create_pipeline_layout(bind_group_layouts=[self._bind_layout])
        self._pipelines: dict[str, object] = {}
        self._no_scratch = self.storage(16)  # binding 3 of passes that keep no scratch
        # Work is recorded into one encoder and submitted when a result is read (or before
        # a write or a release): a submit costs about 200 us through wgpu-native, so a
        # call's upload, passes and read-back share one.
        self._pending = None
        self._staging: dict[int, object] = {}  # MAP_READ buffers by size, reused

    @property
    def name(self) -> str:
        return self.adapter.info["device"]

    @property
    def backend(self) -> str:
        return self.adapter.info["backend_type"]

    def pipeline(self, source: str):
        """The compute pipeline of this WGSL text, compiled on first use."""
        pipeline = self._pipelines.get(source)
        if pipeline is None:
            module = self.device.create_shader_module(code=source)
            pipeline = self.device.create_compute_pipeline(
                layout=self._pipeline_layout, compute={"module": module, "entry_point": "main"}
            )
            self._pipelines[source] = pipeline
        return pipeline

    @property
    def pipeline_count(self) -> int:
        return len(self._pipelines)

    def storage(self, nbytes: int, data=None):
        """A storage buffer of at least ``nbytes``, optionally filled.

        Sizes round up to 16 bytes so that a shader reading 16-byte quads never meets a
        partial one at the end (robust access would clamp it to other data).
        """
        size = max(16, (nbytes + 15) & ~15)
        buffer = self.device.create_buffer(size=size, usage=_STORAGE)
        if data is not None:
            self.write(buffer, data)
        return buffer

    def uniform(self, words: np.ndarray):
        return self.device.create_buffer_with_data(
            data=words, usage=wgpu.BufferUsage.UNIFORM | wgpu.BufferUsage.COPY_DST
        )

    def write(self, buffer, data) -> None:
        """Write bytes to the start of a buffer, padding the tail to 4 bytes.

        Recorded work is submitted first: a queue write lands before the next submit's
        commands, so it must not overtake passes recorded earlier that read the buffer.
        """
        self.flush()
        raw = memoryview(data).cast("B")
        whole = len(raw) & ~3
        if whole:
            self.device.queue.write_buffer(buffer, 0, raw[:whole])
        if whole != len(raw):
            tail = bytes(raw[whole:]) + bytes(4 - (len(raw) - whole))
            self.device.queue.write_buffer(buffer, whole, tail)

    def bind(self, params, src, dst, scratch=None):
        """The bind group of one pass: its parameters, input, output and the scratch it keeps
        between dispatches (binding 3, if any). ``src`` and ``dst`` are buffers, or (buffer,
        offset, size) windows of them."""
        def resource(target) -> dict:
            if isinstance(target, tuple):
                buffer, offset, size = target
                return {"buffer": buffer, "offset": offset, "size": min(size, buffer.size - offset)}
            return {"buffer": target}

        return self.device.create_bind_group(
            layout=self._bind_layout,
            entries=[{"binding": i, "resource": resource(t)}
                     for i, t in enumerate((params, src, dst, scratch or self._no_scratch))],
        )

    def _encode(self, encoder, steps, clear, timestamps=None) -> None:
        """Record the steps (pipeline, bind group, grid), the buffers in ``clear`` zeroed first.

        ``timestamps`` = (query set, first index): the begin time is written before the
        clear (or by the first pass) and the end time by the last pass.
        """
        queries, first = timestamps if timestamps is not None else (None, 0)
        if clear:
            if queries is not None:  # an empty pass, so that the clear is inside the timing
                encoder.begin_compute_pass(
                    timestamp_writes={"query_set": queries, "beginning_of_pass_write_index": first}
                ).end()
            for buffer in clear:
                encoder.clear_buffer(buffer)
        for i, (pipeline, bind_group, grid) in enumerate(steps):
            writes = None
            if queries is not None:
                indices = {}
                if i == 0 and not clear:
                    indices["beginning_of_pass_write_index"] = first
                if i == len(steps) - 1:
                    indices["end_of_pass_write_index"] = first + 1
                writes = {"query_set": queries, **indices} if indices else None
            compute = encoder.begin_compute_pass(timestamp_writes=writes)
            compute.set_pipeline(pipeline)
            compute.set_bind_group(0, bind_group)
            compute.dispatch_workgroups(*grid)
            compute.end()

    def dispatch(self, steps, *, clear=None) -> None:
        """Record the steps (pipeline, bind group, grid); zero ``clear`` first.

        They run at the next submit: a read, a write, a release or ``flush``.
        """
        self._encode(self._encoder(), steps, clear)

    def _encoder(self):
        """The encoder that collects work until the next submit."""
        if self._pending is None:
            self._pending = self.device.create_command_encoder()
        return self._pending

    def flush(self) -> None:
        """Submit the recorded work."""
        if self._pending is not None:
            encoder, self._pending = self._pending, None
            self.device.queue.submit([encoder.finish()])

    def release(self, buffer) -> None:
        """Destroy a buffer once the work recorded so far no longer needs it."""
        self.flush()
        buffer.destroy()

    def gpu_times(self, steps, *, clear=None, repeats: int = 10) -> np.ndarray:
        """Seconds each of ``repeats`` runs of the steps took, from timestamp queries.

        The timestamps bracket the passes and the clear of the output, if any.
        """
        if "timestamp-query" not in self.features:
            raise AdapterError(f"adapter {self.name!r} has no timestamp-query feature")
        self.flush()
        queries = self.device.create_query_set(type="timestamp", count=2 * repeats)
        resolved = self.device.create_buffer(
            size=16 * repeats, usage=wgpu.BufferUsage.QUERY_RESOLVE | wgpu.BufferUsage.COPY_SRC
        )
        # Each repeat is submitted and waited for alone (a read waits for the queue): the
        # empty pass that starts the timing before a clear depends on nothing, so without
        # the wait it could run while the previous repeat is still busy.
        for i in range(repeats):
            self._encode(self._encoder(), steps, clear, (queries, 2 * i))
            self.read(resolved, 4)
        self._encoder().resolve_query_set(queries, 0, 2 * repeats, resolved, 0)
        ticks = np.frombuffer(self.read(resolved, 16 * repeats), np.uint64).reshape(repeats, 2)
        resolved.destroy()
        queries.destroy()
        return (ticks[:, 1] - ticks[:, 0]).astype(np.float64) * 1e-9  # WebGPU timestamps are nanoseconds

    def read(self, buffer, nbytes: int) -> bytes:
        """The first ``nbytes`` of a buffer, after all recorded work: one submit, one map."""
        size = max(4, (nbytes + 3) & ~3)
        staging = self._staging.pop(size, None) or self.device.create_buffer(
            size=size, usage=wgpu.BufferUsage.MAP_READ | wgpu.BufferUsage.COPY_DST
        )
        self._encoder().copy_buffer_to_buffer(buffer, 0, staging, 0, size)
        self.flush()
        staging.map_sync("READ")
        data = staging.read_mapped(copy=True)
        staging.unmap()
        if size <= _STAGING_KEPT_BYTES:
            self._staging[size] = staging
        else:
            staging.destroy()
        return data[:nbytes]
