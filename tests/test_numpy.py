"""dmlgpu.numpy held to NumPy itself, and the NumPy protocols of dmlgpu.Tensor.

The randomized test draws a few thousand calls (types, shapes, views, axes, keepdims,
``out``) with values from small pools holding NaN, +-inf, -0.0 and subnormals, so that ties
and NaN happen on purpose; every result must equal ``numpy.argmax`` / ``numpy.argmin``
exactly: value, shape, dtype and Python type. Shapes come from a small set so that the
compiled operators are reused and the test stays quick on lavapipe.
"""

from __future__ import annotations

import inspect

import numpy as np
import pytest

import dmlgpu
import dmlgpu.numpy as dnp
from dmlgpu.tensor import Tensor

from _support import over_axes, view

try:
    from numpy.exceptions import AxisError
except ImportError:  # NumPy < 1.25
    AxisError = np.AxisError

DTYPES = [np.bool_, np.float64, np.float32, np.float16, np.int8, np.int16, np.int32, np.int64,
          np.uint8, np.uint16, np.uint32, np.uint64]
SHAPES = [(), (1,), (6,), (1, 1), (3, 4), (5, 1), (2, 3, 4), (1, 4, 2), (2, 2, 2, 3)]
VIEWS = ["packed", "transposed", "strided", "broadcast", "reversed", "fortran"]
CASES_PER_TYPE = 300  # 3300 calls of each op in all
LAYOUTS_PER_TYPE = len(SHAPES)  # every shape once: an operator each (each a compile)


def pool(dtype) -> np.ndarray:
    """A few values of the type, its special ones among them."""
    dt = np.dtype(dtype)
    if dt == np.bool_:
        return np.array([False, True])
    if dt.kind == "f":
        tiny = np.finfo(dt).smallest_subnormal
        return np.array([-2, -1, -0.0, 0.0, 1, 3, np.inf, -np.inf, np.nan, tiny, -tiny], dt)
    info = np.iinfo(dt)
    values = [info.min, info.min + 1, 0, 1, info.max - 1, info.max]
    if dt.itemsize == 8:  # equal as doubles, different as integers
        values += [2**60, 2**60 + 1]
    return np.array(values, dt)


def values(dtype, shape, rng: np.random.Generator) -> np.ndarray:
    """Values from 2 to 4 entries of the pool: ties on purpose."""
    p = pool(dtype)
    chosen = rng.choice(p, size=min(len(p), int(rng.integers(2, 5))), replace=False)
    return rng.choice(chosen, size=shape)


def numpy_answer(op: str, x: np.ndarray, axis, keepdims: bool):
    """NumPy's answer; a tuple of axes (dmlgpu's extension) as the flat index over them."""
    if not isinstance(axis, tuple):
        return getattr(np, op)(x, axis=axis, keepdims=keepdims)
    return over_axes(getattr(np, op), x, axis, keepdims)


def random_axis(ndim: int, rng: np.random.Generator):
    choice = rng.integers(4)
    if ndim == 0 or choice == 0:
        return None
    if choice == 3 and ndim > 1:  # a tuple of axes, some negative
        axes = rng.choice(ndim, size=int(rng.integers(1, ndim + 1)), replace=False)
        return tuple(int(a) - ndim if rng.integers(2) else int(a) for a in axes)
    return int(rng.integers(-ndim, ndim))


def assert_identical(got, want) -> None:
    """Equal value, dtype, shape and Python type (a NumPy scalar where NumPy gives one)."""
    assert type(got) is type(want), (type(got), type(want))
    assert got.dtype == want.dtype and np.shape(got) == np.shape(want)
    np.testing.assert_array_equal(got, want)


@pytest.mark.usefixtures("many_layouts")  # its layouts' operators outnumber the default device's 64: each compiled once
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_equals_numpy_on_random_calls(dtype):
    """CASES_PER_TYPE calls of each op over LAYOUTS_PER_TYPE layouts (every shape once, each in
    a view taken in turn from a random one, a random axis and keepdims), fresh values every
    time: each layout compiles once."""
    rng = np.random.default_rng(np.dtype(dtype).num)
    layouts, turn = [], int(rng.integers(len(VIEWS)))
    for number, shape in enumerate(SHAPES):
        layouts.append((shape, VIEWS[(turn + number) % len(VIEWS)], int(rng.integers(1000)),
                        random_axis(len(shape), rng), bool(rng.integers(2))))
    for case in range(CASES_PER_TYPE):
        shape, kind, seed, axis, keepdims = layouts[rng.integers(LAYOUTS_PER_TYPE)]
        x = view(values(dtype, shape, rng), kind, np.random.default_rng(seed))
        for op in ("argmax", "argmin"):
            want = numpy_answer(op, x, axis, keepdims)
            try:
                if rng.integers(6) == 0:  # into an `out` array, of intp or of a type that takes it
                    out = np.full(np.shape(want), 7, (np.intp, np.int32, np.uint8)[rng.integers(3)])
                    assert getattr(dnp, op)(x, axis, out, keepdims=keepdims) is out
                    assert np.array_equal(out, np.asarray(want).astype(out.dtype))
                else:
                    assert_identical(getattr(dnp, op)(x, axis, keepdims=keepdims), want)
            except AssertionError as err:
                raise AssertionError(f"case {case}: np.{op}({x!r}, axis={axis}, keepdims={keepdims}): {err}") from None


