"""The account of one runner's large transfers: what they did, how long they took, and how
they overlapped (issue 49).

Owns ``Flow`` (one per runner, ``Transfers.flow``): counts that ``Transfers`` adds to as its
uploads fill their staging and as threads wait for their results, and the maps of the results
waited for now. May touch the runner's lock (every count changes under it) and read its
backend's map states (``Backend.pending``); records, submits and maps nothing.
"""

from __future__ import annotations

import contextlib
import time
import weakref
from typing import TYPE_CHECKING, Iterator, cast

if TYPE_CHECKING:
    from .runner import Runner


class Flow:
    """What one runner's large transfers did, since it was opened: where a chunk's time goes
    (``snapshot``, which ``benchmarks/dask_gpus.py`` reads on each worker) and how transfers
    overlapped (which the tests check). Counted under the runner's lock (its methods take it).

    - ``uploads``, ``upload_bytes``, ``upload_s``: streamed uploads (``Transfers.upload``), their
      bytes, and the seconds threads spent in them (summed over threads); of which ``fill_s``
      copying into staging and ``staging_wait_s`` waiting for a staging buffer to come back
      from the GPU (its copy done, its map landed); ``staged``: the staging chunks they filled.
    - ``reads``, ``read_wait_s``: results waited for (staged reads, and each chunk of a streamed
      one; not a small output read in place, nor a small call's kit), and the seconds spent
      waiting: the GPU's work before the read (the last copies, the reduction) and the read's.
    - ``beside``: staging chunks that began filling while another thread's result was still on
      its way (its map pending, ``awaited``): a chunk travelling while another is reduced.
      Waits that block in wgpu's poll hold it at 0 (``hot.NAP_S``).
    - ``in_flight``, ``most_in_flight``: uploads and results waited for under way now, and the
      most at once.
    """

    COUNTS = ("uploads", "upload_bytes", "upload_s", "fill_s", "staging_wait_s", "staged", "reads", "read_wait_s",
              "beside", "in_flight", "most_in_flight")
    __slots__ = (*COUNTS, "runner", "awaited")

    def __init__(self, runner: "Runner"):
        self.runner: Runner = cast("Runner", weakref.proxy(runner))
        self.awaited: set = set()  # maps of the results threads wait for now
        self.uploads = self.upload_bytes = self.staged = self.reads = self.beside = 0
        self.in_flight = self.most_in_flight = 0
        self.upload_s = self.fill_s = self.staging_wait_s = self.read_wait_s = 0.0

    def _begin(self) -> None:
        self.in_flight += 1
        self.most_in_flight = max(self.most_in_flight, self.in_flight)

    def uploading(self) -> None:
        """An upload has its ring and starts."""
        with self.runner.lock:
            self._begin()

    def uploaded(self, nbytes: int, began: float) -> None:
        """The upload that started at ``began`` (waiting for its ring) is over (``nbytes``: 0
        where it failed)."""
        with self.runner.lock:
            self.in_flight -= 1
            self.uploads += 1
            self.upload_bytes += nbytes
            self.upload_s += time.perf_counter() - began

    def beside_now(self) -> bool:
        """Whether a result another thread waits for is still pending on the GPU."""
        with self.runner.lock:
            return any(self.runner.path.pending(m) for m in self.awaited)

    def staged_one(self, waited: float, filling: float, beside: bool) -> None:
        """A staging chunk was filled: its wait began at ``waited``, its copy at ``filling``."""
        filled = time.perf_counter()
        with self.runner.lock:
            self.staging_wait_s += filling - waited
            self.fill_s += filled - filling
            self.staged += 1
            self.beside += beside

    @contextlib.contextmanager
    def awaiting(self, m) -> Iterator[None]:
        """A result is waited for through map ``m`` inside the block, which ends when it has
        landed or failed."""
        with self.runner.lock:
            self.awaited.add(m)
            self._begin()
        began = time.perf_counter()
        try:
            yield
        finally:
            waited = time.perf_counter() - began
            with self.runner.lock:
                self.awaited.discard(m)
                self.in_flight -= 1
                self.reads += 1
                self.read_wait_s += waited

    def snapshot(self, restart_most: bool = False) -> dict:
        """The counts now, as a dict (differences of two show what happened between them);
        ``restart_most``: ``most_in_flight`` counted afresh from now on (a benchmark's runs
        each see their own)."""
        with self.runner.lock:
            counts = {name: getattr(self, name) for name in self.COUNTS}
            if restart_most:
                self.most_in_flight = self.in_flight
            return counts
