"""Randomized bad input through ``dmlgpu.numpy`` and ``dmlgpu.dask``: hundreds of calls each (thousands in CI).

``dmlgpu.numpy`` promises NumPy's behaviour (docs/semantics.md#numpy-shaped-surfaces), so every call is made by
NumPy too and the two must agree: the same exception class, or the same value, result type,
dtype and shape (and the same ``out``). Inputs NumPy takes but DirectML's types do not
(float64, strings, objects...) must raise ``TypeError``. ``dmlgpu.dask`` promises
``dmlgpu``'s semantics and refuses bad arguments when the graph is built (bad chunks when
computed, naming the chunk): every case knows the exception class it must raise.

After every case the next valid call must work and be right (checked against NumPy on a
tiny array). ``DMLGPU_TEST_SEED`` changes the seed, ``DMLGPU_BAD_INPUT_CASES`` the number of
cases per surface (default 400; .ci/run asks 2000).
"""

from __future__ import annotations

import functools
import math
import os
import re
import warnings

import numpy as np
import pytest

import dmlgpu
import dmlgpu.numpy as dnp
from dmlgpu.errors import DataError, DescriptorError
from _support import Duck

try:
    from numpy.exceptions import AxisError
except ImportError:  # NumPy < 1.25
    AxisError = np.AxisError

SEED = int(os.environ.get("DMLGPU_TEST_SEED", "2026"))
CASES = int(os.environ.get("DMLGPU_BAD_INPUT_CASES", "400"))
NOVALUE = np._NoValue

GOOD_TYPES = ["bool", "float64", "float32", "float16", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
              "uint64"]
BAD_TYPES = ["complex128", "complex64", "object", "U3", "S2", "datetime64[s]", "longdouble", "V4"]


def supported(dtype) -> bool:
    return np.dtype(dtype).newbyteorder("=").name in GOOD_TYPES


def pool(dtype) -> np.ndarray:
    dt = np.dtype(dtype)
    if dt == np.bool_:
        return np.array([False, True])
    if dt.kind == "f":
        return np.array([-np.inf, -1, -0.0, 0.0, 2, np.inf, np.nan], dt)
    info = np.iinfo(dt)
    return np.array([info.min, 0, 1, info.max], dt)


# --- dmlgpu.numpy ------------------------------------------------------------------------

SHAPES = [(), (0,), (3,), (2, 0), (0, 3), (2, 3), (1, 4, 2), (2, 2, 1, 3),
          (1, 2, 1, 1, 1, 1, 1, 1, 2), (2,) * 10, (1,) * 11 + (3,), (1,) * 20 + (0,), (1,) * 62 + (2, 3)]


def layout(x: np.ndarray, kind: int) -> np.ndarray:
    """``x`` (or an array of its shape) as one of the layouts NumPy allows (``kind`` 0-7)."""
    if kind == 0 and x.ndim:
        y = x.copy()
        y.setflags(write=False)
        return y
    if kind == 1 and x.dtype.itemsize > 1:  # non-native byte order
        return x.astype(x.dtype.newbyteorder())
    if kind == 2 and x.ndim and x.size:  # strided along the longest axis
        axis = int(np.argmax(x.shape))
        every_other = tuple(slice(None, None, 2) if i == axis else slice(None) for i in range(x.ndim))
        big = np.zeros([2 * n if i == axis else n for i, n in enumerate(x.shape)], x.dtype)
        big[every_other] = x
        return big[every_other]
    if kind == 3 and x.ndim and x.size:  # negative strides
        return np.ascontiguousarray(x[::-1])[::-1]
    if kind == 4 and x.ndim and x.size:  # broadcast (read-only)
        return np.broadcast_to(x.take([0], axis=0), x.shape)
    if kind == 5 and x.ndim > 1:
        return np.asfortranarray(x)
    return x


class Labelled(np.ndarray):
    """A user's subclass that keeps ndarray's argmax."""

    def __array_finalize__(self, obj):
        self.label = getattr(obj, "label", None)


