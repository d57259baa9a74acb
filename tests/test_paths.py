"""The runner's two paths: the native one is written against known wgpu-py versions only."""

from __future__ import annotations

import os
import time

import pytest
import wgpu

import dmlgpu
from dmlgpu.runtime import hot, memory, native


def test_installed_wgpu_is_one_the_native_path_knows():
    """A wgpu-py the native path was not written against must fail here, loudly, rather than
    misbehave at run time (pyproject.toml pins the range; NATIVE_WGPU lists what was checked)."""
    assert native.native_unsupported() is None, native.native_unsupported()
    assert wgpu.__version__ in native.NATIVE_WGPU


def test_the_switch_picks_the_path(device):
    wanted = os.environ.get("DMLGPU_RUNNER", "native")
    assert device.runner.path.name == wanted
    assert device.info()["runner_path"] == wanted


def test_an_unknown_version_falls_back_to_the_public_path(monkeypatch):
    monkeypatch.setattr(native, "NATIVE_WGPU", {"0.0.0": "0"})
    monkeypatch.delenv("DMLGPU_RUNNER", raising=False)
    import warnings

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        device = dmlgpu.Device()
    assert device.runner.path.name == "public"
    assert any("native path is written against" in str(w.message) for w in caught)
    device.close()


def test_waits_that_spin_first_give_right_answers_short_and_long(device):
    """The native path polls without blocking for ``spin_s`` before it blocks (GPUs only by
    default): calls that end within the spin, and calls that outlast it, are right."""
    import numpy as np

    from dmlgpu import oracle

    if device.runner.path.name != "native":
        assert not hasattr(device.runner.path, "spin_s")
        return
    path = device.runner.path
    kept = path.spin_s
    rng = np.random.default_rng(7)
    try:
        for spin in (1.0, 1e-6):  # every wait ends within the spin / every wait outlasts it
            path.spin_s = spin
            for shape in ((1, 40), (3, 5000), (64, 20000)):
                x = rng.integers(-50, 50, shape).astype(np.float32)
                assert np.array_equal(dmlgpu.argmax(x, 1, device=device), oracle.argmax(x, 1))
                t = device.upload(x)
                r = dmlgpu.argmin(t, (0, 1))
                assert np.array_equal(r.numpy(), oracle.argmin(x, (0, 1)))
                r.release()
                t.release()
    finally:
        path.spin_s = kept


def test_a_read_back_shares_the_command_buffer_of_work_recorded_before_it(device):
    """A read adds its copy to the last pending encoder: one submit, and the read sees every
    pass recorded before it, from this call and from calls recorded before it."""
    import numpy as np

    from dmlgpu import oracle

    rng = np.random.default_rng(8)
    xs = [rng.standard_normal((4, 300)).astype(np.float32) for _ in range(3)]
    tensors = [device.upload(x) for x in xs]
    results = [dmlgpu.argmax(t, 1) for t in tensors]  # three calls recorded, none submitted yet
    assert len(device.runner._pending) >= 1
    for x, r in zip(xs, results):
        assert np.array_equal(r.numpy(), oracle.argmax(x, 1))
        assert device.runner._pending == []
    for t in tensors + results:
        t.release()


