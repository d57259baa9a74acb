"""One small call at a time per device (``runtime.admission.Admission``): the order threads are
admitted in, a thread that holds the device and never reads, a waiter interrupted, and on the
device (lavapipe) calls from many threads, a failing call and a result kept unread."""

import os
import random
import signal
import threading
import time

import numpy as np
import pytest

import dmlgpu
from _support import run_all
from dmlgpu.runtime.admission import Admission


def _holding(admission: Admission, release: threading.Event, entered: threading.Event) -> threading.Thread:
    """A thread admitted at once, leaving when ``release`` is set."""
    def hold():
        admission.enter()
        entered.set()
        release.wait()
        admission.leave()

    thread = threading.Thread(target=hold)
    thread.start()
    assert entered.wait(5)
    return thread


def test_a_lone_thread_is_admitted_at_once_and_again_while_it_holds():
    admission = Admission(patience_s=10)
    began = time.perf_counter()
    admission.enter()
    admission.enter()  # its next call, its result not read yet
    admission.leave()
    admission.leave()  # (a read that was not admitted: nothing to leave)
    admission.enter()
    admission.leave()
    assert time.perf_counter() - began < 0.5
    assert admission._holder is None and admission.waiting == 0


def test_waiters_are_admitted_in_the_order_they_came():
    admission = Admission(patience_s=10)
    release, entered = threading.Event(), threading.Event()
    holder = _holding(admission, release, entered)
    order: list = []

    def wait(k: int):
        admission.enter()
        order.append(k)
        admission.leave()

    waiters = []
    for k in range(6):
        waiters.append(threading.Thread(target=wait, args=(k,)))
        waiters[-1].start()
        deadline = time.monotonic() + 5
        while admission.waiting < k + 1 and time.monotonic() < deadline:
            time.sleep(0.001)
    assert admission.waiting == 6 and not order  # all wait while the holder holds
    release.set()
    for t in [holder, *waiters]:
        t.join(5)
    assert order == list(range(6))
    assert admission._holder is None and admission.waiting == 0


def test_a_thread_calling_again_at_once_keeps_the_device_for_its_streak_only():
    admission = Admission(patience_s=10, streak_s=0.05)
    stop, waited = threading.Event(), []

    def streaking():
        while not stop.is_set():
            admission.enter()
            admission.leave()

    streaker = threading.Thread(target=streaking)
    streaker.start()
    time.sleep(0.01)
    began = time.perf_counter()
    admission.enter()  # its turn comes once the streak is over, not when the loop stops
    waited.append(time.perf_counter() - began)
    time.sleep(0.1)  # holding: the streaking thread waits meanwhile
    assert admission.waiting == 1
    admission.leave()
    stop.set()
    streaker.join(5)
    assert waited[0] < 1
    assert admission._holder is None and admission.waiting == 0


def test_a_holder_that_never_leaves_delays_the_first_waiter_by_its_patience_only():
    admission = Admission(patience_s=0.05)
    release, entered = threading.Event(), threading.Event()
    holder = _holding(admission, release, entered)
    began = time.perf_counter()
    admission.enter()  # goes ahead of the holder once it has held for 50 ms
    waited = time.perf_counter() - began
    admission.leave()
    assert 0.02 <= waited < 2
    admission.enter()  # and then at once: the device is free again
    admission.leave()
    release.set()
    holder.join(5)
    assert admission._holder is None and admission.waiting == 0


def test_a_waiter_interrupted_leaves_the_queue_and_the_holder_keeps_the_device():
    admission = Admission(patience_s=30)
    release, entered = threading.Event(), threading.Event()
    holder = _holding(admission, release, entered)
    timer = threading.Timer(0.1, os.kill, (os.getpid(), signal.SIGINT))  # Ctrl-C, to the main thread
    timer.start()
    with pytest.raises(KeyboardInterrupt):
        admission.enter()  # (the main thread, which Ctrl-C reaches, while it waits)
    assert admission.waiting == 0 and admission._holder == holder.ident
    release.set()
    holder.join(5)
    assert admission._holder is None


