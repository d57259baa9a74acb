"""``dmlgpu.numpy.nanargmax`` / ``nanargmin`` held to NumPy's, and ``np.nanargmax`` on a Tensor.

The randomized test makes 3,300 calls of each function (11 types, random layouts of 0-d to
4-d arrays, size-0 axes among them, axes, keepdims and ``out``) with values from small pools holding NaN, +-inf, -0.0 and subnormals,
and with whole slices set to NaN on purpose: every outcome must be NumPy's, the value, dtype,
shape and Python type, or the exception class (``ValueError: All-NaN slice encountered``
above all). A type's calls share a few layouts (every shape of a small set once, each in a
view taken in turn, with a random axis), so that its operators compile once.
"""

from __future__ import annotations

import functools
import inspect
import warnings

import numpy as np
import pytest

import dmlgpu
import dmlgpu.numpy as dnp
from dmlgpu.tensor import Tensor

from _support import outcome, over_axes, view

DTYPES = [np.bool_, np.float64, np.float32, np.float16, np.int8, np.int16, np.int32, np.int64,
          np.uint8, np.uint16, np.uint32, np.uint64]
SHAPES = [(), (1,), (5,), (3, 4), (4, 1), (2, 3, 4), (1, 4, 2), (2, 2, 2, 3)]
EMPTY_SHAPES = [(0,), (3, 0), (0, 2, 3)]  # size-0 axes: two layouts of each type
VIEWS = ["packed", "transposed", "strided", "broadcast", "reversed", "fortran"]
CASES_PER_TYPE = 300  # 3,300 calls of each function
LAYOUTS_PER_TYPE = len(SHAPES) + 2  # every shape once, two of size 0: an operator each (each a compile)
NAN = np.nan

pytestmark = pytest.mark.filterwarnings("ignore:the matrix subclass:PendingDeprecationWarning")


def pool(dtype) -> np.ndarray:
    dt = np.dtype(dtype)
    if dt == np.bool_:
        return np.array([False, True])
    if dt.kind == "f":
        tiny = np.finfo(dt).smallest_subnormal
        return np.array([-np.inf, -1, -0.0, 0.0, 1, np.inf, NAN, NAN, tiny], dt)
    info = np.iinfo(dt)
    return np.array([info.min, 0, 1, info.max], dt)


def values(dtype, shape, rng: np.random.Generator) -> np.ndarray:
    """Values from 2 to 4 entries of the pool (ties on purpose); for floats, sometimes a slice
    or all of it NaN, or nothing but NaN and one infinity."""
    p = pool(dtype)
    x = rng.choice(rng.choice(p, size=min(len(p), int(rng.integers(2, 5))), replace=False), size=shape)
    if x.dtype.kind == "f" and x.size and rng.integers(3) == 0:
        kind = rng.integers(0 if x.ndim else 1, 3)  # a 0-d array: all NaN, or NaN or an infinity
        if kind == 0:
            axis = int(rng.integers(x.ndim))  # one slice across the other axes: all NaN along each of them
            x[(slice(None),) * axis + (int(rng.integers(x.shape[axis])),)] = NAN
        elif kind == 1:
            x[...] = NAN
        else:
            x = rng.choice(np.array([NAN, (-np.inf, np.inf)[rng.integers(2)]], x.dtype), size=shape)
    return x


def random_axis(ndim: int, rng: np.random.Generator):
    choice = rng.integers(4)
    if ndim == 0 or choice == 0:
        return None
    if choice == 3 and ndim > 1:
        axes = rng.choice(ndim, size=int(rng.integers(1, ndim + 1)), replace=False)
        return tuple(int(a) - ndim if rng.integers(2) else int(a) for a in axes)
    return int(rng.integers(-ndim, ndim))


def numpy_answer(op: str, x, axis, keepdims, out=None):
    """NumPy's ``op`` (nanargmax, nanargmin); a tuple of axes (dmlgpu's extension) as
    NumPy's answer over those axes flattened into one, with NumPy's all-NaN check."""
    if not isinstance(axis, tuple):
        return outcome(getattr(np, op), x, axis=axis, out=out, keepdims=keepdims)
    return outcome(over_axes, getattr(np, op), x, axis, keepdims)