@pytest.mark.parametrize("op", ["argmax", "argmin"])
def test_nan_inf_and_zero_follow_numpy(op):
    cases = [
        [1.0, np.nan, 5.0, np.nan],  # the first NaN wins for both
        [np.nan, np.nan],
        [np.inf, -np.inf, np.inf],
        [-0.0, 0.0, -0.0],  # a tie: the first
        [0.0, -0.0],
        [-np.inf, np.nan, np.inf],
    ]
    for c in cases:
        for dtype in (np.float32, np.float16):
            x = np.array(c, dtype)
            assert_identical(getattr(dnp, op)(x), getattr(np, op)(x))


def test_large_integers_compare_exactly():
    x = np.array([2**60, 2**60 + 1, 2**60 + 1, 2**60], np.int64)
    assert dnp.argmax(x) == 1 and dnp.argmin(x) == 0
    u = np.array([2**64 - 2, 2**64 - 1, 0], np.uint64)
    assert dnp.argmax(u) == 1 and dnp.argmin(u) == 2


def test_python_sequences_and_scalars_as_numpy_reads_them():
    assert_identical(dnp.argmax([1, 3, 3, 2]), np.argmax([1, 3, 3, 2]))
    assert_identical(dnp.argmin([[4, 1], [0, 9]], axis=0), np.argmin([[4, 1], [0, 9]], axis=0))
    assert_identical(dnp.argmax(5), np.argmax(5))
    assert_identical(dnp.argmax(np.float32(2), axis=0), np.argmax(np.float32(2), axis=0))
    assert_identical(dnp.argmax(np.float32(2), axis=-1, keepdims=True), np.argmax(np.float32(2), axis=-1, keepdims=True))


def test_more_dimensions_than_a_tensor_has():
    """NumPy takes up to 64 dimensions, a DirectML tensor 1 to 8: beyond 8 the reduced axes
    go last and the array is reduced as 2-D, which keeps NumPy's index."""
    rng = np.random.default_rng(64)
    x = rng.integers(0, 3, (2, 1, 3, 1, 2, 1, 1, 2, 1, 2, 2)).astype(np.int8)
    for op in ("argmax", "argmin"):
        for axis in (None, 0, 2, -1, (0, 4, 10), (2, -2)):
            for keepdims in (False, True):
                assert_identical(getattr(dnp, op)(x, axis=axis, keepdims=keepdims), numpy_answer(op, x, axis, keepdims))
    deep = rng.random((1,) * 60 + (2, 3, 1, 2)).astype(np.float32)
    assert_identical(dnp.argmax(deep, axis=61), np.argmax(deep, axis=61))
    assert_identical(dnp.argmin(deep), np.argmin(deep))


def test_a_numpy_scalar_into_out_gives_a_scalar():
    """NumPy's scalar methods return a scalar even when the result went into ``out``."""
    for out in (np.zeros((), np.intp), np.zeros((), np.int32), np.zeros((), ">i8")):
        mine, theirs = out.copy(), out.copy()
        assert_identical(dnp.argmax(np.float16(2), out=mine), np.argmax(np.float16(2), out=theirs))
        assert mine == theirs == 0


def test_keepdims_is_read_as_numpy_reads_it():
    x = np.arange(6, dtype=np.int16).reshape(2, 3)
    for keepdims in (None, 1, "yes", np._NoValue):
        assert_identical(dnp.argmax(x, axis=1, keepdims=keepdims), np.argmax(x, axis=1, keepdims=keepdims))


def test_bool_is_read_through_a_uint8_view_without_a_copy():
    mask = np.zeros((4, 8), bool)[:, ::2]
    mask[2, 1] = True
    seen = dnp.as_input(mask, "argmax")
    assert seen.dtype == np.uint8 and np.shares_memory(seen, mask)
    assert_identical(dnp.argmax(mask), np.argmax(mask))
    assert_identical(dnp.argmax(mask, axis=1), np.argmax(mask, axis=1))


