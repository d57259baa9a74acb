"""The native backend: wgpu-native through the ``ffi`` / ``lib`` wgpu-py exports, a small
call's sequence in C (``hot.py``), the calling thread polling the device.

Owns ``NativePath`` (what the runner drives), its encoders, deferred dispatches, maps and the C
form of a list of steps.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import wgpu

from ..errors import DeviceLostError
from .hot import HOT_FUNCTIONS, FILL_PARALLEL_ABOVE, hot_library

#: wgpu-py versions the native path is written against, with the wgpu-native each bundles.
NATIVE_WGPU = {"0.32.0": "29.0.1.1"}
#: A map that has not landed this long after its queue went idle means the device is gone.
MAP_TIMEOUT_S = 10.0

_NO_QUERY = 0xFFFFFFFF  # WGPU_QUERY_SET_INDEX_UNDEFINED


def native_unsupported() -> str | None:
    """Why the native path cannot be used with the installed wgpu-py, or None if it can."""
    from wgpu.backends import wgpu_native

    if NATIVE_WGPU.get(wgpu.__version__) != wgpu_native.__version__:
        known = ", ".join(f"wgpu-py {k} (wgpu-native {v})" for k, v in NATIVE_WGPU.items())
        return (f"the native path is written against {known}, but wgpu-py {wgpu.__version__} "
                f"(wgpu-native {wgpu_native.__version__}) is installed")
    return None


class NativeMap:
    """One map of a staging buffer on the native path: its outcome lands in a C ``DmlState``
    (``_hot.c``), which outlives this object if the map is still pending when it goes."""

    __slots__ = ("buffer", "size", "state", "call", "_drop")

    def __init__(self, hot, buffer, size: int, done: bool = False):
        self.buffer, self.size = buffer, size
        self.call: tuple | None = None  # a read's (DmlCall, its ticket's address): NativePath.read_call
        self.state = hot.dml_state_new(done)
        if not self.state:
            raise MemoryError("no memory for a map state")
        self._drop = hot.dml_state_drop

    def __del__(self):
        self._drop(self.state)


class NativePath:
    """The same, straight to wgpu-native through the ``ffi`` / ``lib`` wgpu-py exports, the
    small call's sequence in C (``_hot.c``), the calling thread polling the device.

    Errors wgpu-native reports while a C function runs come to wgpu-py's error handler on
    this thread; ``_checked`` and ``submit_calls`` collect them as wgpu-py's ``libf`` wrappers do, and raise.
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
        for i, name in enumerate(HOT_FUNCTIONS):
            fns.fn[i] = self.ptr(getattr(lib, name))
        fns.callback_mode, fns.map_success = lib.WGPUCallbackMode_AllowProcessEvents, lib.WGPUMapAsyncStatus_Success
        fns.map_read, fns.map_write = lib.WGPUMapMode_Read, lib.WGPUMapMode_Write
        fns.encoder_descriptor, fns.pass_descriptor, fns.buffer_descriptor = (
            self.encoder_desc, self.pass_desc, self.buffer_desc)
        self.spin_s = 0.0  # how long a wait polls without blocking first (Runner sets it)
        self.nap_s = 0.0  # then, in a large transfer's wait, how long it sleeps between polls (``wait``)
        # the threads waiting on this device take turns polling it (``dml_wait``)
        poller = self.hot.dml_poller_new()
        if not poller:
            raise MemoryError("no memory for a device poller")
        self.poller = self.hot_ffi.gc(poller, self.hot.dml_poller_free)
        fns.poller = self.poller
        self.copier = self.null  # helper threads of copies into staging (Runner sets them: hot_copier)
        self._room = 0  # (submit_calls' C arrays, made on first use)
        self.submitted = 0  # the index of the last submission (submit_calls'; 0: none yet)
        self._calls = self._buffers = self.null

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

    def new_map(self, buffer, size: int, done: bool = False) -> NativeMap:
        return NativeMap(self.hot, buffer, size, done)

    def encoder(self):
        return NativeEncoder(self)

    def timed_pass(self, queries, begin: int, end: int):
        """A pass descriptor writing timestamps ``begin`` / ``end`` (or ``_NO_QUERY``), with the
        struct it points to (both must live until the pass has begun)."""
        stamps = self.ffi.new("WGPUPassTimestampWrites *")
        stamps.querySet, stamps.beginningOfPassWriteIndex, stamps.endOfPassWriteIndex = queries._internal, begin, end
        desc = self.ffi.new("WGPUComputePassDescriptor *")
        desc.timestampWrites = stamps
        return desc, stamps

    def submit(self, encoders: list, read=None):
        """As ``PublicPath.submit``, through ``_hot.c``; the ticket is the submission's index."""
        if read is None:
            return self.hot_ffi.new("uint64_t *", self.submit_calls(encoders, []))
        src, offset, m = read
        c, ticket = self.read_call(m, src, offset)
        self.submit_calls(encoders, [c])
        return ticket  # valid while the map is held

    def read_call(self, m: NativeMap, src, offset: int) -> tuple:
        """The ``DmlCall`` that reads ``m.size`` bytes of ``src`` from ``offset`` into ``m``'s
        buffer (a copy, unless the buffer is ``src`` itself: a read in place) and starts its
        map, with no passes; made once for each map (``m.call``: the call and its ticket's
        address)."""
        if m.call is None:
            c = self.hot_ffi.new("DmlCall *")
            c.rstaging, c.rstate, c.out_size = m.buffer._internal, m.state, m.size
            m.call = (c, self.hot_ffi.addressof(c, "ticket"))
        c = m.call[0]
        c.output, c.out_offset = src._internal, offset
        return m.call

    def submit_calls(self, pending: list, calls) -> int:
        """Record the small calls ``calls`` (``DmlCall`` pointers) into one encoder after the
        ``pending`` work and submit it all in one submission, each call's maps started and its
        ticket set (``dml_record_calls``, ``dml_submit_calls``): what the threads that commit at
        once share. The pending dispatches after the last pending encoder (``Deferred``, as a
        resident call leaves them) are recorded into that one encoder too, in order, each from
        the ``DmlCall`` its steps keep (``Deferred.call``). The submission's index.

        One runs at a time (the runner's lock, or the batch it leads: ``Commits.commit``), so
        the C arrays of calls and command buffers are this path's own, made once and grown
        when a submission needs more."""
        split = len(pending)
        while split and type(pending[split - 1]) is Deferred and len(pending[split - 1].clear) < 2:
            split -= 1
        count = len(pending) - split + len(calls)
        if count > self._room or split >= self._room:
            self._room = 2 * max(count, split + 1)
            self._calls = self.hot_ffi.new("DmlCall *[]", self._room)
            self._buffers = self.hot_ffi.new("void *[]", self._room)
        array, buffers = self._calls, self._buffers
        kept: list = []  # (plain lists' C arrays live until the calls return)
        i = 0
        for d in pending[split:]:
            array[i] = d.call(kept)
            i += 1
        for c in calls:
            array[i] = c
            i += 1
        for k in range(split):
            buffers[k] = pending[k].take()
        hot, errors = self.hot, self.errors
        # (no poll starts from here until the submission's maps are started: _hot.c's DmlPoller)
        errors.capture("finish")  # as libf collects what wgpu-native reports meanwhile
        try:
            finished = hot.dml_record_calls(self.fns, self.handle, array, count, buffers, split)
        finally:
            error = errors.release("finish")
        if error is not None:  # a submit of them would abort the process
            hot.dml_release(self.fns, buffers, split + 1)
            hot.dml_resume_polls(self.fns)
            raise self.error_types.get(error[0], wgpu.GPUError)(error[1])
        self.submitted = hot.dml_submit_calls(self.fns, self.queue, array, count, buffers, finished)
        return self.submitted

    def put_passes(self, c, steps, clear=None):
        """Set ``steps`` on the ``DmlCall`` ``c``, after the buffer ``clear`` zeroed (None:
        none); their C array, which must live as long as ``c`` is run with them."""
        array = steps_array(self, steps)
        c.steps, c.n_steps = array, len(steps)
        c.clear, c.clear_size = (self.null, 0) if clear is None else (clear._internal, clear.size)
        return array

    def start_map(self, m: NativeMap, write: bool) -> None:
        self._checked("map", self.hot.dml_map, self.fns, m.buffer._internal, write, m.size, m.state)

    def start_read_map(self, m: NativeMap) -> None:
        """Start the map of a read in place as ``dml_submit_calls`` starts one after its submit:
        a map that fails says so in its state, which ``read`` raises."""
        self.hot.dml_map(self.fns, m.buffer._internal, 0, m.size, m.state)

    def wait(self, m: NativeMap, ticket, nap: bool = False) -> None:
        """Wait until the map has landed (``dml_wait``), polling the device when no other
        thread does (one thread polls at a time; the others' maps land in its polls): first
        without blocking, for up to ``spin_s`` (a blocking poll returns tens of microseconds
        after the GPU is done: benchmarks/LOG.md, "The settings' measurements"), then blocking,
        which leaves the core to others; or, with ``nap`` (a large transfer's wait), still
        without blocking every ``nap_s``, asleep between polls, which leaves the core to others
        too and, unlike a blocking poll, lets other threads submit meanwhile (``hot.NAP_S``). No
        lock of ours is held, nor the interpreter's (cffi lets go of it for every C call)."""
        self._landed(self.hot.dml_wait(self.fns, self.handle, m.state, self.spin_s, self.nap_s if nap else 0.0,
                                       MAP_TIMEOUT_S, self.null if ticket is None else ticket))

    def pending(self, m: NativeMap) -> bool:
        """The map has not landed (its C state, read without waiting)."""
        return self.hot.dml_state(m.state) == 0

    def read(self, m: NativeMap, ticket, out: np.ndarray, nap: bool = False) -> None:
        """``wait`` for the map (``nap``: as a large transfer's), then copy its first
        ``out.nbytes`` bytes into the uint8 array ``out`` and unmap it, in one C call (``dml_read``)."""
        self._landed(self.hot.dml_read(self.fns, self.handle, m.state, self.spin_s, self.nap_s if nap else 0.0,
                                       MAP_TIMEOUT_S, self.null if ticket is None else ticket, m.buffer._internal,
                                       m.size, self.hot_ffi.from_buffer(out, require_writable=True), out.nbytes))

    @staticmethod
    def _landed(outcome: int) -> None:
        if outcome == -1:
            raise DeviceLostError(f"a buffer map did not complete in {MAP_TIMEOUT_S} s on an idle queue; "
                                  "the device is lost")
        if outcome == -2:
            raise DeviceLostError("a mapped buffer has no memory; the device is lost")
        if outcome != 1:
            raise DeviceLostError("a buffer map failed; the device is lost or the buffer was destroyed")

    def write_buffer(self, buffer, offset: int, raw: np.ndarray) -> None:
        self.libf.wgpuQueueWriteBuffer(self.queue, buffer._internal, offset, self.ffi.from_buffer(raw), raw.nbytes)

    def mapped(self, m: NativeMap) -> np.ndarray:
        pointer = self.lib.wgpuBufferGetMappedRange(m.buffer._internal, 0, m.size)
        if pointer == self.ffi.NULL:
            raise DeviceLostError("a mapped buffer has no memory; the device is lost")
        return np.frombuffer(self.ffi.buffer(pointer, m.size), np.uint8)

    def unmap(self, m: NativeMap) -> None:
        self.lib.wgpuBufferUnmap(m.buffer._internal)

    def fill(self, m: NativeMap, raw: np.ndarray) -> None:
        """``wait`` for the map (of write staging: mapped again once the GPU has copied out of
        it), then copy ``raw`` into it (zeros after it; on the copy helpers from
        ``FILL_PARALLEL_ABOVE`` bytes) and unmap it, in one C call (``dml_fill``)."""
        self._landed(self.hot.dml_fill(self.fns, self.handle, m.state, self.spin_s, MAP_TIMEOUT_S, self.copier,
                                       FILL_PARALLEL_ABOVE, m.buffer._internal, m.size, self.hot_ffi.from_buffer(raw),
                                       raw.nbytes))


