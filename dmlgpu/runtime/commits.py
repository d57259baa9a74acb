"""Small calls from many threads in one submission: the native path's group commit.

Owns ``Commits`` (one per runner: the batch of calls waiting for the next submission, and
whether a thread is submitting one now) and ``_Batch``. May touch the runner's queue order (its
lock, its recorded work through ``Runner.take_pending``, the buffers mapped for reads in
place) and its backend's ``submit_calls``; records and submits nothing itself.
"""

from __future__ import annotations

import threading
import weakref
from typing import TYPE_CHECKING, cast

import wgpu

if TYPE_CHECKING:
    from .runner import Runner


class _Batch:
    """Small calls committed together (``Commits.commit``) while another submission was under
    way: one submission for all of them. Their threads wait on the batch's own condition, of
    its own lock (not the runner's), so that a batch done wakes its threads alone and they go
    on to their reads without queueing for the runner's lock behind each other (and ahead of
    the next batch's leader); one of them is woken first when the batch is to be led
    (``lead``)."""

    __slots__ = ("calls", "reads", "done", "lead", "error", "turn")

    def __init__(self) -> None:
        self.calls: list = []  # DmlCall pointers
        self.reads: list = []  # buffers they map as they are (reads in place)
        self.done = False  # submitted, or failed (``error``)
        self.lead = False  # one of its threads is asked to lead it (at the end of ``Commits._lead``)
        self.error: BaseException | None = None
        self.turn = threading.Condition(threading.Lock())

    def wait(self) -> bool:
        """Wait until the batch is done (True) or one of its threads is asked to lead it and
        this one takes that turn (False). Without the runner's lock held."""
        with self.turn:
            while not self.done and not self.lead:
                self.turn.wait()
            if self.done:
                return True
            self.lead = False
            return False

    def finish(self, error: BaseException | None) -> None:
        """Done (``error``: why it failed, or None): its threads go on. Under the runner's lock."""
        with self.turn:
            self.error, self.done = error, True
            self.turn.notify_all()


class Commits:
    """The small calls of one runner's threads, submitted together (``commit``)."""

    def __init__(self, runner: "Runner"):
        # (a weak reference: the runner owns this room)
        self.runner: Runner = cast("Runner", weakref.proxy(runner))
        self.lock = runner.lock
        self.leading = False  # a thread submits calls now: no other submit or queue write may start
        self._batch: _Batch | None = None  # calls waiting for the next submission (None: none)

    def commit(self, call, reads=None) -> None:
        """Submit the native small call ``call`` (a ``DmlCall``: a kit's, ``kits.Kit``, or a read
        in place's) after the recorded work, in one submission with the calls other threads
        commit meanwhile (a group commit: wgpu-native's submits take turns with each other and
        with its polls, so a round trip a thread did not get more done from more threads). A
        thread that finds no submission under way and no batch waiting leads its own call at
        once, with no batch made and nothing to wait for. Otherwise its call joins the next
        batch (``_Batch``), which one of its threads leads (``_lead``) once the submission
        under way is done: it takes the calls waiting and the recorded work, and records and
        submits them with one encoder, outside the lock. The call's maps are started in that
        submission and its ticket set. ``reads``: the buffer the call maps as it is (a read in
        place), in the runner's ``mapped`` from the submission on. Without the lock held."""
        with self.lock:
            batch = self._batch
            if batch is None and not self.leading:  # alone (``_lead`` checks the device first)
                error = self._lead((call,), () if reads is None else (reads,))
                if error is not None:
                    raise error
                return
            if batch is None:
                batch = self._batch = _Batch()
            batch.calls.append(call)
            if reads is not None:
                batch.reads.append(reads)
            if not self.leading:  # (its thread asked to lead it has not woken yet)
                self._lead_batch(batch)
        while not batch.done:
            if batch.wait():
                break
            with self.lock:  # this thread's turn to lead it, unless another thread leads now
                if self._batch is batch and not self.leading:
                    self._lead_batch(batch)
        if batch.error is not None:
            raise batch.error

    def idle(self) -> bool:
        """No submission under way and no batch waiting for one. Under the lock."""
        return self._batch is None and not self.leading

    def submit_alone(self) -> None:
        """Submit the recorded work now, as a thread alone (no submission under way and no
        batch waiting: ``idle``), holding the runner's lock through the submit: other threads
        wait the few microseconds of it rather than join a batch, and the call goes to the GPU
        without ``_lead``'s handing over, whose Python is a tenth of a small call's host time
        (benchmarks/LOG.md, "The settings' measurements"). Otherwise the work stays recorded for the next submission. Under the lock."""
        if self.idle():
            runner = self.runner
            path = runner.native
            assert path is not None  # (only the native path submits a call alone)
            pending, _, remap = runner.take_pending()  # (queued writes land ahead of this submission)
            try:
                path.submit_calls(pending, ())
            except BaseException as err:
                failed = self._failed(err, remap)
                if failed is not err:
                    raise failed from None
                raise
            if remap:
                runner.transfers.remapped(remap)

    def _failed(self, err: BaseException, remap: list) -> BaseException:
        """A submission failed with ``err``: its write staging to map again (``remap``) is
        destroyed, and the error to raise returned (a wgpu error as the runner words it)."""
        runner = self.runner
        for m in remap:
            runner.memory.destroy(m.buffer)
        return runner.gpu_error(err) if isinstance(err, wgpu.GPUError) else err

    def _lead_batch(self, batch: _Batch) -> None:
        """Lead the batch waiting (``_batch``) and wake its threads. Under the lock."""
        self._batch = None
        batch.finish(self._lead(batch.calls, batch.reads))

    def _lead(self, calls, reads) -> BaseException | None:
        """Submit the small calls ``calls`` with the recorded work and the queued writes, their
        record and submit outside the lock (the calls arriving meanwhile join the next batch),
        and put the buffers ``reads`` in the runner's ``mapped``; no other submit or queue
        write starts until it is done. The error, or None. Under the lock."""
        runner = self.runner
        path = runner.native
        assert path is not None  # (only the native path commits small calls)
        self.leading = True
        remap: list = []
        try:
            runner.check()
            if runner.mapped:
                runner.wait_unmapped(None, ())
            pending, _, remap = runner.take_pending()  # (queued writes land ahead of this submission)
            self.lock.release()
            try:
                path.submit_calls(pending, calls)
            finally:
                self.lock.acquire()
                for encoder in pending:
                    encoder.drop()
            runner.mapped.update(reads)
            if remap:
                runner.transfers.remapped(remap)
            return None
        except BaseException as err:
            return self._failed(err, remap)
        finally:
            self.leading = False
            waiting = self._batch
            if waiting is not None:  # one thread of the calls that arrived meanwhile leads them
                with waiting.turn:
                    waiting.lead = True
                    waiting.turn.notify()
            runner.notify_changed()  # (submits waiting for the batch to go)
