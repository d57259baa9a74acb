"""Calibration on the adapter in hand (calibration.py): a family measured once, its choice kept
on disk and reused, the switches, ``dmlgpu tune``, several processes at once, and the notice of
a software adapter."""

import json
import os
import subprocess
import sys
import threading
import warnings

import numpy as np
import pytest

import dmlgpu
from dmlgpu import ArgMaxOperatorDesc, TensorDesc, oracle
from dmlgpu.calibration import Calibration
from dmlgpu.plan import Tuning, Tunings, family_of
from dmlgpu.tuning import call_probe, candidates, default_tuning, texts
from dmlgpu.types import NanMode

#: rows/32 on either kind of adapter's defaults: a few thousand rows, unsplit
ROWS = ArgMaxOperatorDesc(TensorDesc("FLOAT32", [4096, 64]), axes=[1])


@pytest.fixture
def tuned(tmp_path, monkeypatch):
    """Calibration on (CPU adapters too), its cache in a fresh folder."""
    monkeypatch.setenv("DMLGPU_TUNE", "1")
    monkeypatch.setenv("DMLGPU_CACHE_DIR", str(tmp_path))
    return tmp_path


def check(device, desc):
    x = np.random.default_rng(1).random(desc.lower().input.sizes, dtype=np.float32)
    op = device.compile(desc)
    np.testing.assert_array_equal(op(x), oracle.evaluate(desc, x))
    return op


def test_a_family_is_measured_once_and_its_choice_kept_on_disk(tuned, monkeypatch):
    with dmlgpu.Device() as device:
        family = device.calibration.tunings  # nothing chosen yet
        assert family.families == ()
        op = check(device, ROWS)
        (report,) = device.calibration.reports
        assert len(report.seconds) == len(report.changes) >= 2 and all(s > 0 for s in report.seconds)
        assert op.tuning == device.calibration.tunings.for_family(report.family)
        check(device, ArgMaxOperatorDesc(TensorDesc("FLOAT32", [8192, 64]), axes=[1]))  # same family: not again
        assert len(device.calibration.reports) == 1
        path = device.calibration.path
    kept = json.loads(path.read_text())
    assert kept["key"]["adapter"] == device.name and report.family in kept["chosen"]
    assert [p.name for p in tuned.iterdir()] == [path.name]  # no temporary file left

    def refuse(self, family, *probe):
        raise AssertionError(f"{family} measured again")

    monkeypatch.setattr(Calibration, "_measure", refuse)
    with dmlgpu.Device() as again:  # a later process: read, not measured
        assert report.family in again.calibration.chosen
        assert check(again, ROWS).tuning == op.tuning


def test_the_probe_is_shaped_after_the_call_so_its_pipelines_are_the_calls(tuned):
    """An ARGMIN that propagates NaN, four times a CPU probe's MiB: the candidates are compiled
    for a probe shaped after it (tuning.call_probe: halved to the probe's size, its texts the
    call's), so the call compiles nothing of its own afterwards."""
    desc = dmlgpu.ArgMinOperatorDesc(TensorDesc("FLOAT32", [4096, 256]), axes=[1])
    with dmlgpu.Device() as device:
        x = np.random.default_rng(2).random((4096, 256), dtype=np.float32)
        x[5, 7] = np.nan
        op = device.compile(desc, nan_mode="propagate")
        np.testing.assert_array_equal(op(x), oracle.evaluate(desc, x, nan_mode="propagate"))
        (report,) = device.calibration.reports
        caps = device.runner.capabilities
        probed = call_probe(desc.lower(), NanMode.PROPAGATE, caps)
        assert report.probe == f"argmin FLOAT32 {probed.input.sizes} axes (1,) nan propagate"
        assert report.nbytes == probed.input.total_tensor_size_in_bytes != desc.lower().input.total_tensor_size_in_bytes
        assert device.runner.programs.count == len({t for tuning in candidates(caps, report.family)
                                                    for t in texts(desc.lower(), caps, NanMode.PROPAGATE, tuning)})


def test_a_shaped_probe_that_cannot_run_gives_way_to_the_familys_own(tuned):
    """An ACTIVATION_HARDMAX at feature level 4.1: a probe shaped after it would be a HARDMAX1,
    which needs 5.1, so the family is measured on its own probe (an ARGMAX), with no warning."""
    desc = dmlgpu.ActivationHardmaxOperatorDesc(TensorDesc("FLOAT32", [4096, 256]))
    with dmlgpu.Device(feature_level="4.1") as device:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            op = device.compile(desc)
        (report,) = device.calibration.reports
        assert report.probe.startswith("argmax ")
        assert report.family == family_of(desc.lower(), device.runner.capabilities, device.calibration.default)
        x = np.random.default_rng(3).random((4096, 256), dtype=np.float32)
        np.testing.assert_array_equal(op(x), oracle.evaluate(desc, x))