def assert_same(want, got, what) -> None:
    """``what`` words the call: a string, or a function that makes one, called only on a
    failure (an array's repr costs more than the call it describes)."""
    def said() -> str:
        return what if isinstance(what, str) else what()

    assert got[0] == want[0], f"{said()}: NumPy {want}, dmlgpu {got}"
    if want[0] == "raises":
        assert type(got[1]) is type(want[1]), f"{said()}: NumPy raises {want[1]!r}, dmlgpu {got[1]!r}"
        if str(want[1]) == "All-NaN slice encountered":  # NumPy's message, word for word
            assert str(got[1]) == str(want[1]), f"{said()}: {got[1]!r}"
        return
    g, w = np.asarray(got[1]), np.asarray(want[1])
    assert type(got[1]) is type(want[1]), f"{said()}: NumPy gives {type(want[1]).__name__}, dmlgpu {type(got[1]).__name__}"
    assert g.dtype == w.dtype and g.shape == w.shape, f"{said()}: {got[1]!r} against NumPy's {want[1]!r}"
    if not np.array_equal(g, w):
        np.testing.assert_array_equal(g, w, err_msg=said())


def call_words(case, op, x, axis, keepdims, out) -> str:
    return f"case {case}: np.{op}({x!r}, axis={axis}, keepdims={keepdims}, out={out!r})"


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_equals_numpy_on_random_calls(dtype):
    rng = np.random.default_rng([np.dtype(dtype).num, 28])
    layouts, turn = [], int(rng.integers(len(VIEWS)))  # the views in turn from a random one: every view met
    for number in range(LAYOUTS_PER_TYPE):
        shape = SHAPES[number] if number < len(SHAPES) else EMPTY_SHAPES[rng.integers(len(EMPTY_SHAPES))]
        layouts.append((shape, VIEWS[(turn + number) % len(VIEWS)], int(rng.integers(1000)),
                        random_axis(len(shape), rng), bool(rng.integers(2))))
    tally = {"value": 0, "raises": 0}
    for case in range(CASES_PER_TYPE):
        shape, kind, seed, axis, keepdims = layouts[rng.integers(LAYOUTS_PER_TYPE)]
        x = view(values(dtype, shape, rng), kind, np.random.default_rng(seed))
        for op in ("nanargmax", "nanargmin"):
            out = None
            if not isinstance(axis, tuple) and rng.integers(6) == 0:
                shape_out = np.shape(np.zeros(x.shape, np.int8).sum(axis=axis, keepdims=keepdims))  # size-0 too
                out = np.full(shape_out, 7, (np.intp, np.int32, np.uint8)[rng.integers(3)])
            mine, theirs = (None, None) if out is None else (out.copy(), out.copy())
            want = numpy_answer(op, x, axis, keepdims, theirs)
            got = outcome(getattr(dnp, op), x, axis, mine, keepdims=keepdims)
            what = functools.partial(call_words, case, op, x, axis, keepdims, out)
            assert_same(want, got, what)
            if out is not None and want[0] == "value":
                assert (got[1] is mine) == (want[1] is theirs), what()
                if not np.array_equal(mine, theirs):
                    np.testing.assert_array_equal(mine, theirs, err_msg=what())
            tally[want[0]] += 1
    if np.dtype(dtype).kind == "f":  # all-NaN slices were drawn, and answers too
        assert tally["raises"] > CASES_PER_TYPE // 10 and tally["value"] > CASES_PER_TYPE // 2, tally


@pytest.mark.parametrize("op", ["nanargmax", "nanargmin"])
def test_nan_edges_follow_numpy(op):
    cases = [
        [1.0, NAN, 5.0, NAN], [NAN, 2.0, 2.0], [NAN, NAN],  # NaN skipped; all NaN raises
        [NAN, -np.inf], [NAN, np.inf, NAN], [-np.inf, NAN, -np.inf], [np.inf, NAN, np.inf],  # only NaN and an infinity
        [-0.0, 0.0, NAN, -0.0], [NAN, 0.0, -0.0],
        [[NAN, 1.0], [NAN, NAN]], [[NAN, -np.inf], [np.inf, NAN]],
    ]
    for c in cases:
        for dtype in (np.float32, np.float16):
            x = np.array(c, dtype)
            for axis in (None, 0, -1):
                what = f"np.{op}({x!r}, axis={axis})"
                assert_same(outcome(getattr(np, op), x, axis=axis), outcome(getattr(dnp, op), x, axis=axis), what)


