"""Pipelines and bind groups: the one binding layout every pass uses, the pipeline cache keyed
by WGSL text, parameter buffers and bind groups.

Owns ``Programs`` (one per runner). May touch the runner's device (to compile and create);
nothing is recorded or submitted here.
"""

from __future__ import annotations

import weakref
from collections import OrderedDict
from typing import TYPE_CHECKING, Any, cast

import numpy as np
import wgpu

if TYPE_CHECKING:
    from .runner import Runner

#: Binding 0: parameters; 1: the input (read-only); 2: the output; 3: scratch that a pass
#: keeps between dispatches (a plan's race words), else a small buffer no shader declares.
LAYOUT_ENTRIES = [
    {"binding": 0, "visibility": wgpu.ShaderStage.COMPUTE, "buffer": {"type": wgpu.BufferBindingType.uniform}},
    {"binding": 1, "visibility": wgpu.ShaderStage.COMPUTE,
     "buffer": {"type": wgpu.BufferBindingType.read_only_storage}},
    {"binding": 2, "visibility": wgpu.ShaderStage.COMPUTE, "buffer": {"type": wgpu.BufferBindingType.storage}},
    {"binding": 3, "visibility": wgpu.ShaderStage.COMPUTE, "buffer": {"type": wgpu.BufferBindingType.storage}},
]
#: Pipelines the cache keeps (least recently used go first; operators hold their own).
KEPT_PIPELINES = 128


class Programs:
    """One runner's pipelines (compiled once per WGSL text) and the bind groups of its passes."""

    def __init__(self, runner: "Runner"):
        self.runner: Runner = cast("Runner", weakref.proxy(runner))  # (weak: see Memory.__init__)
        device = runner.device
        self._bind_layout = device.create_bind_group_layout(entries=LAYOUT_ENTRIES)
        self._pipeline_layout = device.create_pipeline_layout(bind_group_layouts=[self._bind_layout])
        self._pipelines: OrderedDict[str, Any] = OrderedDict()  # by WGSL text, most recent last
        self._no_scratch = runner.memory.storage(16)  # binding 3 of passes that keep no scratch

    def pipeline(self, source: str):
        """The compute pipeline of this WGSL text, compiled on first use."""
        runner = self.runner
        with runner.lock:
            runner.check()
            pipeline = self._pipelines.get(source)
            if pipeline is None:
                try:
                    module = runner.device.create_shader_module(code=source)
                    pipeline = runner.device.create_compute_pipeline(
                        layout=self._pipeline_layout, compute={"module": module, "entry_point": "main"}
                    )
                except wgpu.GPUError as err:
                    raise runner.gpu_error(err) from None
                self._pipelines[source] = pipeline
                if len(self._pipelines) > KEPT_PIPELINES:  # compiled operators keep their own
                    self._pipelines.popitem(last=False)
            else:
                self._pipelines.move_to_end(source)
            return pipeline

    @property
    def count(self) -> int:
        """Pipelines the cache holds."""
        return len(self._pipelines)

    def clear(self) -> None:
        self._pipelines.clear()

    def uniform(self, words: np.ndarray):
        """A uniform buffer holding ``words`` (a pass's parameters)."""
        return self.runner.device.create_buffer_with_data(
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

        self.runner.check()
        return self.runner.device.create_bind_group(
            layout=self._bind_layout,
            entries=[{"binding": i, "resource": resource(t)}
                     for i, t in enumerate((params, src, dst, scratch or self._no_scratch))],
        )