#: (dtype, shape, layout) of the arrays drawn: a fixed set, so that the operators compiled for
#: them are reused and the test stays quick on lavapipe (values are drawn afresh every time).
TEMPLATES = [(GOOD_TYPES[i % len(GOOD_TYPES)], SHAPES[(7 * i) % len(SHAPES)], (3 * i) % 8) for i in range(44)]


def draw_input(rng):
    """Something ``numpy.argmax`` takes: arrays of every layout, subclasses, and what NumPy
    converts (sequences, ragged ones, scalars, buffers, strings, objects)."""
    kind = rng.integers(20)
    dtype, shape, how = TEMPLATES[rng.integers(len(TEMPLATES))]
    if kind < 10:
        return layout(rng.choice(pool(dtype), size=shape), how)
    if kind == 10:
        return np.zeros(shape, BAD_TYPES[rng.integers(len(BAD_TYPES))])
    if kind == 11:  # masked
        x = rng.choice(pool(dtype), size=shape)
        return np.ma.array(x, mask=rng.random(shape) < 0.5 if rng.integers(2) else np.ma.nomask)
    if kind == 12:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", PendingDeprecationWarning)
            return np.matrix(rng.choice(pool(dtype), size=[(2, 3), (1, 1), (0, 2), (3, 1)][rng.integers(4)]))
    if kind == 13:
        view = rng.choice(pool(dtype), size=shape).view(Labelled)
        view.label = "K"
        return view
    if kind == 14:
        return [[1, 2], [3]] if rng.integers(2) else [[True, False], [False, True]]
    if kind == 15:
        return [int(v) for v in rng.integers(-5, 5, rng.integers(0, 4))]
    if kind == 16:
        return [None, "abc", b"xy", 3.5, 2**70, 1j, True, 7, {1: 2}, {3}, object()][rng.integers(11)]
    if kind == 17:
        return [bytearray(b"\x02\x07\x07"), memoryview(np.array([4, 9], np.int16)), np.float16(2), np.int64(-3),
                np.array([[5]], np.uint32).data][rng.integers(5)]
    if kind == 18:  # 0-d arrays
        return np.array(rng.choice(pool(dtype)))
    return np.empty(shape, dtype)


def draw_axis(rng, ndim: int):
    kind = rng.integers(12)
    if kind < 3:
        return None
    if kind < 6:
        return int(rng.integers(-ndim - 2, ndim + 2))
    if kind == 6:
        return [2**31, -(2**31), -(2**31) - 1, 2**63, -(2**64), 2**70][rng.integers(6)]
    if kind == 7:
        return [1.0, True, False, np.True_, "0", [0], np.array([0]), object(), 0j][rng.integers(9)]
    if kind == 8:
        return [np.int8, np.int32, np.uint64, np.intp][rng.integers(4)](rng.integers(0, 3))
    if kind == 9:
        return np.array(int(rng.integers(-1, 2)))
    # dmlgpu's extension: a tuple of axes, some of them bad
    n = max(ndim, 1)
    axes = tuple(int(a) for a in rng.integers(-n - 1, n + 1, rng.integers(0, 4)))
    if rng.integers(6) == 0:
        axes += ([1.5, True, 2**40, 2**70, None][rng.integers(5)],)
    return axes


def draw_keepdims(rng):
    kind = rng.integers(10)
    if kind < 4:
        return NOVALUE
    if kind < 8:
        return bool(rng.integers(2))
    return [0, 1, None, "yes", "", np.array([1, 2]), np.True_, [], [0]][rng.integers(9)]