def test_a_dispatch_is_recorded_at_its_submit_and_with_the_read_after_it(device, monkeypatch):
    """Native path: a dispatch stays its steps until the submit. One dispatch then a read are
    recorded by one C call (no ``Deferred.take``); several, or one then other work, each
    record on their own, in order. The read's ``DmlCall`` forgets the steps it ran: a later
    read through the same staging only copies (it would otherwise run them again)."""
    import numpy as np

    from dmlgpu import oracle

    rng = np.random.default_rng(9)
    xs = [rng.standard_normal((4, 300)).astype(np.float32) for _ in range(2)]
    tensors = [device.upload(x) for x in xs]
    if device.runner.path.name != "native":
        r = dmlgpu.argmax(tensors[0], 1)
        assert not isinstance(device.runner._pending[-1], native.Deferred)
        assert np.array_equal(r.numpy(), oracle.argmax(xs[0], 1))
        return
    taken = []
    take = native.Deferred.take
    monkeypatch.setattr(native.Deferred, "take", lambda self: taken.append(self) or take(self))
    one = dmlgpu.argmax(tensors[0], 1)
    assert np.array_equal(one.numpy(), oracle.argmax(xs[0], 1)) and taken == []  # fused
    one.write(np.zeros(4, np.uint32))
    assert one.numpy().ravel().tolist() == [0, 0, 0, 0]  # the staging's call copies only now
    two = [dmlgpu.argmin(t, 1) for t in tensors]
    clear = dmlgpu.hardmax(tensors[1], 1)  # a clear in the same submit
    assert np.array_equal(two[1].numpy(), oracle.argmin(xs[1], 1)) and len(taken) == 3
    assert np.array_equal(two[0].numpy(), oracle.argmin(xs[0], 1))
    assert np.array_equal(clear.numpy(), oracle.hardmax(xs[1], 1))
    last = dmlgpu.hardmax(tensors[0], 1)  # fused with its clear
    assert np.array_equal(last.numpy(), oracle.hardmax(xs[0], 1)) and len(taken) == 3
    for t in tensors + [one, *two, clear, last]:
        t.release()


# --- the native path's hot loop in C (_hot.c) ---------------------------------------------


def test_the_hot_loop_is_compiled_once_into_the_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("DMLGPU_CACHE", str(tmp_path))
    built = hot._compile_hot()
    assert os.path.dirname(built) == str(tmp_path) and os.path.isfile(built)
    stamp = os.stat(built).st_mtime_ns
    assert hot._compile_hot() == built and os.stat(built).st_mtime_ns == stamp  # found, not built again
    assert [p for p in os.listdir(tmp_path) if p != os.path.basename(built)] == []  # no work folder left


def test_without_a_compiler_the_public_path_is_used(tmp_path, monkeypatch):
    """No C compiler (or one that fails): the device still works, on the public path, with a
    warning that says why."""
    import warnings

    import numpy as np

    from dmlgpu import oracle

    monkeypatch.setenv("DMLGPU_CACHE", str(tmp_path))  # nothing built there yet
    monkeypatch.setenv("CC", "false")
    monkeypatch.delenv("DMLGPU_RUNNER", raising=False)
    monkeypatch.setattr(hot, "_hot_loaded", [])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        device = dmlgpu.Device()
    try:
        assert device.runner.path.name == "public"
        assert any("could not build the native path's hot loop" in str(w.message) for w in caught)
        x = np.random.default_rng(3).standard_normal((5, 70)).astype(np.float32)
        assert np.array_equal(dmlgpu.argmax(x, 1, device=device), oracle.argmax(x, 1))
    finally:
        device.close()


def test_a_map_whose_owner_goes_first_is_left_to_its_callback(device):
    """A map still pending when its Python object goes: the callback frees the C state when
    it fires (here when the buffer is destroyed), and the device goes on."""
    import gc

    import numpy as np

    from dmlgpu import oracle

    if device.runner.path.name != "native":
        return
    r = device.runner
    for write in (False, True):
        buffer = r.memory.create(256, memory.MAP_WRITE if write else memory.MAP_READ)
        m = r.path.new_map(buffer, 256)
        r.path.start_map(m, write=write)
        del m
        gc.collect()
        r.memory.destroy(buffer)
    x = np.random.default_rng(4).standard_normal((3, 50)).astype(np.float32)
    assert np.array_equal(dmlgpu.argmin(x, 1, device=device), oracle.argmin(x, 1))


