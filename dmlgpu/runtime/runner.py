"""The runner: orders work on the queue and owns the lifetime of a wgpu device.

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

import dataclasses
import logging
import os
import threading
import time
import traceback
import warnings
import weakref
import concurrent.futures
from collections import OrderedDict

import numpy as np
import wgpu

from ..errors import AdapterError, DeviceLostError, GPUMemoryError
from ..plan import Capabilities
from .adapters import choose_adapter, release_device, request_device
from .hot import SPIN_S, hot_copier
from .interrupts import interrupts_held
from .memory import (_MAP_READ, _MAP_WRITE, _MAP_WRITE_BOUND, _READABLE, _STAGING_POOL_BYTES, _STORAGE, POOL_BYTES,
                     _Pool, bound_size, word_size)
from .native import Steps, _Deferred, _Handle, _Native, native_unsupported
from .public import _Map, _Public
from .transfers import (QUEUE_WRITE_MAX, READ_THREADS, RING_CHUNK, RING_DEPTH, STREAM_ABOVE, WRITE_THREADS,
                        copy_in_parts)

#: Features used when the adapter has them. "mappable-primary-buffers" lets a small call's
#: passes bind its staging buffers (``Runner.hot_call``).
_WANTED_FEATURES = ("shader-int64", "shader-f16", "subgroup", "timestamp-query", "shader-int64-atomic-all-ops",
                    "mappable-primary-buffers")


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

#: Recorded work reading at least this many bytes is submitted at once, so that the GPU runs
#: it while Python records the next call; smaller work waits for the next read (one submit).
SUBMIT_EARLY_BYTES = 4 << 20
#: Pipelines the cache keeps (least recently used go first; operators hold their own).
KEPT_PIPELINES = 128
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


class _HotCall:
    """What ``Runner.hot_call`` makes: see there."""

    __slots__ = ("input", "output", "steps", "wmap", "rmap", "c", "ticket", "handles")



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