def draw_out(rng, shape):
    """An ``out`` for a result of ``shape`` (None if unknown): right, or wrong in one way."""
    if shape is None or rng.integers(3):
        return None
    shape = tuple(shape)
    kind = rng.integers(12)
    if kind == 0:  # one size off, or one dimension more
        return np.zeros(shape[:-1] + (shape[-1] + 1,) if shape and rng.integers(2) else shape[:63] + (2,), np.intp)
    if kind == 1:
        return np.zeros(shape, [np.float32, np.uint64, np.int8, np.complex64][rng.integers(4)])
    if kind == 2:
        out = np.zeros(shape, np.intp)
        out.setflags(write=False)
        return out
    if kind == 3:
        return [0] * (shape[0] if shape else 1)
    if kind == 4:
        return np.ma.zeros(shape, np.intp)
    if kind == 5:
        return np.zeros(shape, np.intp).view(Labelled)
    if kind == 6 and shape:  # strided along the first axis
        return np.zeros((2 * shape[0],) + shape[1:], np.intp)[::2]
    if kind == 7:
        return np.zeros(shape, ">i8")
    if kind == 8:
        return np.zeros(shape, [np.int32, np.bool_, np.int64][rng.integers(3)])
    if kind == 9:
        return np.zeros((), np.intp)
    return np.zeros(shape, np.intp)


def outcome(call):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return "value", call()
        except Exception as err:  # the class is what is compared
            return "raises", err


def result_shape_hint(op, a, axis, keepdims):
    """The shape NumPy's result would have (to draw a fitting ``out``), or None."""
    kind, value = outcome(lambda: getattr(np, op)(np.asarray(a), axis=axis, keepdims=keepdims))
    return np.shape(value) if kind == "value" else None


def tuple_axis_reference(op, a, axis, keepdims):
    """dmlgpu's tuple-axis extension: the errors of NumPy's own tuple-axis reductions
    (``np.max``), the value of NumPy's argmax over the reduced axes flattened."""
    if isinstance(a, np.ma.MaskedArray):  # as MaskedArray.argmax reads it
        x = a.filled(np.ma.maximum_fill_value(a) if op == "argmax" else np.ma.minimum_fill_value(a)).view(np.ndarray)
    else:
        x = np.asarray(a)
    x = x.reshape(1) if x.ndim == 0 else x
    if axis == ():
        return "raises", ValueError("axis is ()")
    kind, err = outcome(lambda: np.max(x.view(np.uint8) if x.dtype == np.bool_ else x, axis=axis))
    if kind == "raises":
        return kind, err
    axes = sorted(a % x.ndim for a in axis)
    kept = [i for i in range(x.ndim) if i not in axes]
    flat = x.transpose(kept + axes).reshape([x.shape[i] for i in kept] + [math.prod(x.shape[i] for i in axes)])
    answer = getattr(np, op)(flat, axis=-1)
    if np.asarray(a).ndim and keepdims is not NOVALUE and keepdims:
        answer = np.reshape(answer, [1 if i in axes else n for i, n in enumerate(x.shape)])
    if isinstance(a, np.matrix):  # NumPy's retry as ndarray wraps the result as a matrix
        answer = np.asarray(answer).view(type(a))
    elif isinstance(a, Labelled) and np.ndim(answer):  # ndarray.argmax's result is of the subclass
        answer = answer.view(Labelled)
    return "value", answer


def numpy_reference(op, a, axis, out, keepdims):
    """What dmlgpu.numpy must give: TypeError for a type DirectML lacks, else NumPy's outcome."""
    kind, converted = outcome(lambda: np.asarray(a))
    if kind == "raises":  # NumPy converts what has no argmax of its own first: its error
        return kind, converted
    if not supported(converted.dtype):
        return "raises", TypeError("not a DirectML type")
    if isinstance(axis, tuple):
        return tuple_axis_reference(op, a, axis, keepdims)
    return outcome(lambda: getattr(np, op)(a, axis=axis, out=out, keepdims=keepdims))


def copy_out(out):
    return out.copy() if isinstance(out, np.ndarray) else out


def describe(a) -> str:
    text = repr(a)
    return f"{type(a).__name__} {getattr(a, 'dtype', '')} {np.shape(a) if hasattr(a, 'shape') else ''} " + (
        text if len(text) < 300 else text[:300] + "...")


