"""NumPy's subclasses as NumPy treats them (issue 23), through ``dmlgpu.numpy``, ``dmlgpu``'s
own functions and ``dmlgpu.dask``'s chunks.

Every call here is made twice, once by NumPy and once by dmlgpu, and the two must agree:
the same value, result type, dtype and shape, or the same exception class. Where NumPy would
hand an object to semantics of its own that dmlgpu does not reproduce, dmlgpu must refuse it
with a ``TypeError`` naming it, never answer as if it were a plain array.
"""

from __future__ import annotations

import array
import os
import warnings

import numpy as np
import pytest

import dmlgpu
import dmlgpu.numpy as dnp
from _support import Duck, random_chunks

DTYPES = [np.bool_, np.float64, np.float32, np.float16, np.int8, np.int16, np.int32, np.int64,
          np.uint8, np.uint16, np.uint32, np.uint64]
SEED = int(os.environ.get("DMLGPU_TEST_SEED", "23"))

pytestmark = pytest.mark.filterwarnings("ignore:the matrix subclass:PendingDeprecationWarning")


def pool(dtype) -> np.ndarray:
    """A few values of the type, its extremes (which are also the masks' fill values) and,
    for floats, NaN and both zeros among them."""
    dt = np.dtype(dtype)
    if dt == np.bool_:
        return np.array([False, True])
    if dt.kind == "f":
        return np.array([-np.inf, -2, -0.0, 0.0, 1, 3, np.inf, np.nan], dt)
    info = np.iinfo(dt)
    return np.array([info.min, info.min + 1, 0, 1, info.max - 1, info.max], dt)


def outcome(call):
    """What ``call()`` gives: ("value", result) or ("raises", exception)."""
    try:
        return "value", call()
    except Exception as err:  # the class is what is compared
        return "raises", err


def assert_same(theirs, ours, what: str = "") -> None:
    """NumPy's outcome and ours agree: the exception class, or value, type, dtype and shape."""
    (kind_t, t), (kind_o, o) = outcome(theirs), outcome(ours)
    assert kind_t == kind_o, f"{what}: NumPy {kind_t} {t!r}, dmlgpu {kind_o} {o!r}"
    if kind_t == "raises":
        assert type(o) is type(t), f"{what}: NumPy raises {type(t).__name__}({t}), dmlgpu {type(o).__name__}({o})"
        return
    assert type(o) is type(t), f"{what}: NumPy gives {type(t).__name__}, dmlgpu {type(o).__name__}"
    assert o.dtype == t.dtype and np.shape(o) == np.shape(t), f"{what}: {o!r} against NumPy's {t!r}"
    np.testing.assert_array_equal(np.asarray(o), np.asarray(t), err_msg=what)


def both(op: str, a, **kwargs):
    """NumPy's call and ours, each on its own copy of any ``out`` (compared afterwards)."""
    out = kwargs.pop("out", None)
    outs = (None, None) if out is None else (out.copy(), out.copy())

    def call(module, out):
        extra = {} if out is None else {"out": out}
        return lambda: getattr(module, op)(a, **kwargs, **extra)

    return call(np, outs[0]), call(dnp, outs[1]), outs


# --- masked arrays ---------------------------------------------------------------------


def test_the_issue_example():
    m = np.ma.array([3, 9, 1], mask=[0, 1, 0], dtype=np.float32)
    assert dnp.argmax(m) == np.argmax(m) == 0
    assert dnp.argmin(np.ma.array([3, 0, 1], mask=[0, 1, 0], dtype=np.float32)) == 2
    assert dmlgpu.argmax(m, 0).tolist() == [0]
    flags = np.ma.array([False, True, True], mask=[0, 1, 0])
    assert dnp.argmax(flags) == np.argmax(flags) == 2


