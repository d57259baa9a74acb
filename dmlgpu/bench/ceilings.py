"""The in-run ceilings: standalone WGSL kernels over the same input buffer as a case
(``shaders/read_ceiling.wgsl`` for ARGMAX/ARGMIN, ``shaders/copy_ceiling.wgsl`` for HARDMAX),
what each case's GPU time is set beside; and ``warm_up``, the GPU work before the first timing."""

from __future__ import annotations

import math
import time

import numpy as np

from ..wgsl import template, unroll
from ..runtime import gpu_times

#: copy_ceiling.wgsl's UNROLL: each thread's loads in flight (its loops are written out for it).
COPY_CEILING_UNROLL = 4
#: The ceiling kernels' workgroup size (their WG constant) and grid.
CEILING_WG = 256
#: The most workgroups by kind. The copy ceiling takes a thread per CEILING_LOADS_PER_THREAD
#: quads up to the grid's limit, which reaches torch's ``copy_`` (benchmarks/LOG.md, "The settings' measurements"); the read ceiling
#: writes a word a thread, so it keeps few.
CEILING_MAX_GROUPS = {"read": 4096, "copy": 65535}
CEILING_LOADS_PER_THREAD = 4


class Ceiling:
    """A ceiling kernel (``shaders/<kind>_ceiling.wgsl``) bound to the first ``nbytes`` of ``src``.

    ``kind`` "read": reads the bytes in 16-byte loads and writes one word per thread;
    "copy": reads the bytes and writes them to a scratch buffer. ``bytes`` counts every
    byte the kernel moves, the way the operators' bytes are counted.
    """

    def __init__(self, runner, kind: str, src, nbytes: int, readable: bool = False):
        if kind not in ("read", "copy"):
            raise ValueError(f"kind is {kind!r}, but it must be 'read' or 'copy'")
        self.runner, self.kind, self.src = runner, kind, src
        vec4s = nbytes // 16
        groups = max(1, min(math.ceil(vec4s / (CEILING_WG * CEILING_LOADS_PER_THREAD)), CEILING_MAX_GROUPS[kind],
                             runner.capabilities.max_workgroups_per_dim))
        self.grid = (groups, 1, 1)
        text = f"const UNROLL: u32 = {COPY_CEILING_UNROLL}u;\n" + template(f"{kind}_ceiling")
        self.pipeline = runner.programs.pipeline(unroll(text))
        self.params = runner.programs.uniform(np.array([vec4s, 0, 0, 0], np.uint32))
        dst_bytes = groups * CEILING_WG * 4 if kind == "read" else vec4s * 16
        self.dst = runner.memory.storage(dst_bytes, readable=readable)  # (readable: see Memory.storage)
        self.bytes = vec4s * 16 + dst_bytes
        # bound once: a bind group made per call would count in the latency floor (tens of
        # microseconds), which no operator call pays (operators cache theirs)
        self.steps = [(self.pipeline, runner.programs.bind(self.params, self.src, self.dst), self.grid)]

    def run(self) -> None:
        self.runner.dispatch(self.steps)

    def gpu_times(self, repeats: int) -> np.ndarray:
        return gpu_times(self.runner, self.steps, repeats=repeats)

    def release(self) -> None:
        self.runner.memory.free(self.dst)
        self.runner.memory.free(self.params)


def warm_up(runner, nbytes: int, seconds: float) -> int:
    """Keep the GPU reading, back to back, for about ``seconds`` of wall time, so that its
    clock has ramped up before the first timing (a GPU starts at a low clock); returns the reads made."""
    nbytes = max(16, min(nbytes, runner.capabilities.max_storage_binding) & ~15)
    src = runner.memory.storage(nbytes)
    ceiling = Ceiling(runner, "read", src, nbytes)
    steps, reads, start = ceiling.steps, 0, time.perf_counter()
    try:
        while time.perf_counter() - start < seconds:
            for _ in range(20):  # queued without waits; the read below waits for them all
                runner.dispatch(steps)
            runner.transfers.read(ceiling.dst, 4)
            reads += 20
    finally:
        ceiling.release()
        runner.memory.free(src)
    return reads
