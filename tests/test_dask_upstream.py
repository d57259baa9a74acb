"""Dask's own tests of its arg-reductions, run against dmlgpu.dask.numpy.

The tests are the installed Dask's (``dask/array/tests/test_reductions.py``,
``test_masked.py``, ``test_array_core.py``: Dask ships them), rerouted by
``_upstream.Reroute``: while a test runs, its ``da.argmax``, ``da.argmin``, ``da.nanargmax``
and ``da.nanargmin`` are dmlgpu.dask.numpy's, and so are the functions its parameters hold.
They build float64 arrays (``np.random.default_rng().random``, ``da.ones``, ``np.full(...,
np.nan)``), which dmlgpu reduces exactly, and check them with Dask's ``assert_eq`` (the graph's
dtype and chunks, the value, NumPy's answer).

Chosen: every test of those files that calls one of the four functions as ``da.<name>`` or
through a parameter. One deviates by design (``DEVIATIONS``): dmlgpu.dask.numpy takes a tuple
``axis`` (its extension, as dmlgpu.numpy's), where dask.array raises ``TypeError``; that test
is xfailed at that check, after its float64 checks passed. Left out: the cases of ``test_regres_3940`` about Dask's other reductions
(``_upstream`` leaves them out), and the tests that call only dask.array's methods
(``a.argmin(axis=-1)``), which reach dask.array's own function whatever the module holds.
In CI (``CI=true``) Dask must be installed; elsewhere this module skips without it.
"""

from __future__ import annotations

import os

import pytest

if os.environ.get("CI") == "true":
    import dask.array as da  # CI installs the dask extra: never skip there
else:
    da = pytest.importorskip("dask.array", reason="the dask extra is not installed: pip install dmlgpu[dask]")

import dmlgpu.dask.numpy as ddn  # noqa: E402

from _upstream import Reroute, first_module  # noqa: E402

reductions = first_module("dask.array.tests.test_reductions")
masked = first_module("dask.array.tests.test_masked")
core = first_module("dask.array.tests.test_array_core")

ROUTE = Reroute(da, "da", {da.argmax: ddn.argmax, da.argmin: ddn.argmin,
                           da.nanargmax: ddn.nanargmax, da.nanargmin: ddn.nanargmin})

#: (module, test) pairs: Dask's tests that call the four functions.
CHOSEN = [
    (reductions, "test_arg_reductions"),
    (reductions, "test_nanarg_reductions"),
    (reductions, "test_arg_reductions_unknown_chunksize"),
    (reductions, "test_arg_reductions_unknown_chunksize_2d"),
    (reductions, "test_arg_reductions_unknown_single_chunksize"),
    (reductions, "test_reductions_2D_nans"),
    (reductions, "test_nan"),
    (reductions, "test_regres_3940"),
    (masked, "test_arg_reductions"),
    (core, "test_3851"),
]

#: Tests that end where dmlgpu deviates from dask.array by design: (the failure, why).
DEVIATIONS = {
    (reductions, "test_arg_reductions"): (
        r"DID NOT RAISE .*TypeError", "dmlgpu.dask.numpy takes a tuple axis (the row-major flat index over those "
        "axes, its documented extension), where dask.array raises TypeError; every check before it passed"),
}

for _module, _name in CHOSEN:
    _short = _module.__name__.rsplit(".", 1)[1].removeprefix("test_")
    globals()[f"test_{_short}__{_name.removeprefix('test_')}"] = ROUTE.test(
        getattr(_module, _name), _module, deviation=DEVIATIONS.get((_module, _name)))


def test_dasks_tests_are_collected_and_rerouted():
    """Each chosen test exists and keeps cases; the functions they reach are dmlgpu's."""
    for module, name in CHOSEN:
        assert ROUTE.test(getattr(module, name), module) is not None, name
    assert ROUTE.proxy.nanargmax.__wrapped__ is ddn.nanargmax and ROUTE.proxy.from_array is da.from_array
    regres = [m for m in ROUTE.test(reductions.test_regres_3940, reductions).pytestmark if m.args[0] == "func"]
    assert regres[0].args[1] == [ROUTE.proxy.argmin, ROUTE.proxy.argmax]  # Dask's other reductions left out
