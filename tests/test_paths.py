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