def test_a_compile_in_another_thread_waits_for_the_calibration_of_its_family(tuned, monkeypatch):
    """While one thread measures a family, another compiling an operator of that family waits
    for the choice (compiles take turns on the device) rather than keep the default for good
    (the choice forced off the default here)."""
    started, release = threading.Event(), threading.Event()
    measure = Calibration._measure

    def slow(self, *args):
        started.set()
        release.wait(10)
        report = measure(self, *args)
        report.chosen = 1
        return report

    monkeypatch.setattr(Calibration, "_measure", slow)
    with dmlgpu.Device() as device:
        first = threading.Thread(target=device.compile, args=(ROWS,))
        first.start()
        assert started.wait(10)
        other: list = []
        second = threading.Thread(target=lambda: other.append(device.compile(
            ArgMaxOperatorDesc(TensorDesc("FLOAT32", [8192, 64]), axes=[1]))))
        second.start()
        second.join(0.5)
        release.set()
        first.join(10)
        second.join(10)
        (report,) = device.calibration.reports
        assert other[0].tuning == device.calibration.tunings.for_family(report.family) != default_tuning(
            device.runner.capabilities)


def test_an_unreadable_cache_is_measured_again_and_rewritten(tuned):
    with dmlgpu.Device() as device:
        path = device.calibration.path
    path.write_text("{not json")
    with dmlgpu.Device() as device:
        assert device.calibration.chosen == {}
        check(device, ROWS)
        assert len(device.calibration.reports) == 1
    assert json.loads(path.read_text())["chosen"]


def test_a_cache_of_another_key_is_not_used(tuned):
    with dmlgpu.Device() as device:
        check(device, ROWS)
        path = device.calibration.path
    kept = json.loads(path.read_text())
    kept["key"]["driver"] = "another driver"
    kept["chosen"] = {family: {"workgroup_size": 2} for family in kept["chosen"]}
    path.write_text(json.dumps(kept))
    with dmlgpu.Device() as device:
        assert device.calibration.chosen == {}


def test_off_gives_the_built_in_tunings_and_touches_no_file(tmp_path, monkeypatch):
    monkeypatch.setenv("DMLGPU_TUNE", "0")
    monkeypatch.setenv("DMLGPU_CACHE_DIR", str(tmp_path / "cache"))
    with dmlgpu.Device() as device:
        op = check(device, ROWS)
        assert op.tuning == default_tuning(device.runner.capabilities)
        assert device.calibration.reports == []
    assert not (tmp_path / "cache").exists()


def test_a_cpu_adapter_measures_nothing_on_its_own(tmp_path, monkeypatch):
    monkeypatch.setenv("DMLGPU_TUNE", "auto")
    monkeypatch.setenv("DMLGPU_CACHE_DIR", str(tmp_path))
    with dmlgpu.Device() as device:
        check(device, ROWS)
        software = device.runner.capabilities.software
        assert (device.calibration.reports == []) == software  # a GPU measures, a CPU adapter does not


def test_a_given_tuning_is_used_as_it_is(tuned):
    with dmlgpu.Device(tuning=Tuning(workgroup_size=64, loads_per_thread=2)) as device:
        assert device.calibration is None
        op = check(device, ROWS)
        assert op.tuning == Tuning(workgroup_size=64, loads_per_thread=2) and op.plan.workgroup_size == 64
    with dmlgpu.Device(tuning=Tunings(default=Tuning(), families=(("short_rows/32@256B", Tuning(loads_per_thread=2)),))) as d:
        assert d.compile(ArgMaxOperatorDesc(TensorDesc("FLOAT32", [4096, 64]), axes=[1])).plan.segment in (1, 8)
    assert list(tuned.iterdir()) == []


@pytest.mark.parametrize("value", ["maybe", "2"])
def test_a_bad_setting_is_refused_before_anything_is_opened(monkeypatch, value):
    monkeypatch.setenv("DMLGPU_TUNE", value)
    with pytest.raises(ValueError, match=f"DMLGPU_TUNE is '{value}', but it must be 0 .off., 1 .on. or auto"):
        dmlgpu.Device()
    monkeypatch.setenv("DMLGPU_TUNE", "0")
    with pytest.raises(TypeError, match="tuning must be a dmlgpu.plan.Tuning or Tunings, not dict"):
        dmlgpu.Device(tuning={"workgroup_size": 64})
    with dmlgpu.Device() as device:  # the next valid call works
        check(device, ROWS)


