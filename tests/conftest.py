"""Devices for the GPU tests, and ``dask.array`` for the Dask tests.

There is no skip for a missing GPU: with no adapter, opening the device raises, and every GPU
test errors. CI (lavapipe) can therefore never pass by skipping. The Dask tests skip without
dask only outside CI, which installs the test extra.
"""

import os

import pytest

import dmlgpu


@pytest.fixture(scope="session")
def device():
    """The default adapter (``DMLGPU_ADAPTER`` picks another), with native 64-bit keys where available."""
    return dmlgpu.Device()


@pytest.fixture(scope="session")
def device_words():
    """The same adapter with shader-int64 left off: 64-bit keys as two 32-bit words."""
    return dmlgpu.Device(int64=False)


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
