"""Devices for the GPU tests.

There is no skip here: with no adapter, opening the device raises, and every GPU test
errors. CI (lavapipe) can therefore never pass by skipping.
"""

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
