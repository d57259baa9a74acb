"""What a newcomer meets first: the README's tour runs as written (on lavapipe too, in seconds
and a few MB), and the command's front door (its help, its output into a pipe that closes
early) shows no markup and no traceback."""

from __future__ import annotations

import os
import pathlib
import re
import subprocess
import sys

import numpy as np
import pytest

import dmlgpu
from dmlgpu import cli

ROOT = pathlib.Path(__file__).resolve().parent.parent

def _tour_blocks() -> list[str]:
    """The README's Python blocks that need nothing but dmlgpu and NumPy (not the ONNX model
    or the Zarr store they name as a user's own)."""
    blocks = re.findall(r"^```python\n(.*?)^```", (ROOT / "README.md").read_text(), re.M | re.S)
    return [b for b in blocks if "onnx" not in b and "zarr" not in b]

def test_the_readme_tour_runs_as_written(device):
    blocks = _tour_blocks()
    assert len(blocks) >= 3, "the README's tour lost its NumPy-level, descriptor and dmlgpu.numpy blocks"
    names: dict = {}
    for block in blocks:
        exec(compile(block.replace("Device()", "Device(_ADAPTER)"), "README.md", "exec"),
             names | {"_ADAPTER": os.environ.get("DMLGPU_ADAPTER")}, names)
    logits = names["logits"]
    assert logits.desc.sizes[0] * logits.desc.sizes[1] * 4 < 64 << 20, "the tour's tensor is not small any more"
    np.testing.assert_array_equal(names["tokens"], dmlgpu.oracle.argmax(logits.numpy(), 1))
    assert names["dnp"].argmax(names["x"]) == 7

def test_help_shows_no_markup(capsys):
    try:
        cli.main(["--help"])
    except SystemExit as done:
        assert done.code == 0
    shown = capsys.readouterr().out
    assert "dmlgpu command" in shown and "``" not in shown

def test_output_into_a_closed_pipe_ends_quietly():
    """``dmlgpu info | head``: the reader is gone before the command writes (its end of the
    pipe is closed here first), so the first write fails; no traceback, the status of a command
    that SIGPIPE ended."""
    read, write = os.pipe()
    os.close(read)
    try:
        proc = subprocess.run([sys.executable, "-m", "dmlgpu.cli", "info"], stdout=write, stderr=subprocess.PIPE,
                              text=True, timeout=120)
    finally:
        os.close(write)
    assert "Traceback" not in proc.stderr and "BrokenPipeError" not in proc.stderr, proc.stderr
    assert proc.returncode == 128 + 13, (proc.returncode, proc.stderr)

def test_a_type_the_operators_lack_is_refused_with_a_way_out(device):
    """``dmlgpu.argmax`` takes DirectML's ten types and FLOAT64: a wider float (``np.longdouble``)
    is refused with the cast that works, bool with its cast and the functions that take it as
    it is; the next call works."""
    with pytest.raises(TypeError, match=r"x\.dtype is float128, but .*DirectML's types \(float32, .*int64\) or "
                                        r"float64, which dmlgpu takes beyond DirectML \(cast with \.astype\(np\.float64\)\)"):
        dmlgpu.argmax(np.zeros((2, 3), np.longdouble), 1, device=device)
    with pytest.raises(TypeError, match=r"x\.dtype is bool, .*\.astype\(np\.uint8\); dmlgpu\.numpy's functions take bool"):
        dmlgpu.argmax(np.array([True, False]), 0, device=device)
    assert dmlgpu.argmax(np.array([1, 3, 2], np.float32), 0, device=device).tolist() == [1]


MESA_NOISE = "XDG_RUNTIME_DIR is invalid or not set"
#: The layer that asks libwayland for a display at every enumeration of the adapters.
DEVICE_SELECT_LAYER = pathlib.Path("/usr/share/vulkan/implicit_layer.d/VkLayer_MESA_device_select.json")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Mesa's Vulkan layers: Linux")
def test_the_command_prints_no_mesa_noise_and_its_software_notice_as_one_plain_line(tmp_path):
    """Without XDG_RUNTIME_DIR, a bare enumeration of the adapters makes Mesa print its error
    line (where its device-select layer is installed, as with lavapipe); ``dmlgpu demo`` prints
    none, having set a private one, and says a default software adapter once, as a note with no
    file and line of ours."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("XDG_RUNTIME_DIR", "DMLGPU_ADAPTER", "DMLGPU_SOFTWARE_NOTICE")}
    env["TMPDIR"] = str(tmp_path)
    if DEVICE_SELECT_LAYER.exists():
        bare = subprocess.run([sys.executable, "-c", "import wgpu; wgpu.gpu.enumerate_adapters_sync()"], env=env,
                              capture_output=True, text=True, timeout=120)
        assert MESA_NOISE in bare.stderr, bare.stderr
    run = subprocess.run([sys.executable, "-m", "dmlgpu.cli", "demo"], env=env, capture_output=True, text=True,
                         timeout=120)
    assert run.returncode == 0 and "13 of 13 examples match" in run.stdout, run.stdout + run.stderr
    assert MESA_NOISE not in run.stderr, run.stderr
    private = tmp_path / f"dmlgpu-runtime-{os.getuid()}"
    assert private.is_dir() and private.stat().st_mode & 0o777 == 0o700
    notes = [line for line in run.stderr.splitlines() if line.startswith("dmlgpu: note: the default adapter is ")]
    assert len(notes) == (1 if dmlgpu.default_device().runner.capabilities.software else 0), run.stderr
    assert "SoftwareAdapterWarning" not in run.stderr, run.stderr  # (as Python shows a warning: file, line, class)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the runtime folder is set on Linux only")
def test_the_runtime_folder_is_set_only_where_none_is_and_only_if_private(tmp_path, monkeypatch):
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    monkeypatch.setenv("XDG_RUNTIME_DIR", "/run/user/somebody")
    assert cli.give_mesa_a_runtime_dir() is None and os.environ["XDG_RUNTIME_DIR"] == "/run/user/somebody"
    monkeypatch.delenv("XDG_RUNTIME_DIR")
    private = str(tmp_path / f"dmlgpu-runtime-{os.getuid()}")
    assert cli.give_mesa_a_runtime_dir() == private == os.environ["XDG_RUNTIME_DIR"]
    assert os.stat(private).st_mode & 0o777 == 0o700
    monkeypatch.setenv("XDG_RUNTIME_DIR", "")  # empty is unset to libwayland; the folder is made once, then reused
    assert cli.give_mesa_a_runtime_dir() == private == os.environ["XDG_RUNTIME_DIR"]
    os.chmod(private, 0o755)  # readable by others: not a runtime folder, so not used
    monkeypatch.delenv("XDG_RUNTIME_DIR")
    assert cli.give_mesa_a_runtime_dir() is None and "XDG_RUNTIME_DIR" not in os.environ
    os.rmdir(private)
    os.symlink(tmp_path, private)  # a link, even to a folder of ours: not used
    assert cli.give_mesa_a_runtime_dir() is None and "XDG_RUNTIME_DIR" not in os.environ