def check_next_valid_call(rng) -> None:
    tiny = rng.integers(-3, 4, 5).astype([np.int16, np.float32, np.uint8][rng.integers(3)])
    assert dnp.argmax(tiny) == np.argmax(tiny)
    np.testing.assert_array_equal(dnp.argmin(tiny, axis=0, keepdims=True), np.argmin(tiny, axis=0, keepdims=True))


def test_numpy_bad_input_matches_numpy():
    rng = np.random.default_rng([SEED, 1])
    tally = {"value": 0, "raises": 0}
    for case in range(CASES):
        a = draw_input(rng)
        op = ("argmax", "argmin")[case % 2]
        ndim = np.ndim(a) if not isinstance(a, (dict, set, list)) else 1
        axis = draw_axis(rng, ndim)
        keepdims = draw_keepdims(rng)
        if isinstance(axis, tuple) and not any(keepdims is k for k in (NOVALUE, True, False)):
            keepdims = NOVALUE  # the extension's errors follow np.max, whose argument order differs
        out = None if isinstance(axis, tuple) else draw_out(rng, result_shape_hint(op, a, axis, keepdims))
        mine, theirs = copy_out(out), copy_out(out)
        want = numpy_reference(op, a, axis, theirs, keepdims)
        got = outcome(functools.partial(getattr(dnp, op), a, axis=axis, out=mine, keepdims=keepdims))
        what = f"case {case}: np.{op}({describe(a)}, axis={axis!r}, out={describe(out)}, keepdims={keepdims!r})"
        assert got[0] == want[0], f"{what}: NumPy {want}, dmlgpu {got}"
        if want[0] == "raises":
            assert type(got[1]) is type(want[1]), f"{what}: NumPy raises {want[1]!r}, dmlgpu {got[1]!r}"
        else:
            g, w = got[1], want[1]
            assert type(g) is type(w), f"{what}: NumPy gives {type(w).__name__}, dmlgpu {type(g).__name__}"
            assert g.dtype == w.dtype and np.shape(g) == np.shape(w), f"{what}: {g!r} against NumPy's {w!r}"
            np.testing.assert_array_equal(np.asarray(g), np.asarray(w), err_msg=what)
            if isinstance(out, np.ndarray):
                assert (g is mine) == (w is theirs), what
                np.testing.assert_array_equal(mine, theirs, err_msg=what)
        tally[want[0]] += 1
        check_next_valid_call(rng)
    assert tally["value"] > CASES // 10 and tally["raises"] > CASES // 3, tally  # both kinds drawn, often


# --- dmlgpu.dask ---------------------------------------------------------------------------


DASK_SHAPES = [((4, 6), (2, 3)), ((5,), (2,)), ((3, 4, 2), (2, 4, 1)), ((2, 3), (2, 3))]
#: The valid calls' keyword arguments: a few, so that their operators compile once.
VALID_KWARGS = [{"axis_direction": "increasing", "output_data_type": "uint32", "nan_mode": "ignore"},
                {"axis_direction": "decreasing", "output_data_type": np.int64, "nan_mode": "propagate",
                 "split_every": 2},
                {"nan_mode": "propagate", "split_every": {0: 3}}]