def masked_cases(dtype, rng, count):
    """Masked arrays of ``dtype``: random masks, masks over the extremes, whole slices masked,
    nothing masked (``nomask``), everything masked; values tie on purpose."""
    shapes = [(5,), (3, 4), (2, 3, 2)]
    for case in range(count):
        shape = shapes[case % len(shapes)]
        x = rng.choice(pool(dtype), size=shape)
        style = case % 5
        if style == 0:
            mask = rng.random(shape) < 0.4
        elif style == 1:  # the extremes masked: the answer must move
            flat = x.astype(np.float64) if x.dtype.kind == "f" else x
            mask = (flat == np.nanmax(flat)) | (flat == np.nanmin(flat)) if flat.dtype.kind == "f" else \
                (flat == flat.max()) | (flat == flat.min())
        elif style == 2:  # a whole slice masked along the last axis
            mask = np.zeros(shape, bool)
            mask[..., 0] = True
            mask.reshape(-1)[:: 3] = True
        elif style == 3:
            mask = np.ma.nomask
        else:
            mask = np.ones(shape, bool) if case % 2 else np.zeros(shape, bool)
        yield np.ma.array(x, mask=mask)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_masked_arrays_match_numpy(dtype):
    rng = np.random.default_rng([SEED, np.dtype(dtype).num])
    for m in masked_cases(dtype, rng, 30):
        for op in ("argmax", "argmin"):
            axis = [None, 0, -1, m.ndim - 1][int(rng.integers(4))]
            kwargs = {"axis": axis}
            if rng.integers(2):
                kwargs["keepdims"] = bool(rng.integers(2))
            if rng.integers(5) == 0:
                shape = np.shape(np.argmax(m.filled(0), axis=axis, keepdims=kwargs.get("keepdims", False)))
                kwargs["out"] = np.full(shape, 7, np.intp)
            theirs, ours, outs = both(op, m, **kwargs)
            what = f"np.{op}({m!r}, {kwargs})"
            assert_same(theirs, ours, what)
            if outs[0] is not None:
                np.testing.assert_array_equal(outs[1], outs[0], err_msg=what)


def test_masked_out_and_result_types():
    m = np.ma.array(np.array([[1, 5, 2], [7, 0, 7]], np.int16), mask=[[0, 1, 0], [1, 0, 0]])
    out = np.zeros(2, np.intp)
    assert dnp.argmax(m, axis=1, out=out) is out and out.tolist() == [2, 2]
    masked_out = np.ma.zeros(2, np.intp)  # written through, as NumPy does
    assert dnp.argmin(m, axis=1, out=masked_out) is masked_out and masked_out.tolist() == [0, 1]
    assert type(dnp.argmax(m, axis=0)) is np.ndarray and isinstance(dnp.argmax(m), np.intp)
    # the mask, not the data's own fill_value, decides: fill_value is never used by argmax
    m.fill_value = 3
    assert_same(lambda: np.argmax(m, axis=1), lambda: dnp.argmax(m, axis=1))


def test_masked_arrays_that_mean_something_else_are_refused():
    class OwnFill(np.ma.MaskedArray):
        def filled(self, fill_value=None):
            return super().filled(0)

    class OwnArgmax(np.ma.MaskedArray):
        def argmax(self, *args, **kwargs):
            return 0

    x = np.ma.array(np.arange(4, dtype=np.float32), mask=[0, 1, 0, 0])
    with pytest.raises(TypeError, match="OwnFill: it overrides MaskedArray.filled"):
        dnp.argmax(x.view(OwnFill))
    with pytest.raises(TypeError, match="OwnArgmax: it overrides MaskedArray.argmax"):
        dnp.argmax(x.view(OwnArgmax))
    assert dnp.argmin(x.view(OwnArgmax)) == 0  # argmin is still MaskedArray's
    patched = x.copy()
    patched.argmin = lambda *a, **k: 0  # an instance's own method is what NumPy would call
    with pytest.raises(TypeError, match="MaskedArray.argmin"):
        dnp.argmin(patched)


def test_masked_array_of_a_type_the_operators_lack_names_the_types():
    with pytest.raises(TypeError, match="cannot take complex128 input"):
        dnp.argmax(np.ma.array([1.0, 2.0j], mask=[1, 0]))
    assert dnp.argmax(np.ma.array([1.0, 2.0, 3.0], mask=[0, 0, 1])) == 1  # float64, NumPy's default
    assert dnp.argmax(np.ma.array([1, 2, 3], mask=[0, 0, 1], dtype=np.int64)) == 1


