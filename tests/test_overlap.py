"""Transfers beside reductions (issue 49): while one thread waits for its result, another
thread's upload goes on, on the same device; the runtime counts it (``Transfers.flow``).

The counts are of what happened in what order (a staging chunk that began filling while
another thread's result was still pending on the GPU), never of how long anything took.
"""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

import dmlgpu
from dmlgpu import ArgMaxOperatorDesc, TensorDesc, oracle
from dmlgpu.plan import Tuning
from dmlgpu.runtime import configured, hot
from dmlgpu.runtime import runner as runner_room


def _beside_a_pending_result(nap_us: int, monkeypatch) -> tuple[int, dict]:
    """Thread A reduces a large resident tensor and waits for its result; once its wait has
    begun, this thread uploads 4 MiB through a fresh ring of 1 MiB chunks. (``Flow.beside``,
    the flow's counts after). Waits do not spin (``spin_us=0``), so that on a GPU too a wait
    that blocks does so at once; A's passes and its read go in one submission, so that its
    map is pending for as long as the GPU works."""
    monkeypatch.setattr(runner_room, "SUBMIT_EARLY_BYTES", 1 << 62)
    monkeypatch.delenv("DMLGPU_RUNNER", raising=False)  # (the native path's waits: the public path's are wgpu-py's)
    with configured(spin_us=0, nap_us=nap_us):
        device = dmlgpu.Device()
    try:
        runner = device.runner
        assert runner.path.name == "native" and runner.path.nap_s == nap_us * 1e-6
        x = np.random.default_rng(3).random((4096, 4096), dtype=np.float32)
        op = device.compile(ArgMaxOperatorDesc(TensorDesc("FLOAT32", x.shape), TensorDesc("UINT32", (1, 4096)), [0]))
        big, out = device.upload(x), device.empty(op.output_desc)
        transfers = runner.transfers
        transfers.ring_chunk = transfers.stream_above = 1 << 20
        runner.memory.drop_kept()  # (a new ring: its first map lands in a poll of A's)
        before = transfers.flow.beside
        # lavapipe takes tens of milliseconds for one pass over 64 MiB; an H200 about 25 us
        for _ in range(1 if runner.capabilities.software else 2000):
            op.run(big, out)  # (recorded: submitted with the read)
        got: dict = {}
        a = threading.Thread(target=lambda: got.setdefault("a", out.numpy()))
        a.start()
        for _ in range(200_000):  # until A waits for its result (or has it)
            if transfers.flow.awaited or not a.is_alive():
                break
            time.sleep(1e-5)
        y = np.arange(1 << 20, dtype=np.float32)
        uploaded = device.upload(y)
        a.join()
        np.testing.assert_array_equal(got["a"], oracle.argmax(x, 0))
        np.testing.assert_array_equal(uploaded.numpy(), y)
        flow = transfers.flow.snapshot()
        assert flow["in_flight"] == 0 and not transfers.flow.awaited  # every transfer accounted for
        return flow["beside"] - before, flow
    finally:
        device.close()


def test_an_upload_fills_its_staging_while_another_threads_result_is_pending(monkeypatch):
    """With waits that nap between polls (the default), the uploading thread's staging maps
    land in the waiting thread's polls and it fills them while that result is still pending:
    at least its first chunk (on lavapipe its copy's submit then waits for the queue, which
    runs one submission at a time; on a GPU every chunk goes on)."""
    beside, flow = _beside_a_pending_result(hot.settings()["nap_us"], monkeypatch)
    assert hot.NAP_S > 0 and beside >= 1, flow


def test_a_wait_that_blocks_in_wgpus_poll_holds_the_next_upload_back(monkeypatch):
    """The serialisation the naps remove (``nap_us=0``, waits blocking in wgpu-native's poll,
    as before issue 49): the uploading thread's staging maps land only in the poll that lands
    the other thread's result, so no chunk of it begins beside that result. This is what
    made the test above sensitive: if wgpu stops holding its lock through a blocking poll, this
    fails, and the naps may go."""
    beside, flow = _beside_a_pending_result(0, monkeypatch)
    assert beside == 0, flow


@pytest.mark.parametrize("threads", [2, 4])
def test_threads_each_stream_their_own_chunks(threads):
    """Threads' NumPy calls on one device at once, each large enough to be reduced piece by
    piece as it crosses the bus (``CompiledOperator._streamed``, its pieces recorded in turn
    with the other threads' on one queue), with the GPU's plans (pairs kept between pieces,
    columns racing): right answers. Before issue 49 the pieces' pairs went into the program's
    one scratch buffer, and two threads took each other's over. The runtime saw every upload,
    at least two transfers under way at once, and none left in flight after."""
    device = dmlgpu.Device(tuning=Tuning())
    try:
        transfers = device.runner.transfers
        transfers.ring_chunk = transfers.stream_above = 1 << 20
        rng = np.random.default_rng(4)
        xs = [rng.random((512, 4096), dtype=np.float32) for _ in range(3 * threads)]  # 8 MiB each: 8 pieces
        got: dict = {}
        start = threading.Barrier(threads)

        def work(k: int) -> None:
            start.wait()
            for i in range(k, len(xs), threads):
                got[i] = dmlgpu.argmax(xs[i], 0, device=device)

        pool = [threading.Thread(target=work, args=(k,)) for k in range(threads)]
        for t in pool:
            t.start()
        for t in pool:
            t.join()
        for i, x in enumerate(xs):
            np.testing.assert_array_equal(got[i], oracle.argmax(x, 0), err_msg=f"call {i}")
        flow = transfers.flow.snapshot()
        assert flow["uploads"] == len(xs) and flow["upload_bytes"] == sum(x.nbytes for x in xs), flow
        assert flow["most_in_flight"] >= 2 and flow["in_flight"] == 0 and not transfers.flow.awaited, flow
        assert transfers.rings._out == {True: 0, False: 0}
    finally:
        device.close()
