"""NumPy's own tests of argmax, argmin, nanargmax and nanargmin, run against dmlgpu.numpy.

The tests are the installed NumPy's (``numpy/_core/tests/test_multiarray.py``,
``numpy/lib/tests/test_nanfunctions.py``: NumPy ships them), rerouted by ``_upstream.Reroute``:
while a test runs, its ``np.argmax`` & co. are dmlgpu.numpy's, and so are the functions its
parameters and class attributes hold. Most of them build float64 arrays (``np.random.normal``,
``np.eye``, ``np.arange(9).astype("d")``), which dmlgpu reduces exactly. Cases of a type the
operators lack (complex, datetime, timedelta, object, longdouble) are reported as xfailed,
refused with dmlgpu's ``TypeError`` naming the type; any other failure fails.

Left out, by name: the tests of those classes that call only ndarray's methods
(``a.argmax()``), which run NumPy's own code whatever dmlgpu does (``METHODS_ONLY``), and the
cases of ``test_nanfunc`` about NumPy's other nan-functions (``_upstream`` leaves them out).
In CI (``CI=true``) the NumPy tests must be importable.
"""

from __future__ import annotations

import numpy as np
import pytest

import dmlgpu.numpy as dnp

from _upstream import Reroute, first_module

multiarray = first_module("numpy._core.tests.test_multiarray", "numpy.core.tests.test_multiarray")
nanfunctions = first_module("numpy.lib.tests.test_nanfunctions")

ROUTE = Reroute(np, "np", {np.argmax: dnp.argmax, np.argmin: dnp.argmin,
                           np.nanargmax: dnp.nanargmax, np.nanargmin: dnp.nanargmin})

#: Tests of the classes below that call only ndarray's methods, never numpy.argmax & co.
METHODS_ONLY = ("test_all", "test_output_shape", "test_ret_is_out", "test_unicode", "test_object_with_NULLs")

TestArgmaxArgminCommon = ROUTE.test_class(multiarray.TestArgmaxArgminCommon, skip=METHODS_ONLY)
TestArgmax = ROUTE.test_class(multiarray.TestArgmax)
TestArgmin = ROUTE.test_class(multiarray.TestArgmin)
TestWritebackIfCopy = ROUTE.test_class(multiarray.TestWritebackIfCopy,
                                       names=("test_argmax_with_out", "test_argmin_with_out"))
TestNanFunctions_ArgminArgmax = ROUTE.test_class(nanfunctions.TestNanFunctions_ArgminArgmax)
#: test_nanfunc(nanfunc, func): nanfunc is the function tested, func NumPy's answer (kept NumPy's).
TestNanFunctions_NumberTypes = ROUTE.test_class(nanfunctions.TestNanFunctions_NumberTypes, names=("test_nanfunc",),
                                                names_routed={"test_nanfunc": ("nanfunc",)})

CLASSES = (TestArgmaxArgminCommon, TestArgmax, TestArgmin, TestWritebackIfCopy, TestNanFunctions_ArgminArgmax,
           TestNanFunctions_NumberTypes)


def test_numpys_tests_are_collected_and_rerouted():
    """Every class keeps tests, ``METHODS_ONLY`` names tests that exist, and the functions
    the tests reach through ``np`` or their parameters are dmlgpu's."""
    for cls in CLASSES:
        assert any(callable(getattr(cls, name)) for name in dir(cls) if name.startswith("test")), cls.__name__
    assert all(hasattr(multiarray.TestArgmaxArgminCommon, name) for name in METHODS_ONLY)
    assert ROUTE.proxy.argmax.__wrapped__ is dnp.argmax and ROUTE.proxy.sum is np.sum
    assert TestNanFunctions_ArgminArgmax.nanfuncs == [ROUTE.proxy.nanargmin, ROUTE.proxy.nanargmax]
    keepdims = [m for m in TestArgmaxArgminCommon.test_np_argmin_argmax_keepdims.pytestmark if m.args[0] == "method"]
    assert keepdims[0].args[1] == [ROUTE.proxy.argmax, ROUTE.proxy.argmin]
    nanfunc = [m for m in TestNanFunctions_NumberTypes.test_nanfunc.pytestmark if m.name == "parametrize"]
    assert [case[1] for case in nanfunc[0].args[1]] == [np.argmin, np.argmax]  # NumPy's answers kept


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int64])
def test_the_rerouted_functions_are_dmlgpus(dtype):
    """What the tests above reach is the GPU: the same calls count, and answer as NumPy."""
    before = ROUTE.calls
    x = np.random.default_rng(1).normal(size=(5, 7)).astype(dtype)
    assert ROUTE.proxy.argmax(x, axis=1).tolist() == np.argmax(x, axis=1).tolist()
    assert ROUTE.calls == before + 1
