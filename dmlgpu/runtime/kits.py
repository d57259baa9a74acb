"""Small NumPy-in, NumPy-out calls in one go, on the native backend: a kit per operator and thread.

Owns ``Kit``: an operator's input and output buffers, its passes bound to them, staging for
the upload and the read-back (each with its map) and the C ``DmlCall`` holding every handle,
made once and reused. May touch the runner's memory (to make the kit's buffers) and queue (its
call is submitted with the work recorded before it and the calls of other threads, through
``Commits.commit``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

import numpy as np

from .memory import MAP_READ, MAP_WRITE, MAP_WRITE_BOUND, bound_size, word_size
from .native import NativePath, Steps

if TYPE_CHECKING:
    from .runner import Runner

#: An output of up to this many bytes that passes write with plain stores (all but HARDMAX's
#: FLOAT16 output, whose halves are set with atomics, which memory across the bus may not
#: take) is written straight into mappable memory, where the device has it (``in_place``):
#: a kit's read-back staging, a resident call's output buffer (``Memory.storage(readable=True)``).
IN_PLACE_OUTPUT_MAX = 64 << 10


class Kit:
    """A small call's kit (``make``), run by ``run``. Kits are not shared: a thread takes one
    while it runs it. A kit that fails must not be run again (its staging may be mid-map)."""

    __slots__ = ("runner", "input", "output", "steps", "wmap", "rmap", "c", "ticket")

    @classmethod
    def make(cls, runner: "Runner", bind: Callable[[Any, Any], list], in_nbytes: int, out_nbytes: int, clear: bool,
             output_in_place: bool) -> "Kit | None":
        """The kit of a call reading ``in_nbytes`` and writing ``out_nbytes`` (``clear``: zeroed
        first), its passes bound by ``bind(input, output)``; None on the public backend, which
        has no hot loop.

        Where the device binds mappable buffers (``in_place``: "mappable-primary-buffers"),
        the upload staging is the input itself and, for an output the caller says may be
        (``output_in_place``: ``CompiledOperator``), the read-back staging is the output: no
        copy on either side, which shortens a round trip (benchmarks/LOG.md, "The settings' measurements": reads in place)."""
        if not isinstance(runner.path, NativePath):
            return None
        return cls(runner, runner.path, bind, in_nbytes, out_nbytes, clear, output_in_place)

    def __init__(self, runner: "Runner", n: NativePath, bind: Callable[[Any, Any], list], in_nbytes: int,
                 out_nbytes: int, clear: bool, output_in_place: bool):
        memory = runner.memory
        self.runner = runner
        in_size = word_size(in_nbytes)
        if runner.in_place:  # a size a shader may bind and read in 16-byte quads
            self.input = memory.create(bound_size(in_nbytes), MAP_WRITE_BOUND, mapped=True)
            wstaging = self.input
        else:
            self.input = memory.storage(in_nbytes)
            wstaging = memory.create(in_size, MAP_WRITE, mapped=True)
        out_size = max(4, word_size(out_nbytes))  # what is copied and mapped (a bound buffer is longer)
        if runner.in_place and output_in_place:
            self.output = rstaging = memory.storage(out_nbytes, readable=True)
        else:
            self.output, rstaging = memory.storage(out_nbytes), memory.create(out_size, MAP_READ)
        self.wmap = n.new_map(wstaging, in_size, done=True)
        self.rmap = n.new_map(rstaging, out_size)
        # the bind groups and pipelines the C struct points at stay alive, and (a Steps list
        # keeps it) the C array of them
        steps = bind(self.input, self.output)
        self.steps = steps if isinstance(steps, Steps) else Steps(steps)
        c = self.c = n.hot_ffi.new("DmlCall *")
        c.wstaging, c.wstate, c.input, c.in_size = wstaging._internal, self.wmap.state, self.input._internal, in_size
        n.put_passes(c, self.steps, self.output if clear else None)  # self.steps keeps the array
        c.output, c.out_offset = self.output._internal, 0
        c.rstaging, c.rstate, c.out_size = rstaging._internal, self.rmap.state, out_size
        self.ticket = n.hot_ffi.addressof(c, "ticket")

    def run(self, data: np.ndarray, out: np.ndarray) -> None:
        """The call on the bytes ``data`` into the uint8 array ``out``: the bytes copied into
        the upload staging (outside the lock: the kit is this thread's), then the work recorded
        before it and the calls other threads commit meanwhile submitted together
        (``Commits.commit``: ``dml_record_calls``, ``dml_submit_calls``), then the read-back
        waited for and copied out."""
        runner = self.runner
        n = runner.path
        runner.check()
        n.fill(self.wmap, data)  # (once its map has landed: the GPU copied out of it in the call before)
        runner.commits.commit(self.c)
        n.read(self.rmap, self.ticket, out)