def _tune(cache, *families):
    env = {**os.environ, "DMLGPU_CACHE_DIR": str(cache)}
    return subprocess.Popen([sys.executable, "-m", "dmlgpu.cli", "tune", *(f"--family={f}" for f in families)],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def test_dmlgpu_tune_says_what_it_chose_and_why_and_processes_at_once_keep_a_readable_cache(tmp_path):
    runs = [_tune(tmp_path, "single/8"), _tune(tmp_path, "columns/8")]
    outputs = [run.communicate(timeout=300) for run in runs]
    for run, (out, err) in zip(runs, outputs):
        assert run.returncode == 0, err
        assert "1 families measured in" in out and "->" in out and "us (" in out, out
    assert "single/8" in outputs[0][0] and "columns/8" in outputs[1][0]
    (cache,) = tmp_path.iterdir()  # one file, no temporaries
    kept = json.loads(cache.read_text())
    assert {family.partition("@")[0] for family in kept["chosen"]} & {"single/8", "columns/8"}
    assert "adapter" in kept["key"] and "driver" in kept["key"]


def test_a_default_software_adapter_is_noticed_once_at_the_callers_line_unless_chosen_or_silenced(tmp_path):
    """Said once, and reported at the user's line that opened the default device (here through
    dmlgpu.numpy, four of our calls deep), not at a line of dmlgpu's."""
    script = tmp_path / "user_code.py"
    script.write_text("import numpy as np, dmlgpu, dmlgpu.numpy as dnp\n"
                      "x = np.ones(4, np.float32)\n"
                      "dnp.argmax(x)\n"  # line 3: opens the default device
                      "dmlgpu.argmax(x, 0); dmlgpu.Device().close()\n"
                      "print(dmlgpu.default_device().runner.capabilities.software)\n")
    env = {k: v for k, v in os.environ.items() if k not in ("DMLGPU_ADAPTER", "DMLGPU_SOFTWARE_NOTICE")}
    if not env.get("XDG_RUNTIME_DIR"):  # Mesa's lines about it (docs/adapters.md) would come first
        (tmp_path / "runtime").mkdir(mode=0o700)
        env["XDG_RUNTIME_DIR"] = str(tmp_path / "runtime")
    run = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    software = run.stdout.strip() == "True"
    assert run.stderr.count("SoftwareAdapterWarning") == (1 if software else 0), run.stderr
    if software:
        assert run.stderr.startswith(f"{script}:3: SoftwareAdapterWarning: "), run.stderr
        assert "dmlgpu/" not in run.stderr.replace(str(tmp_path), ""), run.stderr
        assert "NumPy's own argmax may be faster" in run.stderr and "DMLGPU_SOFTWARE_NOTICE=0" in run.stderr
        name = dmlgpu.default_device().name.split()[0]
        for quiet in ({"DMLGPU_ADAPTER": name}, {"DMLGPU_SOFTWARE_NOTICE": "0"}):
            run = subprocess.run([sys.executable, str(script)], env={**env, **quiet}, capture_output=True, text=True,
                                 timeout=120)
            assert run.returncode == 0 and "SoftwareAdapterWarning" not in run.stderr, run.stderr


def test_a_warning_of_ours_is_reported_at_the_first_line_outside_the_package(tmp_path, monkeypatch):
    """``warn_at_caller`` skips every frame under the package's folder, however many (here a
    stand-in package in tmp_path, two calls deep), and names the caller's line."""
    from dmlgpu import errors

    (tmp_path / "warn_site_probe.py").write_text("from dmlgpu.errors import warn_at_caller\n"
                                      "def inner():\n    warn_at_caller('said', UserWarning)\n"
                                      "def outer():\n    inner()\n")
    monkeypatch.setattr(errors, "_PACKAGE_DIR", str(tmp_path) + os.sep)
    monkeypatch.syspath_prepend(str(tmp_path))
    import warn_site_probe

    with pytest.warns(UserWarning, match="said") as caught:
        line = sys._getframe().f_lineno + 1
        warn_site_probe.outer()
    assert (caught[0].filename, caught[0].lineno) == (__file__, line)
