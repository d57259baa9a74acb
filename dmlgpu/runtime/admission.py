"""Resident small calls one at a time per device, each from its dispatch to its read-back
(issue 48).

Threads that call a device at once each hand the interpreter's lock and the runner's lock back
and forth at every step of their calls, and each wait for the GPU is a call into wgpu-native of
its own: on the GPU measured, sixteen threads did 4.5k resident small calls a second, against
12k with the same calls taken one at a time under a lock of the caller's
(``benchmarks/thread_scaling.py --locked``; benchmarks/LOG.md, fourteenth session).
``Admission`` is that lock, kept by the runner: a thread is admitted when it dispatches a small
call on a resident tensor (``CompiledOperator.run``, an output read in place) and leaves when its
read-back ends (``Transfers.read_into``); the others sleep meanwhile, in the order they came. A
thread that calls again at once is admitted again for up to ``STREAK_S`` while others wait (a
hand-over a call cost each call a thread's wake-up); then the first waiter has its turn. Calls
from NumPy are not admitted: their copies in and out overlap across threads, and admitted they
did fewer calls a second from 2 to 16 threads.

It orders calls and protects nothing: the runner's own lock keeps its state safe whoever is
admitted. So no thread waits on another for good: a thread that was admitted and does not read
(a tensor kept for later, an error before the read, a thread that ended) holds the device for
at most ``PATIENCE_S``, after which the first waiter takes it over. A thread already admitted
goes on without waiting (its next call, a read of another tensor).
"""

from __future__ import annotations

import collections
import threading
import time

#: How long an admitted thread may hold the device before the first waiter goes ahead without
#: it: 40 times a small call's round trip on the GPUs measured (about 50 us), so a call that
#: is read back at once never meets it, and a thread that keeps its result unread for later
#: delays the others by at most this.
PATIENCE_S = 2e-3
#: How long one thread's calls may follow each other while others wait: handing the device to
#: a sleeping thread after every call cost a wake-up a call (admission in arrival order, call by
#: call, did fewer calls than none at all: benchmarks/LOG.md, fourteenth session), so a thread
#: that calls again at once goes on for this long, then the first waiter has its turn.
STREAK_S = 0.5e-3


#: A waiter that is not first still looks this often: a wake lost to a Ctrl-C that landed
#: inside the bookkeeping costs at most this, never a wait for good.
RECHECK_S = 0.05


class _Waiter:
    """A thread waiting to be admitted: its turn (a lock it holds, released to wake it), whether
    a wake is given and not yet taken, and whether it was admitted (handed the device: it goes
    on even where the first waiter has passed it since, before it woke)."""

    __slots__ = ("thread", "turn", "given", "admitted")

    def __init__(self, thread: int):
        self.thread, self.turn, self.given, self.admitted = thread, threading.Lock(), False, False
        self.turn.acquire()


class Admission:
    """Admits one thread at a time (``enter``); the others wait in arrival order. The admitted
    thread's calls follow each other for ``streak_s`` at most while others wait; then, when it
    leaves (``leave``), the first waiter is admitted, and a thread that has held the device for
    ``patience_s`` is passed by the first waiter.

    A KeyboardInterrupt (on the main thread) may land between any two steps here, and holding
    it back would cost two signal calls a step on every call: so a waiter out of the queue goes
    on, a wake is marked given before it is given, and a waiter that is not first looks again
    every ``RECHECK_S``; an interrupt costs the others at most that, or the patience."""

    def __init__(self, patience_s: float = PATIENCE_S, streak_s: float = STREAK_S):
        self.patience_s, self.streak_s = patience_s, streak_s
        self._mutex = threading.Lock()
        self._holder: int | None = None
        self._since = 0.0  # when the holder was admitted
        self._streak: tuple = (None, 0.0)  # the thread whose calls follow each other, and since when
        self._queue: collections.deque = collections.deque()  # of _Waiter, in arrival order

    def _admit(self, thread: int, now: float) -> None:
        self._holder, self._since = thread, now
        if self._streak[0] != thread:
            self._streak = (thread, now)

    def enter(self) -> None:
        """Return once this thread is admitted (at once if it is already, if no one is and no one
        waits, if its own calls' streak goes on, or if it is already waiting: a signal handler's
        call made while its thread waits)."""
        me = threading.get_ident()
        entry = None
        try:
            with self._mutex:
                if self._holder == me or any(e.thread == me for e in self._queue):
                    return
                now = time.monotonic()
                streak = self._streak[0] == me and now - self._streak[1] < self.streak_s
                if self._holder is None and (not self._queue or streak):
                    self._admit(me, now)
                    return
                entry = _Waiter(me)
                self._queue.append(entry)
            while True:
                if entry.turn.acquire(timeout=self._look_after(entry)):
                    with self._mutex:
                        entry.given = False  # (the wake given is taken)
                with self._mutex:
                    if entry.admitted or entry not in self._queue:  # handed the device
                        return
                    if entry.given and entry.turn.locked():  # a wake marked but never given
                        entry.given = False
                    now = time.monotonic()
                    if self._queue[0] is entry and (self._holder is None or now - self._since >= self.patience_s):
                        self._queue.popleft()
                        entry.admitted = True
                        self._admit(me, now)
                        self._wake_first()
                        return
        except BaseException:  # (Ctrl-C while waiting): out of the queue, or admitted and leaving at once
            if entry is not None:
                with self._mutex:
                    if entry in self._queue:
                        first = self._queue[0] is entry
                        self._queue.remove(entry)
                        if first:
                            self._wake_first()
                    elif self._holder == me:
                        self._hand_over()
            raise

    def _look_after(self, entry: _Waiter) -> float:
        """How long a waiter sleeps before it looks again: the first one until the admitted
        thread's streak or patience runs out (it may then go ahead), the others until woken
        (a look costs the interpreter's lock, and sixteen threads looking every streak took
        the admitted one's turn: benchmarks/LOG.md, fourteenth session), or ``RECHECK_S``."""
        with self._mutex:
            if not self._queue or self._queue[0] is not entry:
                return RECHECK_S
            if self._holder is None:  # (left free just now)
                return 0
            now = time.monotonic()
            ends = [self._since + self.patience_s]  # and, while the streak goes on, its end: it may leave the device free
            streak_end = self._streak[1] + self.streak_s
            if streak_end > now:
                ends.append(streak_end)
            return max(50e-6, min(ends) - now)

    def _wake_first(self) -> None:
        """Give the first waiter its turn to look (under the mutex)."""
        if self._queue and not self._queue[0].given:
            self._queue[0].given = True
            self._queue[0].turn.release()

    def leave(self) -> None:
        """End this thread's admission, if it holds it: the first waiter is admitted once this
        thread's streak is over, else the device is left free (this thread's next call, or the
        first waiter when it looks at the streak's end, takes it)."""
        with self._mutex:
            if self._holder == threading.get_ident():
                self._hand_over()

    def _hand_over(self) -> None:
        """``leave`` under the mutex."""
        now = time.monotonic()
        if self._queue and now - self._streak[1] >= self.streak_s:
            entry = self._queue.popleft()
            entry.admitted = True
            self._admit(entry.thread, now)
            if not entry.given:
                entry.given = True
                entry.turn.release()
            self._wake_first()  # the next one watches the clock from now on
        else:
            self._holder = None

    @property
    def waiting(self) -> int:
        """Threads waiting to be admitted (for tests and the curious)."""
        return len(self._queue)