def test_numpy_checks_all_nan_first():
    """NumPy's nanargmax reads axis through np.all (its errors, e.g. AxisError for -2**31,
    which argmax reads as None), raises for an all-NaN slice, and only then checks out and
    keepdims (argmax's)."""
    x = np.full((2, 3), NAN, np.float32)
    y = np.ones((2, 3), np.float32)
    for a, kwargs in [(x, {"axis": 0, "out": np.zeros(7)}), (x, {"axis": 0, "keepdims": np.array([1, 2])}),
                      (y, {"axis": -(2**31)}), (x, {"axis": -(2**31)}), (y, {"axis": 0, "out": np.zeros(7)}),
                      (np.float32(NAN), {"axis": 0}), (np.float32(1), {"axis": 0}), (np.float32(1), {"axis": 1}),
                      (x, {"axis": (0, 0)}), (y, {"axis": 1.0}), (x, {"axis": True}), (y, {"axis": 2**40}),
                      (np.zeros((0, 3), np.float32), {"axis": 1}), (np.zeros((3, 0), np.float32), {"axis": 1}),
                      (np.zeros((0, 3), np.float32), {}), ([1, 5, 2], {}), (np.int16(4), {"out": np.zeros((), np.intp)})]:
        for op in ("nanargmax", "nanargmin"):
            assert_same(outcome(getattr(np, op), a, **kwargs), outcome(getattr(dnp, op), a, **kwargs),
                        f"np.{op}({a!r}, {kwargs})")


def test_signature_is_numpys():
    for op in ("nanargmax", "nanargmin"):
        ours = inspect.signature(getattr(dnp, op)).parameters
        theirs = inspect.signature(getattr(np, op)).parameters
        assert [(p.name, p.kind) for p in ours.values()] == [(p.name, p.kind) for p in theirs.values()]


@pytest.mark.parametrize("dtype", [np.longdouble, np.complex64, object])
def test_types_the_operators_lack_raise_typeerror(dtype):
    with pytest.raises(TypeError, match=r"dmlgpu.numpy.nanargmax cannot take .* never falls back"):
        dnp.nanargmax(np.zeros(3, dtype))


# --- NumPy's subclasses, as np.nanargmax treats them ---------------------------------------


def test_masked_arrays_as_numpys_nanargmax():
    """np.nanargmax of a masked array: raises where a slice's unmasked elements are all NaN
    (a slice masked throughout is not refused: 0), else NaN and masked elements lose."""
    rng = np.random.default_rng(7)
    fixed = [np.ma.array([NAN, 2.0, 3.0], mask=[0, 1, 1]), np.ma.array([NAN, NAN], mask=[1, 1]),
             np.ma.array([[NAN, 2.0], [3.0, NAN]], mask=[[1, 1], [0, 1]]), np.ma.array([NAN, -np.inf, 3.0], mask=[0, 0, 1]),
             np.ma.array([2.0, NAN, 3.0], mask=np.ma.nomask), np.ma.array(np.float32(NAN), mask=False)]
    drawn = []
    for case in range(120):
        shape = [(5,), (3, 4), (2, 3, 2)][case % 3]
        x = rng.choice(pool(np.float32), size=shape)
        drawn.append(np.ma.array(x, mask=rng.random(shape) < [0.2, 0.5, 0.9][case % 3]))
    for m in fixed + drawn:
        m = m.astype(np.float32) if m.dtype != np.float32 else m
        for op in ("nanargmax", "nanargmin"):
            for kwargs in ({}, {"axis": 0}, {"axis": -1, "keepdims": True}):
                if m.ndim == 0 and kwargs:
                    continue
                assert_same(outcome(getattr(np, op), m, **kwargs), outcome(getattr(dnp, op), m, **kwargs),
                            f"np.{op}({m!r}, {kwargs})")
    # NumPy's own nanargmax fails on a 0-d masked element (TypeError from np.copyto): it takes no such input,
    # and dmlgpu answers as for a slice masked throughout
    assert dnp.nanargmax(np.ma.array(np.float32(NAN), mask=True)) == 0
    ints = np.ma.array([1, 5, 3], mask=[0, 1, 0], dtype=np.int16)  # no NaN: MaskedArray.argmax
    assert dnp.nanargmax(ints) == np.nanargmax(ints) == 2


def test_matrix_and_subclasses_as_numpys_nanargmax():
    class Labelled(np.ndarray):
        def __array_finalize__(self, obj):
            self.label = getattr(obj, "label", None)

    class OwnAll(np.ndarray):
        def all(self, *args, **kwargs):
            return False

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PendingDeprecationWarning)
        matrices = [np.matrix([[NAN, 1.0], [2.0, NAN]], np.float32), np.matrix([[NAN, 1.0], [NAN, NAN]], np.float32)]
    labelled = np.array([[1, NAN, 3], [NAN, 5, NAN]], np.float32).view(Labelled)
    labelled.label = "K"
    for a in matrices + [labelled]:
        for op in ("nanargmax", "nanargmin"):
            for kwargs in ({}, {"axis": 0}, {"axis": 1}, {"axis": -1}, {"keepdims": True}, {"axis": 0, "keepdims": True}):
                assert_same(outcome(getattr(np, op), a, **kwargs), outcome(getattr(dnp, op), a, **kwargs),
                            f"np.{op}({a!r}, {kwargs})")
    assert dnp.nanargmax(labelled, axis=1).label == "K"
    with pytest.raises(TypeError, match="OwnAll: it overrides ndarray.all"):
        dnp.nanargmax(np.ones(3, np.float32).view(OwnAll))
    assert dnp.nanargmax(np.ones(3, np.int8).view(OwnAll)) == 0  # no NaN to check: argmax, as NumPy


