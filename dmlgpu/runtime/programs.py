"""Pipelines and bind groups: the binding layout every pass uses, the pipeline cache keyed by
WGSL text, parameter buffers and bind groups; and the limits a device must reach for them.

Owns ``Programs`` (one per runner) and ``required_limits``. May touch the runner's device (to
compile and create); nothing is recorded or submitted here.

**One buffer read and written by a pass.** WebGPU lets a buffer be bound writable only alone
in a dispatch: bound as the input (``read-only-storage``) and as the output or the scratch
(``storage``) of one pass, it is refused, whatever the ranges. Our own tensors never share a
buffer, but a caller's may (``Device.wrap``, binding tables: input and output at two offsets
of one buffer). Such a pass binds through the *shared* layout, whose binding 1 is ``storage``
too, and runs a variant of its WGSL whose input is declared ``read_write`` and bound once
(``wgsl.writable_input``; WebGPU refuses two writable bindings that overlap, so binding 4 is a
small buffer of ours there): the same shader, its input still only read.
"""

from __future__ import annotations

import weakref
from collections import OrderedDict
from typing import TYPE_CHECKING, Any, cast

import numpy as np
import wgpu

from ..kernels.base import WORKGROUP_STORAGE

if TYPE_CHECKING:
    from .runner import Runner

#: Binding 0: parameters; 1: the input (read-only); 2: the output; 3: scratch that a pass
#: keeps between dispatches (a plan's race words), else a small buffer no shader declares;
#: 4: the input's range again, which a shader reading it in 16-byte quads declares as words
#: (``shaders/src_quads.wgsl``: a range may end inside a quad); in the shared layout, a small
#: buffer no shader declares.
LAYOUT_ENTRIES = [
    {"binding": 0, "visibility": wgpu.ShaderStage.COMPUTE, "buffer": {"type": wgpu.BufferBindingType.uniform}},
    {"binding": 1, "visibility": wgpu.ShaderStage.COMPUTE,
     "buffer": {"type": wgpu.BufferBindingType.read_only_storage}},
    {"binding": 2, "visibility": wgpu.ShaderStage.COMPUTE, "buffer": {"type": wgpu.BufferBindingType.storage}},
    {"binding": 3, "visibility": wgpu.ShaderStage.COMPUTE, "buffer": {"type": wgpu.BufferBindingType.storage}},
    {"binding": 4, "visibility": wgpu.ShaderStage.COMPUTE,
     "buffer": {"type": wgpu.BufferBindingType.read_only_storage}},
]
#: The same with binding 1 writable: for a pass whose input shares a buffer with what it writes.
SHARED_LAYOUT_ENTRIES = [{**e, "buffer": {"type": wgpu.BufferBindingType.storage}} if e["binding"] == 1 else e
                         for e in LAYOUT_ENTRIES]
#: Pipelines the cache keeps (least recently used go first; operators hold their own).
KEPT_PIPELINES = 128


def required_limits(workgroup_size: int) -> dict[str, tuple[int, str]]:
    """The limits (WebGPU's names) a device must reach for our passes, each with the least value
    and why: what ``Device.from_wgpu`` checks a caller's device against (a device we open has
    WebGPU's defaults, which reach them). ``workgroup_size``: the planner's ``Tuning``'s."""
    storage = sum(e["buffer"]["type"] != wgpu.BufferBindingType.uniform for e in LAYOUT_ENTRIES)
    return {
        "max-bind-groups": (1, "each pass uses one bind group"),
        "max-bindings-per-bind-group": (len(LAYOUT_ENTRIES), f"each pass binds {len(LAYOUT_ENTRIES)} buffers"),
        "max-storage-buffers-per-shader-stage": (storage, f"each pass binds {storage} storage buffers"),
        "max-uniform-buffers-per-shader-stage": (1, "each pass reads its parameters from a uniform buffer"),
        "max-compute-workgroup-size-x": (workgroup_size, "the planner's Tuning.workgroup_size"),
        "max-compute-invocations-per-workgroup": (workgroup_size, "the planner's Tuning.workgroup_size"),
        "max-compute-workgroup-storage-size": (WORKGROUP_STORAGE, "the workgroup memory the planner lets a "
                                               "shader declare (kernels.base.WORKGROUP_STORAGE)"),
    }


