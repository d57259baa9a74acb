"""Large transfers: the staging ring up and down, and NumPy calls reduced piece by piece while
the rest of their input is still on its way. A device with a tiny ring reaches every path on
small arrays: ragged last chunks, strided views, inputs many times the ring, several buffers.
"""

from __future__ import annotations

import numpy as np
import pytest

import dmlgpu
from dmlgpu import oracle

CHUNK = 4096


@pytest.fixture(scope="module")
def small_ring():
    """A device whose transfers stream above 8 KiB through a ring of two 4 KiB buffers, with
    host copies split over threads above 1 KiB."""
    device = dmlgpu.Device()
    runner = device.runner
    t = runner.transfers
    t.ring_chunk, t.ring_depth, t.stream_above, t.copies.parallel_above = CHUNK, 2, 2 * CHUNK, 1024
    yield device
    device.close()


@pytest.mark.parametrize("nbytes", [2 * CHUNK + 1, 5 * CHUNK, 5 * CHUNK + 3, 37 * CHUNK - 5])
def test_upload_and_read_back_through_the_ring(small_ring, nbytes):
    x = np.random.default_rng(nbytes).integers(0, 256, nbytes, dtype=np.uint8)
    t = small_ring.upload(x)
    got = t.numpy()
    assert got.dtype == x.dtype and np.array_equal(got, x)
    t.release()


def test_strided_view_uploads_its_span_without_a_copy(small_ring):
    base = np.random.default_rng(1).standard_normal((64, 300)).astype(np.float32)
    view = base[::3, 5:290]  # rows padded, a ragged start: described by strides
    t = small_ring.upload(view)
    assert t.desc.strides is not None
    np.testing.assert_array_equal(t.numpy(), view)
    got = dmlgpu.argmax(t, 1).numpy()
    np.testing.assert_array_equal(got, oracle.argmax(np.ascontiguousarray(view), 1))


CASES = [
    ("argmax", (300, 97), (1,), np.float32),
    ("argmin", (97, 300), (0,), np.float32),
    ("argmax", (41, 53, 7), (0, 1, 2), np.float32),
    ("argmax", (3, 20011), (1,), np.int16),
    ("hardmax", (129, 77), (1,), np.float32),
    ("hardmax", (70, 90), (0,), np.float16),
    ("argmin", (97, 300), (1,), np.float64),
    ("hardmax", (41, 77), (1,), np.float64),
]


@pytest.mark.parametrize("op,shape,axes,dtype", CASES)
def test_streamed_numpy_calls_match_the_oracle(small_ring, op, shape, axes, dtype):
    rng = np.random.default_rng(len(shape) * 1000 + shape[0])
    x = rng.integers(-3, 4, shape).astype(dtype)  # few values: ties straddle every piece
    assert x.nbytes > 2 * CHUNK  # streamed, reduced piece by piece
    got = getattr(dmlgpu, op)(x, axes, device=small_ring)
    want = getattr(oracle, op)(x, axes)
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)


def test_pieces_run_before_the_upload_ends(small_ring, monkeypatch):
    """The overlap itself: the first piece is recorded (and submitted with the next chunk)
    while later chunks are still to be copied."""
    runner = small_ring.runner
    uploaded, seen = [0], []
    real_upload, real_dispatch = runner.transfers.upload, runner.dispatch

    def upload(buffer, raw, offset=0, on_chunk=None):
        def spy(done):
            uploaded[0] = done
            on_chunk(done)
        return real_upload(buffer, raw, offset, spy)

    def dispatch(steps, **kw):
        seen.append(uploaded[0])
        return real_dispatch(steps, **kw)

    monkeypatch.setattr(runner.transfers, "upload", upload)
    monkeypatch.setattr(runner, "dispatch", dispatch)
    x = np.random.default_rng(3).standard_normal((256, 97)).astype(np.float32)
    got = dmlgpu.argmax(x, 1, device=small_ring)
    np.testing.assert_array_equal(got, oracle.argmax(x, 1))
    assert len(seen) > 2 and seen[0] < x.nbytes, seen


def test_a_large_output_streams_back(small_ring):
    x = np.random.default_rng(4).standard_normal((100, 130)).astype(np.float32)
    t = small_ring.upload(x)
    out = dmlgpu.hardmax(t, 1)
    assert out.desc.total_tensor_size_in_bytes > small_ring.runner.transfers.stream_above
    np.testing.assert_array_equal(out.numpy(), oracle.hardmax(x, 1))


def test_tensors_in_several_buffers_stream_each(small_ring):
    device = dmlgpu.Device(smaller={"max_buffer": 3 * CHUNK, "max_storage_binding": 2 * CHUNK})
    runner = device.runner
    t = runner.transfers
    t.ring_chunk, t.ring_depth, t.stream_above = CHUNK, 2, CHUNK
    try:
        x = np.random.default_rng(5).standard_normal((40, 250)).astype(np.float32)
        t = device.upload(x)
        assert len(t._buffers) > 1
        np.testing.assert_array_equal(t.numpy(), x)
        np.testing.assert_array_equal(dmlgpu.argmax(x, 1, device=device), oracle.argmax(x, 1))
        np.testing.assert_array_equal(dmlgpu.argmin(x, 0, device=device), oracle.argmin(x, 0))
    finally:
        device.close()