def test_bools_that_hold_other_bytes_than_0_and_1():
    """NumPy reads any nonzero byte of a bool array as True (np.empty, views of other data);
    the GPU, comparing bytes, must still give NumPy's answer."""
    odd = np.frombuffer(bytes([0, 5, 1, 7, 0, 9, 3, 5, 1, 7, 2, 9]), np.bool_).reshape(4, 3)
    for op in ("argmax", "argmin"):
        for axis in (None, 0, 1, (0, 1)):
            for x in (odd, odd[2:], odd[:, ::-1]):
                want = numpy_answer(op, x, axis, False)
                assert_identical(getattr(dnp, op)(x, axis=axis), want)


def test_calls_seen_before_give_the_same_answers():
    """A plain call made again skips its checks (``dnp._SEEN``): arguments that compare equal
    but are read apart (1, True, 1.0, np.int64(1); keepdims 1 and True) must still give NumPy's
    outcome, every time, and a call on another type, shape or layout must not reuse one."""
    x = np.array([[3, 1, 4, 1], [5, 9, 2, 6], [5, 3, 5, 8]], np.int16)
    others = [x.astype(np.float32), x.T, x[:, ::2], x[:2], x.astype(">i2"), x.astype(np.bool_)]
    for _ in range(2):
        for a in [x] + others:
            for axis in (1, True, 1.0, np.int64(1), None, 0, -1, 2):
                for keepdims in (np._NoValue, True, 1, False):
                    for op in ("argmax", "argmin"):
                        want = outcome(lambda: getattr(np, op)(a, axis=axis, keepdims=keepdims))  # noqa: B023
                        got = outcome(lambda: getattr(dnp, op)(a, axis=axis, keepdims=keepdims))  # noqa: B023
                        assert got[0] == want[0], (op, a, axis, keepdims, got, want)
                        if want[0] == "raises":
                            assert type(got[1]) is type(want[1]), (op, a, axis, keepdims, got, want)
                        else:
                            assert_identical(got[1], want[1])


def outcome(call):
    try:
        return "value", call()
    except Exception as err:  # the class is what is compared
        return "raises", err


def test_signature_is_numpys():
    for op in ("argmax", "argmin"):
        ours = inspect.signature(getattr(dnp, op)).parameters
        theirs = inspect.signature(getattr(np, op)).parameters
        assert [(p.name, p.kind) for p in ours.values()] == [(p.name, p.kind) for p in theirs.values()]


def _readonly_out():
    out = np.zeros(3, np.intp)
    out.setflags(write=False)
    return out


BAD_CALLS = [  # (op, array, keyword arguments): NumPy's exception and message, exactly
    ("argmax", np.zeros((0, 3), np.float32), {}),
    ("argmin", np.zeros((0, 3), np.float32), {"axis": 0}),
    ("argmax", np.zeros(0, np.int32), {"keepdims": True}),
    ("argmax", np.zeros((2, 3), np.float32), {"axis": 2}),
    ("argmax", np.zeros((2, 3), np.float32), {"axis": -3}),
    ("argmax", np.float32(1), {"axis": 1}),
    ("argmax", np.zeros((2, 3), np.float32), {"axis": 1.0}),
    ("argmax", np.zeros((2, 3), np.float32), {"axis": "1"}),
    ("argmax", np.zeros((2, 3), np.float32), {"axis": [1]}),
    ("argmax", np.zeros((2, 3), np.float32), {"axis": True}),
    ("argmax", np.zeros((2, 3), np.float32), {"axis": 0, "out": [0, 0, 0]}),
    ("argmax", np.zeros((2, 3), np.float32), {"axis": 0, "out": np.zeros(4, np.intp)}),
    ("argmax", np.zeros((2, 3), np.float32), {"axis": 0, "out": np.zeros((1, 3), np.intp)}),
    ("argmax", np.zeros((2, 3), np.float32), {"axis": 0, "out": np.zeros(3, np.float64)}),
    ("argmax", np.zeros((2, 3), np.float32), {"axis": 0, "out": np.zeros(3, np.uint64)}),
    ("argmax", np.zeros((2, 3), np.float32), {"axis": 0, "out": _readonly_out()}),
    ("argmax", np.zeros((2, 3), np.float32), {"out": np.zeros(1, np.intp)}),
    ("argmin", np.zeros((0, 3), np.float32), {"out": [1]}),
    ("argmin", np.zeros((2, 3), np.float32), {"axis": 7, "out": np.zeros(5, np.intp)}),
]


@pytest.mark.parametrize("op, x, kwargs", BAD_CALLS, ids=[f"{c[0]}-{i}" for i, c in enumerate(BAD_CALLS)])
def test_errors_are_numpys(op, x, kwargs):
    with pytest.raises(Exception) as theirs:
        getattr(np, op)(x, **kwargs)
    with pytest.raises(Exception) as ours:
        getattr(dnp, op)(x, **kwargs)
    assert type(ours.value) is type(theirs.value)
    assert str(ours.value) == str(theirs.value)


