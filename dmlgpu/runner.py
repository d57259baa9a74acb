"""The runner: the only module that touches wgpu.

It opens an adapter and a device, creates buffers, compiles and caches pipelines (keyed by
their WGSL text), records dispatches, moves bytes to and from the GPU and reads timestamps.
It knows nothing of operators: it is handed WGSL text, parameter words and buffers.

**Two paths, one switch.** Recording, submitting, mapping and reading back go either
straight to wgpu-native through the ``ffi`` / ``lib`` that wgpu-py's backend exports, with
the calling thread polling the device until its map has landed (``native``, the default),
or through wgpu-py's public objects (``public``, where wgpu-py's own poll thread resolves
maps). ``DMLGPU_RUNNER=public`` selects the second; the native path is used only with the
wgpu-py versions in ``NATIVE_WGPU`` (it reads wgpu-py internals: objects' ``_internal``
handles and ``libf``), and any other version falls back to the public path with a warning.
Objects are created through wgpu-py either way, so that their lifetimes stay wgpu-py's.

**Threads.** Any number of threads may use one Runner. What is shared and how:

- ``_lock`` (one per runner) orders everything that must happen in one order on the queue:
  appending a call's recorded encoder to ``_pending``, submitting, queue writes (which land
  before the next submit, so pending work is submitted first), starting a map, the pipeline
  cache, the buffer pools and the byte count. Each call records its passes into its own
  command encoder, so a call interrupted while recording (an error, Ctrl-C) drops only its
  own encoder and never leaves a shared one half-written or locked; a pending encoder has
  no pass open, and a read-back adds its copy to the last one (one command buffer for a
  small call's passes and its read-back: 9 us less than two on the H100). On the native
  path a dispatch stays its steps until the submit (``_Deferred``), which records it, under
  the lock, with the read-back that follows it in one C call.
- ``calls`` (a second lock) is held by each call that waits for the GPU, from its submit to
  its read-back (a NumPy call, a read, a large transfer): one such call at a time. Measured
  on the H100 with 8 threads making small calls: 2867 calls/s this way, 642 when every thread
  polled wgpu-native at once, 1500 when only the polls took turns (1 thread: 2923-3311). Work
  that only records (``CompiledOperator.run`` on resident tensors) needs ``_lock`` alone.
  One read waits under ``_lock`` too: that of a small output in mappable memory
  (``_read_in_place``), which must stay out of every submit while it is mapped; work that
  only records waits for it (tens of microseconds on a GPU).
- Staging buffers are taken from and returned to pools, so a buffer is mapped by one
  thread at a time; a call that fails between map and unmap drops its staging buffer
  instead of returning it to the pool.
"""

from __future__ import annotations

import _signal
import concurrent.futures
import dataclasses
import logging
import os
import signal
import threading
import time
import traceback
import warnings
import weakref
from collections import OrderedDict, defaultdict

import numpy as np
import wgpu

from .errors import AdapterError, DeviceLostError, GPUMemoryError
from .plan import Capabilities

#: Features used when the adapter has them. "mappable-primary-buffers" lets a small call's
#: passes bind its staging buffers (``Runner.hot_call``).
_WANTED_FEATURES = ("shader-int64", "shader-f16", "subgroup", "timestamp-query", "shader-int64-atomic-all-ops",
                    "mappable-primary-buffers")
_STORAGE = wgpu.BufferUsage.STORAGE | wgpu.BufferUsage.COPY_DST | wgpu.BufferUsage.COPY_SRC
_MAP_READ = wgpu.BufferUsage.MAP_READ | wgpu.BufferUsage.COPY_DST
_MAP_WRITE = wgpu.BufferUsage.MAP_WRITE | wgpu.BufferUsage.COPY_SRC
#: A small call's upload staging that its passes bind as their input
_MAP_WRITE_BOUND = _MAP_WRITE | wgpu.BufferUsage.STORAGE
#: A small output that passes write into mappable memory and a read maps as it is
#: (``Runner.storage(readable=True)``; a kit's read-back staging, ``Runner.hot_call``)
_READABLE = _STORAGE | wgpu.BufferUsage.MAP_READ