def test_threads_entering_and_leaving_at_random_never_hang():
    """Eight threads x 50 admissions, 40 times, some re-entering and some never leaving, with a
    patience and a streak of 0.1 ms so that waiters pass the admitted thread often: a thread
    handed the device that was passed before it woke once waited for good."""
    admission = Admission(patience_s=1e-4, streak_s=1e-4)

    def calls(seed: int):
        r = random.Random(seed)
        for _ in range(50):
            admission.enter()
            if r.random() < 0.3:
                admission.enter()
            time.sleep(r.choice([0, 0, 0, 1e-5, 1e-4]))
            if r.random() < 0.9:
                admission.leave()

    for round_ in range(40):
        threads = [threading.Thread(target=calls, args=(round_ * 100 + k,), daemon=True) for k in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(20)
        assert not any(t.is_alive() for t in threads), f"round {round_}: a thread waits for good"


def test_a_call_from_a_signal_handler_while_its_thread_waits_does_not_wait_behind_it():
    """A handler that makes a resident call runs while its (main) thread waits to be admitted:
    it goes on at once, rather than queue behind its own thread's wait for good."""
    admission = Admission(patience_s=30)
    release, entered = threading.Event(), threading.Event()
    holder = _holding(admission, release, entered)
    handled = []

    def handler(signum, frame):
        admission.enter()
        admission.leave()
        handled.append(signum)
        release.set()  # the holder leaves once the handler has run

    previous = signal.signal(signal.SIGUSR1, handler)
    try:
        threading.Timer(0.05, os.kill, (os.getpid(), signal.SIGUSR1)).start()
        admission.enter()  # waits for the holder; the handler runs meanwhile
        admission.leave()
    finally:
        signal.signal(signal.SIGUSR1, previous)
    holder.join(5)
    assert handled == [signal.SIGUSR1]
    assert admission._holder is None and admission.waiting == 0


def test_interrupts_landing_anywhere_in_the_bookkeeping_never_hang_the_others():
    """KeyboardInterrupt raised at random inside ``enter`` and ``leave`` (after any release of
    the mutex, around every wait), each thread catching it and calling on: every thread goes
    on making calls (an interrupt costs the others a look, never a wait for good)."""
    admission = Admission(patience_s=1e-4, streak_s=1e-4)
    chance = random.Random(7)

    class Mutex:
        def __init__(self):
            self.lock = threading.Lock()

        def __enter__(self):
            self.lock.acquire()

        def __exit__(self, kind, value, tb):
            self.lock.release()
            if kind is None and chance.random() < 0.01:
                raise KeyboardInterrupt

    admission._mutex = Mutex()
    progress = [0] * 6
    stop = threading.Event()

    def calls(k: int):
        while not stop.is_set():
            for step in (admission.enter, admission.leave):
                try:
                    step()
                except KeyboardInterrupt:
                    pass
            progress[k] += 1

    threads = [threading.Thread(target=calls, args=(k,), daemon=True) for k in range(6)]
    for t in threads:
        t.start()
    for _ in range(6):  # every thread moves on, second after second
        before = list(progress)
        time.sleep(0.5)
        assert all(a > b for a, b in zip(progress, before)), f"a thread made no call in 0.5 s: {progress} {before}"
    stop.set()
    for t in threads:
        t.join(5)


# --- on the device ------------------------------------------------------------------------


def test_small_calls_of_many_threads_are_right_and_leave_the_device_free():
    device = dmlgpu.Device()
    x = np.random.default_rng(0).standard_normal((4, 300)).astype(np.float32)
    want = np.argmax(x, 1)
    resident = device.upload(x)
    wrong, errors = [], []

    def loop(k: int):
        try:
            for i in range(30):
                if (i + k) % 2:
                    got = dmlgpu.argmax(resident, 1).numpy().reshape(-1)
                else:
                    got = dmlgpu.argmax(x, 1, device=device).reshape(-1)
                if not np.array_equal(got, want):
                    wrong.append((k, i))
        except Exception as err:
            errors.append(err)

    run_all([threading.Thread(target=loop, args=(k,)) for k in range(12)], wrong, errors)
    admission = device.runner.admission
    assert admission._holder is None and admission.waiting == 0
    device.close()


def test_a_call_that_fails_after_its_admission_leaves_at_once(monkeypatch):
    device = dmlgpu.Device()
    x = device.upload(np.arange(12, dtype=np.float32).reshape(3, 4))
    runner = device.runner
    dmlgpu.argmax(x, 1).numpy()
    dispatch = runner.dispatch

    def fail(*args, **kwargs):
        raise RuntimeError("planted")

    monkeypatch.setattr(runner, "dispatch", fail)
    with pytest.raises(RuntimeError, match="planted"):
        dmlgpu.argmax(x, 1)
    assert runner.admission._holder is None  # not held until another thread's patience runs out
    monkeypatch.setattr(runner, "dispatch", dispatch)
    assert dmlgpu.argmax(x, 1).numpy().reshape(-1).tolist() == [3, 3, 3]
    device.close()


def test_a_result_kept_unread_holds_other_threads_back_by_the_patience_only():
    """A thread dispatches a small call and keeps its result unread; another thread's calls
    meanwhile wait once, for the patience, and then run at their own pace."""
    device = dmlgpu.Device()
    device.runner.admission.patience_s = 0.5
    x = device.upload(np.arange(12, dtype=np.float32).reshape(3, 4))
    kept, done = threading.Event(), threading.Event()

    def keep():
        t = dmlgpu.argmax(x, 1)  # admitted, not read
        kept.set()
        done.wait(10)
        assert t.numpy().reshape(-1).tolist() == [3, 3, 3]

    keeper = threading.Thread(target=keep)
    keeper.start()
    assert kept.wait(10)
    times = []
    for _ in range(5):
        began = time.perf_counter()
        assert dmlgpu.argmax(x, 1).numpy().reshape(-1).tolist() == [3, 3, 3]
        times.append(time.perf_counter() - began)
    done.set()
    keeper.join(10)
    assert times[0] >= 0.4  # it waited for the patience
    assert max(times[1:]) < 0.4  # and not again
    device.close()
