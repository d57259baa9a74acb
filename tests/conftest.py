"""Devices for the GPU tests, and ``dask.array`` for the Dask tests.

There is no skip for a missing GPU: with no adapter, opening the device raises, and every GPU
test errors. CI (lavapipe) can therefore never pass by skipping. The Dask tests skip without
dask only outside CI, which installs the test extra.
"""

import os

import pytest

# The tests choose their adapter on purpose (the default one, lavapipe in CI) and their plans
# with explicit tunings where a plan matters: no notice of a software adapter, and no tuning
# measured or read from the machine's cache (test_calibration.py turns it on where it tests it).
os.environ.setdefault("DMLGPU_SOFTWARE_NOTICE", "0")
os.environ.setdefault("DMLGPU_TUNE", "0")

import dmlgpu  # noqa: E402
from dmlgpu.plan import Tuning  # noqa: E402
from dmlgpu.tuning import SOFTWARE_TUNING  # noqa: E402


@pytest.fixture(scope="session")
def device():
    """The default adapter (``DMLGPU_ADAPTER`` picks another), with native 64-bit keys where
    available, planning as on a GPU (the built-in GPU tuning) whatever the adapter: CI's lavapipe
    runs the kernels GPUs run. ``cpu_device`` plans as for a CPU adapter, and the module-level
    functions' default device as for the adapter it is."""
    return dmlgpu.Device(tuning=Tuning())


@pytest.fixture(scope="session")
def device_words():
    """The same adapter with shader-int64 left off: 64-bit keys as two 32-bit words."""
    return dmlgpu.Device(int64=False, tuning=Tuning())


@pytest.fixture(scope="session")
def cpu_device():
    """The default adapter planning as for a CPU adapter (``tuning.SOFTWARE_TUNING``): a thread
    a row, workgroups of 8, no subgroups, no workgroup memory between rows."""
    return dmlgpu.Device(tuning=SOFTWARE_TUNING)


@pytest.fixture(scope="session", params=["native", "words"])
def any_device(request, device, device_words):
    """Both 64-bit paths; tests on 64-bit data run on each."""
    return device if request.param == "native" else device_words


@pytest.fixture(scope="module")
def da():
    """dask.array, which CI must have (the test extra); elsewhere its tests skip without it."""
    if os.environ.get("CI") == "true":
        import dask.array  # CI installs the dask extra: never skip there
        return dask.array
    return pytest.importorskip("dask.array", reason="the dask extra is not installed: pip install dmlgpu[dask]")


def pytest_configure(config):
    """The markers NumPy's and Dask's own test modules use (test_numpy_upstream and
    test_dask_upstream import them), known here so that importing them warns of nothing."""
    for name in ("slow", "thread_unsafe", "leaks_references", "valgrind_error"):
        config.addinivalue_line("markers", f"{name}: a marker of NumPy's or Dask's own tests")
