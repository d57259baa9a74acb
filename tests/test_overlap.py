"""Several threads streaming large NumPy calls through one device at once (issue 49)."""

from __future__ import annotations

import threading

import numpy as np
import pytest

import dmlgpu
from dmlgpu import oracle
from dmlgpu.plan import Tuning


@pytest.mark.parametrize("threads", [2, 4])
def test_threads_each_stream_their_own_chunks(threads):
    """Threads' NumPy calls on one device at once, each large enough to be reduced piece by
    piece as it crosses the bus (``CompiledOperator._streamed``, its pieces recorded in turn
    with the other threads' on one queue), with the GPU's plans (pairs kept between pieces,
    columns racing): right answers. Before issue 49 the pieces' pairs went into the program's
    one scratch buffer, and two threads took each other's over."""
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
        assert transfers.rings._out == {True: 0, False: 0}
    finally:
        device.close()
