"""GPU-side timers only the benchmark uses: an operator's GPU time (``operator_gpu_times``,
through the runtime's timestamps) and the bare round trip straight through wgpu-native that
bounds a small call (``bare_round_trips``), which calls wgpu-native's functions itself, with
nothing of dmlgpu's in between.
"""

from __future__ import annotations

import threading
import time
from typing import TYPE_CHECKING

import numpy as np

from ..runtime import MAP_READ, READABLE, NativePath, Runner, gpu_times

if TYPE_CHECKING:
    from ..operator import CompiledOperator
    from ..tensor import Tensor

#: The kernel of ``bare_round_trips``: one invocation, one word written.
_BARE_WGSL = """@group(0) @binding(2) var<storage, read_write> y: array<u32>;
@compute @workgroup_size(1) fn main() { y[0] = y[0] + 1u; }
"""


def operator_gpu_times(op: "CompiledOperator", input: "Tensor", output: "Tensor", repeats: int = 10) -> np.ndarray:
    """Seconds each of ``repeats`` runs of a compiled operator took on the GPU (timestamp queries)."""
    steps, clear = op.passes(input, output)
    return gpu_times(op.device.runner, steps, clear=clear, repeats=repeats)


#: ``dml_round_trips`` of ``_round_trips.c``, declared in the hot loop's cffi terms.
_ROUND_TRIPS_CDEF = """int dml_round_trips(const DmlFns *f, void *device, void *queue, void *pipeline, void *group,
                    void *written, void *staging, size_t n, double spin_s, double *times);"""
_round_trips: list = []  # [lib], or [None] where this install has none; once loaded
_round_trips_lock = threading.Lock()


def round_trips_library(hot_ffi):
    """The benchmarks' C library (``setup.py`` builds ``_round_trips.c``, the hot loop's code and
    ``dml_round_trips``, into ``dmlgpu/bench/``, or writes why not beside it), loaded once through
    the hot loop's own cffi declarations so that its ``DmlFns`` is the one the native path fills;
    None where this install has none."""
    from importlib import resources

    with _round_trips_lock:
        if not _round_trips:
            library = resources.files("dmlgpu.bench").joinpath("_round_trips.so")
            if library.is_file():
                hot_ffi.cdef(_ROUND_TRIPS_CDEF)
            _round_trips[:] = [hot_ffi.dlopen(str(library)) if library.is_file() else None]
    return _round_trips[0]


# Long because it is one straight run of wgpu-native calls, as in a probe of the bare round trip: split
# up, the loop that is timed would call our Python between them.
def bare_round_trips(runner: Runner, calls: int, upload: np.ndarray | None = None,
                     in_c: bool = False) -> np.ndarray | None:
    """What bounds a small call, for the benchmarks: wall seconds of each of ``calls``
    round trips straight through wgpu-native with nothing of dmlgpu's in between: a queue
    write of the bytes ``upload`` if given, one 1-workgroup dispatch and a 16-byte copy in one command buffer, one
    submit, a map polled as ``NativePath.wait`` polls, and the 16 bytes copied out. Where
    passes may bind mappable memory (``in_place``), the dispatch writes the mapped buffer
    itself, with no copy, as a small call of ours does. None on the public path.

    ``in_c`` (no ``upload``): the same round trips run by ``_round_trips.c``'s
    ``dml_round_trips`` (None where this install has no ``_round_trips.so``), one C call for all of them, with no Python between wgpu-native's calls and the
    interpreter's lock let go throughout: from several threads at once, what wgpu-native
    itself does in parallel (``benchmarks/thread_scaling.py``)."""
    if not isinstance(runner.path, NativePath) or (in_c and upload is not None):
        return None
    n = runner.path
    trips = round_trips_library(n.hot_ffi) if in_c else None
    if in_c and trips is None:
        return None
    ffi, lib = n.ffi, n.lib
    pipeline = runner.programs.pipeline(_BARE_WGSL)
    params, src, dst = runner.programs.uniform(np.zeros(4, np.uint32)), runner.memory.storage(16), runner.memory.storage(16)
    written, write = None, None  # the queue write's target, and its (target, host bytes, size)
    if upload is not None:
        written = runner.memory.storage(upload.nbytes)
        write = (written._internal, ffi.from_buffer(upload), upload.nbytes)
    in_place = runner.in_place
    staging = runner.memory.create(16, READABLE if in_place else MAP_READ)
    group = runner.programs.bind(params, src, staging if in_place else dst)
    runner.flush()
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
        if in_c:
            assert trips is not None
            if trips.dml_round_trips(n.fns, n.handle, n.queue, handles[0], handles[1],
                                     handles[3] if in_place else handles[2], handles[3], calls, n.spin_s,
                                     n.hot_ffi.from_buffer("double[]", times, require_writable=True)):
                raise RuntimeError("a map of the bare round trip failed")
            return times
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
            runner.memory.destroy(buffer)
        for buffer in (src, dst, written):
            if buffer is not None:
                runner.memory.free(buffer)
    return times