# --- dmlgpu.argmax / argmin / hardmax (the DirectML-flavoured functions) -----------------


@pytest.mark.parametrize("direction", ["increasing", "decreasing"])
def test_dmlgpu_functions_fill_masked_elements(direction):
    x = np.array([[3, 9, 1, 9], [4, 4, 4, 4], [2, 8, 8, 0]], np.float32)
    mask = np.array([[0, 1, 0, 0], [1, 1, 1, 1], [0, 0, 1, 1]], bool)
    m = np.ma.array(x, mask=mask)
    for op, fill in (("argmax", -np.inf), ("argmin", np.inf)):
        for axes in (0, 1, (0, 1)):
            got = getattr(dmlgpu, op)(m, axes, axis_direction=direction)
            want = getattr(dmlgpu, op)(m.filled(fill).view(np.ndarray), axes, axis_direction=direction)
            np.testing.assert_array_equal(got, want)
            assert type(got) is np.ndarray
    assert dmlgpu.argmax(m, 1).ravel().tolist() == [3, 0, 1]  # row 2 all masked: the tie rule
    with pytest.raises(TypeError, match=r"dmlgpu.hardmax cannot take a masked array .*x.filled\(value\)"):
        dmlgpu.hardmax(m, 1)


# --- np.matrix ---------------------------------------------------------------------------

with warnings.catch_warnings():
    warnings.simplefilter("ignore", PendingDeprecationWarning)  # np.matrix's own advice
    MATRIX = np.matrix([[4, 1, 7], [7, 0, 2]], dtype=np.float32)
AXES = [None, 0, 1, -1, -2, 2, np.int64(1), np.uint8(0), 1.0, True, (0,), (0, 1), [1], -(2**31)]


@pytest.mark.parametrize("op", ["argmax", "argmin"])
def test_matrix_calls_match_numpy(op):
    """Every axis NumPy's matrix path treats differently, with and without keepdims and out."""
    for m in (MATRIX, np.matrix(np.zeros((0, 3), np.int8)), np.matrix([[5]], np.uint16)):
        for axis in AXES:
            for keepdims in ({}, {"keepdims": True}, {"keepdims": False}):
                if isinstance(axis, tuple):  # dmlgpu's extension: NumPy raises, dmlgpu reduces
                    continue
                assert_same(*both(op, m, axis=axis, **keepdims)[:2], f"np.{op}({m!r}, axis={axis!r}, {keepdims})")
                for out in (np.zeros(3, np.intp), np.zeros(1, np.intp), np.zeros((), np.intp),
                            np.matrix(np.zeros((1, 3), np.intp)), np.zeros(3, np.float32), np.zeros(2, np.int32)):
                    theirs, ours, outs = both(op, m, axis=axis, out=out, **keepdims)
                    what = f"np.{op}({m!r}, axis={axis!r}, out={out!r}, {keepdims})"
                    assert_same(theirs, ours, what)
                    if outcome(theirs)[0] == "value":
                        np.testing.assert_array_equal(outs[1], outs[0], err_msg=what)


def test_matrix_shapes_and_types():
    assert_same(lambda: np.argmin(MATRIX, axis=0), lambda: dnp.argmin(MATRIX, axis=0))  # (1, 3) matrix
    got = dnp.argmax(MATRIX, axis=1)
    assert type(got) is np.matrix and got.shape == (2, 1) and got.tolist() == [[2], [0]]
    assert isinstance(dnp.argmax(MATRIX), np.intp) and dnp.argmax(MATRIX) == 2
    kept = dnp.argmax(MATRIX, keepdims=True)  # NumPy: matrix.argmax has no keepdims, so it retries as ndarray
    assert type(kept) is np.matrix and kept.shape == (1, 1)
    out = np.matrix(np.zeros((1, 3), np.intp))
    assert dnp.argmax(MATRIX, axis=0, keepdims=True, out=out) is out and out.tolist() == [[1, 0, 0]]
    with pytest.raises(AttributeError, match="_align"):
        dnp.argmax(MATRIX, axis=0, out=np.zeros(3, np.intp))
    with pytest.raises(ValueError, match="unsupported axis"):
        dnp.argmax(MATRIX, axis=-1)
    ext = dnp.argmax(MATRIX, axis=(0, 1))  # the tuple extension, through NumPy's retry as ndarray
    assert type(ext) is np.matrix and ext.tolist() == [[2]]


