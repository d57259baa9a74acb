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
from dmlgpu.runtime import programs  # noqa: E402
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


@pytest.fixture
def many_layouts(monkeypatch):
    """A randomized test (test_dask_numpy's) reduces some thousand different chunk layouts,
    round after round; the default device keeps the operators of 64 (and 128 pipelines), for
    a program's few. Here it keeps them all, so that each compiles once; trimmed back afterwards."""
    device = dmlgpu.default_device()
    caches = (device._compiled, device.by_call, device._spans)
    for cache in caches:
        monkeypatch.setattr(cache, "size", 1 << 14)
    monkeypatch.setattr(programs, "KEPT_PIPELINES", 1 << 14)
    yield
    monkeypatch.undo()
    for cache in caches:
        while len(cache) > cache.size:
            cache.popitem(last=False)


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


#: The test files that take longest (seconds of a cold run on 2 cores, lavapipe), longest first.
#: scripts/test.sh hands files out whole in collection order (``--dist loadfile
#: --no-loadscope-reorder``; xdist's own order is by number of tests, which put test_dask_numpy's
#: 9 tests and their 26 s last): the long ones start first and the short ones fill in at the end,
#: so that the two workers end together. Files not listed follow in their own order.
LONGEST_FIRST = (
    "test_gpu.py",  # 95
    "test_dask.py",  # 29 (a cluster of Dask's own commands, and one of local_cluster)
    "test_dask_numpy.py",  # 26
    "test_binding.py",  # 24
    "test_hardening.py",  # 23
    "test_subclasses.py",  # 17
    "test_float64.py",  # 15
    "test_export_browser.py",  # 14
    "test_nan_numpy.py",  # 12
    "test_numpy.py",  # 12
    "test_numpy_upstream.py",  # 11
    "test_paths.py",  # 8
    "test_bench.py",  # 8
    "test_calibration.py",  # 8
    "test_bad_input_numpy_dask.py",  # 7
    "test_onnx_backend.py",  # 6
    "test_bad_input_doors.py",  # 6
    "test_dask_upstream.py",  # 5
)


def pytest_collection_modifyitems(items):
    rank = {name: i for i, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(LONGEST_FIRST)))  # stable: each file's order kept