def test_objects_numpy_converts_and_objects_it_hands_over():
    class HasArgmax:  # pandas-like: NumPy's nanargmax reads it with np.asanyarray, never calls its argmax
        def __array__(self, dtype=None, copy=None):
            return np.array([1, NAN, 2], np.float32)

        def argmax(self, axis=None, out=None):
            return "label"

    class HasArrayFunction:
        def __array_function__(self, func, types, args, kwargs):
            return "theirs"

    assert dnp.nanargmax(HasArgmax()) == np.nanargmax(HasArgmax()) == 2
    with pytest.raises(TypeError, match=r"HasArrayFunction: it defines __array_function__"):
        dnp.nanargmin(HasArrayFunction())
    da = pytest.importorskip("dask.array")
    with pytest.raises(TypeError, match=r"dmlgpu.dask.numpy.nanargmax\(x, axis\)"):
        dnp.nanargmax(da.zeros(4, chunks=2, dtype=np.float32))


# --- np.nanargmax on a dmlgpu.Tensor ---------------------------------------------------------


GRID = np.array([[NAN, 1, NAN, 4], [2, NAN, -np.inf, NAN], [NAN, -np.inf, NAN, np.inf]], np.float32)


@pytest.mark.parametrize("op", ["nanargmax", "nanargmin"])
def test_tensors_run_nanargmax_on_the_gpu(device, op):
    for x in (GRID, GRID.astype(np.float16), GRID[:, ::2], GRID.T, np.arange(12, dtype=np.int32).reshape(3, 4)):
        t = device.upload(x)
        for axis, keepdims in [(None, False), (0, False), (1, True), (-1, False), ((0, 1), True)]:
            what = f"np.{op}({x!r}, axis={axis}, keepdims={keepdims}) on the GPU"
            if isinstance(axis, tuple):
                kind, want = outcome(getattr(np, op), x.reshape(-1), keepdims=True)
            else:
                kind, want = outcome(getattr(np, op), x, axis=axis, keepdims=keepdims)
            want = np.asarray(want).reshape(1, 1) if isinstance(axis, tuple) and kind == "value" else want
            want = np.asarray(want) if kind == "value" else want
            got = outcome(getattr(np, op), t, axis=axis, keepdims=keepdims)
            if kind == "raises":  # an all-NaN slice (GRID's views have some): NumPy's ValueError, from the GPU too
                assert_same((kind, want), got, what)
                continue
            assert got[0] == "value", what
            got = got[1]
            assert isinstance(got, Tensor) and got.dtype == np.intp and got.shape == (want.shape or (1,)), what
            np.testing.assert_array_equal(np.asarray(got).reshape(want.shape), want, err_msg=what)
            same = getattr(dnp, op)(t, axis=axis, keepdims=keepdims)  # dmlgpu.numpy hands a Tensor to it
            assert isinstance(same, Tensor) and np.array_equal(np.asarray(same), np.asarray(got))


def test_an_all_nan_slice_raises_from_a_tensor(device):
    t = device.upload(np.array([[NAN, 1.0], [NAN, NAN]], np.float32))
    with pytest.raises(ValueError, match="^All-NaN slice encountered$"):
        np.nanargmax(t, axis=1)
    with pytest.raises(ValueError, match="^All-NaN slice encountered$"):
        dnp.nanargmin(t, axis=0)
    assert np.asarray(np.nanargmin(t)).tolist() == [1]  # over every axis: one number, no all-NaN slice
    t.release()
    with pytest.raises(dmlgpu.DataError, match="released"):
        np.nanargmax(t)
    with pytest.raises(TypeError, match="out must be None"):
        np.nanargmax(t, out=np.zeros(1, np.intp))


def test_the_dmlgpu_functions_keep_directmls_nan_rule():
    """dmlgpu.argmax's nan_mode="ignore" stays DirectML's: an all-NaN slice is index 0."""
    x = np.array([[NAN, NAN], [NAN, -np.inf]], np.float32)
    assert dmlgpu.argmax(x, 1).ravel().tolist() == [0, 1]