class NativeEncoder:
    """A command encoder, created when something is first recorded into it (by ``_hot.c``
    for passes, ``handle`` otherwise)."""

    def __init__(self, native: NativePath):
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


class Deferred:
    """A dispatch on the native path, recorded when it is submitted rather than when it is
    made: a read that follows it alone records both with one C call (``NativePath.submit``);
    any other submit has ``take`` record it into an encoder of its own first, as a dispatch
    was recorded before. Pending like an encoder (``take``, ``drop``)."""

    __slots__ = ("n", "steps", "clear")

    def __init__(self, native: NativePath, steps, clear):
        self.n, self.steps, self.clear = native, steps, clear or ()

    def take(self):
        encoder = NativeEncoder(self.n)
        encoder.record(self.clear, self.steps)
        return encoder.take()

    def call(self, kept: list):
        """A ``DmlCall`` of these steps after their clear (one buffer at most), recorded by
        ``NativePath.submit_calls``: made once for a ``Steps`` list (an operator's passes bound
        to one set of buffers, zeroing the same output each time), else a new one whose C
        arrays go into ``kept``. Shared by every submission of those steps, which run one at
        a time, and read only (but for its ticket, which nothing reads)."""
        steps, clear = self.steps, self.clear[0] if self.clear else None
        made = getattr(steps, "call", None)
        if made is not None and made[0] is clear:
            return made[1]
        n = self.n
        c = n.hot_ffi.new("DmlCall *")
        kept.append((c, n.put_passes(c, steps, clear)))
        if isinstance(steps, Steps):
            steps.call = (clear, c)
        return c

    def drop(self) -> None:
        pass


class Handle:
    """A wgpu-native handle where a map wants a buffer (``Runner._read_in_place``)."""

    __slots__ = ("_internal",)

    def __init__(self, handle):
        self._internal = handle


class Steps(list):
    """A list of steps (pipeline, bind group, grid) that keeps its C form (``_hot.c``'s
    ``DmlStep`` array) once made: callers that record the same steps again keep one."""

    __slots__ = ("native", "buffers", "call")
    native: Any  # the C array, once made (``steps_array``)
    call: tuple  # (the buffer zeroed first or None, the DmlCall recording them), once made (``Deferred.call``)
    buffers: frozenset  # the tensors' buffers the steps bind, where known (``Runner.submit``)


def steps_array(n: NativePath, steps):
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