def draw_dask_case(rng, da):
    """(build, expected exception class or None, when: "graph" or "compute", x as NumPy, ...).
    ``build()`` makes the lazy result; an expected None is a valid call, checked against
    dmlgpu's own function. Most cases are bad in one way; about one in seven is valid."""
    op = ("argmax", "argmin", "hardmax")[rng.integers(3)]
    shape, chunks = DASK_SHAPES[rng.integers(2)]
    ndim = len(shape)
    dtype = "float32" if op == "hardmax" or rng.integers(2) else "int16"
    x = rng.choice(pool(dtype), size=shape)
    arr = da.from_array(x, chunks=chunks)
    axes = (0,) if ndim == 1 else [(0,), (1,), (0, 1), (-1, 0)][rng.integers(4)]
    kwargs = dict(VALID_KWARGS[rng.integers(len(VALID_KWARGS))])
    if op == "hardmax":
        kwargs.pop("axis_direction", None), kwargs.pop("output_data_type", None)
    if isinstance(kwargs.get("split_every"), dict):
        kwargs["split_every"] = {axes[0]: 3}
    expected, when, field = None, "graph", None
    bad = rng.integers(12)
    if bad >= 10:  # the commonest mistakes, twice as often
        bad -= 10
    if op == "hardmax" and bad in (2, 3):  # no direction or output type to get wrong: its masked meta instead
        bad = 8
    if bad == 0:  # x that is not a Dask array we take (made only when drawn: Dask's graphs cost)
        make, expected = [
            (lambda: x, TypeError), (lambda: x.tolist(), TypeError), (lambda: None, TypeError),
            (lambda: da.from_array(np.float32(1)), DataError),
            (lambda: da.zeros((1,) * 9, dtype=np.float32, chunks=1), DataError),
            (lambda: da.zeros((0, 3), dtype=np.float32, chunks=2), DataError),
            (lambda: da.zeros((3, 0), dtype=np.float32, chunks=2), DataError),
            (lambda: arr[arr[(slice(None),) + (0,) * (ndim - 1)] > 100], ValueError),  # unknown chunk sizes
            (lambda: arr.astype(np.complex128), TypeError), (lambda: arr > 0, TypeError),
            (lambda: arr.astype(np.complex64), TypeError),
            (lambda: arr.map_blocks(Duck, meta=Duck(np.empty((0,) * ndim, x.dtype))), TypeError),
        ][rng.integers(12)]
        arr, field = make(), r"\bx\b"
        if isinstance(arr, da.Array) and arr.ndim == 0:
            axes = 0
    elif bad == 1:  # axes
        axes, expected = [
            (ndim, DescriptorError), (-ndim - 1, DescriptorError), ((0, 0), DescriptorError),
            ((0, -ndim), DescriptorError), ((), DescriptorError), ([], DescriptorError), (2**70, DescriptorError),
            (1.5, TypeError), (None, TypeError), (object(), TypeError), ("0", TypeError), (b"0", TypeError),
            (True, TypeError), ([True], TypeError), ((np.True_,), TypeError), ([0.0], TypeError), ([[0]], TypeError),
            ([np.array([0, 1])], TypeError), ({"a": 1}, TypeError),
        ][rng.integers(19)]
        field = r"^axes\b"
    elif bad == 2:
        kwargs["axis_direction"], expected = [("sideways", DescriptorError), (1, TypeError), (None, TypeError)][
            rng.integers(3)]
        field = "^axis_direction "
    elif bad == 3:
        kwargs["output_data_type"], expected = [
            ("float32", DescriptorError), ("int7", DescriptorError), (np.float64, DescriptorError), (None, TypeError),
            (object(), TypeError), ("int8", DescriptorError), (np.complex64, TypeError)][rng.integers(7)]
        field = "^(output_data_type|output_tensor.data_type) "  # DirectML's name for it, as dmlgpu.argmax gives
    elif bad == 4:
        kwargs["nan_mode"], expected = [("loud", DescriptorError), (0, TypeError), (None, TypeError)][rng.integers(3)]
        field = "^nan_mode "
    elif bad == 5:
        kwargs["split_every"], expected = [
            (1, ValueError), (0, ValueError), (-3, ValueError), (2.5, TypeError), ("4", TypeError), (True, TypeError),
            ({ndim + 3: 2}, ValueError), ({axes[0]: 1}, ValueError), ({axes[0]: "a"}, TypeError),
            ({"a": 2}, ValueError)][rng.integers(10)]
        field = r"^split_every\b"
    elif bad == 6:
        kwargs["device"], expected = [("gpu", TypeError), (0, TypeError)][rng.integers(2)]
        field = "^device "
    elif bad == 7:  # chunks that are not what the graph declares: found when computed, before the GPU
        when, field = "compute", r"^chunk \(\d+(, \d+)*,?\) of x, on adapter '.+': (the chunk|x.dtype is|dmlgpu.dask.hardmax)"
        meta = np.empty((0,) * ndim, x.dtype)
        odd = rng.integers(4)
        if odd == 0:  # a chunk of another type than x.dtype (a complex one, or one the operators take)
            other = np.complex64 if rng.integers(2) else (np.int32 if dtype != "int32" else np.int16)
            arr, expected = arr.map_blocks(lambda b: b.astype(other), dtype=x.dtype, meta=meta), TypeError
        elif odd == 1:  # a chunk of another shape than x.chunks gives it
            arr, expected = arr.map_blocks(lambda b: b[:1], dtype=x.dtype, meta=meta), ValueError
        elif odd == 2:
            arr, expected = arr.map_blocks(Duck, dtype=x.dtype, meta=meta), TypeError
        else:  # masked chunks under a plain meta: HARDMAX refuses them
            arr = arr.map_blocks(lambda b: np.ma.masked_greater(b, 0), dtype=x.dtype, meta=meta)
            expected = TypeError if op == "hardmax" else None
            x, when = np.ma.masked_greater(x, 0), "compute" if op == "hardmax" else "graph"
    elif bad == 8:  # masked chunks the meta shows: HARDMAX refuses them at once, the others honour them
        arr, x = da.ma.masked_greater(arr, 0), np.ma.masked_greater(x, 0)
        expected, field = (TypeError if op == "hardmax" else None), "^dmlgpu.dask.hardmax cannot take a masked array"
    import dmlgpu.dask as dd

    fn = getattr(dd, op)
    return (lambda: fn(arr, axes, **kwargs)), expected, when, field, x, op, axes, kwargs


