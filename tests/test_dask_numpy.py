"""dmlgpu.dask.numpy held to dask.array and to NumPy on the same inputs.

The randomized test checks 3,000 cases of each function (argmax, argmin, nanargmax,
nanargmin) against both dask.array and NumPy (some hundred more against NumPy alone: a tuple
``axis`` has no dask.array answer), and that each function's cases drew all of these between
them (``WANTED``): every type, 0-d to 3-d arrays with sizes of 0 to 5, chunks of one piece,
single elements, random cuts and empty pieces, chunks of unknown size, ``axis`` None, ints,
tuples (and bad ones, refused when the graph is built), ``keepdims``, ``split_every`` and
``out``; values from small pools (ties, NaN, +-0, +-inf), with all-NaN slices on purpose. Each case is made twice, by dask.array and by
dmlgpu, from the same Dask array: the graph's shape, chunks and dtype, or the exception class
raised when it is built, must be dask.array's; the computed value (value, dtype, shape and
Python type) or the exception class raised at ``compute()`` must be NumPy's where dask.array's
is NumPy's, and dask.array's where dask.array raises by design (a chunk empty along a
reduced axis, a flat index over an unknown shape). dask.array's answer differs from NumPy's
in two known ways, both counted and checked to be exactly those (see ``dask_deviation``); in
them the answer is NumPy's.

To be quick on lavapipe (where Dask's cost per task outweighs the GPU's), each case's graphs
are built once over an array whose values the test refills (``Holder``), and computed round
after round by Dask's synchronous scheduler, 40 cases at a time, both sides together (graphs
not optimized; those expected to raise one by one); the default device keeps every operator
compiled (``many_layouts``). Under CI (``CI=true``) a missing Dask fails the suite rather
than skipping it.
"""

from __future__ import annotations

import inspect
import math
import os
import pickle

import numpy as np
import pytest

if os.environ.get("CI") == "true":
    import dask.array as da  # CI installs the dask extra: never skip there
else:
    da = pytest.importorskip("dask.array", reason="the dask extra is not installed: pip install dmlgpu[dask]")

import dask  # noqa: E402
from dask.local import get_sync  # noqa: E402

import dmlgpu.dask as dd  # noqa: E402
import dmlgpu.dask.numpy as ddn  # noqa: E402
from dmlgpu.axes import AxisError  # noqa: E402

from _support import outcome, over_axes  # noqa: E402