def test_matrix_subclasses():
    class Plain(np.matrix):
        pass

    class OwnAlign(np.matrix):
        def _align(self, axis):
            return self

    m = MATRIX.view(Plain)
    assert_same(lambda: np.argmax(m, axis=1), lambda: dnp.argmax(m, axis=1))
    assert type(dnp.argmax(m, axis=0)) is Plain
    with pytest.raises(TypeError, match="OwnAlign: it overrides matrix._align"):
        dnp.argmax(MATRIX.view(OwnAlign), axis=0)


# --- a user's ndarray subclass -------------------------------------------------------------


class Labelled(np.ndarray):
    """An ndarray subclass that keeps ndarray's argmax and carries an attribute along."""

    finalized: list = []

    def __array_finalize__(self, obj):
        Labelled.finalized.append(obj)
        self.label = getattr(obj, "label", None)


class OwnArgmax(np.ndarray):
    def argmax(self, *args, **kwargs):
        return "mine"


class OwnFunction(np.ndarray):
    def __array_function__(self, func, types, args, kwargs):
        return "mine"


def labelled(x) -> Labelled:
    view = np.asarray(x).view(Labelled)
    view.label = "kelvin"
    return view


def test_user_subclass_results_are_ndarrays_of_its_type():
    """ndarray.argmax on a subclass: a result that is not 0-d is an instance of the subclass,
    made by NumPy's machinery (``__array_finalize__`` sees the input, so attributes follow);
    a 0-d result is a NumPy scalar; ``out`` is returned as it is."""
    x = labelled(np.array([[3, 1, 4], [1, 5, 9]], np.uint8))
    for kwargs in ({}, {"axis": 0}, {"axis": 1, "keepdims": True}, {"keepdims": True}, {"axis": -1}):
        for op in ("argmax", "argmin"):
            assert_same(*both(op, x, **kwargs)[:2], f"{op} {kwargs}")
    Labelled.finalized.clear()
    got = dnp.argmax(x, axis=1)
    assert type(got) is Labelled and got.label == "kelvin" and got.tolist() == [2, 2]
    assert any(obj is x for obj in Labelled.finalized)  # finalized from the input itself
    assert isinstance(dnp.argmax(x), np.intp)
    out = np.zeros(3, np.intp)
    assert dnp.argmin(x, axis=0, out=out) is out and out.tolist() == [1, 0, 0]
    sub_out = np.zeros(2, np.intp).view(Labelled)  # a subclass as out: written through, returned
    assert dnp.argmax(np.array([[1, 2], [4, 3]], np.int8), axis=1, out=sub_out) is sub_out
    assert sub_out.tolist() == [1, 0]
    zero_d = labelled(np.float32(2.5))
    assert_same(lambda: np.argmax(zero_d, axis=0, keepdims=True), lambda: dnp.argmax(zero_d, axis=0, keepdims=True))


def test_user_subclasses_with_their_own_argmax_are_refused():
    x = np.arange(6, dtype=np.float32)
    with pytest.raises(TypeError, match=r"test_subclasses.OwnArgmax: it overrides ndarray.argmax.*np.asarray"):
        dnp.argmax(x.view(OwnArgmax))
    assert dnp.argmin(x.view(OwnArgmax)) == 0  # its argmin is ndarray's
    with pytest.raises(TypeError, match=r"OwnFunction: it defines __array_function__"):
        dnp.argmin(x.view(OwnFunction))
    with pytest.raises(TypeError, match=r"out of type .*OwnFunction"):
        dnp.argmin(x, out=np.zeros((), np.intp).view(OwnFunction))
    patched = x.view(Labelled)
    patched.argmax = lambda *a, **k: 0  # an instance's own argmax is what NumPy would call
    with pytest.raises(TypeError, match="Labelled: it overrides ndarray.argmax"):
        dnp.argmax(patched)


