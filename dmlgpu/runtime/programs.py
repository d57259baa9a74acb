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

from ..kernels.base import SLOTS, WORKGROUP_STORAGE, layout

if TYPE_CHECKING:
    from .runner import Runner

def _entries(shared: bool) -> list[dict]:
    """The bind group layout of every pass (``kernels.base.SLOTS``); ``shared``: the layout of a
    pass whose input shares a buffer with what it writes (module docstring)."""
    return [{"binding": binding, "visibility": wgpu.ShaderStage.COMPUTE, "buffer": {"type": kind}}
            for binding, kind in layout(shared)]


LAYOUT_ENTRIES = _entries(shared=False)
SHARED_LAYOUT_ENTRIES = _entries(shared=True)
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
        """The bind group of one pass (``kernels.base.SLOTS``): its parameters, input, output, the
        scratch it keeps between dispatches (the race words, if any) and its input again (not in
        the shared layout). ``src`` and ``dst`` are buffers, or (buffer, offset, size) windows of
        them; ``shared``: through the shared layout (module docstring), for a ``src`` in the
        buffer that ``dst`` is in."""
        def resource(target) -> dict:
            if isinstance(target, tuple):
                buffer, offset, size = target
                return {"buffer": buffer, "offset": offset, "size": min(size, buffer.size - offset)}
            return {"buffer": target}

        bound = {"params": params, "input": src, "output": dst, "race": scratch or self._no_scratch,
                 "input_words": self._no_input if shared else src}
        self.runner.check()
        return self.runner.device.create_bind_group(
            layout=self._layout(shared)[0],
            entries=[{"binding": s.binding, "resource": resource(bound[s.name])} for s in SLOTS],
        )
