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
    wanted = os.environ.get("DMLGPU_RUNNER") or ("native" if hot.library_path()[0] else "public")
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
    pass recorded before it, from this call and from calls recorded before it. (HARDMAX's
    one-hot output is not a small call's, which is submitted by the call: the test below.)"""
    import numpy as np

    from dmlgpu import oracle

    rng = np.random.default_rng(8)
    xs = [rng.standard_normal((4, 300)).astype(np.float32) for _ in range(3)]
    tensors = [device.upload(x) for x in xs]
    results = [dmlgpu.hardmax(t, 1) for t in tensors]  # three calls recorded, none submitted yet
    assert len(device.runner._pending) >= 1
    for x, r in zip(xs, results):
        assert np.array_equal(r.numpy(), oracle.hardmax(x, 1))
        assert device.runner._pending == []
    for t in tensors + results:
        t.release()


def test_a_small_call_is_submitted_by_the_call_and_read_with_no_submit_of_its_own(device, monkeypatch):
    """Native path: a call whose small output is read in place is submitted when it is made
    (the GPU runs it while the caller goes on to its read), unless a submission is under way;
    its read then maps the output with no submit of its own. A read after work left recorded
    (a queued write) submits it first. Every answer is right either way."""
    import numpy as np

    from dmlgpu import oracle

    rng = np.random.default_rng(10)
    xs = [rng.standard_normal((4, 300)).astype(np.float32) for _ in range(3)]
    tensors = [device.upload(x) for x in xs]
    runner = device.runner
    if runner.path.name != "native" or not runner.in_place:
        results = [dmlgpu.argmax(t, 1) for t in tensors]
        assert all(np.array_equal(r.numpy(), oracle.argmax(x, 1)) for x, r in zip(xs, results))
        return
    submits = []
    submit_calls = native.NativePath.submit_calls
    monkeypatch.setattr(native.NativePath, "submit_calls",
                        lambda self, pending, calls: submits.append((len(pending), len(calls)))
                        or submit_calls(self, pending, calls))
    results = [dmlgpu.argmax(t, 1) for t in tensors]
    assert runner._pending == [] and submits == [(1, 0)] * 3  # each call its own submit, at once
    for x, r in zip(xs, results):
        assert np.array_equal(r.numpy(), oracle.argmax(x, 1))
    assert submits == [(1, 0)] * 3  # the reads map the outputs: no submit
    results[0].write(np.zeros(4, np.uint32))  # a queued write: the read submits it, with its own map
    assert results[0].numpy().ravel().tolist() == [0, 0, 0, 0] and submits[3:] == [(0, 1)]
    for t in tensors + results:
        t.release()


def test_dispatches_are_recorded_at_their_submit_with_the_read_after_them(device, monkeypatch):
    """Native path: a dispatch stays its steps until the submit. The dispatches after the
    last other pending work are recorded by the one C call that records the read (or the
    calls committed with it, ``Commits.commit``), in one encoder and in order, with no
    ``Deferred.take``; those before other work (a staged upload's copy) are taken on their
    own. A read's ``DmlCall`` carries no steps: a later read through the same staging only
    copies."""
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
    one = dmlgpu.argmax(tensors[0], 1)  # (a small call: recorded and submitted at once, in C)
    assert np.array_equal(one.numpy(), oracle.argmax(xs[0], 1)) and taken == []
    one.write(np.zeros(4, np.uint32))
    assert one.numpy().ravel().tolist() == [0, 0, 0, 0]  # the staging's call copies only
    # (HARDMAX's one-hot outputs are not small calls': recorded until the read)
    two = [dmlgpu.hardmax(t, 1) for t in tensors]
    clear = dmlgpu.hardmax(tensors[1], 1)  # its clear in the same encoder
    assert len(device.runner._pending) == 3
    assert np.array_equal(two[1].numpy(), oracle.hardmax(xs[1], 1)) and taken == []
    assert np.array_equal(two[0].numpy(), oracle.hardmax(xs[0], 1))
    assert np.array_equal(clear.numpy(), oracle.hardmax(xs[1], 1))
    before = dmlgpu.hardmax(tensors[1], 1)
    big = device.upload(rng.standard_normal(1 << 16).astype(np.float32))  # staged: a copy's encoder
    assert type(device.runner._pending[-1]) is not native.Deferred
    after = dmlgpu.hardmax(tensors[0], 1)
    assert np.array_equal(after.numpy(), oracle.hardmax(xs[0], 1)) and len(taken) == 1  # (before's)
    assert np.array_equal(before.numpy(), oracle.hardmax(xs[1], 1))
    for t in tensors + [one, *two, clear, before, after, big]:
        t.release()


# --- the native path's hot loop in C (_hot.c) ---------------------------------------------


def test_the_hot_loop_is_loaded_from_the_package_and_nothing_is_compiled_at_run_time(tmp_path):
    """The compiled hot path lives in the installed package (setup.py built it); a fresh
    process with no C compiler on PATH, CC unset and an empty home and cache takes the native
    path. (This install is the one CI tests: the wheel's, or the checkout's in-place build.)"""
    import subprocess
    import sys

    path, missing = hot.library_path()
    if path is None:  # an install built without it: CI's no-hot environment (see the test below)
        assert missing
        return
    assert os.path.dirname(path) == os.path.dirname(hot.__file__) and os.path.basename(path) == "_hot.so"
    env = {k: v for k, v in os.environ.items() if k not in ("CC", "DMLGPU_RUNNER", "XDG_CACHE_HOME")}
    env.update(PATH=str(tmp_path), HOME=str(tmp_path), XDG_CACHE_HOME=str(tmp_path / "cache"))
    script = "import dmlgpu, numpy as np; d = dmlgpu.Device(); print(d.runner.path.name, " \
             "int(dmlgpu.argmax(np.arange(10, dtype=np.float32), 0, device=d)[0]))"
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.split() == ["native", "9"], done.stderr[-2000:]
    built = [f for _, _, files in os.walk(tmp_path) for f in files if f.endswith((".so", ".c", ".dylib"))]
    assert built == [] and not (tmp_path / "cache" / "dmlgpu").exists()  # nothing built or kept (a driver's
    # own shader cache may be there)


def test_without_the_hot_loop_the_public_path_is_used_with_a_warning_that_says_why(monkeypatch):
    """An install that carries no compiled hot path (no C compiler when it was built, or
    DMLGPU_BUILD_HOT=0): the device still works, on the public path, and the warning says why.
    In CI's environment built without it, that is this install itself."""
    import warnings

    import numpy as np

    from dmlgpu import oracle

    path, missing = hot.library_path()
    if path is not None:  # simulate such an install
        missing = "no C compiler could build dmlgpu/runtime/_hot.c when it was installed (cc: not found)"
        monkeypatch.setattr(hot, "library_path", lambda: (None, missing))
    monkeypatch.delenv("DMLGPU_RUNNER", raising=False)
    monkeypatch.setattr(hot, "_hot_loaded", [])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        device = dmlgpu.Device()
    try:
        assert device.runner.path.name == "public"
        texts = [str(w.message) for w in caught]
        assert any(missing in t and "using wgpu-py's public objects (slower small calls)" in t for t in texts), texts
        x = np.random.default_rng(3).standard_normal((5, 70)).astype(np.float32)
        assert np.array_equal(dmlgpu.argmax(x, 1, device=device), oracle.argmax(x, 1))
    finally:
        device.close()


def test_threads_and_spinning_are_the_users_to_set(monkeypatch):
    """``dmlgpu.configure`` (and DMLGPU_COPY_HELPERS / DMLGPU_SPIN_US / DMLGPU_NAP_US) set the
    copy helpers, the spin and the nap of devices opened afterwards; 0, 0 and 0 (waits that
    block in wgpu's poll) give the same answers; bad values are refused by name."""
    import numpy as np
    import pytest

    from dmlgpu import oracle

    before = dmlgpu.configure()
    try:
        for name, variable, good, bad in (("spin_us", "DMLGPU_SPIN_US", 7, "soon"), ("nap_us", "DMLGPU_NAP_US", 80, "-3")):
            monkeypatch.setenv(variable, str(good))
            assert dmlgpu.configure()[name] == good
            monkeypatch.setenv(variable, bad)
            with pytest.raises(ValueError, match=f"{variable} is '{bad}', but it must be a whole number >= 0"):
                dmlgpu.configure()
            monkeypatch.delenv(variable)
        for bad, error in ((-1, ValueError), (17, ValueError), (1.5, TypeError), (True, TypeError)):
            with pytest.raises(error, match="copy_helpers"):
                dmlgpu.configure(copy_helpers=bad)
        with pytest.raises(TypeError, match=r"nap_us must be an int, not float \(0.5\)"):
            dmlgpu.configure(nap_us=0.5)
        dmlgpu.configure(copy_helpers=0, spin_us=0, nap_us=0)
        assert hot.settings() == {"copy_helpers": 0, "spin_us": 0, "nap_us": 0}
        device = dmlgpu.Device()
        if device.runner.path.name == "native":
            assert device.runner.path.nap_s == 0
        if device.runner.path.name == "native" and device.runner.adapter.info["adapter_type"] != "CPU":
            assert device.runner.path.spin_s == 0 and device.runner.path.copier == device.runner.path.null
        x = np.random.default_rng(5).standard_normal((3, 200_000)).astype(np.float32)
        np.testing.assert_array_equal(dmlgpu.argmax(x, 1, device=device), oracle.argmax(x, 1))
        device.close()
    finally:
        dmlgpu.configure(**before)


def test_an_idle_process_uses_no_cpu():
    """After a burst of calls (copies on the helpers, waits that spin), the process's threads
    go to sleep: under 1% of a core over two idle seconds."""
    import numpy as np

    device = dmlgpu.Device()
    x = np.random.default_rng(6).standard_normal((1, 300_000)).astype(np.float32)
    for _ in range(50):
        dmlgpu.argmax(x, 1, device=device)
    time.sleep(0.05)
    start = time.process_time()
    time.sleep(2.0)
    assert time.process_time() - start < 0.02
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
    real = device.runner.path.submit_calls

    def fails(*args):
        monkeypatch.setattr(device.runner.path, "submit_calls", real)
        raise wgpu.GPUError("a failure in the middle of a call")

    monkeypatch.setattr(device.runner.path, "submit_calls", fails)
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


def test_a_thread_alone_submits_its_own_call_and_threads_at_once_share_submissions(device, monkeypatch):
    """Native path: a thread that finds no submission of small calls under way submits its own
    at once, with no batch made (``Commits.commit``); calls that arrive while one is being
    submitted (here held up for a moment) wait in a batch and go in one submission together,
    one thread leading it; every answer right, and nothing left waiting or mapped after. Each
    call goes to the GPU once: in a submission (a NumPy call, or a resident call's read), or,
    for a resident call made alone (submitted under the lock, ``Commits.submit_alone``), with
    its read mapped directly after it."""
    import threading

    import numpy as np

    from dmlgpu import oracle
    from dmlgpu.runtime import commits

    if device.runner.path.name != "native":
        return
    made, submitted, batch = [], [], commits._Batch
    monkeypatch.setattr(commits, "_Batch", type("Counted", (batch,), {
        "__init__": lambda self: made.append(self) or batch.__init__(self)}))
    rng = np.random.default_rng(11)
    xs = [rng.standard_normal((3, 40 + i)).astype(np.float32) for i in range(8)]
    ts = [device.upload(x) for x in xs]
    for x, t in zip(xs, ts):  # alone: resident and NumPy calls
        assert np.array_equal(dmlgpu.argmax(t, 1).numpy(), oracle.argmax(x, 1))
        assert np.array_equal(dmlgpu.argmin(x, 1, device=device), oracle.argmin(x, 1))
    assert made == []
    real = device.runner.path.submit_calls

    def slow(pending, calls):
        submitted.append(len(calls))
        time.sleep(0.05)  # (the others arrive meanwhile)
        return real(pending, calls)

    monkeypatch.setattr(device.runner.path, "submit_calls", slow)
    direct, map_directly = [], device.runner.path.start_read_map
    monkeypatch.setattr(device.runner.path, "start_read_map", lambda m: direct.append(m) or map_directly(m))
    got: dict = {}
    start = threading.Barrier(len(xs))

    def call(i: int) -> None:
        start.wait()
        got[i] = dmlgpu.argmax(ts[i], 1).numpy() if i % 2 else dmlgpu.argmax(xs[i], 1, device=device)

    workers = [threading.Thread(target=call, args=(i,)) for i in range(len(xs))]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    assert all(np.array_equal(got[i], oracle.argmax(x, 1)) for i, x in enumerate(xs))
    assert made and max(submitted) > 1 and sum(submitted) + len(direct) == len(xs)
    r = device.runner
    assert r.commits._batch is None and not r.commits.leading and not r.mapped and not r.reading


def test_copies_on_helper_threads_land_whole_at_every_size(device, monkeypatch):
    """With the helpers on (off on lavapipe, as on any CPU adapter), uploads and small NumPy
    calls of sizes around the chunk boundaries, and from several threads at once (one copy
    uses the helpers, the others copy alone), land byte for byte."""
    import threading

    import numpy as np
    from _support import run_all

    from dmlgpu import oracle

    r = device.runner
    if r.path.name != "native":
        return
    helpers = min(hot.FILL_HELPERS, os.cpu_count() - 1)
    copier = hot.hot_copier(helpers, hot.SPIN_S)
    assert copier != r.path.hot_ffi.NULL and r.path.hot.dml_copier_helpers(copier) == helpers
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

    run_all([threading.Thread(target=calls, args=(seed,)) for seed in range(4)], wrong, [])


def test_the_helpers_are_one_set_per_process_and_stop_when_asked():
    """``hot_copier`` starts the process's helpers once for a setting; ``dml_copier_stop`` ends a
    copier's threads (joined: gone from the process). (An install without the hot loop has none.)"""
    if hot.library_path()[0] is None:
        return
    ffi, lib = hot.hot_library()
    first = hot.hot_copier(2, hot.SPIN_S)
    assert hot.hot_copier(2, hot.SPIN_S) is first and lib.dml_copier_helpers(first) == 2
    running = sum(lib.dml_copier_helpers(c) for (pid, _, _), c in hot._copiers.items() if pid == os.getpid() and c)
    assert _helper_threads_become(running)  # (a helper names itself once it runs)
    before = running
    extra = lib.dml_copier_start(2, 1e-4)
    assert lib.dml_copier_helpers(extra) == 2 and _helper_threads_become(before + 2)
    lib.dml_copier_stop(extra)
    assert _helper_threads() == before


def test_a_forked_child_copies_alone_then_starts_helpers_of_its_own():
    if hot.library_path()[0] is None:  # (an install without the hot loop has no helpers)
        return
    ffi, lib = hot.hot_library()
    parent = hot.hot_copier(2, hot.SPIN_S)
    pid = os.fork()
    if pid == 0:  # the child: the parent's helpers are not here
        ok = lib.dml_copier_helpers(parent) == 0
        mine = hot.hot_copier(2, hot.SPIN_S)
        os._exit(0 if ok and mine != parent and lib.dml_copier_helpers(mine) == 2 else 1)
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


def test_wgpu_types_parse_against_the_typedefs_they_name_and_come_out_the_same():
    """``ffi_types.speed_up``: wgpu-py's parser, patched, gives the same types (size, layout,
    kind) for the strings a call uses and for ones it has never seen, and a string that names
    no typedef of wgpu-native's still fails as cffi's would."""
    import cffi
    from wgpu.backends.wgpu_native import _ffi

    from dmlgpu.runtime import ffi_types

    ffi_types.speed_up()
    assert _ffi.ffi._parser._parse.__qualname__.endswith("speed_up.<locals>.parse")
    reference = cffi.FFI()  # the same declarations, parsed by cffi alone
    reference.cdef(_ffi.get_wgpu_header())
    for text in ("WGPUBindGroupEntry[]", "WGPUComputePassDescriptor *", "WGPUBufferMapCallbackInfo",
                 "void(*)(WGPUMapAsyncStatus, WGPUStringView, void *, void *)", "WGPUSupportedFeatures *",
                 "WGPURenderPassColorAttachment[3]"):
        mine, theirs = _ffi.ffi.typeof(text), reference.typeof(text)
        assert (mine.cname, mine.kind) == (theirs.cname, theirs.kind), text
        if not (mine.kind == "array" and mine.length is None):  # (an open array has no size)
            assert _ffi.ffi.sizeof(mine) == reference.sizeof(theirs), text
    with pytest.raises(cffi.CDefError):
        _ffi.ffi.typeof("NoSuchTypeOfWgpu *")