# --- objects that are not NumPy arrays ----------------------------------------------------


class HasArgmax:
    """A stand-in for pandas: an .argmax of its own, and __array__."""

    def __array__(self, dtype=None, copy=None):
        return np.array([1, 5, 2], np.float32)

    def argmax(self, axis=None, out=None):
        return "label"


class HasArrayFunction:
    """A stand-in for CuPy or sparse: __array_function__."""

    def __array_function__(self, func, types, args, kwargs):
        return "theirs"


def test_objects_with_semantics_of_their_own_are_refused_by_name():
    with pytest.raises(TypeError, match=r"test_subclasses.HasArgmax: it has an .argmax method .*np.asarray\(x\)"):
        dnp.argmax(HasArgmax())
    assert dnp.argmin(HasArgmax()) == 0  # no argmin of its own: read through __array__, as NumPy does
    with pytest.raises(TypeError, match=r"HasArrayFunction: it defines __array_function__"):
        dnp.argmax(HasArrayFunction())
    da = pytest.importorskip("dask.array")
    with pytest.raises(TypeError, match=r"dask.array.core.Array.*dmlgpu.dask.argmax"):
        dnp.argmax(da.zeros(4, chunks=2, dtype=np.float32))


def test_sequences_scalars_and_buffers_as_numpy_reads_them():
    inputs = [[3, 1, 4], (2.5, 1.5), [1.0, 1 + 2**-40, 1.0], [[True, False], [False, True]], 7, np.float16(3), np.int64(-2),
              range(5), bytearray(b"\x03\x09\x01"), memoryview(np.array([4, 8, 8], np.uint16)),
              array.array("h", [5, -7, 5]), np.array([[1, 9]], np.int32).data]
    for a in inputs:
        for op in ("argmax", "argmin"):
            for kwargs in ({}, {"axis": 0}, {"axis": -1, "keepdims": True}):
                assert_same(*both(op, a, **kwargs)[:2], f"np.{op}({a!r}, {kwargs})")


def test_tensors_still_stay_on_the_gpu(device):
    t = device.upload(np.array([[3, 1], [0, 4]], np.float32))
    got = np.argmin(t, axis=1)
    assert isinstance(got, dmlgpu.Tensor) and np.asarray(got).tolist() == [1, 0]


# --- dmlgpu.dask: masked chunks honoured, other chunk types refused by name ----------------


DASK_TYPES = [t for t in DTYPES if t is not np.bool_]  # dmlgpu.argmax takes no bool; dmlgpu.dask neither


def masked_dask(da, x: np.ndarray, mask: np.ndarray, chunks, how: str):
    """``x`` masked by ``mask`` as a Dask array: through ``dask.array.ma`` (the meta says
    masked), or a ``map_blocks`` that returns ``numpy.ma`` chunks under a plain meta."""
    data, bits = da.from_array(x, chunks=chunks), da.from_array(mask, chunks=chunks)
    if how == "ma":
        return da.ma.masked_array(data, mask=bits)
    return da.map_blocks(lambda b, m: np.ma.array(b, mask=m), data, bits, dtype=x.dtype,
                         meta=np.empty((0,) * x.ndim, x.dtype))