class _MappableWarning(logging.Filter):
    """wgpu-native warns, on a discrete GPU, that "mappable-primary-buffers" is "a massive
    performance footgun" (for buffers a GPU reads much of over the bus); dmlgpu binds only a
    small call's staging with it, and says so in ``Runner.hot_call``."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not record.getMessage().startswith("Feature MAPPABLE_PRIMARY_BUFFERS enabled")


logging.getLogger("wgpu").addFilter(_MappableWarning())

#: Binding 0: parameters; 1: the input (read-only); 2: the output; 3: scratch that a pass
#: keeps between dispatches (a plan's race words), else a small buffer no shader declares.
_LAYOUT_ENTRIES = [
    {"binding": 0, "visibility": wgpu.ShaderStage.COMPUTE, "buffer": {"type": wgpu.BufferBindingType.uniform}},
    {"binding": 1, "visibility": wgpu.ShaderStage.COMPUTE,
     "buffer": {"type": wgpu.BufferBindingType.read_only_storage}},
    {"binding": 2, "visibility": wgpu.ShaderStage.COMPUTE, "buffer": {"type": wgpu.BufferBindingType.storage}},
    {"binding": 3, "visibility": wgpu.ShaderStage.COMPUTE, "buffer": {"type": wgpu.BufferBindingType.storage}},
]

#: wgpu-py versions the native path is written against, with the wgpu-native each bundles.
NATIVE_WGPU = {"0.32.0": "29.0.1.1"}

#: Reads and writes up to this size go through one staging buffer (or a queue write); larger
#: ones stream through a ring of ``RING_DEPTH`` staging buffers of ``RING_CHUNK`` bytes, the
#: host filling one while the GPU copies another, the host side copied by several threads.
#: Interleaved on the H100's host, 1 GiB: 3 x 128 MiB uploaded at 27.2 GB/s and read back into
#: a new array at 20.1, a NumPy-in argmax took 39.0 ms; 4 x 64 MiB: 26.2, 19.0, 41.8 ms.
RING_CHUNK = 128 << 20
RING_DEPTH = 3
STREAM_ABOVE = 16 << 20
#: Host threads that copy a large transfer's chunks into staging memory (writes) and out of
#: it (reads). Reads into a new array spend as much time on its page faults as on the copy,
#: and faults run in parallel: on the H100's 16-core host, 1 GiB read back at 16.2 GB/s with
#: 16 threads against 13.4 with 8, where uploads ran at 24.0 against 25.2 (interleaved).
WRITE_THREADS = 8
READ_THREADS = 16
#: Freed storage buffers are kept for the next allocation of the same size, up to this many
#: bytes in all (the oldest given back first): a NumPy call takes its GPU buffers from here,
#: so that repeated calls allocate nothing (a 1 GiB buffer takes 40-56 ms to allocate and
#: free on the H100) and find their bind groups cached. Running short of memory gives them
#: back before an allocation fails; Device.close() gives back everything.
POOL_BYTES = 4 << 30
#: Staging buffers of small reads and writes kept for reuse, in bytes of each kind.
_STAGING_POOL_BYTES = 64 << 20
#: Writes up to this size go through wgpu's queue; larger ones (up to ``STREAM_ABOVE``) are
#: copied into a reused mapped staging buffer. wgpu-native makes a new staging buffer for
#: each queue write: in the full suite on the H100 (torch and CuPy in the process, after the
#: 1 GiB cases) a 600 KB one took 3.4 ms, where a fresh process took 50 us.
QUEUE_WRITE_MAX = 64 << 10
#: Recorded work reading at least this many bytes is submitted at once, so that the GPU runs
#: it while Python records the next call; smaller work waits for the next read (one submit).
SUBMIT_EARLY_BYTES = 4 << 20
#: Pipelines the cache keeps (least recently used go first; operators hold their own).
KEPT_PIPELINES = 128
#: A map that has not landed this long after its queue went idle means the device is gone.
MAP_TIMEOUT_S = 10.0
#: A wait on the native path polls without blocking for this long before it blocks (small
#: calls end within it; see ``_Native.wait``). Not on software adapters (lavapipe), whose
#: "GPU" is the CPU's cores: a spinning caller would take one from the work it waits for.
SPIN_S = 0.5e-3

#: Copies of at least this many bytes into mapped staging on the native path run on
#: ``FILL_HELPERS`` threads besides the caller's (``hot_copier``; not on software adapters,
#: as ``SPIN_S``). Upload staging is write-combined memory that one core writes at about
#: 15 GB/s: on the H100's host a 600 KB input took 46.0 us on one core, 23.7 on two, 21.7 on
#: four, 20.5 on eight (C threads spinning for the work, one process).
FILL_PARALLEL_ABOVE = 128 << 10
FILL_HELPERS = 3
#: An output of up to this many bytes that passes write with plain stores (all but HARDMAX's
#: FLOAT16 output, whose halves are set with atomics, which memory across the bus may not
#: take) is written straight into mappable memory, where the device has it (``in_place``):
#: a NumPy call's read-back staging (``Runner.hot_call``), a resident call's output buffer
#: (``Runner.storage(readable=True)``).
IN_PLACE_OUTPUT_MAX = 64 << 10

#: The kernel of ``Runner.bare_round_trips``: one invocation, one word written.
_BARE_WGSL = """@group(0) @binding(2) var<storage, read_write> y: array<u32>;
@compute @workgroup_size(1) fn main() { y[0] = y[0] + 1u; }
"""

NO_ADAPTER_HELP = (
    "no GPU adapter was found; on a machine without a GPU install Mesa's lavapipe "
    "(Debian: apt-get install mesa-vulkan-drivers libvulkan1)"
)


def wgpu_version() -> str:
    return wgpu.__version__


def native_unsupported() -> str | None:
    """Why the native path cannot be used with the installed wgpu-py, or None if it can."""
    from wgpu.backends import wgpu_native

    if NATIVE_WGPU.get(wgpu.__version__) != wgpu_native.__version__:
        known = ", ".join(f"wgpu-py {k} (wgpu-native {v})" for k, v in NATIVE_WGPU.items())
        return (f"the native path is written against {known}, but wgpu-py {wgpu.__version__} "
                f"(wgpu-native {wgpu_native.__version__}) is installed")
    return None


#: Adapter types in the order the default (high-performance) choice prefers them, as wgpu's
#: own ``power_preference="high-performance"`` does; any other type before CPU adapters.
_PREFERRED_TYPES = ("DiscreteGPU", "IntegratedGPU", "VirtualGPU")

#: One lock per process for everything that opens or lets go of an adapter or a device:
#: enumerating adapters, requesting a device, destroying one. wgpu's backends are not all safe
#: to probe from several threads at once (the OpenGL backend makes and drops EGL contexts, and
#: a second thread's EGL call then fails inside wgpu-native, which aborts the process).
_adapter_lock = threading.RLock()
#: The adapters found in this process, by backend set ("native", "opengl"), with the pid they
#: were found in (a forked child finds its own): enumerated once, then reused.
_found: dict[str, tuple[int, list]] = {}


def opengl_wanted() -> bool:
    """Whether OpenGL adapters are offered besides the native ones: ``DMLGPU_OPENGL=1``."""
    return os.environ.get("DMLGPU_OPENGL", "").strip().lower() in ("1", "true", "yes", "on")


def _instance(backends: str):
    """A wgpu-native instance of our own with only these backends (wgpu-py's flag names, e.g.
    "Primary": Vulkan, Metal, D3D12), so that no other backend is probed; never released."""
    from wgpu.backends.wgpu_native import _api
    from wgpu.backends.wgpu_native._mappings import native_flags

    ffi, lib = _api.ffi, _api.lib
    extras = ffi.new("WGPUInstanceExtras *")
    extras.chain.sType = lib.WGPUSType_InstanceExtras
    extras.backends = native_flags[f"InstanceBackend.{backends}"]
    extras.flags = native_flags["InstanceFlag.Default"]
    desc = ffi.new("WGPUInstanceDescriptor *")
    desc.nextInChain = ffi.cast("WGPUChainedStruct *", extras)
    return lib.wgpuCreateInstance(desc)


def _enumerate(kind: str) -> list:
    """The adapters of ``kind`` ("native" or "opengl"), enumerated once per process, under
    the process's adapter lock: wgpu-py's adapter objects, kept for the life of the process
    (an adapter let go of is an adapter torn down, which the OpenGL backend cannot do safely
    while another thread uses it)."""
    with _adapter_lock:
        pid, found = _found.get(kind, (None, []))
        if pid != os.getpid():
            from wgpu.backends.wgpu_native import _api

            ffi, lib = _api.ffi, _api.lib
            instance = _instance("Primary" if kind == "native" else "GL")
            count = lib.wgpuInstanceEnumerateAdapters(instance, ffi.NULL, ffi.NULL)
            handles = ffi.new("WGPUAdapter[]", count)
            lib.wgpuInstanceEnumerateAdapters(instance, ffi.NULL, handles)
            found = [wgpu.gpu._create_adapter(handle) for handle in handles]
            # GPUs before software adapters (type CPU, e.g. lavapipe), the order otherwise kept
            found.sort(key=lambda a: a.info["adapter_type"] == "CPU")
            _found[kind] = (os.getpid(), found)
        return found


def adapters(opengl: bool | None = None) -> list:
    """Every adapter dmlgpu offers, in the order adapter indices count (``"#0"``, ``"#1"``, ...).

    Those of the native backends (Vulkan, Metal, D3D12), GPUs before software adapters (type
    CPU, e.g. lavapipe), the driver's order otherwise kept; so on a host with two GPUs they are
    ``#0`` and ``#1`` whatever else is installed. OpenGL adapters follow them only where asked
    for (``opengl``, default ``DMLGPU_OPENGL=1``): probing OpenGL costs time and is not safe
    across threads. Enumerated once per process and reused; safe to call from any thread.
    """
    found = _enumerate("native")
    if opengl if opengl is not None else opengl_wanted():
        found = found + _enumerate("opengl")
    return found


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


def _matches(adapter, name: str) -> bool:
    """A name picks an adapter whose name contains it, or whose backend it names ("vulkan",
    "opengl"), case-insensitive."""
    name = name.strip().lower()
    return name in adapter.info["device"].lower() or name == adapter.info["backend_type"].lower()


def choose_adapter(name: str | None = None):
    """The adapter ``name`` picks, else the high-performance one.

    ``name`` is a substring of the adapter's name or the name of its backend (case-insensitive),
    or ``"#N"``: the adapter at index N of ``adapters()`` (identical GPUs have identical names,
    so only an index tells them apart; no adapter name holds ``#``). It defaults to the
    environment variable ``DMLGPU_ADAPTER``. The default is the first discrete GPU, else an
    integrated one, else any other, software adapters last. A name that no native adapter
    matches is looked for among OpenGL adapters too (the one way, with ``DMLGPU_OPENGL=1``,
    that OpenGL is probed).
    """
    name = name if name is not None else os.environ.get("DMLGPU_ADAPTER") or None
    try:
        found = adapters()
        if name is not None and not name.strip().startswith("#") and not any(_matches(a, name) for a in found):
            found = adapters(opengl=True)
    except Exception as err:  # wgpu could not load any backend
        raise AdapterError(f"{NO_ADAPTER_HELP} ({err})") from None
    listed = ", ".join(f"#{i} {a.info['device']} ({a.info['backend_type']})" for i, a in enumerate(found)) or "none"
    if name is None:
        if not found:
            raise AdapterError(f"{NO_ADAPTER_HELP}; OpenGL adapters are offered with DMLGPU_OPENGL=1")
        rank = {kind: i for i, kind in enumerate(_PREFERRED_TYPES)}
        return min(found, key=lambda a: rank.get(a.info["adapter_type"], len(rank) + (a.info["adapter_type"] == "CPU")))
    if name.strip().startswith("#"):
        digits = name.strip()[1:]
        if not digits.isdigit():
            raise AdapterError(f"adapter is {name!r}, but an index is '#' and digits, e.g. '#1'")
        if int(digits) >= len(found):
            raise AdapterError(f"adapter is {name!r}, but there is no adapter at that index; adapters: {listed}")
        return found[int(digits)]
    matches = [a for a in found if _matches(a, name)]
    if not matches:
        raise AdapterError(f"adapter is {name!r}, but no adapter's name contains it; adapters: {listed}")
    return matches[0]


def request_device(adapter, **options):
    """``adapter.request_device_sync(**options)`` under the process's adapter lock."""
    with _adapter_lock:
        return adapter.request_device_sync(**options)


def release_device(device) -> None:
    """Destroy a device and let go of wgpu-native's (its poll thread too), under the process's
    adapter lock. wgpu-py's device sits in a reference cycle of its own, so it would otherwise
    wait for the garbage collector."""
    with _adapter_lock:
        device.destroy()
        device._release()


def word_size(nbytes: int) -> int:
    """``nbytes`` rounded up to whole 4-byte words (what copies and maps move)."""
    return (nbytes + 3) & ~3


def bound_size(nbytes: int) -> int:
    """The size of a buffer that passes bind for ``nbytes``: whole 16-byte quads, at least one,
    so that a shader reading quads never meets a partial one at the end (robust access would
    clamp it to other data)."""
    return max(16, (nbytes + 15) & ~15)


def copy_in_parts(pool, dst: np.ndarray, src: np.ndarray, parts: int) -> None:
    """dst[:] = src (bytes) in ``parts`` slices of whole 64-byte lines, on ``pool``'s threads
    (NumPy lets go of the GIL while it copies)."""
    step = ((-(-src.nbytes // parts)) + 63) & ~63
    for part in [pool.submit(np.copyto, dst[a:a + step], src[a:a + step]) for a in range(0, src.nbytes, step)]:
        part.result()


# ----------------------------------------------------------------------------- Ctrl-C

_holding: list = []  # an entry while the main thread holds Ctrl-C back


class interrupts_held:
    """Hold Ctrl-C back while GPU work is in flight on the main thread, and raise it after.

    A KeyboardInterrupt raised inside a map callback (which runs during a poll) or inside a
    finalizer is printed and swallowed by Python, which would leave the caller's loop
    running; and one raised between a map and its unmap would leave a buffer mapped. So the
    default SIGINT handler is swapped, for the few milliseconds of a call, for one that
    notes the signal; the KeyboardInterrupt follows as soon as the call is done. A second
    Ctrl-C while held interrupts at once. Other threads never receive KeyboardInterrupt, and
    a handler the program installed itself is left alone. (``_signal`` is what ``signal``
    wraps; its enum conversions cost 30 us a call, the C functions 3.)
    """

    __slots__ = ("noted", "holding")

    def __enter__(self):
        self.holding = not _holding and threading.get_ident() == _MAIN_IDENT and \
            _signal.getsignal(_SIGINT) is _DEFAULT_HANDLER
        if self.holding:
            noted = self.noted = []

            def note(signum, frame):
                if noted:
                    raise KeyboardInterrupt
                noted.append(signum)

            _signal.signal(_SIGINT, note)
            _holding.append(True)
        return self

    def __exit__(self, *exc) -> None:
        if self.holding:
            _holding.pop()
            _signal.signal(_SIGINT, _DEFAULT_HANDLER)
            if self.noted and exc[0] is None:  # (an error from the block goes on as it is)
                raise KeyboardInterrupt


_MAIN_IDENT = threading.main_thread().ident
_SIGINT = int(signal.SIGINT)
_DEFAULT_HANDLER = signal.default_int_handler


# ----------------------------------------------------------------------------- the two paths


_NO_QUERY = 0xFFFFFFFF  # WGPU_QUERY_SET_INDEX_UNDEFINED


class _Map:
    """One map of a staging buffer on the public path: started under the runner's lock,
    waited for outside it."""

    __slots__ = ("buffer", "size", "done", "promise")

    def __init__(self, buffer, size: int, done: bool = False):
        self.buffer, self.size, self.done, self.promise = buffer, size, done, None


class _Public:
    """Recording, submitting and mapping through wgpu-py's public objects."""

    name = "public"

    def __init__(self, device):
        self.device = device

    def new_map(self, buffer, size: int, done: bool = False) -> _Map:
        return _Map(buffer, size, done)

    def encoder(self):
        return _PublicEncoder(self.device)

    def submit(self, encoders: list, read=None):
        """Finish the encoders and submit them; ``read`` = (src, offset, map of a MAP_READ
        staging buffer): a copy of ``map.size`` bytes into it is recorded last and its map
        started after the submit. Returns the ticket ``wait`` takes."""
        if read is not None:
            src, offset, m = read
            if not encoders:
                encoders = [self.encoder()]
            encoders[-1].copy(src, offset, m.buffer, 0, m.size)
        buffers = []
        try:
            for encoder in encoders:
                buffers.append(encoder.finish())
        finally:
            for encoder in encoders:
                encoder.drop()
        self.device.queue.submit(buffers)
        if read is not None:
            self.start_map(read[2], write=False)
        return None

    def start_map(self, m: _Map, write: bool) -> None:
        m.done = False  # a staging buffer's map object is used again for its next map
        m.promise = m.buffer.map_async(wgpu.MapMode.WRITE if write else wgpu.MapMode.READ, 0, m.size)

    def wait(self, m: _Map, ticket) -> None:
        if not m.done:
            m.promise.sync_wait()
            m.done = True

    def write_buffer(self, buffer, offset: int, raw: np.ndarray) -> None:
        self.device.queue.write_buffer(buffer, offset, raw)

    def mapped(self, m: _Map) -> np.ndarray:
        """The mapped bytes as a writable uint8 array, valid until ``unmap``."""
        return np.frombuffer(m.buffer._experimental_get_mapped_range(0, m.size), np.uint8)

    def unmap(self, m: _Map) -> None:
        m.buffer.unmap()

    def fill(self, m: _Map, raw: np.ndarray) -> None:
        """Copy ``raw`` into the mapped buffer (zeros after it), and unmap it."""
        view = self.mapped(m)
        view[:raw.nbytes] = raw
        view[raw.nbytes:] = 0
        del view
        self.unmap(m)

    def drain(self, m: _Map, out: np.ndarray) -> None:
        """Copy the first ``out.nbytes`` bytes of the mapped buffer into ``out``, and unmap it."""
        view = self.mapped(m)
        out[...] = view[:out.nbytes]
        del view
        self.unmap(m)


class _PublicEncoder:
    def __init__(self, device):
        self.enc = device.create_command_encoder()

    def dispatch(self, pipeline, bind_group, grid, writes=None) -> None:
        compute = self.enc.begin_compute_pass(timestamp_writes=writes)
        compute.set_pipeline(pipeline)
        compute.set_bind_group(0, bind_group)
        compute.dispatch_workgroups(*grid)
        compute.end()

    def record(self, clear, steps) -> None:
        """``clear`` zeroed, then the steps (pipeline, bind group, grid)."""
        for buffer in clear or ():
            self.clear(buffer)
        for pipeline, bind_group, grid in steps:
            self.dispatch(pipeline, bind_group, grid)

    def stamp(self, queries, index: int) -> None:
        """An empty pass that writes timestamp ``index`` when it begins."""
        self.enc.begin_compute_pass(
            timestamp_writes={"query_set": queries, "beginning_of_pass_write_index": index}).end()

    def clear(self, buffer) -> None:
        self.enc.clear_buffer(buffer)

    def copy(self, src, src_offset: int, dst, dst_offset: int, size: int) -> None:
        self.enc.copy_buffer_to_buffer(src, src_offset, dst, dst_offset, size)

    def resolve(self, queries, count: int, dst) -> None:
        self.enc.resolve_query_set(queries, 0, count, dst, 0)

    def finish(self):
        return self.enc.finish()

    def drop(self) -> None:
        self.enc = None


# ----------------------------------------------------------------------------- the hot path in C

#: What runner.py declares of ``_hot.c`` (see that file); the table of wgpu-native functions
#: is an array of pointers here, a struct of them there (the same layout).
_HOT_FUNCTIONS = (
    "wgpuDeviceCreateCommandEncoder", "wgpuCommandEncoderBeginComputePass", "wgpuComputePassEncoderSetPipeline",
    "wgpuComputePassEncoderSetBindGroup", "wgpuComputePassEncoderDispatchWorkgroups", "wgpuComputePassEncoderEnd",
    "wgpuComputePassEncoderRelease", "wgpuCommandEncoderClearBuffer", "wgpuCommandEncoderCopyBufferToBuffer",
    "wgpuCommandEncoderFinish", "wgpuCommandEncoderRelease", "wgpuQueueSubmitForIndex", "wgpuCommandBufferRelease",
    "wgpuBufferMapAsync", "wgpuDevicePoll", "wgpuBufferGetMappedRange", "wgpuBufferUnmap",
)
_HOT_CDEF = f"""
typedef struct {{ int word; }} DmlState;
typedef struct {{ void *pipeline, *group; uint32_t x, y, z; }} DmlStep;
typedef struct {{
    void *device, *queue;
    void *wstaging; DmlState *wstate; void *input; uint64_t in_size;
    void *clear; uint64_t clear_size;
    const DmlStep *steps; size_t n_steps;
    void *output; uint64_t out_offset; void *rstaging; DmlState *rstate; uint64_t out_size;
    uint64_t ticket;
}} DmlCall;
typedef struct {{
    void *fn[{len(_HOT_FUNCTIONS)}];
    uint32_t callback_mode, map_success; uint64_t map_read, map_write;
    const void *encoder_descriptor, *pass_descriptor, *buffer_descriptor;
}} DmlFns;
size_t dml_layout(int which);
DmlState *dml_state_new(int landed);
int dml_state(const DmlState *s);
void dml_state_drop(DmlState *s);
void dml_map(const DmlFns *f, void *buffer, int write, size_t size, DmlState *s);
int dml_wait(const DmlFns *f, void *device, const DmlState *s, double spin_s, double idle_timeout_s,
             const uint64_t *ticket);
void *dml_record(const DmlFns *f, void *device, void *encoder, void *clear, uint64_t clear_size,
                 const DmlStep *steps, size_t n_steps);
void dml_finish(const DmlFns *f, void **encoders, size_t count);
void dml_release(const DmlFns *f, void **buffers, size_t count);
uint64_t dml_submit(const DmlFns *f, void *queue, void **buffers, size_t count);
typedef struct DmlCopier DmlCopier;
DmlCopier *dml_copier_start(int helpers, double spin_s);
int dml_copier_helpers(const DmlCopier *p);
void dml_copier_stop(DmlCopier *p);
int dml_fill(const DmlFns *f, DmlCopier *p, size_t parallel_above, void *buffer, size_t size, const void *data,
             size_t nbytes);
int dml_drain(const DmlFns *f, void *buffer, size_t size, void *out, size_t nbytes);
size_t dml_record_call(const DmlFns *f, const DmlCall *c, void **pending, size_t n_pending);
void dml_submit_call(const DmlFns *f, DmlCall *c, void **buffers, size_t count);
"""
_hot_loaded: list = []  # [(ffi, lib)] once loaded, [None, reason] once it failed
_copier: list = []  # [pid, DmlCopier] of this process (hot_copier)
_copier_lock = threading.Lock()


def hot_cache_dir() -> str:
    """Where the compiled hot path is kept: ``DMLGPU_CACHE``, else the user's cache folder."""
    return os.environ.get("DMLGPU_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"), "dmlgpu")


def _compile_hot() -> str:
    """The path of ``_hot.c`` compiled into a shared library (once per source text and
    compiler: the file's name holds their hash); raises RuntimeError saying why not."""
    import hashlib
    import shlex
    import shutil
    import subprocess
    import sys
    import tempfile
    from importlib import resources

    source = resources.files("dmlgpu").joinpath("_hot.c").read_bytes()
    compiler = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    if not compiler or sys.platform == "win32":
        raise RuntimeError("no C compiler was found to build the native path's hot loop (set CC, or install cc)")
    key = hashlib.sha256(source + compiler.encode() + sys.platform.encode()).hexdigest()[:16]
    folder = hot_cache_dir()
    target = os.path.join(folder, f"hot-{key}.so")
    if os.path.exists(target):
        return target
    try:
        os.makedirs(folder, exist_ok=True)
    except OSError:  # no writable cache folder: one in the temporary folder
        folder = os.path.join(tempfile.gettempdir(), f"dmlgpu-{os.getuid() if hasattr(os, 'getuid') else 0}")
        target = os.path.join(folder, f"hot-{key}.so")
        if os.path.exists(target):
            return target
        os.makedirs(folder, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=folder) as work:
        src = os.path.join(work, "_hot.c")
        with open(src, "wb") as f:
            f.write(source)
        built = os.path.join(work, "hot.so")
        try:  # CC may hold flags too ("gcc -m64"), as make reads it
            done = subprocess.run([*shlex.split(compiler), "-O2", "-std=c11", "-pthread", "-shared", "-fPIC", "-o", built, src],
                                  capture_output=True, text=True)
        except OSError as err:
            raise RuntimeError(f"{compiler} could not build the native path's hot loop: {err}") from None
        if done.returncode != 0:
            raise RuntimeError(f"{compiler} could not build the native path's hot loop: {done.stderr.strip()[-500:]}")
        os.replace(built, target)  # atomic: another process may be building it too
    return target


def hot_library():
    """(ffi, lib) of the compiled hot path, loaded once; raises RuntimeError saying why not."""
    if not _hot_loaded:
        import cffi
        from wgpu.backends.wgpu_native._api import ffi as wffi

        try:
            path = _compile_hot()
            ffi = cffi.FFI()
            ffi.cdef(_HOT_CDEF)
            lib = ffi.dlopen(path)
            # the structs passed to wgpu-native by value must be laid out as its own header says
            ours = [lib.dml_layout(i) for i in range(4)]
            theirs = [wffi.sizeof("WGPUBufferMapCallbackInfo"), wffi.offsetof("WGPUBufferMapCallbackInfo", "callback"),
                      wffi.sizeof("WGPUStringView"), wffi.sizeof("WGPUFuture")]
            if ours != theirs:
                raise RuntimeError(f"_hot.c's structs {ours} do not match wgpu-native's {theirs}")
            _hot_loaded[:] = [(ffi, lib)]
        except (OSError, RuntimeError) as err:
            _hot_loaded[:] = [None, str(err)]
    if _hot_loaded[0] is None:
        raise RuntimeError(_hot_loaded[1])
    return _hot_loaded[0]


def hot_copier(helpers: int | None = None):
    """This process's helper threads for copies into mapped staging (``_hot.c``'s
    ``DmlCopier``), started on first use and shared by every device, like a BLAS library's
    threads: they spin for ``SPIN_S`` after a copy, then sleep until the next. A child
    process gets its own. ``helpers``: how many the first call starts (default
    ``FILL_HELPERS``, fewer on a host with fewer cores). NULL where none could start."""
    ffi, lib = hot_library()
    with _copier_lock:
        if not _copier or _copier[0] != os.getpid():
            if helpers is None:
                helpers = min(FILL_HELPERS, (os.cpu_count() or 1) - 1)
            _copier[:] = [os.getpid(), lib.dml_copier_start(helpers, SPIN_S) if helpers > 0 else ffi.NULL]
        return _copier[1]


class _NativeMap:
    """One map of a staging buffer on the native path: its outcome lands in a C ``DmlState``
    (``_hot.c``), which outlives this object if the map is still pending when it goes."""

    __slots__ = ("buffer", "size", "state", "call", "_drop")

    def __init__(self, hot, buffer, size: int, done: bool = False):
        self.buffer, self.size, self.call = buffer, size, None  # call: a read's (DmlCall, ticket, handles) (_Native.submit)
        self.state = hot.dml_state_new(done)
        if not self.state:
            raise MemoryError("no memory for a map state")
        self._drop = hot.dml_state_drop

    def __del__(self):
        self._drop(self.state)


class _Native:
    """The same, straight to wgpu-native through the ``ffi`` / ``lib`` wgpu-py exports, the
    small call's sequence in C (``_hot.c``), the calling thread polling the device.

    Errors wgpu-native reports while a C function runs come to wgpu-py's error handler on
    this thread; ``_checked`` and ``_finish`` collect them as wgpu-py's ``libf`` wrappers do, and raise.
    """

    name = "native"

    def __init__(self, device):
        from wgpu.backends.wgpu_native import _api
        from wgpu.backends.wgpu_native._helpers import ERROR_TYPES

        self.hot_ffi, self.hot = hot_library()
        self.null = self.hot_ffi.NULL
        ffi, lib = _api.ffi, _api.lib
        self.ffi, self.lib, self.libf = ffi, lib, _api.libf
        self.errors, self.error_types = _api.error_handler, ERROR_TYPES
        self.device, self.handle, self.queue = device, device._internal, device.queue._internal
        self.pass_desc = ffi.new("WGPUComputePassDescriptor *")
        self.encoder_desc = ffi.new("WGPUCommandEncoderDescriptor *")
        self.buffer_desc = ffi.new("WGPUCommandBufferDescriptor *")
        fns = self.fns = self.hot_ffi.new("DmlFns *")
        for i, name in enumerate(_HOT_FUNCTIONS):
            fns.fn[i] = self.ptr(getattr(lib, name))
        fns.callback_mode, fns.map_success = lib.WGPUCallbackMode_AllowProcessEvents, lib.WGPUMapAsyncStatus_Success
        fns.map_read, fns.map_write = lib.WGPUMapMode_Read, lib.WGPUMapMode_Write
        fns.encoder_descriptor, fns.pass_descriptor, fns.buffer_descriptor = (
            self.encoder_desc, self.pass_desc, self.buffer_desc)
        self.spin_s = 0.0  # how long a wait polls without blocking first (Runner sets it)
        self.copier = self.null  # helper threads of copies into staging (Runner sets them: hot_copier)

    def ptr(self, cdata):
        """A pointer of wgpu-py's ffi (a function) as a ``void *`` of ours. Handles need no
        conversion: cffi passes any pointer where ``void *`` is declared."""
        return self.hot_ffi.cast("void *", int(self.ffi.cast("uintptr_t", cdata)))

    def _captured(self, name: str, fn, *args) -> tuple:
        """``fn(*args)`` and the error wgpu-native reported meanwhile, collected as ``libf``
        collects it (None if none)."""
        self.errors.capture(name)
        try:
            result = fn(*args)
        finally:
            error = self.errors.release(name)
        return result, error if error is None else self.error_types.get(error[0], wgpu.GPUError)(error[1])

    def _checked(self, name: str, fn, *args):
        """``fn(*args)``, raising the error wgpu-native reported meanwhile (as ``libf`` does)."""
        result, error = self._captured(name, fn, *args)
        if error is not None:
            raise error
        return result

    def new_map(self, buffer, size: int, done: bool = False) -> _NativeMap:
        return _NativeMap(self.hot, buffer, size, done)

    def encoder(self):
        return _NativeEncoder(self)

    def timed_pass(self, queries, begin: int, end: int):
        """A pass descriptor writing timestamps ``begin`` / ``end`` (or ``_NO_QUERY``), with the
        struct it points to (both must live until the pass has begun)."""
        stamps = self.ffi.new("WGPUPassTimestampWrites *")
        stamps.querySet, stamps.beginningOfPassWriteIndex, stamps.endOfPassWriteIndex = queries._internal, begin, end
        desc = self.ffi.new("WGPUComputePassDescriptor *")
        desc.timestampWrites = stamps
        return desc, stamps

    def submit(self, encoders: list, read=None):
        """As ``_Public.submit``, through ``_hot.c``; the ticket is the submission's index."""
        if read is None:
            handles = self.hot_ffi.new("void *[]", [e.take() for e in encoders])
            self._finish(handles, self.hot.dml_finish, handles, len(encoders))
            return self.hot_ffi.new("uint64_t *", self.hot.dml_submit(self.fns, self.queue, handles, len(encoders)))
        src, offset, m = read
        if m.call is None:  # made once for each staging buffer's map, with its ticket's address
            c = self.hot_ffi.new("DmlCall *")
            c.device, c.queue, c.rstaging, c.rstate, c.out_size = self.handle, self.queue, m.buffer._internal, \
                m.state, m.size
            m.call = (c, self.hot_ffi.addressof(c, "ticket"), self.hot_ffi.new("void *[1]"))
        c, ticket, handles = m.call
        c.output, c.out_offset = src._internal, offset
        if len(encoders) == 1 and type(encoders[0]) is _Deferred and len(encoders[0].clear) <= 1:
            # one dispatch then this read: recorded together, in one encoder, by one C call
            # (c keeps pointing at the steps' C array after the call: every use of c sets them)
            d = encoders[0]
            _kept = self.put_passes(c, d.steps, d.clear[0] if d.clear else None)  # its C array lives through the call
            self.call(c, [], handles)
        else:
            c.steps, c.n_steps, c.clear, c.clear_size = self.null, 0, self.null, 0
            self.call(c, encoders)
        return ticket  # valid while the map is held

    def put_passes(self, c, steps, clear=None):
        """Set ``steps`` on the ``DmlCall`` ``c``, after the buffer ``clear`` zeroed (None:
        none); their C array, which must live as long as ``c`` is run with them."""
        array = steps_array(self, steps)
        c.steps, c.n_steps = array, len(steps)
        c.clear, c.clear_size = (self.null, 0) if clear is None else (clear._internal, clear.size)
        return array

    def call(self, c, pending: list, handles=None) -> None:
        """The small call ``c`` (a ``DmlCall``) after the ``pending`` encoders, in one submit;
        ``handles``: an array of one handle, for a call with none pending."""
        if pending or handles is None:
            handles = self.hot_ffi.new("void *[]", len(pending) + 1)
        for i, e in enumerate(pending):
            handles[i] = e.take()
        count = self._finish(handles, self.hot.dml_record_call, c, handles, len(pending))
        self.hot.dml_submit_call(self.fns, c, handles, count)

    def _finish(self, handles, finish, *args) -> int:
        """``finish(fns, *args)``, which finishes encoders into the command buffers ``handles``
        and returns their number (or None: all of ``handles``). If wgpu-native reported an
        error meanwhile, they are released and it is raised: a submit of them would abort
        the process."""
        count, error = self._captured("finish", finish, self.fns, *args)
        count = len(handles) if count is None else count
        if error is not None:
            self.hot.dml_release(self.fns, handles, count)
            raise error
        return count

    def start_map(self, m: _NativeMap, write: bool) -> None:
        self._checked("map", self.hot.dml_map, self.fns, m.buffer._internal, write, m.size, m.state)

    def wait(self, m: _NativeMap, ticket) -> None:
        """Poll on this thread until the map has landed (``dml_wait``): first without blocking,
        for up to ``spin_s`` (on the H100 a blocking poll returned 30 us after the GPU was
        done: a dispatch and a 16-byte read-back took 92 us blocking, 60 spinning), then
        blocking, which leaves the core to others. Another thread's poll may land it."""
        landed = self.hot.dml_wait(self.fns, self.handle, m.state, self.spin_s, MAP_TIMEOUT_S,
                                   self.null if ticket is None else ticket)
        if landed == -1:
            raise DeviceLostError(f"a buffer map did not complete in {MAP_TIMEOUT_S} s on an idle queue; "
                                  "the device is lost")
        if landed != 1:
            raise DeviceLostError("a buffer map failed; the device is lost or the buffer was destroyed")

    def write_buffer(self, buffer, offset: int, raw: np.ndarray) -> None:
        self.libf.wgpuQueueWriteBuffer(self.queue, buffer._internal, offset, self.ffi.from_buffer(raw), raw.nbytes)

    def mapped(self, m: _NativeMap) -> np.ndarray:
        pointer = self.lib.wgpuBufferGetMappedRange(m.buffer._internal, 0, m.size)
        if pointer == self.ffi.NULL:
            raise DeviceLostError("a mapped buffer has no memory; the device is lost")
        return np.frombuffer(self.ffi.buffer(pointer, m.size), np.uint8)

    def unmap(self, m: _NativeMap) -> None:
        self.lib.wgpuBufferUnmap(m.buffer._internal)

    def fill(self, m: _NativeMap, raw: np.ndarray) -> None:
        if self.hot.dml_fill(self.fns, self.copier, FILL_PARALLEL_ABOVE, m.buffer._internal, m.size,
                             self.hot_ffi.from_buffer(raw), raw.nbytes):
            raise DeviceLostError("a mapped buffer has no memory; the device is lost")

    def drain(self, m: _NativeMap, out: np.ndarray) -> None:
        if self.hot.dml_drain(self.fns, m.buffer._internal, m.size,
                              self.hot_ffi.from_buffer(out, require_writable=True), out.nbytes):
            raise DeviceLostError("a mapped buffer has no memory; the device is lost")


class _NativeEncoder:
    """A command encoder, created when something is first recorded into it (by ``_hot.c``
    for passes, ``handle`` otherwise)."""

    def __init__(self, native: _Native):
        self.n, self.enc = native, None

    @property
    def handle(self):
        if self.enc is None:
            self.enc = self.n.lib.wgpuDeviceCreateCommandEncoder(self.n.handle, self.n.encoder_desc)
        return self.enc

    def dispatch(self, pipeline, bind_group, grid, writes=None) -> None:
        n, lib = self.n, self.n.lib
        desc = n.pass_desc
        if writes is not None:
            desc, _stamps = n.timed_pass(writes["query_set"], writes.get("beginning_of_pass_write_index", _NO_QUERY),
                                         writes.get("end_of_pass_write_index", _NO_QUERY))
        compute = lib.wgpuCommandEncoderBeginComputePass(self.handle, desc)
        lib.wgpuComputePassEncoderSetPipeline(compute, pipeline._internal)
        lib.wgpuComputePassEncoderSetBindGroup(compute, 0, bind_group._internal, 0, n.ffi.NULL)
        lib.wgpuComputePassEncoderDispatchWorkgroups(compute, *grid)
        lib.wgpuComputePassEncoderEnd(compute)
        lib.wgpuComputePassEncoderRelease(compute)

    def record(self, clear, steps) -> None:
        """``clear`` zeroed, then the steps, in one call into ``_hot.c`` (a ``Steps`` list
        keeps its C array for the next time)."""
        n = self.n
        clear = clear or ()
        for buffer in clear[1:]:
            self.clear(buffer)
        array = steps_array(n, steps)
        first = clear[0] if clear else None
        self.enc = n.hot.dml_record(n.fns, n.handle, n.null if self.enc is None else self.enc,
                                    n.null if first is None else first._internal, 0 if first is None else first.size,
                                    array, len(steps))

    def stamp(self, queries, index: int) -> None:
        lib = self.n.lib
        desc, _stamps = self.n.timed_pass(queries, index, _NO_QUERY)
        compute = lib.wgpuCommandEncoderBeginComputePass(self.handle, desc)
        lib.wgpuComputePassEncoderEnd(compute)
        lib.wgpuComputePassEncoderRelease(compute)

    def clear(self, buffer) -> None:
        self.n.lib.wgpuCommandEncoderClearBuffer(self.handle, buffer._internal, 0, buffer.size)

    def copy(self, src, src_offset: int, dst, dst_offset: int, size: int) -> None:
        self.n.lib.wgpuCommandEncoderCopyBufferToBuffer(self.handle, src._internal, src_offset, dst._internal,
                                                         dst_offset, size)

    def resolve(self, queries, count: int, dst) -> None:
        self.n.lib.wgpuCommandEncoderResolveQuerySet(self.handle, queries._internal, 0, count, dst._internal, 0)

    def take(self):
        """The encoder's handle, handed over (to be finished and released by ``_hot.c``)."""
        enc, self.enc = self.handle, None
        return enc

    def drop(self) -> None:
        if self.enc is not None:
            enc, self.enc = self.enc, None
            self.n.lib.wgpuCommandEncoderRelease(enc)


class _Deferred:
    """A dispatch on the native path, recorded when it is submitted rather than when it is
    made: a read that follows it alone records both with one C call (``_Native.submit``);
    any other submit has ``take`` record it into an encoder of its own first, as a dispatch
    was recorded before. Pending like an encoder (``take``, ``drop``)."""

    __slots__ = ("n", "steps", "clear")

    def __init__(self, native: _Native, steps, clear):
        self.n, self.steps, self.clear = native, steps, clear or ()

    def take(self):
        encoder = _NativeEncoder(self.n)
        encoder.record(self.clear, self.steps)
        return encoder.take()

    def drop(self) -> None:
        pass


class _DroppedOnFailure:
    """``Runner._dropped_on_failure``'s context manager (a class: a small read passes through one)."""

    __slots__ = ("runner", "staging")

    def __init__(self, runner, staging):
        self.runner, self.staging = runner, staging

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind, err, tb) -> None:
        if err is None:
            return
        with self.runner._lock:
            self.runner._destroy(self.staging)
        if isinstance(err, wgpu.GPUError):
            raise self.runner._gpu_error(err) from None


class _Handle:
    """A wgpu-native handle where a map wants a buffer (``Runner._read_in_place``)."""

    __slots__ = ("_internal",)

    def __init__(self, handle):
        self._internal = handle


class _HotCall:
    """What ``Runner.hot_call`` makes: see there."""

    __slots__ = ("input", "output", "steps", "wmap", "rmap", "c", "ticket", "handles")


class Steps(list):
    """A list of steps (pipeline, bind group, grid) that keeps its C form (``_hot.c``'s
    ``DmlStep`` array) once made: callers that record the same steps again keep one."""

    __slots__ = ("native",)


def steps_array(n: _Native, steps):
    """The ``DmlStep`` array of ``steps``, made once for a ``Steps`` list."""
    array = getattr(steps, "native", None)
    if array is None:
        array = n.hot_ffi.new("DmlStep[]", len(steps))
        for i, (pipeline, bind_group, grid) in enumerate(steps):
            array[i].pipeline, array[i].group = pipeline._internal, bind_group._internal
            array[i].x, array[i].y, array[i].z = grid
        if isinstance(steps, Steps):
            steps.native = array
    return array


# ----------------------------------------------------------------------------- the runner


class _Pool:
    """Things with a ``size`` (buffers, staging maps) kept for reuse by size: the most recent
    of a size is taken first, the oldest of all given back first when ``limit`` bytes are
    exceeded. Not locked: the runner calls it under its lock."""

    def __init__(self, limit: int):
        self.limit, self.bytes = limit, 0
        self._by_size: dict[int, list] = defaultdict(list)
        self._age: OrderedDict = OrderedDict()

    def take(self, size: int):
        """One kept of this size, or None."""
        kept = self._by_size.get(size)
        if not kept:
            return None
        item = kept.pop()
        del self._age[item]
        self.bytes -= size
        return item

    def put(self, item) -> list:
        """Keep ``item``; what no longer fits (the oldest first, or ``item`` itself) comes back
        for the caller to destroy."""
        size = item.size
        if size > self.limit:
            return [item]
        self._by_size[size].append(item)
        self._age[item] = None
        self.bytes += size
        evicted = []
        while self.bytes > self.limit:
            old, _ = self._age.popitem(last=False)
            self._by_size[old.size].remove(old)
            self.bytes -= old.size
            evicted.append(old)
        return evicted

    def clear(self) -> list:
        """Everything kept, taken out."""
        items = list(self._age)
        self._by_size.clear()
        self._age.clear()
        self.bytes = 0
        return items


class Runner:
    """One wgpu device with its pipeline cache, its buffers and its transfer paths."""

    def __init__(self, adapter: str | None = None, *, int64: bool | None = None, smaller: dict | None = None):
        """``smaller``: act as if the adapter bound and held less (``max_storage_binding``,
        ``max_buffer``: tensors beyond one binding; ``memory``: bytes of buffers the runner
        may hold at once), so that tests reach those paths on small inputs."""
        self.adapter = choose_adapter(adapter)
        available = set(self.adapter.features)
        wanted = [f for f in _WANTED_FEATURES if f in available]
        if int64 is False:
            wanted = [f for f in wanted if f != "shader-int64"]
        elif int64 is True and "shader-int64" not in available:
            raise AdapterError(f"int64 is True, but adapter {self.name!r} lacks shader-int64")
        self.features = frozenset(wanted)
        limits = self.adapter.limits
        smaller = dict(smaller or {})
        self.memory_limit = smaller.pop("memory", None)
        self.device = request_device(
            self.adapter,
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
        for name, value in smaller.items():
            if value > getattr(self.capabilities, name):
                raise AdapterError(f"smaller[{name!r}] is {value}, above the adapter's {getattr(self.capabilities, name)}")
        self.capabilities = dataclasses.replace(self.capabilities, **smaller)
        self._bind_layout = self.device.create_bind_group_layout(entries=_LAYOUT_ENTRIES)
        self._pipeline_layout = self.device.create_pipeline_layout(bind_group_layouts=[self._bind_layout])
        self._pipelines: OrderedDict[str, object] = OrderedDict()  # by WGSL text, most recent last
        self.path = self._choose_path()
        if self.path.name == "native" and self.adapter.info["adapter_type"] != "CPU":
            self.path.spin_s = SPIN_S
            self.path.copier = hot_copier()
        self._defers = isinstance(self.path, _Native)  # dispatches are recorded at their submit (_Deferred)
        self._lock = threading.RLock()
        self.calls = threading.RLock()  # one call waiting for the GPU at a time (module docstring)
        # Finished command buffers of calls recorded since the last submit, and the bytes
        # their passes read: small calls share one submit with their read-back.
        self._pending: list = []
        self._pending_bytes = 0
        self._staging = _Pool(_STAGING_POOL_BYTES)  # MAP_READ buffers of small reads, as their maps
        self._queued = False  # small writes queued since the last submit (``write``)
        # MAP_WRITE staging of mid-sized writes, by size class, as their maps (landed once the
        # GPU has copied out of them); those that pending work copies out of are mapped again
        # after its submit
        self._writes = _Pool(_STAGING_POOL_BYTES)
        self._remap: list = []
        self._pool = _Pool(POOL_BYTES)  # freed storage buffers
        self._readable = _Pool(_STAGING_POOL_BYTES)  # freed readable buffers
        self._pools = {_STORAGE: self._pool, _READABLE: self._readable}  # storage's and free's, by usage
        self._rings: dict[bool, list] = {}  # MAP_WRITE (True) and MAP_READ (False) rings
        self._copier = None  # threads for host-side copies of large transfers
        # every buffer this runner made and has not destroyed (buffers dropped with an object
        # that was collected leave on their own): what held_bytes counts
        self._live: weakref.WeakSet = weakref.WeakSet()

        self._lost: str | None = None
        self._no_scratch = self.storage(16)  # binding 3 of passes that keep no scratch
        # Transfer sizes (module defaults; the tests shrink them to reach every path)
        self.ring_chunk, self.ring_depth, self.stream_above = RING_CHUNK, RING_DEPTH, STREAM_ABOVE
        self.queue_write_max = QUEUE_WRITE_MAX
        self.parallel_copy_above = 4 << 20
        cores = os.cpu_count() or 1
        self.copy_threads = {True: min(WRITE_THREADS, cores), False: min(READ_THREADS, cores)}  # by write
        # small outputs in mappable memory: a NumPy call's kit binds its staging (hot_call),
        # a resident call writes a buffer a read maps as it is (storage(readable=True))
        self.in_place = "mappable-primary-buffers" in self.features and self._defers
        self._read_maps: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # readable buffer -> its map

    def _choose_path(self):
        wanted = os.environ.get("DMLGPU_RUNNER", "native").strip().lower()
        if wanted not in ("native", "public"):
            raise AdapterError(f"DMLGPU_RUNNER is {wanted!r}, but it must be 'native' or 'public'")
        if wanted == "native":
            reason = native_unsupported()
            if reason is None:
                try:
                    return _Native(self.device)
                except RuntimeError as err:  # no hot loop: no compiler, or it does not match
                    reason = str(err)
            warnings.warn(f"dmlgpu: {reason}; using wgpu-py's public objects (slower small calls)", stacklevel=3)
        return _Public(self.device)

    @property
    def name(self) -> str:
        return self.adapter.info["device"]

    @property
    def backend(self) -> str:
        return self.adapter.info["backend_type"]

    # ------------------------------------------------------------------ errors and lifetime

    @property
    def usable(self) -> bool:
        """False once the device was closed or lost."""
        return self._lost is None

    def check(self) -> None:
        """Raise ``DeviceLostError`` if the device was closed or lost."""
        if self._lost is not None:
            raise DeviceLostError(f"device {self.name!r} {self._lost}; open a new dmlgpu.Device")

    def _gpu_error(self, err: Exception) -> Exception:
        """Our error for an error wgpu raised: a lost device is remembered.

        wgpu-py's errors hold the frames that raised them in a reference cycle; those frames
        hold memoryviews that C code borrowed, and the garbage collector can crash clearing
        such a cycle. Clearing the frames' locals now breaks it."""
        traceback.clear_frames(err.__traceback__)
        text = str(err)
        if "lost" in text.lower():
            self._lost = f"was lost ({text.strip().splitlines()[-1].strip()})"
            return DeviceLostError(f"device {self.name!r} {self._lost}; open a new dmlgpu.Device")
        return err

    def close(self) -> None:
        """Destroy every buffer this runner made and the device itself; later use raises."""
        with self._lock:
            if self._lost is not None and self._lost.startswith("was closed"):
                return
            for encoder in self._pending:
                encoder.drop()
            self._pending, self._remap = [], []
            for m in self._writes.clear():  # let their maps land: a pending map keeps its
                try:                        # buffer (and wgpu-py's, its device) alive
                    self.path.wait(m, None)
                except DeviceLostError:
                    pass
            self._lost = "was closed"
            self._take_kept()  # the device's destroy below destroys them all
            self._pipelines.clear()
            if self._copier is not None:
                self._copier.shutdown(wait=True)
                self._copier = None
            self._live = weakref.WeakSet()
            release_device(self.device)

    # ------------------------------------------------------------------ objects

    def pipeline(self, source: str):
        """The compute pipeline of this WGSL text, compiled on first use."""
        with self._lock:
            self.check()
            pipeline = self._pipelines.get(source)
            if pipeline is None:
                try:
                    module = self.device.create_shader_module(code=source)
                    pipeline = self.device.create_compute_pipeline(
                        layout=self._pipeline_layout, compute={"module": module, "entry_point": "main"}
                    )
                except wgpu.GPUError as err:
                    raise self._gpu_error(err) from None
                self._pipelines[source] = pipeline
                if len(self._pipelines) > KEPT_PIPELINES:  # compiled operators keep their own
                    self._pipelines.popitem(last=False)
            else:
                self._pipelines.move_to_end(source)
            return pipeline

    @property
    def pipeline_count(self) -> int:
        return len(self._pipelines)

    def _create(self, size: int, usage, mapped: bool = False):
        """A new buffer (``mapped``: at creation), counted; running out of memory raises
        ``GPUMemoryError``."""
        with self._lock:
            self.check()
            limited = self.memory_limit is not None and usage & wgpu.BufferUsage.STORAGE
            if limited and self.held_bytes + size > self.memory_limit:
                self._drop_kept()
            if limited and self.held_bytes + size > self.memory_limit:
                raise self._memory_error(size, f"the limit set for this device is {self.memory_limit} bytes")
            try:
                buffer = self.device.create_buffer(size=size, usage=usage, mapped_at_creation=mapped)
            except wgpu.GPUError as err:
                error = self._gpu_error(err)
                if isinstance(error, DeviceLostError):
                    raise error from None
                if not self._drop_kept():
                    raise self._memory_error(size, str(err).strip().splitlines()[-1].strip()) from None
                try:  # kept buffers were given back: once more
                    buffer = self.device.create_buffer(size=size, usage=usage, mapped_at_creation=mapped)
                except wgpu.GPUError as again:
                    raise self._memory_error(size, str(again).strip().splitlines()[-1].strip()) from None
            self._live.add(buffer)
            return buffer

    @property
    def held_bytes(self) -> int:
        """Bytes of GPU memory this runner holds now: tensors, scratch and the storage pool
        (staging buffers live in host memory and are not counted)."""
        with self._lock:
            return sum(b.size for b in list(self._live) if b.usage & wgpu.BufferUsage.STORAGE)

    def _destroy(self, buffer) -> None:
        """Destroy a buffer this runner made (its memory goes once the GPU is done with it).

        Recorded work and queued writes are submitted first: they may use the buffer, and
        wgpu-native aborts the process when a submit refers to a destroyed buffer."""
        with self._lock:
            if self._pending or self._queued:
                self._submit()
            self._live.discard(buffer)
            buffer.destroy()

    def _memory_error(self, size: int, why: str) -> GPUMemoryError:
        return GPUMemoryError(
            f"device {self.name!r} could not allocate {size} bytes ({why}); dmlgpu holds "
            f"{self.held_bytes} bytes on it. Release tensors you no longer need (Tensor.release()), "
            f"close devices you no longer use, or use smaller inputs; the device remains usable")

    def _drop_kept(self) -> bool:
        """Give back the buffers kept for reuse (pools, staging, rings); whether any were."""
        with self._lock:
            dropped = False
            for buffer in self._take_kept():
                self._destroy(buffer)
                dropped = True
            return dropped

    def _take_kept(self) -> list:
        """Every buffer kept for reuse (storage pool, read and write staging, rings), taken out
        of the pools. A write staging buffer may be mid-map: destroying it cancels the map."""
        buffers = self._pool.clear() + self._readable.clear()
        buffers += [m.buffer for m in self._staging.clear() + self._writes.clear()]
        buffers += [b for ring in self._rings.values() for b, _ in ring]
        self._rings.clear()
        return buffers

    def storage(self, nbytes: int, data=None, readable: bool = False):
        """A storage buffer of ``bound_size(nbytes)`` bytes from the pool of its kind, optionally
        filled; ``readable`` (where ``in_place``): in mappable memory, which a read maps as it
        is (``_read_in_place``)."""
        if readable and not self.in_place:
            raise AdapterError(f"readable storage needs the native path and mappable-primary-buffers, "
                               f"which adapter {self.name!r} (path {self.path.name!r}) lacks")
        size, usage = bound_size(nbytes), _READABLE if readable else _STORAGE
        with self._lock:
            buffer = self._pools[usage].take(size) or self._create(size, usage)
        if data is not None:
            self.write(buffer, data)
        return buffer

    def free(self, buffer, keep: bool = True) -> None:
        """Give a storage buffer back: kept for reuse if small (and ``keep``), else destroyed at once.

        Work already recorded that uses it still runs: a kept buffer's next contents are
        written by later work, after it on the queue, and a destroyed buffer's memory is
        freed by wgpu once the GPU is done with it."""
        with self._lock:
            if self._lost is not None:
                return
            pool = self._pools.get(buffer.usage)
            for old in pool.put(buffer) if keep and pool is not None else [buffer]:
                self._destroy(old)

    # kept for the benchmark scripts' ceiling kernels
    release = free

    def uniform(self, words: np.ndarray):
        return self.device.create_buffer_with_data(
            data=words, usage=wgpu.BufferUsage.UNIFORM | wgpu.BufferUsage.COPY_DST
        )

    def bind(self, params, src, dst, scratch=None):
        """The bind group of one pass: its parameters, input, output and the scratch it keeps
        between dispatches (binding 3, if any). ``src`` and ``dst`` are buffers, or (buffer,
        offset, size) windows of them."""
        def resource(target) -> dict:
            if isinstance(target, tuple):
                buffer, offset, size = target
                return {"buffer": buffer, "offset": offset, "size": min(size, buffer.size - offset)}
            return {"buffer": target}

        self.check()
        return self.device.create_bind_group(
            layout=self._bind_layout,
            entries=[{"binding": i, "resource": resource(t)}
                     for i, t in enumerate((params, src, dst, scratch or self._no_scratch))],
        )

    # ------------------------------------------------------------------ recording and submitting

    def _encode(self, steps, clear=None, timestamps=None, copies=(), into=None):
        """An encoder (``into``, or a new one) with ``clear`` zeroed, the steps (pipeline, bind
        group, grid), then ``copies`` (src, src offset, dst, dst offset, size) recorded; not
        finished, and with no pass left open: ``_submit`` finishes it.

        ``timestamps`` = (query set, first index): the begin time is written before the
        clear (or by the first pass) and the end time by the last pass. If recording fails, a
        new encoder is dropped; ``into`` is never handed in half-recorded (only copies, which
        open no pass, are added to one).
        """
        encoder = into or self.path.encoder()
        try:
            if timestamps is None:
                encoder.record(clear, steps)
                for copy in copies:
                    encoder.copy(*copy)
                return encoder
            queries, first = timestamps
            if clear:  # an empty pass, so that the clear is inside the timing
                encoder.stamp(queries, first)
            for buffer in clear or ():
                encoder.clear(buffer)
            for i, (pipeline, bind_group, grid) in enumerate(steps):
                indices = {}
                if i == 0 and not clear:
                    indices["beginning_of_pass_write_index"] = first
                if i == len(steps) - 1:
                    indices["end_of_pass_write_index"] = first + 1
                encoder.dispatch(pipeline, bind_group, grid, {"query_set": queries, **indices} if indices else None)
            for copy in copies:
                encoder.copy(*copy)
            return encoder
        except BaseException as err:
            if into is None:
                encoder.drop()
            if isinstance(err, wgpu.GPUError):
                raise self._gpu_error(err) from None
            raise

    def dispatch(self, steps, *, clear=None, reads: int = 0) -> None:
        """Record the steps (pipeline, bind group, grid), ``clear`` zeroed first (on the native
        path: keep them, to be recorded at the submit).

        They run at the next submit: a read, a write, or at once when the work recorded since
        the last submit reads ``SUBMIT_EARLY_BYTES`` or more (``reads``: what these steps read),
        so that the GPU runs large work while the caller records the next.
        """
        with self._lock:
            self.check()
            self._pending.append(_Deferred(self.path, steps, clear) if self._defers else self._encode(steps, clear))
            self._count_pending(reads)

    def _count_pending(self, nbytes: int) -> None:
        """Count bytes that recorded work reads or queued writes hold, and submit once they
        reach ``SUBMIT_EARLY_BYTES`` (under the lock)."""
        self._pending_bytes += nbytes
        if self._pending_bytes >= SUBMIT_EARLY_BYTES:
            self._submit()

    def _submit(self, extra=(), read=None):
        """Finish and submit the pending encoders (and ``extra``), with the queued writes
        ahead of them, and ``read`` = (src, offset, map of a MAP_READ staging buffer): its
        copy recorded last and its map started (``path.submit``). The submission's ticket;
        None where there was nothing to submit."""
        encoders, self._pending, self._pending_bytes = self._pending + list(extra) if extra else self._pending, [], 0
        queued, self._queued = self._queued, False
        remap, self._remap = self._remap, []
        if not encoders and not queued and read is None:
            return None
        try:
            ticket = self.path.submit(encoders, read)
        except wgpu.GPUError as err:
            for m in remap:
                self._destroy(m.buffer)
            raise self._gpu_error(err) from None
        finally:
            for encoder in encoders:
                encoder.drop()
        if remap:
            self._remapped(remap)
        return ticket

    def _remapped(self, staged: list) -> None:
        """Map the write staging buffers of ``staged`` maps again, after the submit that copies
        out of them: ready for the next write once the GPU has copied out."""
        for m in staged:
            again = self.path.new_map(m.buffer, m.size)
            self.path.start_map(again, write=True)
            for old in self._writes.put(again):  # destroying one cancels its map
                self._destroy(old.buffer)

    def flush(self) -> None:
        """Submit the recorded work."""
        with self._lock:
            self.check()
            self._submit()

    def write(self, buffer, data, offset: int = 0) -> None:
        """Write bytes into a buffer at ``offset``, padding the tail to 4 bytes.

        Small writes go through the queue (wgpu copies them into staging of its own and into
        ``buffer`` at the next submit, ahead of that submit's work), so work recorded before
        is submitted first: the write lands after it. Queued bytes count towards the early
        submit like the bytes of recorded passes, which bounds the staging wgpu holds.
        Mid-sized writes (``_write_staged``) are copied into reused mapped staging; large
        writes stream through the staging ring (``upload``).
        """
        raw = np.frombuffer(memoryview(data).cast("B"), np.uint8)
        if raw.nbytes > self.stream_above:
            self.upload(buffer, raw, offset)
            return
        if raw.nbytes > self.queue_write_max:
            self._write_staged(buffer, raw, offset)
            return
        if raw.nbytes % 4:
            padded = np.zeros(word_size(raw.nbytes), np.uint8)
            padded[:raw.nbytes] = raw
            raw = padded
        with self._lock:
            self.check()
            if self._pending:
                self._submit()
            try:
                self.path.write_buffer(buffer, offset, raw)
            except wgpu.GPUError as err:
                raise self._gpu_error(err) from None
            self._queued = True
            self._count_pending(raw.nbytes)

    def _write_staged(self, buffer, raw: np.ndarray, offset: int) -> None:
        """``write`` through a reused staging buffer that is already mapped: the bytes are
        copied in, and the GPU's copy out of it is recorded like any other work (in order
        with it, submitted with the next read); it is mapped again after that submit."""
        size = word_size(raw.nbytes)
        kept_size = 1 << (size - 1).bit_length()  # size classes: few pools, at most 2x
        with self._lock:
            self.check()
            m = self._writes.take(kept_size) or self.path.new_map(
                self._create(kept_size, _MAP_WRITE, mapped=True), kept_size, done=True)
        with self._dropped_on_failure(m.buffer):
            self.path.wait(m, None)  # mapped again once the GPU has copied out of it
            self.path.fill(m, raw)
            with self._lock:
                self.check()
                self._pending.append(self._encode((), copies=[(m.buffer, 0, buffer, offset, size)]))
                self._remap.append(m)
                self._count_pending(size)

    def _dropped_on_failure(self, staging) -> "_DroppedOnFailure":
        """Destroy the staging buffer ``staging`` if the block fails (it may be mid-map, so it
        must not go back to a pool), wgpu's errors raised as ours."""
        return _DroppedOnFailure(self, staging)

    # ------------------------------------------------------------------ small calls in one go

    def hot_call(self, bind, in_nbytes: int, out_nbytes: int, clear: bool, output_in_place: bool):
        """A small NumPy-in, NumPy-out call's kit, made once and reused (``run_hot``): its input
        and output buffers, its passes bound to them (``bind(input, output)`` returns the
        steps), staging for the upload and the read-back (each with its map) and the
        ``DmlCall`` holding every handle. Kits are not shared: a thread takes one while it
        runs it. None on the public path, which has no hot loop.

        Where the device binds mappable buffers (``in_place``: "mappable-primary-buffers"),
        the upload staging is the input itself and, for an output the caller says may be
        (``output_in_place``: ``CompiledOperator``), the read-back staging is the output: no
        copy on either side. On the H100 a dispatch writing its 16 bytes straight into
        mapped memory took 45-49 us a round trip against 54-59 with a copy into staging
        (finish 3 us shorter, the wait 5 us), interleaved in one process."""
        if not isinstance(self.path, _Native):
            return None
        n = self.path
        kit = _HotCall()
        in_size = word_size(in_nbytes)
        if self.in_place:  # a size a shader may bind and read in 16-byte quads
            kit.input = self._create(bound_size(in_nbytes), _MAP_WRITE_BOUND, mapped=True)
            wstaging = kit.input
        else:
            kit.input = self.storage(in_nbytes)
            wstaging = self._create(in_size, _MAP_WRITE, mapped=True)
        out_size = max(4, word_size(out_nbytes))  # what is copied and mapped (a bound buffer is longer)
        if self.in_place and output_in_place:
            kit.output = rstaging = self.storage(out_nbytes, readable=True)
        else:
            kit.output, rstaging = self.storage(out_nbytes), self._create(out_size, _MAP_READ)
        kit.wmap = n.new_map(wstaging, in_size, done=True)
        kit.rmap = n.new_map(rstaging, out_size)
        # the bind groups and pipelines the C struct points at stay alive, and (a Steps list
        # keeps it) the C array of them
        steps = bind(kit.input, kit.output)
        kit.steps = steps if isinstance(steps, Steps) else Steps(steps)
        c = kit.c = n.hot_ffi.new("DmlCall *")
        c.device, c.queue = n.handle, n.queue
        c.wstaging, c.wstate, c.input, c.in_size = wstaging._internal, kit.wmap.state, kit.input._internal, in_size
        n.put_passes(c, kit.steps, kit.output if clear else None)  # kit.steps keeps the array
        c.output, c.out_offset = kit.output._internal, 0
        c.rstaging, c.rstate, c.out_size = rstaging._internal, kit.rmap.state, out_size
        kit.ticket = n.hot_ffi.addressof(c, "ticket")
        kit.handles = n.hot_ffi.new("void *[1]")
        return kit

    def run_hot(self, kit, data: np.ndarray, out: np.ndarray) -> None:
        """Run the kit's call on the bytes ``data`` into the uint8 array ``out``: the bytes
        copied into the upload staging (outside the lock: the kit is this thread's), then
        under the lock the work recorded before it and the call submitted together
        (``dml_record_call``, ``dml_submit_call``), then the read-back waited for and copied out. A kit that fails must
        not be run again (its staging may be mid-map)."""
        n = self.path
        self.check()
        n.wait(kit.wmap, None)  # landed once the GPU copied out of it, in the call before
        n.fill(kit.wmap, data)
        with self._lock:
            self.check()
            if self._remap or self._queued:  # writes staged or queued before: submitted first, in order
                self._submit()
            pending, self._pending, self._pending_bytes = self._pending, [], 0
            try:
                n.call(kit.c, pending, kit.handles)
            except wgpu.GPUError as err:
                raise self._gpu_error(err) from None
            finally:
                for encoder in pending:
                    encoder.drop()
        n.wait(kit.rmap, kit.ticket)
        n.drain(kit.rmap, out)

    # ------------------------------------------------------------------ large transfers

    def _take_ring(self, write: bool) -> list:
        """The staging ring for uploads (MAP_WRITE) or reads (MAP_READ), taken for one transfer:
        a second transfer at the same time makes its own. Each entry is [buffer, pending map]."""
        with self._lock:
            self.check()
            ring = self._rings.pop(write, None)
            if ring is None:
                usage = _MAP_WRITE if write else _MAP_READ
                ring = [[self._create(self.ring_chunk, usage), None] for _ in range(self.ring_depth)]
            threads = max(self.copy_threads.values())
            if self._copier is None and threads > 1:
                self._copier = concurrent.futures.ThreadPoolExecutor(threads, thread_name_prefix="dmlgpu-copy")
            return ring

    def _give_ring(self, write: bool, ring: list, ok: bool) -> None:
        """Keep a ring for the next transfer, or destroy it after a failure (a buffer of it may
        be mid-map) or when one is kept already."""
        with self._lock:
            if ok and self._lost is None and write not in self._rings:
                self._rings[write] = ring
                return
            for buffer, _ in ring:
                self._destroy(buffer)

    def _copy_host(self, dst: np.ndarray, src: np.ndarray, write: bool) -> None:
        """dst[:] = src on the threads of a write or a read (NumPy lets go of the GIL while it copies)."""
        copier, threads = self._copier, self.copy_threads[write]
        if copier is None or threads < 2 or src.nbytes < self.parallel_copy_above:
            np.copyto(dst, src)
            return
        copy_in_parts(copier, dst, src, threads)

    def upload(self, buffer, raw: np.ndarray, offset: int = 0, on_chunk=None) -> None:
        """Stream the bytes ``raw`` into ``buffer`` (see ``_upload``), Ctrl-C held back meanwhile."""
        with interrupts_held(), self.calls:
            self._upload(buffer, raw, offset, on_chunk)

    def _upload(self, buffer, raw: np.ndarray, offset: int = 0, on_chunk=None) -> None:
        """Stream the bytes ``raw`` into ``buffer`` at ``offset`` through the MAP_WRITE ring.

        The host fills one staging buffer (on several threads, outside the lock) while the GPU
        copies the ones before it. After each chunk's copy is submitted, ``on_chunk(bytes so
        far)`` is called under the lock, so that the caller can record work that reads what
        has arrived: it runs on the GPU while the next chunk is filled.
        """
        ring = self._take_ring(True)
        chunk = ring[0][0].size
        ok = False
        try:
            for i, start in enumerate(range(0, raw.nbytes, chunk)):
                entry = ring[i % len(ring)]
                staging, m = entry
                if m is None:  # a new ring: map it for the first time
                    m = self.path.new_map(staging, chunk)
                    with self._lock:
                        self.path.start_map(m, write=True)
                self.path.wait(m, None)  # mapped again once the GPU has copied out of it
                size = min(chunk, raw.nbytes - start)
                view = self.path.mapped(m)
                self._copy_host(view[:size], raw[start:start + size], write=True)
                del view
                with self._lock:
                    self.check()
                    self.path.unmap(m)
                    entry[1] = None
                    copy = (staging, 0, buffer, offset + start, word_size(size))
                    self._submit([self._encode((), copies=[copy])])
                    entry[1] = self.path.new_map(staging, chunk)
                    self.path.start_map(entry[1], write=True)
                    if on_chunk is not None:
                        on_chunk(start + size)
            ok = True
        except wgpu.GPUError as err:
            raise self._gpu_error(err) from None
        finally:
            self._give_ring(True, ring, ok)

    def read_into(self, buffer, out: np.ndarray, offset: int = 0) -> np.ndarray:
        """Copy ``out.nbytes`` bytes of ``buffer`` from ``offset`` into the uint8 array ``out``,
        after all recorded work: small reads through one staging buffer (one submit, one map),
        large ones streamed through the MAP_READ ring. Ctrl-C is held back meanwhile."""
        with interrupts_held(), self.calls:
            return self._read_into(buffer, out, offset)

    def _read_into(self, buffer, out: np.ndarray, offset: int) -> np.ndarray:
        nbytes = out.nbytes
        if nbytes > self.stream_above:
            return self._read_streamed(buffer, out, offset)
        if buffer.usage == _READABLE and offset == 0 and nbytes <= buffer.size:
            return self._read_in_place(buffer, out)
        size = max(4, word_size(nbytes))
        with self._lock:
            self.check()
            m = self._staging.take(size) or self.path.new_map(self._create(size, _MAP_READ), size)
            try:
                ticket = self._submit(read=(buffer, offset, m))
            except BaseException:
                self._destroy(m.buffer)
                raise
        self._finish_read(m, ticket, out)
        return out

    def _read_in_place(self, buffer, out: np.ndarray) -> np.ndarray:
        """Read a buffer that passes wrote in mappable memory (``storage(readable=True)``)
        through a map of its own: no copy into staging. Submit, wait and unmap all happen
        under the lock, so that no other submit uses the buffer while it is mapped (wgpu-native
        aborts the process on one). On the H100 a dispatch writing its 16 bytes straight into
        mapped memory took 45-49 us a round trip against 54-59 with a copy into staging."""
        n = self.path
        with self._lock:
            self.check()
            m = self._read_maps.get(buffer)
            if m is None:  # (it holds the handle, not the buffer, which may go with its tensor)
                m = self._read_maps[buffer] = n.new_map(_Handle(buffer._internal), buffer.size)
            if m.call is not None:
                m.call[0].ticket = 0  # set by the submit, which starts the map (wgpu counts from 1)
            try:
                n.wait(m, self._submit(read=(buffer, 0, m)))
                n.drain(m, out)
            except BaseException as err:
                # Once submitted, the buffer (its tensor's) may be mid-map or mapped: it can
                # be neither destroyed nor used again, so the device is taken as lost.
                if m.call is not None and m.call[0].ticket != 0:
                    self._read_maps.pop(buffer, None)
                    self._lost = self._lost or f"was lost (a read failed with its buffer mapped: {err!r})"
                raise
        return out

    def _finish_read(self, m: _Map, ticket, out: np.ndarray) -> None:
        """Wait for map ``m`` (outside the lock), copy its first ``out.nbytes`` bytes out,
        unmap, and keep the staging buffer for the next read. A failure on the way drops the
        buffer: it may still be mid-map."""
        with self._dropped_on_failure(m.buffer):
            self.path.wait(m, ticket)
            self.path.drain(m, out)
        with self._lock:
            for old in self._staging.put(m) if self._lost is None else [m]:
                self._destroy(old.buffer)

    def _read_streamed(self, buffer, out: np.ndarray, offset: int) -> np.ndarray:
        """Large reads: the host copies chunk i out while the GPU copies the chunks after it."""
        ring = self._take_ring(False)
        chunk = ring[0][0].size
        starts = list(range(0, out.nbytes, chunk))
        tickets: dict[int, object] = {}
        ok = False

        def start(i: int) -> None:
            entry = ring[i % len(ring)]
            size = min(chunk, out.nbytes - starts[i])
            with self._lock:
                self.check()
                entry[1] = self.path.new_map(entry[0], word_size(size))
                tickets[i] = self._submit(read=(buffer, offset + starts[i], entry[1]))

        try:
            for i in range(min(len(ring), len(starts))):
                start(i)
            for i, first in enumerate(starts):
                entry = ring[i % len(ring)]
                m = entry[1]
                self.path.wait(m, tickets.pop(i))
                view = self.path.mapped(m)
                size = min(chunk, out.nbytes - first)
                self._copy_host(out[first:first + size], view[:size], write=False)
                del view
                self.path.unmap(m)
                entry[1] = None
                if i + len(ring) < len(starts):
                    start(i + len(ring))
            ok = True
        except wgpu.GPUError as err:
            raise self._gpu_error(err) from None
        finally:
            self._give_ring(False, ring, ok)
        return out

    def read(self, buffer, nbytes: int) -> bytes:
        """The first ``nbytes`` of a buffer, after all recorded work."""
        return self.read_into(buffer, np.empty(nbytes, np.uint8)).tobytes()

    # ------------------------------------------------------------------ timing

    def bare_round_trips(self, calls: int, upload: np.ndarray | None = None) -> np.ndarray | None:
        """What bounds a small call, for the benchmarks: wall seconds of each of ``calls``
        round trips straight through wgpu-native with nothing of dmlgpu's in between (the
        calls of ``shared/probes/dispatch_floor.py``): a queue write of the bytes ``upload``
        if given, one 1-workgroup dispatch and a 16-byte copy in one command buffer, one
        submit, a map polled as ``_Native.wait`` polls, and the 16 bytes copied out. Where
        passes may bind mappable memory (``in_place``), the dispatch writes the mapped buffer
        itself, with no copy, as a small call of ours does. None on the public path."""
        if not isinstance(self.path, _Native):
            return None
        n = self.path
        ffi, lib = n.ffi, n.lib
        with self.calls:
            pipeline = self.pipeline(_BARE_WGSL)
            params, src, dst = self.uniform(np.zeros(4, np.uint32)), self.storage(16), self.storage(16)
            written, write = None, None  # the queue write's target, and its (target, host bytes, size)
            if upload is not None:
                written = self.storage(upload.nbytes)
                write = (written._internal, ffi.from_buffer(upload), upload.nbytes)
            in_place = self.in_place
            staging = self._create(16, _READABLE if in_place else _MAP_READ)
            group = self.bind(params, src, staging if in_place else dst)
            self.flush()
            done = [False]

            @ffi.callback("void(WGPUMapAsyncStatus, WGPUStringView, void *, void *)")
            def mapped(status, message, userdata1, userdata2):
                done[0] = True

            info = ffi.new("WGPUBufferMapCallbackInfo *")
            info.mode, info.callback = lib.WGPUCallbackMode_AllowProcessEvents, mapped
            buffers = ffi.new("WGPUCommandBuffer[1]")
            out = np.empty(16, np.uint8)
            handles = (pipeline._internal, group._internal, dst._internal, staging._internal)
            times = np.empty(calls)
            try:
                for i in range(calls):
                    start = time.perf_counter()
                    if write is not None:
                        lib.wgpuQueueWriteBuffer(n.queue, write[0], 0, write[1], write[2])
                    enc = lib.wgpuDeviceCreateCommandEncoder(n.handle, n.encoder_desc)
                    compute = lib.wgpuCommandEncoderBeginComputePass(enc, n.pass_desc)
                    lib.wgpuComputePassEncoderSetPipeline(compute, handles[0])
                    lib.wgpuComputePassEncoderSetBindGroup(compute, 0, handles[1], 0, ffi.NULL)
                    lib.wgpuComputePassEncoderDispatchWorkgroups(compute, 1, 1, 1)
                    lib.wgpuComputePassEncoderEnd(compute)
                    lib.wgpuComputePassEncoderRelease(compute)
                    if not in_place:
                        lib.wgpuCommandEncoderCopyBufferToBuffer(enc, handles[2], 0, handles[3], 0, 16)
                    buffers[0] = lib.wgpuCommandEncoderFinish(enc, n.buffer_desc)
                    lib.wgpuCommandEncoderRelease(enc)
                    lib.wgpuQueueSubmit(n.queue, 1, buffers)
                    lib.wgpuCommandBufferRelease(buffers[0])
                    done[0] = False
                    lib.wgpuBufferMapAsync(handles[3], lib.WGPUMapMode_Read, 0, 16, info[0])
                    give_up = time.perf_counter() + n.spin_s
                    while not done[0] and time.perf_counter() < give_up:
                        lib.wgpuDevicePoll(n.handle, False, ffi.NULL)
                    while not done[0]:
                        lib.wgpuDevicePoll(n.handle, True, ffi.NULL)
                    ffi.memmove(ffi.from_buffer(out), lib.wgpuBufferGetConstMappedRange(handles[3], 0, 16), 16)
                    lib.wgpuBufferUnmap(handles[3])
                    times[i] = time.perf_counter() - start
            finally:
                for buffer in (params, staging):
                    self._destroy(buffer)
                for buffer in (src, dst, written):
                    if buffer is not None:
                        self.free(buffer)
        return times


    def gpu_times(self, steps, *, clear=None, repeats: int = 10) -> np.ndarray:
        """Seconds each of ``repeats`` runs of the steps took, from timestamp queries.

        The timestamps bracket the passes and the clear of the output, if any.
        """
        with interrupts_held(), self.calls:
            return self._gpu_times(steps, clear, repeats)

    def _gpu_times(self, steps, clear, repeats: int) -> np.ndarray:
        if "timestamp-query" not in self.features:
            raise AdapterError(f"adapter {self.name!r} has no timestamp-query feature")
        queries = self.device.create_query_set(type="timestamp", count=2 * repeats)
        resolved = self.device.create_buffer(
            size=16 * repeats, usage=wgpu.BufferUsage.QUERY_RESOLVE | wgpu.BufferUsage.COPY_SRC
        )
        try:
            # Each repeat is submitted and waited for alone (a read waits for the queue): the
            # empty pass that starts the timing before a clear depends on nothing, so without
            # the wait it could run while the previous repeat is still busy.
            for i in range(repeats):
                with self._lock:
                    self.check()
                    self._pending.append(self._encode(steps, clear, (queries, 2 * i)))
                self.read(resolved, 4)
            with self._lock:
                encoder = self.path.encoder()
                encoder.resolve(queries, 2 * repeats, resolved)
                self._pending.append(encoder)
            ticks = np.frombuffer(self.read(resolved, 16 * repeats), np.uint64).reshape(repeats, 2)
        finally:
            resolved.destroy()
            queries.destroy()
        return (ticks[:, 1] - ticks[:, 0]).astype(np.float64) * 1e-9  # WebGPU timestamps are nanoseconds
