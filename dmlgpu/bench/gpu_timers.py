"""GPU-side timers only the benchmark uses: timestamp queries around recorded passes
(``gpu_times``, ``operator_gpu_times``) and the bare round trip straight through wgpu-native
that bounds a small call (``bare_round_trips``).

They drive the runner from outside, through what it offers any caller: its programs and
memory, its path's encoders (with timestamp writes), ``enqueue`` and a read that waits for the queue;
``bare_round_trips`` calls wgpu-native's functions itself, with nothing of dmlgpu's in between.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

import numpy as np
import wgpu

from ..errors import AdapterError
from ..runtime.interrupts import interrupts_held
from ..runtime.memory import MAP_READ, READABLE
from ..runtime.native import NativePath
from ..runtime.runner import Runner

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

    ``in_c`` (no ``upload``): the same round trips run by ``_hot.c``'s ``dml_round_trips``,
    one C call for all of them, with no Python between wgpu-native's calls and the
    interpreter's lock let go throughout: from several threads at once, what wgpu-native
    itself does in parallel (``benchmarks/thread_scaling.py``)."""
    if not isinstance(runner.path, NativePath) or (in_c and upload is not None):
        return None
    n = runner.path
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
            if n.hot.dml_round_trips(n.fns, n.handle, n.queue, handles[0], handles[1],
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


def gpu_times(runner: Runner, steps, *, clear=None, repeats: int = 10) -> np.ndarray:
    """Seconds each of ``repeats`` runs of the steps took, from timestamp queries.

    The timestamps bracket the passes and the clear of the output, if any.
    """
    with interrupts_held():
        return _gpu_times(runner, steps, clear, repeats)


def interleaved_gpu_times(runner: Runner, step_sets: list, rounds: int) -> list[np.ndarray]:
    """Seconds of each set of steps (passes with no clear: ARGMAX's and ARGMIN's, or HARDMAX's
    passes without the clear of their output, as a calibration compares them) in each of
    ``rounds`` rounds, the sets taking turns, all in one submit and one read. The sets must
    write a buffer they share (a calibration's candidates write one output), so that each
    pass waits for the one before and none overlaps another's timing."""
    if "timestamp-query" not in runner.features:
        raise AdapterError(f"adapter {runner.name!r} has no timestamp-query feature")
    count = rounds * len(step_sets)
    queries = runner.device.create_query_set(type="timestamp", count=2 * count)
    resolved = runner.device.create_buffer(size=16 * count, usage=wgpu.BufferUsage.QUERY_RESOLVE | wgpu.BufferUsage.COPY_SRC)
    try:
        with interrupts_held(), runner.lock:
            runner.check()
            for i in range(count):
                runner.enqueue(_timed(runner, step_sets[i % len(step_sets)], None, queries, 2 * i))
            encoder = runner.path.encoder()
            encoder.resolve(queries, 2 * count, resolved)
            runner.enqueue(encoder)
        ticks = np.frombuffer(runner.transfers.read(resolved, 16 * count), np.uint64).reshape(rounds, len(step_sets), 2)
    finally:
        resolved.destroy()
        queries.destroy()
    seconds = (ticks[..., 1] - ticks[..., 0]).astype(np.float64) * 1e-9
    return [seconds[:, i] for i in range(len(step_sets))]


def _timed(runner: Runner, steps, clear, queries, first: int):
    """An encoder with ``clear`` zeroed and the steps recorded, the time before the clear (or
    the first pass) written to query ``first`` and the time after the last pass to the next."""
    encoder = runner.path.encoder()
    try:
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
        return encoder
    except BaseException as err:
        encoder.drop()
        if isinstance(err, wgpu.GPUError):
            raise runner.gpu_error(err) from None
        raise


def _gpu_times(runner: Runner, steps, clear, repeats: int) -> np.ndarray:
    if "timestamp-query" not in runner.features:
        raise AdapterError(f"adapter {runner.name!r} has no timestamp-query feature")
    queries = runner.device.create_query_set(type="timestamp", count=2 * repeats)
    resolved = runner.device.create_buffer(
        size=16 * repeats, usage=wgpu.BufferUsage.QUERY_RESOLVE | wgpu.BufferUsage.COPY_SRC
    )
    try:
        # Each repeat is submitted and waited for alone (a read waits for the queue): the
        # empty pass that starts the timing before a clear depends on nothing, so without
        # the wait it could run while the previous repeat is still busy.
        for i in range(repeats):
            with runner.lock:
                runner.check()
                runner.enqueue(_timed(runner, steps, clear, queries, 2 * i))
            runner.transfers.read(resolved, 4)
        with runner.lock:
            encoder = runner.path.encoder()
            encoder.resolve(queries, 2 * repeats, resolved)
            runner.enqueue(encoder)
        ticks = np.frombuffer(runner.transfers.read(resolved, 16 * repeats), np.uint64).reshape(repeats, 2)
    finally:
        resolved.destroy()
        queries.destroy()
    return (ticks[:, 1] - ticks[:, 0]).astype(np.float64) * 1e-9  # WebGPU timestamps are nanoseconds
