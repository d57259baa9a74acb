"""Recording into a command encoder the caller owns, and what we ask of a caller's wgpu objects.

Owns what the runtime does with wgpu objects it did not make (``Device.from_wgpu``,
``Device.wrap``, binding tables): whether an object is a ``GPUDevice``, ``GPUBuffer`` or
``GPUCommandEncoder``, which device it belongs to, whether a buffer may be bound as storage;
``record``, which records an operator's clears and passes into the caller's encoder through
wgpu-py's public encoder API, submitting nothing (DirectML's
``IDMLCommandRecorder::RecordDispatch``); and ``clear_now``, a clear of part of a caller's buffer
in order with the runner's work. May touch the runner's queue (``clear_now``, under its lock).

One deviation from WebGPU, in one place: WebGPU gives no way to ask an object for its device;
wgpu-py keeps it on every object (``GPUObjectBase._device``), and ``device_of`` reads it there.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import wgpu

from ..errors import DataError

if TYPE_CHECKING:
    from .runner import Runner

STORAGE_USAGE = wgpu.BufferUsage.STORAGE


def check_device(device) -> None:
    """A ``TypeError`` unless ``device`` is a wgpu device."""
    if not isinstance(device, wgpu.GPUDevice):
        raise TypeError(f"gpu_device must be a wgpu.GPUDevice (e.g. wgpu.utils.get_default_device()), "
                        f"not {type(device).__name__}")


def is_buffer(x) -> bool:
    return isinstance(x, wgpu.GPUBuffer)


def device_of(obj):
    """The wgpu device an object of wgpu-py's belongs to (the module docstring says how)."""
    return getattr(obj, "_device", None)


def usage_names(usage: int) -> str:
    """A buffer usage as its flags' names, e.g. ``MAP_READ|COPY_DST``."""
    names = [name for name in dir(wgpu.BufferUsage) if getattr(wgpu.BufferUsage, name) & usage]
    return "|".join(names) or "NONE"


def check_encoder(encoder, device) -> None:
    """A ``TypeError`` unless ``encoder`` is a command encoder, a ``DataError`` unless it is of
    ``device``."""
    if not isinstance(encoder, wgpu.GPUCommandEncoder):
        raise TypeError(f"encoder must be a wgpu.GPUCommandEncoder (device.create_command_encoder()), "
                        f"not {type(encoder).__name__}")
    if device_of(encoder) is not device:
        raise DataError("encoder belongs to another wgpu device than the operator's; record into an encoder "
                        "of the device the operator was compiled on (Device.wgpu_device)")


def record(encoder, clears, steps) -> None:
    """Record ``clears`` ((buffer, offset, size) zeroed) and then ``steps`` (pipeline, bind group,
    grid: a compute pass each, as the runner's own encoders record them) into the caller's
    encoder. Nothing is submitted: the work runs when the caller submits the encoder's
    command buffer, in order with what the caller recorded before and after it."""
    for buffer, offset, size in clears:
        encoder.clear_buffer(buffer, offset, size)
    for pipeline, group, grid in steps:
        compute = encoder.begin_compute_pass()
        compute.set_pipeline(pipeline)
        compute.set_bind_group(0, group)
        compute.dispatch_workgroups(*grid)
        compute.end()


def clear_now(runner: "Runner", clears) -> None:
    """Zero the ranges ``clears`` ((buffer, offset, size)) of buffers dmlgpu did not make,
    after the work the runner has recorded and before what it records next: the recorded work
    is submitted, then the clear in a submit of its own (the runner's backends clear whole
    buffers, and a caller's buffer holds more than the tensor)."""
    with runner.lock:
        runner.check()
        runner.submit()
        encoder = runner.device.create_command_encoder()
        try:
            for buffer, offset, size in clears:
                encoder.clear_buffer(buffer, offset, size)
            runner.device.queue.submit([encoder.finish()])
        except wgpu.GPUError as err:
            raise runner.gpu_error(err) from None