@pytest.mark.parametrize("staged", [False, True], ids=["queued", "staged"])
@pytest.mark.parametrize("tail", [0, 3])
def test_a_write_lands_after_work_recorded_before_it_and_before_work_after(tail, staged):
    """Small writes are queued writes, which wgpu runs ahead of the next submit's work: the
    runner submits the work recorded before a write first, so each pass sees its own input.
    Larger ones (every one here with ``staged``) are copied out of reused mapped staging by a
    copy recorded in order with the passes. Unaligned writes (``tail``) are padded with zeros
    to 4 bytes."""
    device = dmlgpu.Device()
    if staged:
        device.runner.transfers.queue_write_max = 0
    desc = dmlgpu.TensorDesc("FLOAT32", (4, 64))
    compiled = device.compile(dmlgpu.ArgMaxOperatorDesc(desc, axes=[1]))
    rng = np.random.default_rng(tail)
    first, second = (rng.standard_normal((4, 64)).astype(np.float32) for _ in range(2))
    t = device.upload(first)
    before = compiled.run(t)  # recorded, not yet submitted
    t.write(second)
    after = compiled.run(t)
    np.testing.assert_array_equal(before.numpy().ravel(), first.argmax(1))
    np.testing.assert_array_equal(after.numpy().ravel(), second.argmax(1))
    raw = device.upload(np.zeros(64, np.uint8))
    device.runner.transfers.write(raw._buffers[0], np.full(8 + tail, 7, np.uint8), offset=16)
    got = raw.numpy()
    assert got[16:24 + tail].tolist() == [7] * (8 + tail) and not got[:16].any()
    if staged:  # the staging buffers are reused: many writes and reads, each seeing its own bytes
        for _ in range(20):
            x = rng.standard_normal((4, 64)).astype(np.float32)
            t.write(x)
            np.testing.assert_array_equal(compiled.run(t).numpy().ravel(), x.argmax(1))
        assert device.runner.memory.writes.bytes > 0
    device.close()


# --- views with wide gaps cross the bus as their elements (layout.Gather) -----------------


@pytest.fixture
def gathering(small_ring, monkeypatch):
    """Views of 8 KiB and more whose span is over 1.25x their elements are gathered."""
    from dmlgpu import layout

    monkeypatch.setattr(layout, "GATHER_ABOVE", 8 << 10)
    small_ring.by_call.clear()
    yield small_ring
    small_ring.by_call.clear()


@pytest.mark.parametrize("view", [
    lambda a: a[:, :37],                 # rows of a wider array: span 4.3x the elements
    lambda a: a[5:, 3:100:2],             # an inner stride too
    lambda a: a.reshape(160, 10, 160)[:, 2:7, :50],  # three axes, rows that are slabs of the first
    lambda a: a[:, :1000],                # rows longer than a staging chunk: packed first
], ids=["columns", "inner-stride", "3d", "long-rows"])
def test_a_view_with_gaps_crosses_as_its_elements(gathering, monkeypatch, view):
    from dmlgpu.runtime.transfers import Transfers

    base = np.random.default_rng(9).integers(-50, 50, (160, 1600)).astype(np.float32)
    x = view(base)
    moved = []
    real = Transfers._upload
    monkeypatch.setattr(Transfers, "_upload", lambda self, buffer, source, *a, **k:
                        moved.append(source.nbytes) or real(self, buffer, source, *a, **k))
    got = dmlgpu.argmax(x, x.ndim - 1, device=gathering)
    np.testing.assert_array_equal(got, oracle.argmax(np.ascontiguousarray(x), x.ndim - 1))
    assert moved == [x.nbytes]  # the elements, not the span
    got = dmlgpu.argmin(x, (0, x.ndim - 1), device=gathering)  # again, and over several axes
    np.testing.assert_array_equal(got, oracle.argmin(np.ascontiguousarray(x), (0, x.ndim - 1)))


def test_small_gaps_still_travel_as_the_span(gathering):
    """A view whose span is close to its elements is uploaded as it is, without a host copy."""
    from dmlgpu import layout

    base = np.random.default_rng(10).standard_normal((300, 100)).astype(np.float32)
    assert layout.gather(base[:, :90]) is None and layout.gather(base[::2]) is not None
    np.testing.assert_array_equal(dmlgpu.argmax(base[:, :90], 1, device=gathering), oracle.argmax(base[:, :90], 1))


def test_uploads_from_several_threads_share_the_rings(small_ring):
    """More transfers at once than rings may exist: the ones beyond wait for a ring to come
    back, every answer is right, and no more rings than the limit were made."""
    import threading

    runner = small_ring.runner
    runner.transfers.rings.most = 2
    rng = np.random.default_rng(11)
    arrays = [rng.standard_normal((64, 97)).astype(np.float32) for _ in range(6)]
    wrong, errors = [], []

    def run(x):
        try:
            for _ in range(4):
                if not np.array_equal(dmlgpu.argmax(x, 1, device=small_ring), oracle.argmax(x, 1)):
                    wrong.append(x.shape)
        except Exception as err:  # any error here fails the test
            errors.append(repr(err))

    threads = [threading.Thread(target=run, args=(x,)) for x in arrays]
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        runner.transfers.rings.most = 4
    assert not errors and not wrong, (errors, wrong)
    assert len(runner.memory.rings[True]) <= 2