FUNCTIONS = ["argmax", "argmin", "nanargmax", "nanargmin"]
TYPES = ["bool", "float64", "float32", "float16", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64"]
SEED = int(os.environ.get("DMLGPU_TEST_SEED", "28"))
CASES = int(os.environ.get("DMLGPU_DASK_NUMPY_CASES", "400"))  # computed cases of each function, at least (CI: 3000)
TEMPLATES = 110  # graphs of each function, each computed in several rounds with fresh values
BATCH = int(os.environ.get("DMLGPU_DASK_NUMPY_BATCH", "80"))  # graphs a compute
NAN = np.nan


class Holder:
    """An array-like whose values the test replaces between computes (``da.from_array`` reads
    it when computing): the graphs of a case are built once, computed many times."""

    def __init__(self, shape, dtype):
        self.values = np.zeros(shape, dtype)
        self.shape, self.dtype, self.ndim = tuple(shape), np.dtype(dtype), len(shape)

    def __getitem__(self, key):
        return np.array(self.values[key])  # packed copies: operators compiled once per chunk shape


def pool(dtype) -> np.ndarray:
    dt = np.dtype(dtype)
    if dt == np.bool_:
        return np.array([False, True])
    if dt.kind == "f":
        return np.array([-np.inf, -1.5, -0.0, 0.0, 2.0, np.inf, NAN], dt)
    info = np.iinfo(dt)
    return np.array([info.min, info.min + 1, 0, 1, info.max], dt)


def draw_values(rng, dtype, shape) -> np.ndarray:
    """2 or 3 values of the pool (ties); for floats, sometimes a slice or all of it NaN."""
    p = pool(dtype)
    x = rng.choice(rng.choice(p, size=min(len(p), int(rng.integers(2, 4))), replace=False), size=shape)
    if x.dtype.kind == "f" and x.size and rng.integers(8) == 0:
        if x.ndim and rng.integers(2):
            axis = int(rng.integers(x.ndim))
            x[(slice(None),) * axis + (int(rng.integers(x.shape[axis])),)] = NAN
        else:
            x[...] = NAN
    return x


def draw_chunks(rng, n: int) -> tuple:
    style = rng.integers(6)
    if n <= 1 or style < 2:
        chunks = [n]
    elif style == 2:
        chunks = [1] * n
    else:
        cuts = np.sort(rng.choice(np.arange(1, n), size=int(rng.integers(1, n)), replace=False))
        chunks = np.diff(np.concatenate([[0], cuts, [n]])).tolist()
    if rng.integers(30) == 0:  # an empty chunk: dask.array's chunk step fails on it where it reduces
        chunks.insert(int(rng.integers(len(chunks) + 1)), 0)
    return tuple(chunks)


def draw_axis(rng, ndim: int):
    kind = rng.integers(40)
    if kind < 10 or ndim == 0 and kind < 36:
        return None
    if kind < 34:
        return int(rng.integers(-ndim, ndim))
    if kind < 37 and ndim > 1:  # dmlgpu's extension
        axes = rng.choice(ndim, size=int(rng.integers(2, ndim + 1)), replace=False)
        return tuple(int(a) - ndim if rng.integers(2) else int(a) for a in axes)
    return [ndim, -ndim - 1, 1.0, "0", [0], np.array(0)][rng.integers(6)]  # (bools: see test_errors_...)


def draw_template(rng, name: str, number: int) -> dict:
    nan = name.startswith("nan")
    if nan and number >= len(TYPES) and rng.integers(3):  # NaN skipped: mostly floats, once every type is drawn
        dtype = ["float64", "float32", "float16"][rng.integers(3)]
    else:
        dtype = TYPES[number % len(TYPES)]
    ndim = [0, 1, 1, 2, 2, 2, 3, 3][rng.integers(8)]
    shape = [int(rng.integers(1, 6)) for _ in range(ndim)]
    if ndim and rng.integers(25) == 0:
        shape[rng.integers(ndim)] = 0
    chunks = [draw_chunks(rng, n) for n in shape]
    while math.prod(len(c) for c in chunks) > 8:  # few chunks a case: Dask's cost is per task
        widest = max(range(ndim), key=lambda i: len(chunks[i]))
        chunks[widest] = chunks[widest][:1] + (sum(chunks[widest][1:]),)  # two chunks
    chunks = tuple(chunks)
    unknown = (int(rng.integers(ndim)),) if ndim and rng.integers(7) == 0 else ()
    split_every = [None, None, None, 2, 3, 4, "dict"][rng.integers(7)]
    return {"name": name, "dtype": dtype, "shape": tuple(shape), "chunks": chunks, "unknown": unknown,
            "axis": draw_axis(rng, ndim), "keepdims": bool(rng.integers(2)), "split_every": split_every,
            "out": rng.integers(10) == 0}


def build(case: dict) -> None:
    """The Dask array of the case and both graphs (or the exceptions building them raised)."""
    holder = Holder(case["shape"], case["dtype"])
    arr = da.from_array(holder, chunks=case["chunks"], meta=np.empty((0,) * len(case["shape"]), case["dtype"]),
                        name=False)  # a name of its own: every holder's zeros would tokenize alike
    if case["unknown"]:
        arr = da.Array(arr.dask, arr.name, tuple((NAN,) * len(c) if i in case["unknown"] else c
                                                 for i, c in enumerate(arr.chunks)), meta=arr._meta)
    split_every = case["split_every"]
    if split_every == "dict":
        split_every = {a: 3 for a in range(len(case["shape"]))}
    kwargs = {"axis": case["axis"], "keepdims": case["keepdims"], "split_every": split_every}
    theirs = outcome(getattr(da, case["name"]), arr, **kwargs)
    ours_kwargs = dict(kwargs)
    if case["out"] and theirs[0] == "value":
        outs = [da.zeros(theirs[1].shape, dtype=np.intp, chunks=theirs[1].chunks) for _ in range(2)]
        theirs = outcome(getattr(da, case["name"]), arr, **kwargs, out=outs[0])
        ours_kwargs["out"] = outs[1]
    if isinstance(case["axis"], tuple):  # no dask.array answer: dask.array's rules for one axis, NumPy's index
        theirs = None
    case.update(holder=holder, arr=arr, theirs=theirs, ours=outcome(getattr(ddn, case["name"]), arr, **ours_kwargs),
                ours_out=ours_kwargs.get("out"))
    for side in ("ours", "theirs"):
        if case[side] and case[side][0] == "value":
            case[f"{side}_compiled"] = compiled(case[side][1])


def same_chunks(a, b) -> bool:
    return len(a) == len(b) and all(len(x) == len(y) and all(p == q or math.isnan(p) and math.isnan(q)
                                                              for p, q in zip(x, y)) for x, y in zip(a, b))


def check_graph(case: dict) -> None:
    """dmlgpu's graph is dask.array's: the same shape, chunks and dtype, or the same exception."""
    ours, theirs = case["ours"], case["theirs"]
    what = describe(case)
    if theirs is None:
        if ours[0] == "raises":
            assert isinstance(ours[1], (TypeError, ValueError, AxisError)), f"{what}: {ours[1]!r}"
        return
    assert ours[0] == theirs[0], f"{what}: dask.array {theirs}, dmlgpu {ours}"
    if ours[0] == "raises":
        assert type(ours[1]) is type(theirs[1]), f"{what}: dask.array raises {theirs[1]!r}, dmlgpu {ours[1]!r}"
        if "unknown chunksizes" in str(theirs[1]):
            assert str(ours[1]) == str(theirs[1]), what
        return
    o, t = ours[1], theirs[1]
    assert same_chunks(o.chunks, t.chunks) and o.dtype == t.dtype and o.ndim == t.ndim, f"{what}: {o!r} / {t!r}"
    assert type(o._meta) is type(t._meta) and o._meta.dtype == t._meta.dtype, what
    if case["ours_out"] is not None:
        assert o is case["ours_out"], what


def describe(case: dict) -> str:
    keys = ("name", "dtype", "shape", "chunks", "unknown", "axis", "keepdims", "split_every", "out")
    values = case["holder"].values if "holder" in case else None
    return " ".join(f"{k}={case[k]!r}" for k in keys) + f" values={values!r}"


def numpy_reference(case: dict, x: np.ndarray):
    """What dmlgpu must give: dask.array's compute-time errors where its chunk step fails by
    design, else NumPy's answer (a tuple axis as NumPy's over those axes flattened)."""
    name, axis, ndim = case["name"], case["axis"], x.ndim
    flat = axis is None or ndim == 1
    spans = range(ndim) if flat else [a % ndim for a in (axis if isinstance(axis, tuple) else (axis,))]
    if any(0 in case["chunks"][a] for a in spans):
        return "raises", ValueError("a chunk empty along a reduced axis")
    if flat and case["unknown"]:
        return "raises", TypeError("a flat index over an unknown shape")
    if ndim == 0:
        return outcome(lambda: np.intp(0) if not (name.startswith("nan") and np.isnan(x)) else getattr(np, name)(x))
    if not isinstance(axis, tuple):
        return outcome(getattr(np, name), x, axis=axis, keepdims=case["keepdims"])
    return outcome(over_axes, getattr(np, name), x, axis, case["keepdims"])


def same_value(got, want) -> bool:
    return (type(got) is type(want) and got.dtype == want.dtype and np.shape(got) == np.shape(want)
            and np.array_equal(got, want))


def dask_deviation(case: dict, x: np.ndarray, numpy_answer, dask_answer) -> str | None:
    """The two known ways in which dask.array's answer is not NumPy's, or None:

    - "flat ties": ``axis=None`` over 2 or more dimensions split into chunks: dask.array's merge
      takes the first of equal candidates in chunk order, not in the flattened array's order,
      so it may point at another element of the same value (NaN counts as equal to NaN);
    - "nan first chunk": ``nanargmax`` / ``nanargmin``, where a slice's first chunk is all NaN
      and the rest -inf (+inf) and NaN: dask.array's merge keeps that chunk's NaN and raises
      "All NaN slice encountered" at compute, where NumPy gives 0."""
    if numpy_answer[0] != "value":
        return None
    if dask_answer[0] == "value" and case["axis"] is None and x.ndim >= 2:
        a, b = (x.ravel()[int(np.ravel(answer[1])[0])] for answer in (numpy_answer, dask_answer))
        if a == b or (x.dtype.kind == "f" and np.isnan(a) and np.isnan(b)):
            return "flat ties"
    if (dask_answer[0] == "raises" and str(dask_answer[1]) == "All NaN slice encountered"
            and case["name"].startswith("nan") and np.isnan(x).any() and np.isinf(x).any()):
        return "nan first chunk"
    return None


def compiled(lazy) -> tuple:
    """What computing ``lazy`` takes, made once: its graph as a dict, its keys, its finalizer."""
    return dict(lazy.__dask_graph__()), lazy.__dask_keys__(), lazy.__dask_postcompute__()


def compute_all(items: list, batch: int = 80) -> list:
    """The outcome of computing each of ``items`` (``compiled``): ``batch`` at a time by
    Dask's synchronous scheduler (``dask.local.get_sync``, as ``compute(scheduler="sync")``
    runs it, without rebuilding the graphs every round), one by one where a batch raises."""
    results = []
    for first in range(0, len(items), batch):
        part = items[first:first + batch]
        merged = {}
        for graph, _, _ in part:
            merged.update(graph)
        together = outcome(get_sync, merged, [keys for _, keys, _ in part])
        if together[0] == "value":
            results += [("value", finish(chunks, *args)) for (_, _, (finish, args)), chunks in zip(part, together[1])]
        else:
            results += [outcome(lambda i: i[2][0](get_sync(i[0], i[1]), *i[2][1]), item) for item in part]
    return results


# Long: one round of the randomized test, its bookkeeping in one place (refill, references,
# both computes, the comparison and the tally)
def run_round(cases: list, rng, tally: dict) -> None:
    for case in cases:
        case["holder"].values = draw_values(rng, case["dtype"], case["shape"])
        case["want"] = numpy_reference(case, case["holder"].values)
        x = case["holder"].values
        risky = x.dtype.kind == "f" and np.isnan(x).any() and np.isinf(x).any() and case["name"].startswith("nan")
        case["alone"] = {"ours": case["want"][0] == "raises"}  # computed one by one: expected to raise
        case["alone"]["theirs"] = bool(case["alone"]["ours"] or risky)  # (or might: dask.array's "nan first chunk")
    for alone in (False, True):  # both sides of a case in one batch: they share the input's tasks
        chosen = [(c, side) for c in cases for side in ("ours", "theirs")
                  if c["alone"][side] is alone and c[side] and c[side][0] == "value"]
        for (c, side), got in zip(chosen, compute_all([c[f"{side}_compiled"] for c, side in chosen], 1 if alone else BATCH)):
            c[f"{side}_computed"] = got
    for case in cases:
        if case["ours"][0] != "value":
            continue
        got, want = case["ours_computed"], case["want"]
        if got[0] != want[0] or (type(got[1]) is not type(want[1]) if want[0] == "raises"
                                 else not same_value(got[1], want[1])):
            raise AssertionError(f"{describe(case)}: expected {want}, dmlgpu {got}")
        tally[case["name"]] += 1
        if case["theirs"] is None:
            continue
        tally[f"{case['name']} vs dask.array"] += 1
        theirs = case["theirs_computed"]
        if theirs[0] == got[0] and (got[0] == "raises" and type(got[1]) is type(theirs[1])
                                    or got[0] == "value" and same_value(got[1], theirs[1])):
            continue
        deviation = dask_deviation(case, case["holder"].values, want, theirs)
        assert deviation, f"{describe(case)}: dask.array {theirs}, dmlgpu {got}, NumPy {want}"
        tally[deviation] += 1


def features(case: dict) -> set[str]:
    """What a computed case exercised, for the test to show that each target was drawn."""
    x, chunks, want = case["holder"].values, case["chunks"], case["want"]
    axis = case["axis"]
    got = {f"type {case['dtype']}", f"split_every {case['split_every']}", f"keepdims {case['keepdims']}",
           "axis " + ("tuple" if isinstance(axis, tuple) else "None" if axis is None else "int")}
    got |= {label for label, there in [
        ("0-d", x.ndim == 0), ("size-0 axis", 0 in x.shape), ("out", case["ours_out"] is not None),
        ("uneven chunks", any(len(set(c)) > 1 for c in chunks)), ("empty chunk", any(0 in c for c in chunks)),
        ("unknown chunks", bool(case["unknown"])), ("ties", x.size > np.unique(x).size),
        ("raises at compute", want[0] == "raises"),
        ("All-NaN slice", want[0] == "raises" and str(want[1]) == "All-NaN slice encountered")] if there}
    if x.dtype.kind == "f":
        got |= {label for label, there in [("NaN", np.isnan(x).any()), ("+inf", (x == np.inf).any()),
                                           ("-inf", (x == -np.inf).any()), ("-0.0", (np.signbit(x) & (x == 0)).any())]
                if there}
    return got


#: What each function's computed cases must have exercised between them.
WANTED = ({f"type {t}" for t in TYPES} | {f"split_every {s}" for s in (None, 2, 3, 4, "dict")}
          | {"keepdims False", "keepdims True", "axis None", "axis int", "axis tuple", "0-d", "size-0 axis", "out",
             "uneven chunks", "empty chunk", "unknown chunks", "ties", "raises at compute", "NaN", "+inf", "-inf",
             "-0.0"})


@pytest.mark.usefixtures("many_layouts")
def test_equals_dask_array_and_numpy_on_random_cases():
    rng = np.random.default_rng([SEED, 28])
    tally = {name: 0 for name in FUNCTIONS} | {f"{name} vs dask.array": 0 for name in FUNCTIONS}
    tally |= {"graph errors": 0, "flat ties": 0, "nan first chunk": 0}
    covered: dict[str, set[str]] = {name: set() for name in FUNCTIONS}
    cases = []
    for name in FUNCTIONS:
        for number in range(TEMPLATES):
            case = draw_template(rng, name, number)
            build(case)
            check_graph(case)
            if case["ours"][0] == "raises":
                tally["graph errors"] += 1
            else:
                cases.append(case)
    while min(tally[f"{name} vs dask.array"] for name in FUNCTIONS) < CASES:  # (and so against NumPy)
        chosen = [c for c in cases if tally[f"{c['name']} vs dask.array"] < CASES]
        run_round(chosen, rng, tally)
        for case in chosen:
            covered[case["name"]] |= features(case)
    for name in FUNCTIONS:
        wanted = WANTED | ({"All-NaN slice"} if name.startswith("nan") else set())
        assert wanted <= covered[name], f"{name}: never drawn: {sorted(wanted - covered[name])}"
    assert tally["graph errors"] > 20, tally  # bad axes, unknown chunks along a reduced axis: drawn
    assert tally["flat ties"] + tally["nan first chunk"] < CASES // 5, tally
    print(tally)


# --- what dask.array does at the edges ----------------------------------------------------


def test_signatures_are_dask_arrays():
    for name in FUNCTIONS:
        ours = inspect.signature(getattr(ddn, name)).parameters
        theirs = inspect.signature(getattr(da, name)).parameters
        assert [(p.name, p.kind, p.default) for p in ours.values()] == \
            [(p.name, p.kind, p.default) for p in theirs.values()]


def test_the_graph_is_dmlgpu_dasks():
    """The same tasks as dmlgpu.dask.argmax on the same array: per-chunk partials and Dask's
    tree where a chunk splits a reduced axis, one map_blocks where none does."""
    x = da.from_array(np.random.default_rng(1).random((12, 10, 6)).astype(np.float32), chunks=(3, 5, 6))
    for axis in (0, 1, 2, (0, 2), None):
        axes = tuple(range(3)) if axis is None else axis
        for split_every in (None, 2, 3):
            for keepdims in (False, True):
                for name, mode in (("argmax", "propagate"), ("nanargmin", "ignore")):
                    ours = getattr(ddn, name)(x, axis, keepdims=keepdims, split_every=split_every)
                    theirs = getattr(dd, name.removeprefix("nan"))(x, axes, split_every=split_every, nan_mode=mode)
                    assert len(ours.__dask_graph__()) == len(theirs.__dask_graph__()), (name, axis, split_every)
                    assert ours.numblocks == tuple(n for i, n in enumerate(theirs.numblocks)
                                                   if keepdims or i not in (axes if isinstance(axes, tuple) else (axes,)))


def test_errors_when_the_graph_is_built():
    x = da.from_array(np.arange(12, dtype=np.float32).reshape(3, 4), chunks=2)
    with pytest.raises(AxisError, match="Axis 2 is out of bounds for array of dimension 2"):
        ddn.argmax(x, 2)
    with pytest.raises(AxisError):
        ddn.nanargmin(da.from_array(np.float32(1)), 0)
    with pytest.raises(TypeError, match="axis must be either `None` or int, got '1.0'"):
        ddn.argmin(x, 1.0)
    with pytest.raises(TypeError, match=r"an integer is required"):  # dask.array: when built or when computed
        ddn.argmax(x, True)
    with pytest.raises(AxisError):  # dask.array reads True as 1 for the range check
        ddn.argmax(da.zeros(3, chunks=2, dtype=np.int8), True)
    unknown = x[x[:, 0] > 3]
    with pytest.raises(ValueError) as theirs:
        da.argmax(unknown, 0)
    with pytest.raises(ValueError) as ours:
        ddn.argmax(unknown, 0)
    assert str(ours.value) == str(theirs.value) == ddn.UNKNOWN_CHUNKS
    assert ddn.argmax(unknown, 1).compute().tolist() == da.argmax(unknown, 1).compute().tolist() == [3, 3]
    with pytest.raises(NotImplementedError, match="expected Dask Array"):
        ddn.argmax(x, 0, out=np.zeros(4))
    with pytest.raises(ValueError, match="Mismatched shapes"):
        ddn.argmax(x, 0, out=da.zeros(3, chunks=3))
    with pytest.raises(ValueError, match="split_every must be a int or a dict"):
        ddn.argmax(x, 0, split_every="2")
    with pytest.raises(TypeError, match=r"cannot take complex128 input.*float64; it never falls back to the CPU"):
        ddn.argmax(x.astype(np.complex128), 0)
    with pytest.raises(TypeError, match="takes a dask.array.Array, not ndarray"):
        ddn.argmax(np.zeros(3, np.float32))


def test_errors_when_computed_are_dask_arrays():
    x = np.arange(10, dtype=np.float32).reshape(2, 5)
    empty_piece = da.from_array(x, chunks=(2, (2, 0, 3)))
    for name in FUNCTIONS:
        for axis in (None, 1):
            for fn in (getattr(da, name), getattr(ddn, name)):
                with pytest.raises(ValueError, match="zero-size array"):
                    fn(empty_piece, axis).compute()
        assert ddn.argmax(empty_piece, 0).compute().tolist() == [1, 1, 1, 1, 1]  # not reduced there: taken
    one_piece = da.from_array(np.array([3, 9, 1, 9], np.int16), chunks=4)
    unknown = one_piece[one_piece > 2]  # one chunk of unknown size: a flat index over it fails in dask.array
    for fn in (da.argmax, ddn.argmax):
        with pytest.raises(TypeError):
            fn(unknown).compute()
    nans = da.from_array(np.array([[NAN, 1.0], [NAN, NAN]], np.float32), chunks=1)
    with pytest.raises(ValueError, match="All-NaN slice encountered"):
        ddn.nanargmax(nans, 1).compute()
    assert ddn.nanargmin(nans).compute() == np.nanargmin(nans.compute()) == 1


def test_zero_d_bool_and_size_zero_as_dask_array():
    for value in (np.float32(3), np.float16(NAN), np.bool_(True), np.uint64(7)):
        x = da.from_array(value)
        for name in FUNCTIONS:
            theirs, ours = outcome(getattr(da, name)(x).compute), outcome(getattr(ddn, name)(x).compute)
            assert ours[0] == theirs[0] and type(ours[1]) is type(theirs[1]), (name, value, ours, theirs)
    odd = np.frombuffer(bytes([0, 5, 1, 7, 0, 9, 3, 0]), np.bool_).reshape(2, 4)  # nonzero bytes are True
    for chunks in ((1, 2), (2, 4), (2, 1)):
        for axis in (None, 0, 1):
            for name in ("argmax", "argmin"):
                got = getattr(ddn, name)(da.from_array(odd, chunks=chunks), axis).compute()
                assert np.array_equal(got, getattr(np, name)(odd, axis=axis)), (name, chunks, axis)
    for shape, axis in (((0, 3), 1), ((3, 0), 0), ((2, 0, 3), 2)):
        x = da.zeros(shape, dtype=np.int8, chunks=2)
        for name in FUNCTIONS:
            ours, theirs = getattr(ddn, name)(x, axis), getattr(da, name)(x, axis)
            assert ours.chunks == theirs.chunks and ours.compute().shape == theirs.compute().shape


def test_masked_chunks_as_dask_array():
    rng = np.random.default_rng(3)
    for _ in range(12):
        x = rng.choice(np.array([-np.inf, -1, 0, 2, NAN], np.float32), size=(4, 5))
        m = da.ma.masked_array(da.from_array(x, chunks=(2, 3)), mask=da.from_array(rng.random((4, 5)) < 0.4, chunks=(2, 3)))
        for name in ("argmax", "argmin"):
            for axis in (None, 0, 1):
                theirs = getattr(da, name)(m, axis).compute()
                ours = getattr(ddn, name)(m, axis).compute()
                assert same_value(ours, theirs) or axis is None, (name, axis, ours, theirs)
                assert same_value(ours, getattr(np, name)(m.compute(), axis=axis)), (name, axis)
    with pytest.raises(TypeError, match="cannot take masked chunks"):
        ddn.nanargmax(m, 0)


def test_more_dimensions_than_a_tensor_has():
    x = np.random.default_rng(5).integers(0, 3, (2, 1, 2, 1, 2, 1, 1, 2, 1, 2)).astype(np.int8)
    arr = da.from_array(x, chunks=(1,) + (2,) * 9)
    for axis in (None, 0, 9, -3):
        for name in ("argmax", "nanargmin"):
            assert same_value(getattr(ddn, name)(arr, axis).compute(), getattr(np, name)(x, axis=axis)), (name, axis)


def test_threads_and_pickling():
    rng = np.random.default_rng(8)
    x = rng.choice(np.array([NAN, 1, 2, -np.inf], np.float32), size=(64, 48))
    x[:, 0] = 1.0
    arr = da.from_array(x, chunks=(8, 6))
    with dask.config.set(scheduler="threads", num_workers=4):
        for axis in (0, 1, None):
            assert same_value(ddn.nanargmax(arr, axis).compute(), np.nanargmax(x, axis=axis))
            assert same_value(ddn.argmin(arr, axis).compute(), np.argmin(x, axis=axis))
    graph = ddn.nanargmin(arr, 1, keepdims=True).__dask_graph__()
    assert pickle.loads(pickle.dumps(dict(graph)))  # the rules travel to distributed workers