class Programs:
    """One runner's pipelines (compiled once per WGSL text) and the bind groups of its passes."""

    def __init__(self, runner: "Runner"):
        self.runner: Runner = cast("Runner", weakref.proxy(runner))  # (weak: see Memory.__init__)
        self._layouts: dict[bool, tuple] = {}  # by shared: (bind group layout, pipeline layout), made on first use
        self._pipelines: OrderedDict[str, Any] = OrderedDict()  # by WGSL text, most recent last
        self._no_scratch = runner.memory.storage(16)  # binding 3 of passes that keep no scratch
        self._no_input = runner.memory.storage(16)  # binding 4 of passes in the shared layout
        # the parameter buffers made here (Memory counts the rest), destroyed by ``close``
        self._uniforms: weakref.WeakSet = weakref.WeakSet()

    def _layout(self, shared: bool) -> tuple:
        """(bind group layout, pipeline layout): the usual one, or the shared one (module docstring)."""
        layouts = self._layouts.get(shared)
        if layouts is None:
            with self.runner.lock:  # one of each: the bind groups and the pipelines share it
                layouts = self._layouts.get(shared)
                if layouts is None:
                    device = self.runner.device
                    group = device.create_bind_group_layout(entries=SHARED_LAYOUT_ENTRIES if shared else LAYOUT_ENTRIES)
                    layouts = self._layouts[shared] = (group, device.create_pipeline_layout(bind_group_layouts=[group]))
        return layouts

    def pipeline(self, source: str, shared: bool = False):
        """The compute pipeline of this WGSL text, compiled on first use; ``shared``: for the
        shared layout, ``source`` being a pass's variant for it (``wgsl.writable_input``). It is
        compiled outside the runner's lock, so that other threads' calls go on meanwhile and
        several compile at once (a calibration's candidates do); two threads compiling one text
        keep the first."""
        runner = self.runner
        with runner.lock:
            runner.check()
            pipeline = self._pipelines.get(source)
            if pipeline is not None:
                self._pipelines.move_to_end(source)
                return pipeline
        layout = self._layout(shared)[1]
        try:
            module = runner.device.create_shader_module(code=source)
            made = runner.device.create_compute_pipeline(layout=layout, compute={"module": module, "entry_point": "main"})
        except wgpu.GPUError as err:
            raise runner.gpu_error(err) from None
        with runner.lock:
            runner.check()
            pipeline = self._pipelines.setdefault(source, made)
            self._pipelines.move_to_end(source)
            if len(self._pipelines) > KEPT_PIPELINES:  # compiled operators keep their own
                self._pipelines.popitem(last=False)
            return pipeline

    @property
    def count(self) -> int:
        """Pipelines the cache holds."""
        return len(self._pipelines)

    def clear(self) -> None:
        self._pipelines.clear()

    def close(self) -> None:
        """Destroy the parameter buffers made here and let go of the pipelines and layouts: on
        a caller's device, which lives on after the runner closes (``Runner.close``)."""
        for buffer in list(self._uniforms):
            buffer.destroy()
        self._uniforms = weakref.WeakSet()
        self._pipelines.clear()
        self._layouts.clear()

    def uniform(self, words: np.ndarray):
        """A uniform buffer holding ``words`` (a pass's parameters)."""
        buffer = self.runner.device.create_buffer_with_data(
            data=words, usage=wgpu.BufferUsage.UNIFORM | wgpu.BufferUsage.COPY_DST
        )
        self._uniforms.add(buffer)
        return buffer

    def bind(self, params, src, dst, scratch=None, shared: bool = False):
        """The bind group of one pass: its parameters, input, output, the scratch it keeps
        between dispatches (binding 3, if any) and its input again (binding 4; not in the shared
        layout). ``src`` and ``dst`` are buffers, or (buffer, offset, size) windows of them;
        ``shared``: through the shared layout (module docstring), for a ``src`` in the buffer
        that ``dst`` is in."""
        def resource(target) -> dict:
            if isinstance(target, tuple):
                buffer, offset, size = target
                return {"buffer": buffer, "offset": offset, "size": min(size, buffer.size - offset)}
            return {"buffer": target}

        self.runner.check()
        return self.runner.device.create_bind_group(
            layout=self._layout(shared)[0],
            entries=[{"binding": i, "resource": resource(t)}
                     for i, t in enumerate((params, src, dst, scratch or self._no_scratch,
                                            self._no_input if shared else src))],
        )