def test_a_failed_small_call_drops_its_kit_and_the_next_call_works(device, monkeypatch):
    import numpy as np
    import pytest

    from dmlgpu import oracle

    x = np.random.default_rng(5).standard_normal((2, 300)).astype(np.float32)
    compiled = device.compile(dmlgpu.ArgMaxOperatorDesc(dmlgpu.TensorDesc("FLOAT32", x.shape), axes=[1]))
    assert np.array_equal(compiled(x), oracle.argmax(x, 1))
    if device.runner.path.name != "native":
        assert compiled._kits == []  # the public path has no hot loop
        return
    (kit,) = compiled._kits
    real = device.runner.path.call

    def fails(*args):
        monkeypatch.setattr(device.runner.path, "call", real)
        raise wgpu.GPUError("a failure in the middle of a call")

    monkeypatch.setattr(device.runner.path, "call", fails)
    with pytest.raises(wgpu.GPUError, match="middle of a call"):
        compiled(x)
    assert compiled._kits == []  # the kit that failed is not used again
    y = x[::-1].copy()
    assert np.array_equal(compiled(y), oracle.argmax(y, 1))
    assert len(compiled._kits) == 1 and compiled._kits[0] is not kit


def test_a_numpy_call_submits_work_recorded_before_it_first(device):
    """Resident work recorded (not yet submitted) before a NumPy call goes in the same submit,
    ahead of it: both answers are right and the resident one is read afterwards."""
    import numpy as np

    from dmlgpu import oracle

    rng = np.random.default_rng(6)
    a, b = (rng.standard_normal((4, 1000)).astype(np.float32) for _ in range(2))
    t = device.upload(a)
    pending = dmlgpu.argmax(t, 1)
    assert np.array_equal(dmlgpu.argmin(b, 1, device=device), oracle.argmin(b, 1))
    assert device.runner._pending == []
    assert np.array_equal(pending.numpy(), oracle.argmax(a, 1))
    pending.release()
    t.release()


def test_cc_may_hold_flags_and_a_missing_one_is_said(tmp_path, monkeypatch):
    monkeypatch.setenv("DMLGPU_CACHE", str(tmp_path))
    monkeypatch.setenv("CC", "cc -O1")  # flags in CC, as make reads it
    assert os.path.isfile(hot._compile_hot())
    monkeypatch.setenv("DMLGPU_CACHE", str(tmp_path / "other"))
    monkeypatch.setenv("CC", "/nonexistent/cc")
    import pytest

    with pytest.raises(RuntimeError, match="could not build the native path's hot loop"):
        hot._compile_hot()


# --- copies into staging on several cores (_hot.c's DmlCopier) ---------------------------


def _helper_threads() -> int:
    """This process's threads named as the copier names its helpers (Linux)."""
    names = []
    for task in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{task}/comm") as f:
                names.append(f.read().strip())
        except FileNotFoundError:  # a thread that ended meanwhile
            pass
    return names.count("dmlgpu-copy")


def _helper_threads_become(count: int) -> bool:
    give_up = time.monotonic() + 5
    while _helper_threads() != count and time.monotonic() < give_up:
        time.sleep(0.01)
    return _helper_threads() == count


