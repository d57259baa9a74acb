"""The GPU held to the NumPy oracle, bit for bit.

Values come from small pools so that ties happen on purpose, and the pools hold each
type's special values (NaN, +-0.0, +-inf, subnormals, integer extremes, 64-bit values
that differ only below bit 53's reach of a double).
"""

from __future__ import annotations

import itertools
import re
import zlib

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dmlgpu
from dmlgpu import layout, oracle
from dmlgpu.desc import (
    ActivationHardmax1OperatorDesc,
    ActivationHardmaxOperatorDesc,
    ArgMaxOperatorDesc,
    ArgMinOperatorDesc,
    ReduceOperatorDesc,
    TensorDesc,
    operator_for,
)
from dmlgpu.types import DEFAULT_FEATURE_LEVEL, DataType, FeatureLevel
from dmlgpu.bench.gpu_timers import operator_gpu_times

from _support import fixture_index

FLOATS = (DataType.FLOAT32, DataType.FLOAT16, DataType.FLOAT64)
INDEX_TYPES = ("uint32", "int32", "uint64", "int64")
LAYOUTS = ("packed", "permuted", "padded", "broadcast")
NAN_MODES = ("ignore", "propagate")
SMALL_TYPES = [t for t in DataType if t.size <= 4]


def half_the_calls(data_type: DataType, key: int, hardmax: bool = True) -> list[tuple[str, dict]]:
    """A covering design for the tests that run many tunings or paths over every type: each
    case runs half of the (op, direction) pairs, ARGMAX and ARGMIN in opposite directions (so
    each case meets both ops and both directions), and its neighbour by ``key`` the other half;
    output types and (floats) NaN modes rotate along ``key`` (one 32- and one 64-bit output a
    case, both NaN modes a float case), and HARDMAX1 joins every float case (``hardmax``).
    Each call is a distinct shader, so a case costs 2 or 3 texts instead of 4 to 10, while any
    eight consecutive keys meet every (op, direction, output type, NaN mode) pair."""
    directions = ("increasing", "decreasing")[:: 1 if key % 2 == 0 else -1]
    calls = []
    for j, (op, direction) in enumerate(zip(("argmax", "argmin"), directions)):
        kwargs = {"axis_direction": direction, "output_data_type": INDEX_TYPES[(key + key // 2 + 2 * j) % 4]}
        if data_type.is_float:
            kwargs["nan_mode"] = NAN_MODES[(key // 2 + j) % 2]
        calls.append((op, kwargs))
    if hardmax and data_type.is_float:
        calls.append(("hardmax", {"nan_mode": NAN_MODES[(key // 2 + key // 4) % 2]}))
    return calls


def one_call(data_type: DataType, key: int) -> list[tuple[str, dict]]:
    """One call of ``half_the_calls``: keys 2m and 2m + 1 make the two of ``half_the_calls(m)``,
    so that any four consecutive keys meet every (op, direction) pair."""
    return [half_the_calls(data_type, key // 2, hardmax=False)[key % 2]]


def plan_of(device, op: str, x: np.ndarray, axes, kwargs: dict):
    """The plan of the NumPy-level call ``op(x, axes, **kwargs)`` (compiling no other WGSL)."""
    direction = kwargs.get("axis_direction", "increasing").upper()
    out_type = kwargs.get("output_data_type", "uint32").upper()
    desc = operator_for(op, layout.describe(x)[0], tuple(axes), direction, out_type)
    return device.compile(desc, nan_mode=kwargs.get("nan_mode", "ignore")).plan


def value_pool(data_type: DataType) -> np.ndarray:
    """Few distinct values, the type's special ones among them."""
    dtype = data_type.numpy
    if data_type.is_float:
        tiny = np.finfo(dtype).smallest_subnormal
        return np.array([-2, -1, -0.0, 0.0, 1, 2, np.inf, -np.inf, np.nan, tiny, -tiny], dtype)
    info = np.iinfo(dtype)
    pool = [info.min, info.min + 1, 0, 1, info.max - 1, info.max]
    if data_type.size == 8:  # equal as doubles, different as integers
        pool += [2**60, 2**60 + 1] + ([-(2**60), -(2**60) - 1] if info.min < 0 else [])
    return np.array(pool, dtype)


def tie_values(data_type: DataType, shape, rng: np.random.Generator, pool_size: int = 4) -> np.ndarray:
    """Values drawn from a few of the pool's entries, so slices tie often."""
    pool = rng.choice(value_pool(data_type), size=pool_size, replace=False)
    return rng.choice(pool, size=shape)


def in_layout(x: np.ndarray, kind: str, rng: np.random.Generator) -> np.ndarray:
    """A view with logical value ``x`` (or its broadcast) whose memory layout is ``kind``."""
    if kind == "packed":
        return x
    if kind == "permuted":
        perm = rng.permutation(x.ndim)
        base = np.ascontiguousarray(x.transpose(perm))
        return base.transpose(np.argsort(perm))
    if kind == "padded":
        big = np.zeros([n + 2 for n in x.shape], x.dtype)
        region = tuple(slice(1, n + 1) for n in x.shape)
        big[region] = x
        return big[region]
    if kind == "broadcast":
        axis = int(np.argmax(x.shape))
        return np.broadcast_to(x.take([0], axis=axis), x.shape)
    raise ValueError(kind)


def run_both(op: str, x: np.ndarray, axes, device, **kwargs):
    """The GPU's answer and the oracle's, for the NumPy-level call ``op``."""
    got = getattr(dmlgpu, op)(x, axes, device=device, **kwargs)
    want = getattr(oracle, op)(np.ascontiguousarray(x), axes, **kwargs)
    return got, want


def assert_same(got: np.ndarray, want: np.ndarray) -> None:
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got.view(f"u{got.itemsize}"), want.view(f"u{want.itemsize}"))


# --- docs/semantics.md#worked-examples, exactly ------------------------------------------

GRID = np.array([[1, 2, 3], [3, 0, 4], [2, 5, 2]], np.float32)
CUBE = np.array([[[12, 0], [-101, 11]], [[3, 234], [0, -101]]], np.float32)


@pytest.mark.parametrize(
    "op, x, axes, expected",
    [
        ("argmax", GRID, (0,), [[1, 2, 1]]),
        ("argmax", GRID, (1,), [[2], [2], [1]]),
        ("argmax", GRID, (0, 1), [[7]]),
        ("argmin", GRID, (0,), [[0, 1, 2]]),
        ("argmin", GRID, (1,), [[0], [1], [0]]),
        ("argmin", GRID, (0, 1), [[4]]),
        ("hardmax", CUBE, (1,), [[[1, 0], [0, 1]], [[1, 1], [0, 0]]]),
        ("hardmax", CUBE, (0,), [[[1, 0], [0, 1]], [[0, 1], [1, 0]]]),
        ("hardmax", CUBE, (0, 2), [[[0, 0], [0, 1]], [[0, 1], [0, 0]]]),
    ],
)
def test_spec_examples(device, op, x, axes, expected):
    got = getattr(dmlgpu, op)(x, axes, device=device)
    assert got.tolist() == expected
    assert got.dtype == (np.float32 if op == "hardmax" else np.uint32)


@pytest.mark.parametrize(
    "op, values, increasing, decreasing",
    [("argmax", [3, 2, 1, 2, 3], 0, 4), ("argmin", [1, 2, 3, 2, 1], 0, 4)],
)
def test_spec_ties(device, op, values, increasing, decreasing):
    x = np.array(values, np.float32)
    assert getattr(dmlgpu, op)(x, 0, device=device).tolist() == [increasing]
    assert getattr(dmlgpu, op)(x, 0, axis_direction="decreasing", device=device).tolist() == [decreasing]


# --- the matrix: types x ranks 1-8 x axis sets x directions x output types x layouts x NaN modes


def matrix_cases():
    """Two cases per (type, rank), cycling through every option so each is met often."""
    rng = np.random.default_rng(20261122)
    cycle = itertools.cycle(itertools.product(("increasing", "decreasing"), INDEX_TYPES, LAYOUTS))
    for data_type, rank, repeat in itertools.product(DataType, range(1, 9), range(2)):
        direction, out_type, layout = next(cycle)
        limit = max(2, int(700 ** (1 / rank)))
        shape = tuple(int(n) for n in rng.integers(1, limit + 1, size=rank))
        count = int(rng.integers(1, rank + 1))
        axes = tuple(sorted(int(a) for a in rng.choice(rank, size=count, replace=False)))
        ops = ["argmax", "argmin"] + (["hardmax"] if data_type.is_float else [])
        op = ops[(rank + repeat) % len(ops)]
        nan_mode = ("ignore", "propagate")[(rank + repeat) % 2]
        seed = int(rng.integers(2**31))
        yield pytest.param(
            data_type, shape, axes, op, direction, out_type, layout, nan_mode, seed,
            id=f"{data_type.name}-{op}-{shape}-ax{axes}-{direction[:3]}-{out_type}-{layout}-{nan_mode}",
        )


@pytest.mark.parametrize(
    "data_type, shape, axes, op, direction, out_type, layout, nan_mode, seed", list(matrix_cases())
)
def test_matrix(device, device_words, cpu_device, data_type, shape, axes, op, direction, out_type, layout, nan_mode,
                seed):
    """Every other case plans as for a CPU adapter (tuning.SOFTWARE_TUNING); of the others,
    64-bit inputs take the two key paths in turn (native u64 and two 32-bit words)."""
    if seed % 2:
        device = cpu_device
    elif data_type.size == 8 and seed // 2 % 2:
        device = device_words
    rng = np.random.default_rng(seed)
    x = in_layout(tie_values(data_type, shape, rng), layout, rng)
    kwargs = {"nan_mode": nan_mode}
    if op != "hardmax":
        kwargs.update(axis_direction=direction, output_data_type=out_type)
    assert_same(*run_both(op, x, axes, device, **kwargs))


@settings(max_examples=40, deadline=None)
@given(
    data_type=st.sampled_from(list(DataType)),
    shape=st.lists(st.integers(1, 6), min_size=1, max_size=5),
    data=st.data(),
)
def test_random_shapes(device, cpu_device, data_type, shape, data):
    device = data.draw(st.sampled_from([device, cpu_device]), label="device")
    axes = data.draw(st.sets(st.integers(0, len(shape) - 1), min_size=1), label="axes")
    op = data.draw(st.sampled_from(["argmax", "argmin"]), label="op")
    direction = data.draw(st.sampled_from(["increasing", "decreasing"]), label="direction")
    seed = data.draw(st.integers(0, 2**31), label="seed")
    x = tie_values(data_type, tuple(shape), np.random.default_rng(seed), pool_size=3)
    assert_same(*run_both(op, x, tuple(axes), device, axis_direction=direction))


# --- special values, one slice per case, every op and direction -----------------------


def nan_rows(data_type: DataType) -> np.ndarray:
    """A NaN at every position of a row, an all-NaN row and a NaN-free row."""
    n = 7
    base = np.array([1, -3, 2, 2, -3, 0, 1], data_type.numpy)
    rows = np.tile(base, (n + 2, 1))
    rows[np.arange(n), np.arange(n)] = np.nan
    rows[n] = np.nan
    return rows


@pytest.mark.parametrize("data_type", FLOATS, ids=lambda t: t.name)
@pytest.mark.parametrize("nan_mode", ["ignore", "propagate"])
@pytest.mark.parametrize("direction", ["increasing", "decreasing"])
def test_nan_everywhere(device, data_type, nan_mode, direction):
    """ARGMAX or ARGMIN, alternating over (type, NaN mode, direction), so that each type
    meets both ops in each NaN mode and in each direction; HARDMAX1 in each NaN mode."""
    rows = nan_rows(data_type)
    op = ("argmax", "argmin")[(FLOATS.index(data_type) + NAN_MODES.index(nan_mode) + (direction == "decreasing")) % 2]
    assert_same(*run_both(op, rows, 1, device, nan_mode=nan_mode, axis_direction=direction))
    assert_same(*run_both("hardmax", rows, 1, device, nan_mode=nan_mode))


def test_nan_decisions(device):
    """docs/semantics.md#index-ties-floats-nan-integers in words, independent of the oracle."""
    x = np.array([np.nan, 1, np.nan, 1], np.float32)
    assert dmlgpu.argmax(x, 0, device=device)[0] == 1
    assert dmlgpu.argmin(x, 0, axis_direction="decreasing", device=device)[0] == 3
    assert dmlgpu.argmax(x, 0, nan_mode="propagate", device=device)[0] == 0
    assert dmlgpu.argmin(x, 0, nan_mode="propagate", axis_direction="decreasing", device=device)[0] == 2
    all_nan = np.full(5, np.nan, np.float16)
    assert dmlgpu.argmax(all_nan, 0, device=device)[0] == 0
    assert dmlgpu.argmax(all_nan, 0, axis_direction="decreasing", device=device)[0] == 4


@pytest.mark.parametrize("data_type", FLOATS, ids=lambda t: t.name)
def test_signed_zero_infinity_subnormal(device, data_type):
    dtype = data_type.numpy
    tiny = np.finfo(dtype).smallest_subnormal
    cases = [  # (values, argmax increasing, argmax decreasing, argmin increasing)
        ([-0.0, 0.0, -0.0], 0, 2, 0),
        ([0.0, tiny, -tiny], 1, 1, 2),
        ([-np.inf, np.inf, -np.inf, np.inf], 1, 3, 0),
        ([-0.0, -tiny, 0.0], 0, 2, 1),
]
    for values, first_max, last_max, first_min in cases:
        x = np.array(values, dtype)
        assert dmlgpu.argmax(x, 0, device=device)[0] == first_max, values
        assert dmlgpu.argmax(x, 0, axis_direction="decreasing", device=device)[0] == last_max, values
        assert dmlgpu.argmin(x, 0, device=device)[0] == first_min, values


@pytest.mark.parametrize("data_type", [t for t in DataType if not t.is_float], ids=lambda t: t.name)
def test_integer_extremes(request, any_device, data_type):
    """Each (op, direction) pair; a 64-bit type two of them on each key path (both ops, both
    directions), the other two on the other (the narrower types' shaders are the same on
    both)."""
    info = np.iinfo(data_type.numpy)
    x = np.array([1, info.max, info.min, info.max, info.min, 1], data_type.numpy)
    checks = [("argmax", "increasing", 1), ("argmax", "decreasing", 3), ("argmin", "increasing", 2),
              ("argmin", "decreasing", 4)]
    if data_type.size == 8:
        path = fixture_index(request, "any_device")
        checks = [checks[path], checks[3 - path]]
    for op, direction, want in checks:
        assert getattr(dmlgpu, op)(x, 0, axis_direction=direction, device=any_device)[0] == want


QUAD_LENGTHS = [8, 70, 300, 5000]


@pytest.mark.parametrize("n", QUAD_LENGTHS)
@pytest.mark.parametrize("data_type", [t for t in DataType if t.size <= 4], ids=lambda t: t.name)
def test_quads_that_only_tie(device, data_type, n):
    """Rows read as 16-byte quads, whose elements only tie with the best so far: -0.0
    after +0.0, and a type's far extreme for the other operator (the key a thread's walk
    starts from), with ragged tails and splits. Each (type, length) runs one (op, direction)
    pair (``one_call``, keyed by 3 x type + length): each type meets all four over its
    lengths, and each length all four over the types."""
    dtype = data_type.numpy
    rows = []
    if data_type.is_float:
        half = np.where(np.arange(n) < n // 2, 0.0, -0.0).astype(dtype)
        rows += [half, -half, np.full(n, -0.0, dtype)]
    else:
        info = np.iinfo(dtype)
        rows += [np.full(n, info.max, dtype), np.full(n, info.min, dtype)]
    calls = one_call(data_type, 3 * SMALL_TYPES.index(data_type) + QUAD_LENGTHS.index(n))
    for row in rows:  # one row at a time: quads from its start, its tail ragged
        for op, kwargs in calls:
            assert_same(*run_both(op, row, 0, device, **kwargs))


@pytest.mark.parametrize("data_type", [DataType.INT64, DataType.UINT64], ids=lambda t: t.name)
def test_64_bit_beyond_double_precision(any_device, data_type):
    big = 2**60
    x = np.array([big, big + 1, big, big + 1, 3], data_type.numpy)
    assert float(x[0]) == float(x[1])  # a float comparison could not tell them apart
    assert dmlgpu.argmax(x, 0, device=any_device)[0] == 1
    assert dmlgpu.argmax(x, 0, axis_direction="decreasing", device=any_device)[0] == 3
    assert dmlgpu.argmin(x[:4], 0, device=any_device)[0] == 0
    if data_type is DataType.INT64:
        y = np.array([-big, -big - 1, 5, -big - 1], np.int64)
        assert dmlgpu.argmin(y, 0, axis_direction="decreasing", device=any_device)[0] == 3


def test_int64_paths_are_the_ones_asked_for(device, device_words):
    desc = ArgMaxOperatorDesc(TensorDesc("INT64", [4]), axes=[0])
    assert device_words.compile(desc).plan.int64 is False
    assert "vec2<u32>" in device_words.compile(desc).sources[0]
    if "shader-int64" in device.runner.adapter.features:
        assert device.compile(desc).plan.int64 is True
        assert "u64" in device.compile(desc).sources[0]


# --- reductions longer than a workgroup's stride, ties straddling it ------------------


@pytest.mark.parametrize("n", [255, 256, 257, 1000, 5000])
@pytest.mark.parametrize("layout", ["row", "column"])
def test_long_reductions(device, n, layout):
    winners = [p for p in (3, 255, 256, 511, n - 1) if p < n]
    row = np.zeros(n, np.float32)
    row[winners] = 7.0
    x = row[:, None] if layout == "column" else row[None, :]
    axis = 0 if layout == "column" else 1
    assert dmlgpu.argmax(x, axis, device=device).item() == winners[0]
    assert dmlgpu.argmax(x, axis, axis_direction="decreasing", device=device).item() == winners[-1]
    flat = np.zeros(n, np.float32)
    assert dmlgpu.argmin(flat, 0, device=device).item() == 0
    assert dmlgpu.argmin(flat, 0, axis_direction="decreasing", device=device).item() == n - 1


def test_long_multi_axis(device):
    rng = np.random.default_rng(5)
    x = tie_values(DataType.INT16, (3, 300, 2, 5), rng, pool_size=2)
    for direction in ("increasing", "decreasing"):
        assert_same(*run_both("argmax", x, (1, 3), device, axis_direction=direction))
        assert_same(*run_both("argmin", x.transpose(2, 0, 3, 1), (0, 1, 3), device, axis_direction=direction))


# --- descriptor-level: explicit strides, output strides, GPU-resident chains ----------


def test_padded_and_permuted_output_strides(device):
    rng = np.random.default_rng(11)
    x = tie_values(DataType.FLOAT32, (4, 5, 6), rng)
    inp = TensorDesc("FLOAT32", (4, 5, 6), strides=(1, 4 * 6, 4), total_tensor_size_in_bytes=4 * 200)
    out = TensorDesc("UINT64", (4, 1, 6), strides=(7, 0, 29), total_tensor_size_in_bytes=8 * 180)
    desc = ArgMinOperatorDesc(inp, out, axes=[1], axis_direction="DECREASING")
    compiled = device.compile(desc)
    got = compiled.run(device.upload(x, inp), device.empty(out)).numpy()
    assert_same(got, oracle.evaluate(desc, x))


@pytest.mark.parametrize("data_type", FLOATS, ids=lambda t: t.name)
def test_hardmax_interleaved_output(device, data_type):
    """Neighbouring output elements belong to different slices: FLOAT16 halves share a word."""
    rng = np.random.default_rng(3)
    x = tie_values(data_type, (5, 3, 4), rng)
    out = TensorDesc(data_type, (5, 3, 4), strides=(1, 20, 5))  # axis 0 is innermost in memory
    desc = ActivationHardmax1OperatorDesc(TensorDesc(data_type, (5, 3, 4)), out, axes=[1, 2])
    got = device.compile(desc).run(device.upload(x)).numpy()
    assert_same(got, oracle.evaluate(desc, x))


def test_broadcast_input_descriptor(device):
    row = np.array([2, 9, 9, 1], np.uint8)
    inp = TensorDesc("UINT8", (3, 4), strides=(0, 1))
    desc = ArgMaxOperatorDesc(inp, TensorDesc("INT32", (3, 1)), axes=[1], axis_direction="decreasing")
    got = device.compile(desc).run(device.upload(np.broadcast_to(row, (3, 4)), inp)).numpy()
    assert got.tolist() == [[2], [2], [2]]
    # values the broadcast layout cannot hold are refused, not silently replaced
    different = np.stack([row, row, row[::-1]])
    with pytest.raises(dmlgpu.DataError, match=r"different values at elements .* \[0, 1\] place at one address"):
        device.compile(desc)(different)


def test_resident_chain(device):
    """Upload once, run several operators, read back only at the end."""
    rng = np.random.default_rng(8)
    x = rng.standard_normal((64, 300)).astype(np.float32)
    t = device.upload(x)
    hot = dmlgpu.hardmax(t, 1, device=device)
    idx = dmlgpu.argmax(hot, 1, device=device)  # argmax of a one-hot row is its hot index
    assert isinstance(idx, dmlgpu.Tensor)
    assert idx.numpy().ravel().tolist() == np.argmax(x, axis=1).tolist()
    assert_same(hot.numpy(), oracle.hardmax(x, 1))


def test_repeated_calls_see_new_data(device):
    """The NumPy path keeps its GPU buffers between calls; each call must still read its own data."""
    rng = np.random.default_rng(4)
    for _ in range(3):
        x = rng.standard_normal((7, 300)).astype(np.float32)
        assert dmlgpu.argmax(x, [1], device=device).ravel().tolist() == np.argmax(x, axis=1).tolist()
        assert dmlgpu.argmin(x, [0, 1], device=device).item() == np.argmin(x)
    big = np.zeros((7, 300), np.float32)
    big[3, 17] = 1
    assert dmlgpu.argmax(big, (0, 1), device=device).item() == 3 * 300 + 17


def test_a_cached_call_still_refuses_axes_that_only_compare_equal(device):
    """The call cache keys axes by type as well: True and 1.0 equal 1, but are not axes, before
    or after a call with axes=1 (NumPy in and resident alike)."""
    x = np.random.default_rng(8).standard_normal((2, 3)).astype(np.float32)
    t = device.upload(x)
    for data in (x, t):
        for _ in range(2):  # the second time from the cache
            assert np.array_equal(np.asarray(dmlgpu.argmax(data, 1, device=device)).ravel(), np.argmax(x, 1))
            for bad in (True, 1.0, (True,), [1.0]):
                with pytest.raises(TypeError, match=r"axes(\[0\])? must be an int"):
                    dmlgpu.argmax(data, bad, device=device)
    t.release()


def test_caches_are_bounded(device):
    """Operators beyond the cache's size are dropped (oldest first); one still held keeps working."""
    from dmlgpu.device import KEPT_OPERATORS

    first = device.compile(ArgMaxOperatorDesc(TensorDesc("INT32", (1, 2)), axes=[1]))
    for n in range(3, KEPT_OPERATORS + 4):
        dmlgpu.argmax(np.arange(n, dtype=np.int32)[None, :], 1, device=device)
    assert len(device.by_call) <= KEPT_OPERATORS and len(device._compiled) <= KEPT_OPERATORS
    assert device.compile(ArgMaxOperatorDesc(TensorDesc("INT32", (1, 2)), axes=[1])) is not first
    assert first(np.array([[5, 9]], np.int32)).item() == 1


def test_a_cache_finds_its_last_entry_without_its_lock_and_forgets_it_on_any_change():
    """``LruCache.get`` remembers the entry it found last (a loop of one call looks it up every
    time): found again by an equal key, forgotten when any entry is written or removed, and
    the order of use still kept for the rest."""
    from dmlgpu.caches import LruCache

    cache = LruCache(2)
    cache[("a", 1)] = "first"
    cache[("b", 2)] = "second"
    assert cache.get(("a", 1)) == "first" and cache._last == (("a", 1), "first")
    assert cache.get(("a", 1)) == "first"  # (from _last: an equal key, not the same object)
    cache[("a", 1)] = "again"  # a write forgets it
    assert cache._last is None and cache.get(("a", 1)) == "again"
    cache[("c", 3)] = "third"  # ("b", 2) was used least recently: dropped
    assert cache.get(("b", 2)) is None and cache.get(("c", 3)) == "third" and cache.get(("a", 1)) == "again"
    del cache[("a", 1)]
    assert cache.get(("a", 1), "gone") == "gone"
    cache.clear()
    assert cache.get(("c", 3)) is None and cache._last is None


def test_freed_buffers_are_kept_up_to_the_pool_limit(device, monkeypatch):
    compiled = device.compile(ArgMinOperatorDesc(TensorDesc("FLOAT32", (3, 5)), axes=[1]))
    monkeypatch.setattr(device.runner.memory.pool, "limit", 0)  # keep nothing
    compiled(GRID[:, :1].repeat(5, 1))
    held = device.runner.memory.held_bytes
    for x in (GRID[:, :1].repeat(5, 1), np.arange(15, dtype=np.float32).reshape(3, 5)):
        assert compiled(x).ravel().tolist() == np.argmin(x, axis=1).tolist()
    assert device.runner.memory.held_bytes <= held  # (objects of earlier tests may be collected meanwhile)


def test_the_pool_gives_back_its_oldest_first():
    from dmlgpu.runtime.memory import Pool

    class Item:
        def __init__(self, size):
            self.size = size

    pool = Pool(100)
    a, b, c = Item(40), Item(40), Item(30)
    assert pool.put(a) == [] and pool.put(b) == []
    assert pool.put(c) == [a] and pool.bytes == 70  # a was the oldest
    assert pool.put(Item(101))[0].size == 101  # larger than the limit: not kept
    assert pool.take(40) is b and pool.take(40) is None and pool.take(30) is c and pool.bytes == 0


def test_repeated_small_calls_create_nothing(device, monkeypatch):
    """The hot path: after the first call, buffers come from the pools and bind groups from
    the operator's cache."""
    x = np.random.default_rng(0).standard_normal((4, 300)).astype(np.float32)
    dmlgpu.argmax(x, 1, device=device)
    dmlgpu.argmax(x, 1, device=device)
    created = []
    real_create, real_bind = device.runner.memory.create, device.runner.programs.bind
    monkeypatch.setattr(device.runner.memory, "create", lambda *a, **k: created.append(a) or real_create(*a, **k))
    monkeypatch.setattr(device.runner.programs, "bind", lambda *a: created.append(a) or real_bind(*a))
    for _ in range(5):
        assert dmlgpu.argmax(x, 1, device=device).ravel().tolist() == np.argmax(x, 1).tolist()
    assert created == []


def test_resident_outputs_of_many_threads_stay_bound(device, monkeypatch):
    """Resident calls from many threads at once each write another output buffer of the pool:
    an operator keeps the passes bound to each of up to ``BOUND_KEPT`` of them, so that 16
    outputs in turn, bound once, are not bound again on the next rounds (a cache of 8 made a
    bind group on most calls from 16 threads)."""
    x = np.random.default_rng(3).standard_normal((2, 300)).astype(np.float32)
    t = device.upload(x)
    compiled = device.compile(ArgMaxOperatorDesc(TensorDesc("FLOAT32", (2, 300)), axes=[1]))
    outputs = [compiled.run(t) for _ in range(16)]  # as 16 threads' calls in flight hold them
    assert len({id(o._buffers[0]) for o in outputs}) == 16
    bound = []
    real_bind = device.runner.programs.bind
    monkeypatch.setattr(device.runner.programs, "bind", lambda *a: bound.append(a) or real_bind(*a))
    for _ in range(3):
        for out in outputs:
            assert compiled.run(t, out) is out
    assert bound == []
    assert all(out.numpy().ravel().tolist() == np.argmax(x, 1).tolist() for out in outputs)
    for out in outputs + [t]:
        out.release()


def test_pipelines_are_reused(device):
    before = device.runner.programs.count
    for n in (10, 20, 30):
        dmlgpu.argmax(np.arange(n * 3, dtype=np.int32).reshape(n, 3), 0, device=device)
    assert device.runner.programs.count - before <= 1
    compiled = device.compile(ArgMaxOperatorDesc(TensorDesc("INT32", (4, 3)), axes=[0]))
    assert device.compile(ArgMaxOperatorDesc(TensorDesc("INT32", (4, 3)), axes=[0])) is compiled


def test_json_descriptor_runs(device):
    desc = dmlgpu.operator_from_json(
        '{"Type": "DML_OPERATOR_REDUCE", "Desc": {"Function": "ARGMIN", '
        '"InputTensor": {"DataType": "FLOAT32", "Sizes": [3, 3]}, '
        '"OutputTensor": {"DataType": "UINT32", "Sizes": [1, 3]}, "Axes": [0]}}'
    )
    assert device.compile(desc)(GRID).tolist() == [[0, 1, 2]]


# --- errors never leave the device unusable ------------------------------------------


@pytest.mark.parametrize(
    "bad, error",
    [
        (lambda d: dmlgpu.argmax(GRID, 2, device=d), dmlgpu.DescriptorError),
        (lambda d: dmlgpu.argmax(GRID.astype(np.complex64), 0, device=d), TypeError),
        (lambda d: dmlgpu.hardmax(GRID.astype(np.int32), 0, device=d), dmlgpu.DescriptorError),
        (lambda d: dmlgpu.argmax(GRID, 0, output_data_type="float32", device=d), dmlgpu.DescriptorError),
        (lambda d: d.compile(ArgMaxOperatorDesc(TensorDesc("FLOAT32", (3, 3)), axes=[0]))(GRID[:2]),
         dmlgpu.DataError),
        (lambda d: d.compile(ArgMaxOperatorDesc(TensorDesc("FLOAT32", (2, 3)), axes=[0])).run(d.upload(GRID)),
         dmlgpu.DataError),
    ],
)
def test_error_then_valid_call(device, bad, error):
    with pytest.raises(error):
        bad(device)
    assert dmlgpu.argmax(GRID, 0, device=device).tolist() == [[1, 2, 1]]


def test_feature_level_3_0_refuses_64_bit_inputs():
    old = dmlgpu.Device(feature_level="3.0")
    desc = ArgMaxOperatorDesc(TensorDesc("UINT64", (4,)), axes=[0])
    with pytest.raises(dmlgpu.DescriptorError, match=r"input_tensor.data_type is UINT64.*feature level 3.0"):
        old.compile(desc)
    assert old.compile(ArgMaxOperatorDesc(TensorDesc("UINT32", (4,)), axes=[0]))(np.arange(4, dtype=np.uint32)).item() == 3


# --- feature levels (docs/semantics.md#types-and-feature-levels): refused at compile below the level, run at it ------

def test_default_device_has_the_highest_modelled_level(device):
    """Every operator works out of the box: HARDMAX1, the newest, on the default device."""
    assert device.feature_level is DEFAULT_FEATURE_LEVEL is FeatureLevel.FL_5_1
    assert dmlgpu.default_device().feature_level is FeatureLevel.FL_5_1
    assert dmlgpu.hardmax(CUBE, (0, 2)).tolist() == [[[0, 0], [0, 1]], [[0, 1], [0, 0]]]
    desc = ActivationHardmax1OperatorDesc(TensorDesc("FLOAT32", (2, 2, 2)), axes=[1])
    assert device.compile(desc)(CUBE).tolist() == [[[1, 0], [0, 1]], [[1, 1], [0, 0]]]


@pytest.mark.parametrize("spelling", ["5.0", 5.0, "DML_FEATURE_LEVEL_5_0", 0x5000, FeatureLevel.FL_5_0])
def test_device_reports_the_level_asked_for(spelling):
    """5.0 is no modelled level: the device says 5.0 and behaves as 4.1."""
    between = dmlgpu.Device(feature_level=spelling)
    assert between.feature_level is FeatureLevel.FL_5_0
    assert between.feature_level.modelled is FeatureLevel.FL_4_1
    assert "feature_level='5.0'" in repr(between)


def _int64_row():
    return np.array([3, 2**60 + 1, -5, 2**60 + 1, 7], np.int64)


#: (descriptor, input, the level it needs, the level just below, the error there)
GPU_BOUNDARIES = {
    "ARGMAX": (ArgMaxOperatorDesc(TensorDesc("FLOAT32", (3, 3)), axes=[0]), GRID, "3.0", "2.1",
               "ARGMAX needs feature level 3.0, but the device's feature_level is 2.1"),
    "ARGMIN": (ArgMinOperatorDesc(TensorDesc("FLOAT32", (3, 3)), axes=[0, 1]), GRID, "3.0", "2.1",
               "ARGMIN needs feature level 3.0, but the device's feature_level is 2.1"),
    "ARGMAX INT64": (ArgMaxOperatorDesc(TensorDesc("INT64", (5,)), TensorDesc("INT64", (1,)), axes=[0]),
                     _int64_row(), "4.1", "4.0", "input_tensor.data_type is INT64, but ARGMAX at feature level 4.0"),
    "ACTIVATION_HARDMAX1": (ActivationHardmax1OperatorDesc(TensorDesc("FLOAT32", (2, 2, 2)), axes=[0, 2]), CUBE,
                            "5.1", "5.0",
                            "ACTIVATION_HARDMAX1 needs feature level 5.1, but the device's feature_level is 5.0"),
    "ACTIVATION_HARDMAX rank 5": (ActivationHardmaxOperatorDesc(TensorDesc("FLOAT16", (1, 2, 1, 2, 2))),
                                  CUBE.astype(np.float16).reshape(1, 2, 1, 2, 2), "2.0", "1.0",
                                  "input_tensor has 5 dimensions, but ACTIVATION_HARDMAX at feature level 1.0 takes 4"),
    "REDUCE INT8": (ReduceOperatorDesc("ARGMAX", TensorDesc("INT8", (1, 1, 3, 3)), axes=[3]),
                    GRID.astype(np.int8).reshape(1, 1, 3, 3), "2.1", "2.0",
                    "input_tensor.data_type is INT8, but REDUCE at feature level 2.0 takes FLOAT32, FLOAT16"),
}


@pytest.mark.parametrize("desc, x, needed, below, message", GPU_BOUNDARIES.values(), ids=GPU_BOUNDARIES.keys())
def test_feature_level_boundary(desc, x, needed, below, message):
    """One level below: refused at compile, and the device goes on to a valid call. At the
    level: compiled and run, equal to the oracle."""
    low = dmlgpu.Device(feature_level=below)
    with pytest.raises(dmlgpu.DescriptorError, match=re.escape(message)):
        low.compile(desc)
    oldest = ActivationHardmaxOperatorDesc(TensorDesc("FLOAT32", (1, 1, 3, 3)))  # every level has it
    assert low.compile(oldest)(GRID.reshape(1, 1, 3, 3)).tolist() == [[[[0, 0, 1], [0, 0, 1], [0, 1, 0]]]]
    at = dmlgpu.Device(feature_level=needed)
    assert_same(at.compile(desc)(x), oracle.evaluate(desc, x))


def test_below_5_1_the_numpy_hardmax_is_refused_and_the_device_goes_on():
    """dmlgpu.hardmax is ACTIVATION_HARDMAX1; the older operator covers the last axis."""
    old = dmlgpu.Device(feature_level="DML_FEATURE_LEVEL_4_1")
    with pytest.raises(dmlgpu.DescriptorError, match="ACTIVATION_HARDMAX1 needs feature level 5.1, but the "
                                                    "device's feature_level is 4.1"):
        dmlgpu.hardmax(CUBE, 2, device=old)
    last_axis = old.compile(ActivationHardmaxOperatorDesc(TensorDesc("FLOAT32", (2, 2, 2))))(CUBE)
    assert_same(last_axis, oracle.hardmax(CUBE, 2))
    assert dmlgpu.argmax(_int64_row(), 0, device=old).tolist() == [1]


def test_below_3_0_the_numpy_argmax_is_refused_and_reduce_runs():
    """2.0 has no ARGMAX/ARGMIN; REDUCE with ARGMIN on 4 dimensions of FLOAT32 it has."""
    old = dmlgpu.Device(feature_level=2.0)
    for call in (dmlgpu.argmax, dmlgpu.argmin):
        with pytest.raises(dmlgpu.DescriptorError, match=rf"{call.__name__.upper()} needs feature level 3\.0"):
            call(GRID, 0, device=old)
    desc = ReduceOperatorDesc("ARGMIN", TensorDesc("FLOAT32", (1, 1, 3, 3)), axes=[2])
    assert old.compile(desc)(GRID.reshape(1, 1, 3, 3)).tolist() == [[[[0, 1, 2]]]]


def test_adapter_choice_by_name(device):
    with pytest.raises(dmlgpu.AdapterError, match="no adapter's name contains it"):
        dmlgpu.Device("no-such-adapter-name")
    same = dmlgpu.Device(device.name[:6])
    assert same.name == device.name or device.name[:6].lower() in same.name.lower()
    assert dmlgpu.Device(device.runner.backend.upper()).runner.backend == device.runner.backend  # a backend's name


def test_adapter_choice_by_index(monkeypatch):
    """``#N`` (in ``adapter``, ``DMLGPU_ADAPTER`` or ``--adapter``) and ``adapter_index=N`` pick
    the Nth adapter of ``runtime.adapters.adapters()``: native backends only (OpenGL where asked for,
    after them), GPUs before CPUs."""
    from dmlgpu.runtime.adapters import adapters

    found = adapters()
    assert found and all(a.info["backend_type"] != "OpenGL" for a in found)
    assert [a.info["adapter_type"] == "CPU" for a in found] == sorted(a.info["adapter_type"] == "CPU" for a in found)
    assert dmlgpu.Device(adapter_index=0).runner.adapter.info == found[0].info
    assert dmlgpu.Device("#0").name == found[0].info["device"]
    monkeypatch.setenv("DMLGPU_ADAPTER", " #0 ")
    assert dmlgpu.Device().name == found[0].info["device"]
    with pytest.raises(dmlgpu.AdapterError, match=rf"adapter is '#{len(found)}', but there is no adapter at that "
                                                  r"index; adapters: #0 "):
        dmlgpu.Device(adapter_index=len(found))
    with pytest.raises(dmlgpu.AdapterError, match=r"adapter is '#one', but an index is '#' and digits"):
        dmlgpu.Device("#one")
    with pytest.raises(TypeError, match=r"adapter_index must be an int, not str \('1'\)"):
        dmlgpu.Device(adapter_index="1")
    with pytest.raises(ValueError, match=r"adapter_index is -1, but it must be >= 0"):
        dmlgpu.Device(adapter_index=-1)
    with pytest.raises(ValueError, match=r"adapter is 'llvm' and adapter_index is 0, but only one may be given"):
        dmlgpu.Device("llvm", adapter_index=0)


def test_adapters_are_enumerated_once_and_opengl_only_when_asked(monkeypatch):
    """The adapter objects are the same on every call (enumerated once per process, never let
    go of); OpenGL adapters follow the native ones only with ``DMLGPU_OPENGL=1`` or for a name
    that only they match."""
    from dmlgpu.runtime.adapters import adapters, choose_adapter

    first = adapters()
    assert [id(a) for a in adapters()] == [id(a) for a in first]
    monkeypatch.delenv("DMLGPU_ADAPTER", raising=False)
    assert choose_adapter() in first
    with_gl = adapters(opengl=True)
    assert with_gl[:len(first)] == first
    assert all(a.info["backend_type"] == "OpenGL" for a in with_gl[len(first):])
    monkeypatch.setenv("DMLGPU_OPENGL", "1")
    assert adapters() == with_gl
    if len(with_gl) > len(first):  # (lavapipe's machines have Mesa's OpenGL too)
        gl = dmlgpu.Device("opengl")
        assert gl.runner.backend == "OpenGL"
        np.testing.assert_array_equal(dmlgpu.argmax(GRID, 1, device=gl), oracle.argmax(GRID, 1))
        gl.close()


# --- every kernel the planner can choose, with thresholds shrunk so small inputs reach them


@pytest.fixture(scope="module", params=[True, False], ids=["subgroups", "tree"])
def small_tuning_device(request):
    """Thresholds shrunk so that small inputs split, with several rows a workgroup; segments
    merge with subgroup shuffles where the adapter has them, or with the tree alone. Short
    rows go to the segments kernel here, and splits to a merge pass (reduce_rows and the
    racing split have their own tests)."""
    from dmlgpu.plan import Tuning

    device = dmlgpu.Device(tuning=Tuning(workgroup_size=32, loads_per_thread=1, target_workgroups=64,
                                         min_chunk_per_lane=1, min_chunk_per_lane_single=1, target_threads=512, min_chunk_thread=5,
                                         merge_workgroup_above=16, subgroups=request.param, rows_max_bytes=0,
                                         race_max_chunks=0, merge_workgroup_below=0, columns_lanes=2))
    return device


KERNEL_CASES = [
    (DataType.FLOAT32, (6, 1000), (1,), "packed", "reduce_segments", "load_quads", True),
    (DataType.FLOAT16, (3, 997), (1,), "packed", "reduce_segments", "load_packed", True),
    (DataType.INT8, (4, 1024), (1,), "packed", "reduce_segments", "load_quads", True),
    (DataType.UINT16, (1500,), (0,), "packed", "reduce_segments", "load_quads", True),
    (DataType.INT64, (2, 700), (1,), "packed", "reduce_segments", "load_pair_quads", True),  # two a 16-byte load
    (DataType.UINT64, (5, 77), (1,), "padded", "reduce_segments", "load_pairs", True),  # rows off 16 bytes
    (DataType.FLOAT64, (603,), (0,), "packed", "reduce_segments", "load_pair_quads", True),  # two a quad, a tail
    (DataType.FLOAT64, (4, 3, 10), (0, 2), "packed", "reduce_segments", "load_pair_quads", False),
    (DataType.FLOAT64, (5, 77), (1,), "padded", "reduce_segments", "load_pairs", True),  # rows off the quads
    (DataType.FLOAT64, (300, 7), (0,), "packed", "reduce_thread", "load_pairs", True),
    (DataType.FLOAT32, (700, 5), (0,), "packed", "reduce_thread", "load_packed", True),
    (DataType.UINT8, (300, 7, 6), (0, 2), "permuted", "reduce_thread", "load_packed", True),
    (DataType.FLOAT32, (2000, 8), (1,), "packed", "reduce_segments", "load_quads", False),  # 16 rows a group
    (DataType.FLOAT16, (999, 8), (1,), "packed", "reduce_segments", "load_quads", False),  # a thread a row
    (DataType.INT32, (40, 30, 20), (0, 2), "padded", "reduce_segments", "load_packed", True),
    (DataType.UINT32, (9, 333), (1,), "broadcast", "reduce_thread", "load_packed", True),  # stride 0
    (DataType.FLOAT32, (64, 16), (0,), "packed", "reduce_columns", "load_quads", True),
    (DataType.FLOAT16, (40, 3, 32), (0, 1), "packed", "reduce_columns", "load_quads", True),
    (DataType.INT8, (20, 3, 64), (0, 1), "packed", "reduce_columns", "load_quads", True),
    (DataType.UINT16, (7, 24), (0,), "packed", "reduce_columns", "load_quads", False),
    (DataType.FLOAT32, (5000,), (0,), "packed", "reduce_segments", "load_quads", True),  # many chunks
    (DataType.FLOAT32, (37, 20), (1,), "packed", "reduce_segments", "load_quads", True),  # 4 rows a group
    (DataType.UINT8, (51, 13), (1,), "packed", "reduce_segments", "load_packed", False),  # rows unaligned
    (DataType.INT16, (30, 9, 4), (0, 1), "packed", "reduce_thread", "load_packed", True),  # strided rows
    (DataType.FLOAT32, (6, 5, 16), (0, 2), "packed", "reduce_segments", "load_quads", True),  # quads per row
    (DataType.FLOAT16, (4, 3, 24), (0, 2), "packed", "reduce_segments", "load_quads", True),
    (DataType.INT8, (5, 3, 18), (0, 2), "packed", "reduce_segments", "load_packed", True),  # 18 % 16 != 0
]


def kernel_case_call(case: tuple, op: str) -> tuple[np.ndarray, dict]:
    """The input and arguments of ``op`` on a case of KERNEL_CASES: HARDMAX1 with NaN
    propagated; ARGMAX and ARGMIN in one direction each, opposite ones, swapped from case to
    case; an increasing ARGMAX propagates NaN too, so that a split case's first pass is
    HARDMAX1's, the other calls ignore it."""
    data_type, shape, axes, layout, *_ = case
    rng = np.random.default_rng(zlib.crc32(repr((shape, op)).encode()))
    x = in_layout(tie_values(data_type, shape, rng, pool_size=3), layout, rng)
    if op == "hardmax":
        return x, {"nan_mode": "propagate"}
    direction = ("increasing", "decreasing")[(KERNEL_CASES.index(case) + (op == "argmin")) % 2]
    nan_mode = "propagate" if (op, direction) == ("argmax", "increasing") else "ignore"
    return x, {"axis_direction": direction, "nan_mode": nan_mode}


@pytest.mark.parametrize(
    "op, data_type, shape, axes, layout, kernel, loader, split",
    [(op, *case) for case in KERNEL_CASES for op in ("argmax", "argmin", "hardmax")
     if op != "hardmax" or case[0].is_float],
)
def test_every_kernel_against_oracle(small_tuning_device, op, data_type, shape, axes, layout, kernel, loader, split):
    """Each case once per merge (subgroups, tree), with the calls of ``kernel_case_call``:
    every case meets both directions, each op and each merge both directions, ARGMAX and
    each merge both NaN modes (a kernel that does not merge within segments runs the same
    shader on both)."""
    x, kwargs = kernel_case_call((data_type, shape, axes, layout, kernel, loader, split), op)
    p = plan_of(small_tuning_device, op, x, axes, kwargs)
    assert (p.kernel, p.loader, p.split > 1) == (kernel, loader, split)
    assert_same(*run_both(op, x, axes, small_tuning_device, **kwargs))


@pytest.mark.parametrize("op", ["argmax", "hardmax"])
def test_gpu_times_of_one_and_two_passes(small_tuning_device, device, op):
    """Timing brackets every pass (and HARDMAX's clear) and leaves the results right."""
    x = np.random.default_rng(2).standard_normal((3, 2000)).astype(np.float32)
    cls = ActivationHardmax1OperatorDesc if op == "hardmax" else ArgMaxOperatorDesc
    for dev, passes in ((device, 1), (small_tuning_device, 2)):
        compiled = dev.compile(cls(TensorDesc("FLOAT32", x.shape), axes=[1]))
        assert len(compiled.sources) == passes
        source, result = dev.upload(x), dev.empty(compiled.output_desc)
        times = operator_gpu_times(compiled, source, result, repeats=3)
        assert times.shape == (3,) and (times > 0).all()
        assert_same(result.numpy(), getattr(oracle, op)(x, 1))


def test_subgroups_are_used_where_the_adapter_has_them(device):
    compiled = device.compile(ArgMaxOperatorDesc(TensorDesc("FLOAT32", (64, 64)), axes=[1]))
    has = "subgroup" in device.runner.adapter.features
    assert compiled.plan.subgroups == has
    assert ("subgroupShuffleXor" in compiled.sources[0]) == has


def test_kernel_cases_reach_every_pass(small_tuning_device):
    """The table above runs every first-pass kernel, loader and merge kernel the planner has
    (the plans of its ARGMAX calls)."""
    seen = set()
    for case in KERNEL_CASES:
        x, kwargs = kernel_case_call(case, "argmax")
        p = plan_of(small_tuning_device, "argmax", x, case[2], kwargs)
        seen |= {p.kernel, p.loader, p.merge_kernel}
    assert seen >= {"reduce_segments", "reduce_thread", "reduce_columns", "load_quads", "load_packed",
                    "load_pairs", "load_pair_quads", "merge_partials", "merge_partials_workgroup"}


# --- tensors beyond one binding and one buffer: limits shrunk so small tensors are cut


@pytest.fixture(scope="module")
def small_limits_device():
    """Binds 4 KiB and holds 16 KiB per buffer; small thresholds so pieces split too."""
    from dmlgpu.plan import Tuning

    return dmlgpu.Device(smaller={"max_storage_binding": 4096, "max_buffer": 16384},
                         tuning=Tuning(workgroup_size=32, target_workgroups=8, min_chunk_per_lane=2, min_chunk_per_lane_single=2,
                                       target_threads=256, min_chunk_thread=8, merge_workgroup_above=16))


PIECE_CASES = [
    # (type, shape, axes, transposed: the view's axes reversed in memory, how the schedule cuts it)
    (DataType.FLOAT32, (10000,), (0,), False, "reduced"),  # all axes: pairs from every piece, one merge
    (DataType.FLOAT16, (6000, 3), (0, 1), False, "reduced"),  # windows start off quad alignment
    (DataType.UINT8, (70, 130), (0,), False, "reduced"),
    (DataType.INT64, (1500, 2), (0,), False, "reduced"),
    (DataType.FLOAT64, (2, 1300), (1,), False, "reduced"),  # one row beyond a binding, two doubles a load
    (DataType.FLOAT64, (700, 6), (1,), False, "kept"),
    (DataType.FLOAT32, (700, 12), (1,), False, "kept"),  # rows: independent pieces, outputs in windows
    (DataType.INT16, (900, 8), (1,), False, "kept"),
    (DataType.FLOAT32, (50, 3, 40), (1,), False, "kept"),  # columns kernel per piece
    (DataType.INT32, (2000, 5), (1,), False, "kept"),  # several buffers of input and output
    (DataType.FLOAT32, (600, 6), (1,), False, "kept"),  # short rows from a quad inside the window (lavapipe)
    (DataType.INT8, (600, 24), (1,), False, "kept"),
    (DataType.FLOAT32, (3, 2000), (1,), False, "reduced"),  # one row beyond a binding: a group per row
    (DataType.FLOAT16, (2, 9000), (1,), False, "reduced"),  # one row beyond a buffer too
    (DataType.FLOAT32, (40, 50), (0, 1), True, "reduced"),  # the outermost axis is the last reduced
    (DataType.INT32, (6, 7, 90), (0, 2), True, "reduced"),  # pieces' indices step through the whole's
    (DataType.FLOAT32, (300, 3, 2), (0, 2), True, "reduced"),  # kept axis between cut reduced ones
]


@pytest.mark.parametrize(
    "op, data_type, shape, axes, transposed, how",
    [(op, *case) for case in PIECE_CASES for op in ("argmax", "argmin", "hardmax")
     if op != "hardmax" or case[0].is_float],
)
def test_pieces_against_oracle(small_limits_device, op, data_type, shape, axes, transposed, how):
    """Each case with every op, through the NumPy call and again from an input uploaded in
    several buffers: ARGMAX and ARGMIN in one direction each, opposite ones, and HARDMAX1 in
    one NaN mode, each swapped from case to case (so each op meets both)."""
    dev = small_limits_device
    rng = np.random.default_rng(zlib.crc32(repr((shape, op)).encode()))
    x = tie_values(data_type, shape[::-1] if transposed else shape, rng, pool_size=2)  # ties across pieces too
    x = x.T if transposed else x
    key = PIECE_CASES.index((data_type, shape, axes, transposed, how)) + (op == "argmin")
    kwargs = {"nan_mode": NAN_MODES[key % 2]} if op == "hardmax" else {"axis_direction": ("increasing", "decreasing")[key % 2]}
    desc = operator_for(op, layout.describe(x)[0], axes, kwargs.get("axis_direction", "increasing").upper())
    compiled = dev.compile(desc, nan_mode=kwargs.get("nan_mode", "ignore"))
    s = compiled.schedule
    assert len(s.pieces) > 1 and (s.merges > 0) == (how == "reduced")
    assert_same(*run_both(op, x, axes, dev, **kwargs))
    source = dev.upload(x)
    assert len(source._buffers) > 1 or x.nbytes <= 16384
    want = oracle.evaluate(desc, np.ascontiguousarray(x), nan_mode=kwargs.get("nan_mode", "ignore"))
    assert_same(compiled.run(source).numpy(), want)


def test_output_beyond_a_binding_that_the_input_is_not(small_limits_device):
    x = tie_values(DataType.INT8, (5000, 1), np.random.default_rng(5), pool_size=3)
    assert_same(*run_both("argmax", x, 1, small_limits_device, output_data_type="int64"))


def test_ties_straddling_pieces(small_limits_device):
    x = np.zeros(10000, np.float32)
    x[[5, 1100, 9999]] = 3.0  # the maxima lie in different pieces
    assert dmlgpu.argmax(x, 0, device=small_limits_device).item() == 5
    assert dmlgpu.argmax(x, 0, axis_direction="decreasing", device=small_limits_device).item() == 9999
    assert dmlgpu.argmin(x, 0, axis_direction="decreasing", device=small_limits_device).item() == 9998


def test_an_error_on_a_pieced_device_leaves_it_working(small_limits_device):
    with pytest.raises(dmlgpu.DescriptorError, match="axes"):
        dmlgpu.argmax(np.zeros((40, 50), np.float32).T, (0, 2), device=small_limits_device)
    assert dmlgpu.argmax(np.arange(5000, dtype=np.float32), 0, device=small_limits_device).item() == 4999


# --- the segments kernel's batched walk and its skip test (walk_batched.wgsl) ---------


def hard_rows(data_type: DataType, n: int, rng: np.random.Generator) -> np.ndarray:
    """Rows that stress a walk which skips quads: drawn from few pool values (ties and special
    values everywhere), rising (every quad a new best), falling, all equal, the extremes of
    the type planted at quad and thread boundaries, and signed zeros around the best."""
    dtype = data_type.numpy
    pool = value_pool(data_type)
    rows = [tie_values(data_type, n, rng, pool_size=k) for k in (2, 3, 4, 4)]
    rows += [np.sort(rng.choice(pool, n)), np.sort(rng.choice(pool, n))[::-1], np.full(n, pool[rng.integers(len(pool))])]
    extremes = np.full(n, pool[len(pool) // 2], dtype)
    top, bottom = (np.inf, -np.inf) if data_type.is_float else (np.iinfo(dtype).max, np.iinfo(dtype).min)
    for p in (3, 4, 31, 32, 33, 127, 128, n - 1):
        extremes[p % n] = top if p % 2 else bottom
    rows.append(extremes)
    if data_type.is_float:
        zeros = np.where(rng.random(n) < 0.5, 0.0, -0.0).astype(dtype)
        zeros[rng.integers(n, size=3)] = np.finfo(dtype).smallest_subnormal * np.array([1, -1, 1], dtype)
        rows += [zeros, np.full(n, np.nan, dtype)]
    return np.stack(rows).astype(dtype)


@pytest.fixture(scope="module", params=["pooled", "per-thread", "no-subgroups"])
def walk_device(request):
    """Small workgroups whose segments walk many quads each, skip test on. "pooled": segments
    of 32 threads, so a subgroup (8 on lavapipe, 32 on NVIDIA) walks one chunk and shares its
    best; "per-thread": segments of 4 threads, so a subgroup spans several rows and each
    thread tests against its own best; "no-subgroups": the tree and per-thread bests."""
    from dmlgpu.plan import Tuning

    loads = {"pooled": 8, "per-thread": 64, "no-subgroups": 8}[request.param]
    return dmlgpu.Device(tuning=Tuning(workgroup_size=32, loads_per_thread=loads, batch=3, skip_min_quads=2,
                                       target_workgroups=4, min_chunk_per_lane=4, min_chunk_per_lane_single=4, subgroups=request.param != "no-subgroups"))


@pytest.mark.parametrize("data_type", [t for t in DataType if t.size <= 4], ids=lambda t: t.name)
def test_batched_walk_with_skip_test(request, walk_device, data_type):
    """Every type on every walk, half the (op, direction) pairs (``half_the_calls``, keyed by
    walk + type; HARDMAX1 on floats), the other half on the neighbouring key, NaN modes and
    output types rotating: each walk meets every op, direction and NaN mode with floats and
    every (op, direction) with integers, and each type every op and direction."""
    rng = np.random.default_rng(zlib.crc32(data_type.name.encode()))
    x = hard_rows(data_type, 4000 // data_type.size, rng)
    key = fixture_index(request, "walk_device") + SMALL_TYPES.index(data_type)
    calls = half_the_calls(data_type, key)
    plan = plan_of(walk_device, calls[0][0], x, [1], calls[0][1])
    assert plan.kernel == "reduce_segments" and plan.batch == 3 and plan.skip_test
    for op, kwargs in calls:
        assert_same(*run_both(op, x, 1, walk_device, **kwargs))


def test_batched_walk_splits_and_output_types(walk_device):
    """Chunks of one row each walk with their own best (a split), a ragged tail after the
    quads, and the indices come out as every output type."""
    rng = np.random.default_rng(12)
    x = tie_values(DataType.FLOAT32, 9003, rng, pool_size=3)
    assert walk_device.compile(ArgMaxOperatorDesc(TensorDesc("FLOAT32", x.shape), axes=[0])).plan.split > 1
    for out_type in INDEX_TYPES:
        for direction in ("increasing", "decreasing"):
            assert_same(*run_both("argmin", x, 0, walk_device, axis_direction=direction, output_data_type=out_type))


@pytest.fixture(scope="module", params=["batched", "one-at-a-time"])
def interleaved_device(request):
    """Splits whose chunks walk interleaved spans (``segments_interleave``): the batched walk
    with its skip test, and the walk a quad at a time (whose 64-bit types take walk_pairs)."""
    from dmlgpu.plan import Tuning

    batch = {"batched": 3, "one-at-a-time": 0}[request.param]
    return dmlgpu.Device(tuning=Tuning(workgroup_size=32, loads_per_thread=8, batch=batch, skip_min_quads=2,
                                       target_workgroups=4, min_chunk_per_lane=4, min_chunk_per_lane_single=4,
                                       segments_interleave=True))


@pytest.mark.parametrize("data_type, shape, axes", [
    (DataType.FLOAT32, (9003,), (0,)),  # one output, a ragged tail after the quads
    (DataType.INT8, (3, 4099), (1,)),  # few rows, ties certain
    (DataType.FLOAT16, (1, 3, 8192), (2,)),  # rows of a 3-D tensor
    (DataType.INT64, (5003,), (0,)),  # 64-bit pairs
], ids=lambda v: getattr(v, "name", str(v)))
def test_interleaved_chunks_walk_the_whole_range(interleaved_device, data_type, shape, axes):
    """Each chunk of a split takes every split-th span of the output's range, its walk starting
    from the output's first index with the smallest key; where every element holds that key
    (NaN ignored, an integer type's least value for ARGMAX, its largest for ARGMIN), the first
    (INCREASING) and the last (DECREASING) index still win, and every output type holds them."""
    rng = np.random.default_rng(zlib.crc32(repr((data_type.name, shape)).encode()))
    x = tie_values(data_type, shape, rng, pool_size=3)
    plan = plan_of(interleaved_device, "argmax", x, axes, {})
    assert plan.kernel == "reduce_segments" and plan.split > 1 and plan.interleave
    for direction, out_type in (("increasing", "int64"), ("decreasing", "uint32")):
        for op in ("argmax", "argmin"):
            kwargs = {"axis_direction": direction, "output_data_type": out_type}
            assert_same(*run_both(op, x, axes, interleaved_device, **kwargs))
            if data_type.is_float:
                smallest, kwargs = np.full(shape, np.nan, data_type.numpy), {**kwargs, "nan_mode": "ignore"}
            else:
                info = np.iinfo(data_type.numpy)
                smallest = np.full(shape, info.min if op == "argmax" else info.max, data_type.numpy)
            assert_same(*run_both(op, smallest, axes, interleaved_device, **kwargs))


MULTI_AXIS_CASES = [((6, 3, 200), (0, 2)), ((7, 2, 640), (0, 2)), ((5, 2, 3, 40), (0, 1, 3)), ((3, 50, 2, 16), (1, 3)),
                    ((6, 3, 7, 2, 40), (0, 2, 4))]  # the last: three reduced dimensions, two carries


@pytest.mark.parametrize("shape, axes", MULTI_AXIS_CASES)
def test_batched_walk_carries_multi_axis_offsets(request, walk_device, shape, axes):
    """Several reduced dimensions, the innermost whole quads: the odometer carries offsets
    across rows of the inner dimension, with steps longer and shorter than a row. Each (case,
    walk) one (op, direction) pair (``one_call``, keyed by 3 x case + walk): each walk meets
    all four over the cases, each case three over the walks."""
    rng = np.random.default_rng(len(shape))
    x = tie_values(DataType.INT16, shape, rng, pool_size=3)
    calls = one_call(DataType.INT16, 3 * MULTI_AXIS_CASES.index((shape, axes)) + fixture_index(request, "walk_device"))
    plan = plan_of(walk_device, calls[0][0], x, axes, calls[0][1])
    assert plan.batch and len(plan.reduced) >= 2 and plan.loader == "load_quads"
    for op, kwargs in calls:
        assert_same(*run_both(op, x, axes, walk_device, **kwargs))


# --- short packed rows in blocks (reduce_rows.wgsl) ------------------------------------


@pytest.fixture(scope="module", params=["subgroups", "tree", "prefetch"])
def rows_device(request):
    """Workgroups of 32 threads, at most 2 of them, so that each strides over several tiles
    of rows; segments of several threads merge with shuffles or with the tree; blocks of up to
    4 quads a thread, so that blocks of several whole-quad rows are covered too; and (with
    shuffles) a staged tile's quads loaded while the tile before is keyed (``rows_prefetch``,
    off in the other two)."""
    from dmlgpu.plan import Tuning

    return dmlgpu.Device(tuning=Tuning(workgroup_size=32, rows_groups=2, subgroups=request.param != "tree",
                                       rows_whole_quads=False, rows_block_loads=4, loads_per_thread=4,
                                       rows_prefetch=request.param == "prefetch"))


ROWS_CASES = [  # (type, width, (threads a block, rows a block))
    (DataType.FLOAT32, 3, (1, 4)),  # 4 rows make 3 quads
    (DataType.FLOAT32, 5, (1, 4)),
    (DataType.FLOAT32, 8, (1, 2)),
    (DataType.FLOAT32, 16, (1, 1)),
    (DataType.FLOAT32, 36, (4, 1)),  # 9 quads over 4 threads: some load 2, some 3
    (DataType.FLOAT32, 64, (4, 1)),
    (DataType.FLOAT16, 3, (1, 8)),
    (DataType.FLOAT16, 24, (1, 1)),
    (DataType.FLOAT16, 40, (2, 1)),
    (DataType.INT8, 3, (1, 16)),
    (DataType.INT8, 20, (1, 4)),
    (DataType.UINT8, 64, (1, 1)),
    (DataType.INT16, 2, (1, 16)),  # 4 rows a quad, 4 quads a thread
    (DataType.UINT16, 6, (1, 4)),
    (DataType.INT32, 7, (1, 4)),
    (DataType.UINT32, 12, (1, 1)),
]


@pytest.mark.parametrize("data_type, width, blocks", ROWS_CASES, ids=lambda v: getattr(v, "name", str(v)))
def test_short_rows_in_blocks(request, rows_device, data_type, width, blocks):
    """Each width (a shader of its own) on both merges, keyed by 3 x case + merge: a float
    width ARGMAX and ARGMIN in opposite directions on each merge (``half_the_calls``; the
    merges' halves differ where the key's half does), HARDMAX1 on one; an integer width one
    call a merge (``one_call``: ARGMAX on one, ARGMIN on the other). Each merge meets every
    op, direction, NaN mode and output type."""
    rng = np.random.default_rng(width * 100 + data_type.size)
    count = 32 * 16 * 3 + 5  # several tiles a workgroup, the last block ragged
    x = tie_values(data_type, (count, width), rng, pool_size=3)
    x[:5] = x[5, 0]  # rows all equal
    if data_type.is_float:
        x[5] = np.nan
    case = ROWS_CASES.index((data_type, width, blocks))
    key = 3 * case + fixture_index(request, "rows_device")
    calls = half_the_calls(data_type, key, hardmax=key % 2 == 0) if data_type.is_float else one_call(data_type, key)
    plan = plan_of(rows_device, calls[0][0], x, [1], calls[0][1])
    assert (plan.kernel, (plan.segment, plan.block_rows)) == ("reduce_rows", blocks)
    assert plan.row_stage == (blocks[1] > 1)  # workgroups of 32: every block of rows fits
    assert plan.prefetch == (fixture_index(request, "rows_device") == 2 and plan.row_stage)
    for op, kwargs in calls:
        assert_same(*run_both(op, x, 1, rows_device, **kwargs))


@pytest.mark.parametrize("data_type, staged", [(DataType.FLOAT32, True), (DataType.FLOAT16, True), (DataType.INT8, False)],
                         ids=lambda v: getattr(v, "name", str(v)))
def test_short_rows_in_default_workgroups(device, data_type, staged):
    """The default tuning (workgroups of 128 for several rows a thread): rows of 3 FLOAT32 and
    FLOAT16 (4 and 8 a thread) store through workgroup memory, INT8 (16 a thread) would not fit
    and each thread stores its own; a ragged last tile either way."""
    x = tie_values(data_type, (256 * 4 * 3 + 7, 3), np.random.default_rng(data_type.size), pool_size=3)
    plan = device.compile(ArgMaxOperatorDesc(TensorDesc(data_type, x.shape), axes=[1])).plan
    assert (plan.kernel, plan.workgroup_size, plan.row_stage, plan.prefetch) == ("reduce_rows", 128, staged, staged)
    assert plan.block_rows > 1
    for op, direction in itertools.product(["argmax", "argmin"], ["increasing", "decreasing"]):
        assert_same(*run_both(op, x, 1, device, axis_direction=direction))
    if data_type.is_float:
        assert_same(*run_both("hardmax", x, 1, device))


def test_short_rows_write_nothing_past_the_last(rows_device):
    """The last block's rows beyond the tensor are folded but not stored: the output's
    memory past its last element (here inside its buffer) keeps its zeros."""
    x = tie_values(DataType.FLOAT32, (45, 3), np.random.default_rng(6))  # blocks of 4 rows: 3 past the end
    out = TensorDesc("UINT32", (45, 1), total_tensor_size_in_bytes=4 * 64)
    desc = ArgMaxOperatorDesc(TensorDesc("FLOAT32", x.shape), out, axes=[1], axis_direction="DECREASING")
    compiled = rows_device.compile(desc)
    assert compiled.plan.kernel == "reduce_rows"
    result = rows_device.empty(out)
    compiled.run(rows_device.upload(x), result)
    raw = np.frombuffer(rows_device.runner.transfers.read(result._buffer, 4 * 64), np.uint32)
    assert raw[:45].tolist() == oracle.evaluate(desc, x).ravel().tolist()
    assert not raw[45:].any()


# --- a split in one dispatch: work items race in 64-bit atomics (store_race.wgsl) -----


@pytest.fixture(scope="module", params=["workgroup-chunks", "segment-chunks"])
def race_device(request):
    """Splits small enough to race: a chunk a workgroup of 32 threads, or chunks of segments
    of 4 threads, several to a workgroup."""
    from dmlgpu.plan import Tuning

    loads = {"workgroup-chunks": 1, "segment-chunks": 64}[request.param]
    return dmlgpu.Device(tuning=Tuning(workgroup_size=32, loads_per_thread=loads, target_workgroups=16,
                                       min_chunk_per_lane=1, min_chunk_per_lane_single=1, rows_max_bytes=0))


def race_plan(device, x, axes=(1,), call=("argmax", {})):
    plan = plan_of(device, call[0], x, axes, call[1])
    assert plan.split > 1 and plan.race == device.runner.capabilities.int64_atomics
    assert device.runner.capabilities.int64_atomics or "lavapipe" not in device.name.lower()
    return plan


RACE_TYPES = [DataType.FLOAT32, DataType.FLOAT16, DataType.INT8, DataType.UINT32]


@pytest.mark.parametrize("data_type", RACE_TYPES, ids=lambda t: t.name)
def test_racing_split(request, race_device, data_type):
    """Maxima at both ends of every chunk (ties across chunks in both directions), rows of
    ties and special values, equal rows; half the calls on each chunking
    (``half_the_calls``, keyed by chunking + type), the other half on the other, so each
    type meets every op and direction, and each chunking NaN in both modes and every output
    type."""
    rng = np.random.default_rng(data_type.size)
    x = hard_rows(data_type, 1024 // data_type.size * 4, rng)
    calls = half_the_calls(data_type, fixture_index(request, "race_device") + RACE_TYPES.index(data_type))
    chunk = race_plan(race_device, x, call=calls[0]).chunk
    edges = np.arange(0, x.shape[1], chunk)
    x[0, :] = x[0, 1]
    x[0, np.concatenate([edges, edges[1:] - 1])] = value_pool(data_type)[-1 if data_type.is_float else 5]
    for op, kwargs in calls:
        assert_same(*run_both(op, x, 1, race_device, **kwargs))


def test_racing_split_leaves_its_words_ready_for_the_next_call(race_device):
    """Each dispatch resets the words it raced in: repeated runs, timed runs and new data
    all see clean words."""
    rng = np.random.default_rng(9)
    x = rng.standard_normal((3, 4000)).astype(np.float32)
    race_plan(race_device, x)
    compiled = race_device.compile(ArgMaxOperatorDesc(TensorDesc("FLOAT32", x.shape), axes=[1]))
    source, result = race_device.upload(x), race_device.empty(compiled.output_desc)
    operator_gpu_times(compiled, source, result, repeats=3)
    for _ in range(2):
        compiled.run(source, result)
    assert result.numpy().ravel().tolist() == np.argmax(x, axis=1).tolist()
    y = -x  # a smaller maximum than the last call's: a stale word would win
    assert compiled(y).ravel().tolist() == np.argmax(y, axis=1).tolist()


# --- columns: a quad of outputs a thread, split (reduce_columns) ---------------------------


COLUMN_TUNINGS = {  # columns_interleave, columns_unroll, race (where the adapter can), columns_lanes
    "runs": (False, 1, True, 1), "runs-unroll2": (False, 2, True, 1), "interleaved": (True, 1, True, 1),
    "interleaved-unroll3": (True, 3, True, 1), "interleaved-unroll2-merge-pass": (True, 2, False, 1),
    "interleaved-lanes4": (True, 2, True, 4), "runs-unroll3-lanes8": (False, 3, True, 8),
    "interleaved-lanes2-merge-pass": (True, 1, False, 2),
}


@pytest.fixture(scope="module", params=list(COLUMN_TUNINGS))
def columns_device(request):
    """290 rows in 7 chunks of 42 (41 or 42 rows when they interleave) and a last one of 38:
    walks of 2 or 3 rows a step end on ragged steps, and the last chunk is short; the chunks
    race to merge (store_race.wgsl) or leave their pairs to a merge pass. With lanes, a chunk's
    rows are shared by 2, 4 or 8 threads, whose pairs meet in workgroup memory, and the last
    workgroup holds fewer work items than it has room for (28 items, 32 / lanes a workgroup)."""
    from dmlgpu.plan import Tuning

    interleave, unroll, race, lanes = COLUMN_TUNINGS[request.param]
    return dmlgpu.Device(tuning=Tuning(workgroup_size=32, target_threads=64 * lanes, min_chunk_thread=40 // lanes,
                                       columns_interleave=interleave, columns_unroll=unroll,
                                       race_max_chunks=4096 if race else 0, columns_lanes=lanes))


@pytest.mark.parametrize("data_type", SMALL_TYPES, ids=lambda t: t.name)
def test_split_columns(request, columns_device, data_type):
    """Each column one of hard_rows's: ties and specials, rising, falling, equal, extremes,
    signed zeros, NaN; split as the fixture says. Every tuning runs every type, keyed
    by tuning + type: a float case ARGMAX and ARGMIN in opposite directions and NaN modes
    (``half_the_calls``), HARDMAX1 on every other key; an integer case one call
    (``one_call``); so that each tuning and each type meets every op, direction, NaN mode and
    output type. The same calls then run on random columns, sharing their shaders."""
    rng = np.random.default_rng(zlib.crc32(b"columns" + data_type.name.encode()))
    rows = hard_rows(data_type, 290, rng)
    per_quad = 16 // data_type.size
    x = rows[rng.permutation(np.arange(4 * per_quad) % len(rows))].T.copy()  # (290, 4 quads of columns)
    key = fixture_index(request, "columns_device") + SMALL_TYPES.index(data_type)
    calls = half_the_calls(data_type, key, hardmax=key % 2 == 0) if data_type.is_float else one_call(data_type, key)
    plan = plan_of(columns_device, calls[0][0], x, [0], calls[0][1])
    assert (plan.kernel, plan.split, plan.chunk) == ("reduce_columns", 7, 42)
    tuning = columns_device.tuning
    assert plan.race == (tuning.race_max_chunks > 0 and columns_device.runner.capabilities.int64_atomics)
    assert (plan.interleave, plan.column_unroll) == (tuning.columns_interleave, tuning.columns_unroll)
    assert plan.segment == tuning.columns_lanes
    # Random columns, where the bests climb
    noise = rng.standard_t(3, x.shape) * (50 if data_type.is_float else 2**(8 * data_type.size))
    noise = noise.astype(data_type.numpy) if data_type.is_float else noise.astype(np.int64).astype(data_type.numpy)
    for op, kwargs in calls:
        assert_same(*run_both(op, x, 0, columns_device, **kwargs))
        if op != "hardmax":
            assert_same(*run_both(op, noise, 0, columns_device, **kwargs))


@pytest.mark.parametrize("data_type", [t for t in DataType if t.size <= 4], ids=lambda t: t.name)
def test_unsplit_columns_of_a_middle_axis(device, data_type):
    """A middle axis reduced as seg_classes is, unsplit, a thread a quad of outputs: their
    offsets step from the first output's, along packed outputs and outputs two elements
    apart; 1, 2 or 4 elements a word; every op, direction and NaN mode, each type half the
    (op, direction) pairs (``half_the_calls``, keyed by type), its neighbour the other half."""
    rng = np.random.default_rng(zlib.crc32(b"middle" + data_type.name.encode()))
    per_quad = 16 // data_type.size
    width = 2 * per_quad
    rows = hard_rows(data_type, 21, rng)  # (rows, 21): each becomes a column
    x = rows[rng.permutation(np.arange(3 * width) % len(rows))].T.reshape(21, 3, width)
    x = np.ascontiguousarray(np.moveaxis(x, 0, 1))  # (3, 21, width): axis 1 reduced
    for op, kwargs in half_the_calls(data_type, SMALL_TYPES.index(data_type)):
        nan = {"nan_mode": kwargs.pop("nan_mode")} if data_type.is_float else {}
        if op == "hardmax":
            descs = [ActivationHardmax1OperatorDesc(TensorDesc(data_type, x.shape), axes=[1])]
            want = oracle.hardmax(x, 1, **nan)
        else:
            direction, out_type = kwargs["axis_direction"], kwargs["output_data_type"]
            descs = [cls(TensorDesc(data_type, x.shape), TensorDesc(out_type.upper(), (3, 1, width), strides),
                         axes=[1], axis_direction=direction)
                     for cls in [{"argmax": ArgMaxOperatorDesc, "argmin": ArgMinOperatorDesc}[op]]
                     for strides in (None, (2 * width + 4, 2 * width + 4, 2))]
            want = getattr(oracle, op)(x, 1, axis_direction=direction, output_data_type=out_type, **nan)
        for desc in descs:
            compiled = device.compile(desc, **nan)
            assert (compiled.plan.kernel, compiled.plan.split) == ("reduce_columns", 1)
            assert_same(compiled.run(device.upload(x)).numpy(), want)


def test_racing_words_start_at_zero_even_in_a_pooled_buffer(device):
    """A racing plan's words must start at zero: a buffer from the pool holds old bytes."""
    dirty = device.runner.memory.storage(16)
    device.runner.transfers.write(dirty, np.full(16, 0xFF, np.uint8))
    device.runner.memory.free(dirty)  # the next 16-byte storage comes from the pool, all ones
    x = np.random.default_rng(7).integers(0, 60000, 38, dtype=np.uint16)
    compiled = device.compile(ArgMaxOperatorDesc(TensorDesc("UINT16", (38,)), axes=[0]))
    assert compiled.plan.race, "this case should merge its split in one dispatch on this adapter"
    for _ in range(3):
        assert compiled(x).item() == np.argmax(x)