@pytest.mark.parametrize("dtype", DASK_TYPES, ids=lambda d: np.dtype(d).name)
def test_masked_chunks_match_numpys_masked_argmax(da, dtype):
    """Masked chunks, split along the reduced axes (the (key, index) tree) or not (each chunk
    final), against NumPy's masked argmax; NaN propagates as NumPy's does. A case runs one
    operator against NumPy and the other DECREASING against dmlgpu's own function (an operator
    and direction a shader, each a compile): ARGMAX against NumPy in the first four cases, ARGMIN
    in the last four, each meeting every shape, mask style and construction both ways."""
    import dmlgpu.dask as dd

    rng = np.random.default_rng([SEED, 7, np.dtype(dtype).num])
    for case in range(8):
        shape = [(4, 6), (3, 5), (7,)][case % 3]
        x = rng.choice(pool(dtype), size=shape)
        mask = rng.random(shape) < 0.4
        if case % 2:  # an all-masked slice and the extremes masked
            mask[..., 0] = True
            mask |= x == x.max()
        chunks = random_chunks(rng, shape)
        arr = masked_dask(da, x, mask, chunks, ("ma", "map_blocks")[case % 4 // 2])
        m = np.ma.array(x, mask=mask)
        for op in ("argmax", "argmin"):
            axis = [None, 0, len(shape) - 1][int(rng.integers(3))]
            axes = tuple(range(len(shape))) if axis is None else axis
            what = f"dd.{op}(masked {x!r} mask {mask!r}, chunks={chunks}, axes={axes})"
            if op == ("argmax", "argmin")[case // 4]:  # against NumPy's masked argmax
                want = np.asarray(getattr(np, op)(m, axis=axis, keepdims=True))
                value = getattr(dd, op)(arr, axes, nan_mode="propagate", output_data_type="int64").compute()
                assert type(value) is np.ndarray and value.shape == want.shape, what
                np.testing.assert_array_equal(value, want, err_msg=what)
                continue
            # DECREASING (the last of equal extremes), which NumPy lacks: as dmlgpu's own function
            last = getattr(dd, op)(arr, axes, axis_direction="decreasing", nan_mode="propagate").compute()
            np.testing.assert_array_equal(
                last, getattr(dmlgpu, op)(m, axes, axis_direction="decreasing", nan_mode="propagate"), err_msg=what)


def test_hardmax_refuses_masked_chunks(da):
    import dmlgpu.dask as dd

    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    mask = x % 5 == 0
    with pytest.raises(TypeError, match=r"dmlgpu.dask.hardmax cannot take a masked array .*dask.array.ma.filled"):
        dd.hardmax(masked_dask(da, x, mask, 2, "ma"), 1)  # the meta says so: refused as the graph is built
    for chunks, axes in ((2, 1), ((3, 4), 1), (2, (0, 1))):  # the tree and the per-chunk path
        lazy = dd.hardmax(masked_dask(da, x, mask, chunks, "map_blocks"), axes)
        with pytest.raises(TypeError, match=r"^chunk \(\d, \d\) of x, on adapter '.+': dmlgpu.dask.hardmax cannot take "
                                            r"a masked array"):
            lazy.compute()


def test_other_chunk_types_are_refused_by_name(da):
    import dmlgpu.dask as dd

    x = da.from_array(np.arange(12, dtype=np.float32).reshape(3, 4), chunks=2)
    plain_meta = np.empty((0, 0), np.float32)
    with pytest.raises(TypeError, match=r"x's chunks are _support.Duck \(x._meta shows it\), but dmlgpu.dask "
                                        r"reduces NumPy chunks"):
        dd.argmax(x.map_blocks(Duck, meta=Duck(plain_meta)), 0)
    with pytest.raises(TypeError, match=r"x's chunks are test_subclasses.OwnArgmax .*overrides ndarray.argmax"):
        dd.argmin(x.map_blocks(lambda b: b.view(OwnArgmax), meta=plain_meta.view(OwnArgmax)), 0)
    for fn, axes in ((dd.argmax, 0), (dd.argmin, 1), (dd.hardmax, (0, 1)), (dd.hardmax, 1)):
        lazy = fn(x.map_blocks(Duck, meta=plain_meta), axes)  # only computing shows the chunks' type
        with pytest.raises(TypeError, match=r"^chunk \(\d, \d\) of x, on adapter '.+': the chunk is _support.Duck"):
            lazy.compute()
    # a subclass that keeps ndarray's argmax is reduced as its values
    kept = x.map_blocks(lambda b: b.view(Labelled), meta=plain_meta.view(Labelled))
    np.testing.assert_array_equal(dd.argmax(kept, (0, 1)).compute(), [[11]])
