"""GPU timestamps: seconds of recorded passes from timestamp queries around them, one set of
steps repeated (``gpu_times``) or several taking turns (``interleaved_gpu_times``, as a
calibration compares its candidates). The bench and the calibration both time through these.

May touch the runner's programs and memory, its path's encoders (with timestamp writes),
``enqueue`` and a read that waits for the queue; owns the query sets it makes.
"""

from __future__ import annotations

import numpy as np
import wgpu

from ..errors import AdapterError
from .interrupts import interrupts_held
from .runner import Runner


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
