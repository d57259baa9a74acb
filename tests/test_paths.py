"""The runner's two paths: the native one is written against known wgpu-py versions only."""

from __future__ import annotations

import os

import wgpu

import dmlgpu
from dmlgpu import runner


def test_installed_wgpu_is_one_the_native_path_knows():
    """A wgpu-py the native path was not written against must fail here, loudly, rather than
    misbehave at run time (pyproject.toml pins the range; NATIVE_WGPU lists what was checked)."""
    assert runner.native_unsupported() is None, runner.native_unsupported()
    assert wgpu.__version__ in runner.NATIVE_WGPU


def test_the_switch_picks_the_path(device):
    wanted = os.environ.get("DMLGPU_RUNNER", "native")
    assert device.runner.path.name == wanted
    assert device.info()["runner_path"] == wanted


def test_an_unknown_version_falls_back_to_the_public_path(monkeypatch):
    monkeypatch.setattr(runner, "NATIVE_WGPU", {"0.0.0": "0"})
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