def test_copies_on_helper_threads_land_whole_at_every_size(device, monkeypatch):
    """With the helpers on (off on lavapipe, as on any CPU adapter), uploads and small NumPy
    calls of sizes around the chunk boundaries, and from several threads at once (one copy
    uses the helpers, the others copy alone), land byte for byte."""
    import threading

    import numpy as np

    from dmlgpu import oracle

    r = device.runner
    if r.path.name != "native":
        return
    copier = hot.hot_copier()
    assert copier != r.path.hot_ffi.NULL and r.path.hot.dml_copier_helpers(copier) == min(
        hot.FILL_HELPERS, os.cpu_count() - 1)
    monkeypatch.setattr(r.path, "copier", copier)
    rng = np.random.default_rng(7)
    above = hot.FILL_PARALLEL_ABOVE
    for n in (1, above - 1, above, above + 1, 4 * above + 63, 600_001):
        x = rng.integers(0, 256, n, dtype=np.uint8)
        t = device.upload(x)
        assert np.array_equal(t.numpy(), x), n
        t.release()
        y = rng.standard_normal((2, n // 8 + 1)).astype(np.float32)
        assert np.array_equal(dmlgpu.argmax(y, 1, device=device), oracle.argmax(y, 1)), n
    wrong = []

    def calls(seed: int) -> None:
        local = np.random.default_rng(seed)
        for _ in range(10):
            y = local.standard_normal((1, 160_000)).astype(np.float32)
            if not np.array_equal(dmlgpu.argmin(y, 1, device=device), oracle.argmin(y, 1)):
                wrong.append(seed)

    threads = [threading.Thread(target=calls, args=(seed,)) for seed in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not wrong


def test_the_helpers_are_one_set_per_process_and_stop_when_asked():
    """``hot_copier`` starts the process's helpers once; ``dml_copier_stop`` ends a copier's
    threads (joined: gone from the process)."""
    ffi, lib = hot.hot_library()
    first = hot.hot_copier()
    assert hot.hot_copier() is first
    before = lib.dml_copier_helpers(first)
    assert _helper_threads_become(before)  # (a helper names itself once it runs)
    extra = lib.dml_copier_start(2, 1e-4)
    assert lib.dml_copier_helpers(extra) == 2 and _helper_threads_become(before + 2)
    lib.dml_copier_stop(extra)
    assert _helper_threads() == before


def test_a_forked_child_copies_alone_then_starts_helpers_of_its_own():
    ffi, lib = hot.hot_library()
    parent = hot.hot_copier()
    pid = os.fork()
    if pid == 0:  # the child: the parent's helpers are not here
        ok = lib.dml_copier_helpers(parent) == 0
        mine = hot.hot_copier()
        wanted = min(hot.FILL_HELPERS, os.cpu_count() - 1)
        os._exit(0 if ok and mine != parent and lib.dml_copier_helpers(mine) == wanted else 1)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert lib.dml_copier_helpers(parent) > 0  # the parent's go on


# --- small calls whose passes bind their staging (kits.Kit, in_place) ---------------


@pytest.mark.parametrize("in_place", [True, False])
def test_a_small_call_binds_its_staging_or_copies_through_it(in_place):
    """With "mappable-primary-buffers" the kit's passes read the upload staging and, for a
    small index output, write the read-back staging: no copies; HARDMAX's FLOAT16 output
    (set with atomics) and any output without the feature go through a copy. Both give the
    oracle's answers, the clear of a cleared output included, call after call."""
    import numpy as np

    from dmlgpu import oracle

    device = dmlgpu.Device()
    try:
        r = device.runner
        if r.path.name != "native":
            return
        assert r.in_place == ("mappable-primary-buffers" in r.features)
        r.in_place = in_place and r.in_place
        rng = np.random.default_rng(9)
        cases = [("argmax", np.float32, (3, 5000), 1), ("argmin", np.int32, (64, 30), 0),
                 ("hardmax", np.float16, (5, 301), 1), ("hardmax", np.float32, (2, 77), 1)]
        for op, dtype, shape, axis in cases:
            for _ in range(3):
                x = (rng.standard_normal(shape) * 100).astype(dtype)
                got = getattr(dmlgpu, op)(x, axis, device=device)
                assert np.array_equal(got, getattr(oracle, op)(x, axis)), (op, dtype)
            kit = device.by_call.get(next(k for k in device.by_call if k[0] == op and k[-1][0] == np.dtype(dtype).str))
            (kit,) = kit._kits
            reads_staging = kit.input is kit.wmap.buffer
            writes_staging = kit.output is kit.rmap.buffer
            assert reads_staging == r.in_place
            assert writes_staging == (r.in_place and not (op == "hardmax"))
    finally:
        device.close()


def test_readable_storage_is_refused_where_reads_cannot_map_it(monkeypatch):
    """``Memory.storage(readable=True)`` needs the native path and mappable-primary-buffers;
    elsewhere it says so before any buffer is made."""
    monkeypatch.setenv("DMLGPU_RUNNER", "public")
    device = dmlgpu.Device()
    try:
        assert not device.runner.in_place
        with pytest.raises(dmlgpu.AdapterError, match="readable storage needs the native path"):
            device.runner.memory.storage(16, readable=True)
    finally:
        device.close()