@pytest.mark.filterwarnings("ignore:invalid value encountered in cast:RuntimeWarning")  # the chunks cast on purpose
def test_dask_bad_input_is_refused_clearly(da):
    import dask

    import dmlgpu.dask as dd

    rng = np.random.default_rng([SEED, 2])
    tiny_x = np.array([3, 1, 4, 1, 5], np.float32)
    tally = {"graph": 0, "compute": 0, "valid": 0}
    with dask.config.set(scheduler="sync"):
        for case in range(CASES):
            build, expected, when, field, x, op, axes, kwargs = draw_dask_case(rng, da)
            what = f"case {case}: dd.{op}(axes={axes!r}, {kwargs}) expecting {expected} at {when}"
            try:
                lazy = build()
            except Exception as err:
                assert when == "graph" and type(err) is expected, f"{what}: raised {err!r}"
                assert re.search(field, str(err)), f"{what}: {err} does not name {field}"
                tally["graph"] += 1
            else:
                assert when == "compute" or expected is None, f"{what}: built the graph"
                try:
                    value = lazy.compute()
                except Exception as err:
                    assert type(err) is expected, f"{what}: compute raised {err!r}"
                    assert re.search(field, str(err)), f"{what}: {err} does not name {field}"  # and the chunk
                    tally["compute"] += 1
                else:
                    assert expected is None, f"{what}: computed {value!r}"
                    want = getattr(dmlgpu, op)(x, axes, **{k: v for k, v in kwargs.items() if k != "split_every"})
                    assert value.dtype == want.dtype, what
                    np.testing.assert_array_equal(value, want, err_msg=what)
                    tally["valid"] += 1
            values = tiny_x * np.float32(rng.choice([-1, 1]))
            (next_call,) = dask.compute(dd.argmax(da.from_array(values, chunks=5), 0), optimize_graph=False)
            assert next_call.tolist() == [np.argmax(values)], what
    assert min(tally.values()) > CASES // 20, tally