def test_axis_error_is_numpys_class():
    with pytest.raises(AxisError, match="axis 3 is out of bounds for array of dimension 2"):
        dnp.argmax(np.zeros((2, 2), np.float32), axis=3)


def test_empty_results_where_numpy_gives_them():
    x = np.zeros((3, 0), np.float32)
    assert_identical(dnp.argmax(x, axis=0), np.argmax(x, axis=0))
    assert_identical(dnp.argmin(x, axis=0, keepdims=True), np.argmin(x, axis=0, keepdims=True))


def test_tuple_axis_extension():
    x = np.array([[1, 2, 3], [3, 0, 4], [2, 5, 2]], np.float32)
    assert dnp.argmax(x, axis=(0, 1)) == 7 and dnp.argmin(x, axis=(1, 0)) == 4
    assert dnp.argmax(x, axis=(0, 1), keepdims=True).shape == (1, 1)
    with pytest.raises(ValueError, match="repeated axis"):
        dnp.argmax(x, axis=(0, -2))
    with pytest.raises(ValueError, match="at least one axis"):
        dnp.argmax(x, axis=())
    # each entry read and checked in turn, as NumPy's own tuple-axis reductions (np.max) do
    for axis in [(5, 2**40), (2**40, 5), (0, 1.5), (True,), (0, 2**70)]:
        with pytest.raises(Exception) as theirs:
            np.max(x, axis=axis)
        with pytest.raises(Exception) as ours:
            dnp.argmax(x, axis=axis)
        assert type(ours.value) is type(theirs.value), axis


@pytest.mark.parametrize("dtype", [np.complex128, np.complex64, object, np.str_, "datetime64[s]", np.longdouble])
def test_types_the_operators_lack_raise_typeerror(dtype):
    x = np.zeros(3, dtype)
    with pytest.raises(TypeError, match=r"take bool, float32, float16.*float64; it never falls back to the CPU"):
        dnp.argmax(x)


# --- the NumPy protocols of dmlgpu.Tensor ----------------------------------------------

GRID = np.array([[1, 2, 3], [3, 0, 4], [2, 5, 2]], np.float32)


@pytest.fixture
def tensor(device):
    return device.upload(GRID)


def test_asarray_reads_back(tensor):
    assert_identical(np.asarray(tensor), GRID)
    assert np.asarray(tensor, dtype=np.float64).dtype == np.float64
    with pytest.raises(ValueError, match="always copies"):
        np.asarray(tensor, copy=False)


@pytest.mark.parametrize("op", ["argmax", "argmin"])
@pytest.mark.parametrize("axis, keepdims", [(None, False), (None, True), (0, False), (1, True), (-1, False), ((0, 1), False)])
def test_numpy_functions_stay_on_the_gpu(tensor, monkeypatch, op, axis, keepdims):
    def no_read_back(self):
        raise AssertionError("read back to the CPU")

    monkeypatch.setattr(Tensor, "numpy", no_read_back)
    result = getattr(np, op)(tensor, axis=axis, keepdims=keepdims)
    assert isinstance(result, Tensor) and result.dtype == np.intp
    monkeypatch.undo()
    want = np.asarray(getattr(np, op)(GRID, axis=axis, keepdims=keepdims) if not isinstance(axis, tuple)
                      else numpy_answer(op, GRID, axis, keepdims))
    assert result.shape == (want.shape or (1,))  # a 0-d answer is a Tensor of shape (1,)
    np.testing.assert_array_equal(np.asarray(result).reshape(want.shape), want)


def test_chained_calls_stay_on_the_gpu(device):
    x = np.random.default_rng(1).integers(0, 5, (4, 5, 6)).astype(np.int32)
    t = device.upload(x)
    inner = np.argmax(t, axis=2)  # a Tensor of shape (4, 5)
    outer = np.argmin(inner, axis=0)
    assert isinstance(outer, Tensor)
    assert_identical(np.asarray(outer), np.argmin(np.argmax(x, axis=2), axis=0))


@pytest.mark.parametrize("call", [
    lambda t: np.sum(t),
    lambda t: np.max(t, axis=0),
    lambda t: np.add(t, 1),
    lambda t: np.add.reduce(t),
    lambda t: np.exp(t),
    lambda t: np.ones(3) * t,
    lambda t: np.argmax(t, out=np.zeros(1, np.intp)),
])
def test_other_numpy_calls_name_asarray(tensor, call):
    with pytest.raises(TypeError, match=r"np\.asarray|out must be None"):
        call(tensor)


def test_a_released_tensor_says_so(device):
    t = device.upload(GRID)
    t.release()
    with pytest.raises(dmlgpu.DataError, match="released"):
        np.asarray(t)
