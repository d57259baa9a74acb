"""FLOAT64, NumPy's default type, reduced exactly (issue 38): the GPU held to the oracle and to
NumPy on adversarial doubles, on both 64-bit key paths (native u64 and two 32-bit words), cut
into pieces beyond one binding, on the runner's public path in this process as well as the
default one, and through every surface that takes it: ``dmlgpu.argmax`` and descriptors
(FLOAT64 there being an extension beyond DirectML), ``dmlgpu.numpy``, ``np.argmax`` on a
resident ``Tensor``, ``dmlgpu.dask.numpy`` and the ONNX backend (DOUBLE).

The adversarial values: both zeros, subnormals (the smallest, the largest), the smallest
normal, values equal once rounded to float32 but not as doubles, values whose bits differ
only in the low 32-bit word, the largest finite values, both infinities, and NaN of both
signs with payloads in either word (a quiet NaN, a signalling one whose payload is a single
bit of the low word, one whose payload lies only in the high word). Arrays are built from
their bits, so that no NaN payload is changed on the way.
"""

from __future__ import annotations

import os
import zlib

import numpy as np
import pytest

import dmlgpu
import dmlgpu.numpy as dnp
from dmlgpu import layout, oracle
from dmlgpu.desc import ActivationHardmax1OperatorDesc, ArgMaxOperatorDesc, ArgMinOperatorDesc, TensorDesc
from dmlgpu.plan import Tuning

from _support import fixture_index

BITS = [
    0x0000000000000000, 0x8000000000000000,  # +0.0, -0.0: a tie
    0x0000000000000001, 0x8000000000000001,  # the smallest subnormals
    0x000FFFFFFFFFFFFF, 0x800FFFFFFFFFFFFF,  # the largest subnormals
    0x0010000000000000, 0x8010000000000000,  # the smallest normals
    0x3FF0000000000000, 0xBFF0000000000000,  # +-1.0
    0x3FF0000000000001, 0xBFF0000000000001,  # 1 + 2^-52: 1.0 as float32
    0x3FF0000000000800, 0x3FF0000010000000,  # 1 + 2^-41, 1 + 2^-24: 1.0 as float32 too
    0x4000000000000000, 0x40000000FFFFFFFF, 0x4000000100000000,  # 2.0 and neighbours a word apart
    0xC0000000FFFFFFFF, 0xC000000100000000,
    0x7FEFFFFFFFFFFFFF, 0xFFEFFFFFFFFFFFFF,  # +-max
    0x7FF0000000000000, 0xFFF0000000000000,  # +-inf
    0x7FF8000000000000, 0xFFF8000000000000,  # quiet NaN, both signs
    0x7FF0000000000001, 0xFFF0000000000001,  # signalling NaN: one bit of the low word
    0x7FF0000100000000, 0x7FFFFFFFFFFFFFFF, 0xFFFFFFFFFFFFFFFF,  # payload in the high word only; all ones
]
POOL = np.array(BITS, np.uint64).view(np.float64)
NAN_MODES = ("ignore", "propagate")
DIRECTIONS = ("increasing", "decreasing")


def adversarial(shape, rng: np.random.Generator, size: int = 4) -> np.ndarray:
    """Values from ``size`` entries of the pool (ties on purpose), as their bits."""
    chosen = rng.choice(np.arange(len(BITS)), size=size, replace=False)
    return POOL[rng.choice(chosen, size=shape)]


def same_bits(got: np.ndarray, want: np.ndarray) -> None:
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got.view(f"u{got.itemsize}"), want.view(f"u{want.itemsize}"))


def all_answers(x: np.ndarray, axes, device, turns=range(4)) -> None:
    """ARGMAX and ARGMIN in both directions and both NaN modes, and HARDMAX, as the oracle has
    them: the calls of each of ``turns`` (0 to 3). A turn is ARGMAX, ARGMIN in the other
    direction and the other NaN mode, and HARDMAX, each a shader of its own (each costs a
    compile): any turn holds both operators, both directions and both NaN modes; the four every
    combination."""
    dense = np.ascontiguousarray(x)
    for turn in turns:
        d, n = turn % 2, turn // 2 % 2
        for op, direction, nan_mode in [("argmax", DIRECTIONS[d], NAN_MODES[n]),
                                        ("argmin", DIRECTIONS[1 - d], NAN_MODES[1 - n])]:
            got = getattr(dmlgpu, op)(x, axes, axis_direction=direction, nan_mode=nan_mode, device=device,
                                      output_data_type="int64")
            same_bits(got, getattr(oracle, op)(dense, axes, axis_direction=direction, nan_mode=nan_mode,
                                               output_data_type="int64"))
        nan_mode = NAN_MODES[turn % 2]
        same_bits(dmlgpu.hardmax(x, axes, nan_mode=nan_mode, device=device), oracle.hardmax(dense, axes, nan_mode=nan_mode))


def two_turns(key: int) -> tuple:
    """Turn ``key`` (mod 4) and the turn 3 - ``key``: either pair gives each operator both
    directions and both NaN modes (HARDMAX both NaN modes), and consecutive keys between them
    every combination of each operator's. Tests over both 64-bit paths give the first to the
    native path and the second to the words, so that each path meets every turn too."""
    return key % 4, (3 - key) % 4


def test_the_pool_holds_what_it_says():
    bits = POOL.view(np.uint64)
    assert np.isnan(POOL).sum() == 7 and (np.signbit(POOL) & np.isnan(POOL)).sum() == 3
    assert POOL[0] == POOL[1] and bits[0] != bits[1]
    assert np.float32(POOL[8]) == np.float32(POOL[10]) == np.float32(POOL[12]) == np.float32(POOL[13])
    assert len(np.unique(POOL[[8, 10, 12, 13]])) == 4
    assert (bits[14] >> np.uint64(32)) == (bits[15] >> np.uint64(32)) and bits[14] != bits[15]


# --- the oracle's answers on both key paths, every kernel the planner gives FLOAT64 ---------

SHAPES = [
    ((37,), (0,), "packed"),  # one row: two doubles a 16-byte load, a ragged tail
    ((3, 302), (1,), "packed"),
    ((6, 2), (1,), "packed"),  # rows of one load: the pair within it decides
    ((4, 6, 10), (0, 2), "packed"),  # loads within the rows of several reduced axes
    ((301, 5), (0,), "packed"),  # outer axis: a thread an output, 8-byte loads
    ((7, 40), (1,), "odd rows"),  # rows that start off a 16-byte boundary: 8-byte loads
    ((9, 30), (0, 1), "transposed"),
]


def laid_out(x: np.ndarray, kind: str) -> np.ndarray:
    if kind == "odd rows":  # rows 41 doubles apart
        big = np.zeros((x.shape[0], x.shape[1] + 1))
        big[:, :-1] = x
        return big[:, :-1]
    if kind == "transposed":
        return np.ascontiguousarray(x.T).T
    return x


@pytest.mark.parametrize("shape, axes, kind", SHAPES, ids=[f"{s}-ax{a}-{k}" for s, a, k in SHAPES])
def test_adversarial_doubles_against_the_oracle(request, any_device, shape, axes, kind):
    """Each layout (its kernel and loader) with both directions and both NaN modes of each
    operator over its two 64-bit paths, a turn each (``two_turns``); the turns rotate over the
    layouts, so that each path meets every combination."""
    rng = np.random.default_rng(zlib.crc32(repr((shape, kind)).encode()))
    turn = two_turns(SHAPES.index((shape, axes, kind)))[fixture_index(request, "any_device")]
    for size in (3, len(BITS)):
        all_answers(laid_out(adversarial(shape, rng, size), kind), axes, any_device, (turn,))


@pytest.fixture(scope="module", params=["native", "words"])
def skipping(request):
    """Every walk over 64-bit quads tests them against the pooled best first (skip_min_quads=1)."""
    device = dmlgpu.Device(int64=None if request.param == "native" else False, tuning=Tuning(skip_min_quads=1))
    yield device
    device.close()


@pytest.mark.parametrize("data_type", ["float64", "int64", "uint64"])
def test_the_skip_test_of_64_bit_walks(request, skipping, data_type):
    """Quads skipped on their high words never hide a winner: random rows, rows whose best grows
    with every quad (the limit moves each round), ties in the high word that the low word
    decides, zeros of both signs, NaN of the other sign under propagate, and the integers'
    extremes, in long rows that split; the plan's skip test is on. Each operator in both
    directions, and on doubles in both NaN modes (half the combinations, every pair of them);
    the ragged tail and the long row a turn a 64-bit path (``two_turns``)."""
    rng = np.random.default_rng(zlib.crc32(data_type.encode()))
    dtype = np.dtype(data_type)
    if dtype.kind == "f":
        rows = [rng.standard_normal(4000), np.sort(rng.standard_normal(4000)), -np.sort(rng.standard_normal(4000)),
                adversarial(4000, rng, 6), adversarial(4000, rng, len(BITS)),
                np.array(BITS[14:17] * 1333 + [0], np.uint64).view(np.float64)]  # 2.0 and its neighbours a word apart
        rows[0][rng.integers(4000, size=3)] = POOL[24]  # negative NaN among numbers
        rows.append(np.where(rng.random(4000) < 0.5, 0.0, -0.0) - (rng.random(4000) < 0.5))  # zeros tie, -0.0 last
        rows[-1][[0, -2, -1]] = 0.0, -1.0, -0.0  # the last quad: -0.0 beside a loser
    else:
        info = np.iinfo(dtype)
        near = np.array([info.max, info.max - 1, info.max - 2**32, info.min, info.min + 1, 2**32, 2**32 - 1], dtype)
        rows = [rng.integers(info.min, info.max, 4000, dtype, endpoint=True), np.sort(rng.integers(0, 2**40, 4000)),
                rng.choice(near, 4000)]
    x = np.stack([np.asarray(r).astype(dtype) for r in rows])
    assert skipping.compile(ArgMaxOperatorDesc(layout.describe(x)[0], axes=[1])).plan.skip_test
    for op in ("argmax", "argmin"):
        for direction in DIRECTIONS:
            # a float's NaN mode alternates with the operator and direction: each operator and
            # each direction meet both NaN modes
            nan_mode = NAN_MODES[(op == "argmin") ^ (direction == "decreasing")] if dtype.kind == "f" else "ignore"
            got = getattr(dmlgpu, op)(x, 1, axis_direction=direction, nan_mode=nan_mode, device=skipping)
            same_bits(got, getattr(oracle, op)(x, 1, axis_direction=direction, nan_mode=nan_mode))
    if dtype.kind == "f":
        words = fixture_index(request, "skipping")
        all_answers(x[:, :2001], (1,), skipping, (two_turns(0)[words],))  # a ragged tail
        all_answers(x.reshape(1, -1), (1,), skipping, (two_turns(1)[words],))  # one long row, split into chunks


def test_the_planner_reads_two_doubles_a_load_where_rows_allow(device):
    """Contiguous rows aligned to 16 bytes: load_pair_quads; otherwise 8-byte loads."""
    def loader(shape, axes, kind="packed"):
        x = laid_out(np.zeros(shape), kind)
        return device.compile(ArgMaxOperatorDesc(layout.describe(x)[0], axes=axes)).plan.loader

    assert loader((3, 302), (1,)) == loader((4, 6, 10), (0, 2)) == loader((37,), (0,)) == "load_pair_quads"
    assert loader((7, 40), (1,), "odd rows") == loader((3, 301), (1,)) == loader((4, 6, 9), (0, 2)) == "load_pairs"
    assert loader((301, 5), (0,)) == "load_pairs"


def test_every_bit_of_a_double_orders_it(any_device):
    """Rows of a double and the same with one bit flipped, for each of the 64 bits, of either
    sign and exponent: each pair is ordered by that bit alone, whichever word holds it."""
    rng = np.random.default_rng(64)
    base = rng.standard_normal(8) * np.array([1, -1, 1e-310, -1e-310, 1e300, -1e300, 3, -3])
    bits = base.view(np.uint64)
    rows = [[b, b ^ np.uint64(1 << k)] for b in bits for k in range(64)]
    x = np.array(rows, np.uint64).view(np.float64)
    all_answers(x, (1,), any_device)
    all_answers(x[:, ::-1].copy(), (1,), any_device)


def test_float32_would_give_other_answers(any_device):
    """What the issue means by 'casting is not an answer': these doubles are all 1.0 as
    float32, where the first of them would win."""
    x = np.array([1.0, 1 + 2**-41, 1 + 2**-40, 1 + 2**-52, 1 + 2**-40, 1.0])
    assert np.argmax(x.astype(np.float32)) == 0 and np.argmin(x.astype(np.float32)) == 0
    assert dmlgpu.argmax(x, 0, device=any_device)[0] == 2
    assert dmlgpu.argmax(x, 0, axis_direction="decreasing", device=any_device)[0] == 4
    assert dmlgpu.argmin(-x, 0, device=any_device)[0] == 2
    assert dmlgpu.argmin(x, 0, axis_direction="decreasing", device=any_device)[0] == 5


def test_nan_and_signed_zero_by_numpys_rules(any_device):
    """NumPy's rules in words: NaN of either sign or payload propagates in argmax and argmin
    (the first one), is skipped otherwise; -0.0 ties with +0.0, the first index winning."""
    nan_low, nan_neg = POOL[25], POOL[24]
    x = np.array([-0.0, 0.0, -5e-324, nan_low, 7.0, nan_neg])
    assert dmlgpu.argmax(x, 0, nan_mode="propagate", device=any_device)[0] == 3
    assert dmlgpu.argmin(x, 0, nan_mode="propagate", axis_direction="decreasing", device=any_device)[0] == 5
    assert dmlgpu.argmax(x, 0, device=any_device)[0] == 4
    assert dmlgpu.argmin(x, 0, device=any_device)[0] == 2
    zeros = np.array([-0.0, 0.0, -0.0])
    assert dmlgpu.argmax(zeros, 0, device=any_device)[0] == 0 and dmlgpu.argmin(zeros, 0, device=any_device)[0] == 0


# --- beyond one binding: limits shrunk so that small tensors are cut into pieces ------------

@pytest.fixture(scope="module", params=[True, False], ids=["native", "words"])
def small_limits(request):
    """Binds 4 KiB (512 doubles) and holds 16 KiB a buffer; pieces split too."""
    device = dmlgpu.Device(int64=None if request.param else False, smaller={"max_storage_binding": 4096, "max_buffer": 16384},
                           tuning=Tuning(workgroup_size=32, target_workgroups=8, min_chunk_per_lane=2,
                                         min_chunk_per_lane_single=2, target_threads=256, min_chunk_thread=8,
                                         merge_workgroup_above=16))
    yield device
    device.close()


PIECES = [
    ((3000,), (0,), False, True),  # one output: pairs from every piece, merged
    ((700, 6), (1,), False, False),  # rows: independent pieces
    ((2, 1300), (1,), False, True),  # one row beyond a binding
    ((40, 50), (0, 1), True, True),  # the outermost axis is the last reduced
    ((2500, 3), (0,), False, True),  # columns cut along the reduced axis
]


@pytest.mark.parametrize("shape, axes, transposed, merges", PIECES)
def test_pieces_beyond_one_binding(request, small_limits, shape, axes, transposed, merges):
    """Each cut with both directions and both NaN modes of each operator over its two 64-bit
    paths, a turn each (``two_turns``), rotating over the cuts; and ARGMIN of a resident tensor."""
    rng = np.random.default_rng(zlib.crc32(repr(shape).encode()))
    x = adversarial(shape[::-1] if transposed else shape, rng, 3)  # ties across pieces too
    x = x.T if transposed else x
    desc = ArgMaxOperatorDesc(layout.describe(x)[0], axes=axes)
    schedule = small_limits.compile(desc).schedule
    assert len(schedule.pieces) > 1 and (schedule.merges > 0) == merges
    turn = two_turns(PIECES.index((shape, axes, transposed, merges)))[fixture_index(request, "small_limits")]
    all_answers(x, axes, small_limits, (turn,))
    resident = small_limits.upload(x)
    assert len(resident._buffers) > 1 or x.nbytes <= 16384
    same_bits(dmlgpu.argmin(resident, axes, nan_mode="propagate").numpy(),
              oracle.argmin(np.ascontiguousarray(x), axes, nan_mode="propagate"))


def test_ties_straddling_pieces(small_limits):
    x = np.zeros(3000)
    x[[5, 1100, 2999]] = 1 + 2**-52  # equal maxima in different pieces, 1.0 as float32
    assert dmlgpu.argmax(x, 0, device=small_limits).item() == 5
    assert dmlgpu.argmax(x, 0, axis_direction="decreasing", device=small_limits).item() == 2999


# --- the runner's paths: small calls (kits), large ones, resident tensors ------------------

@pytest.fixture(scope="module")
def public_device():
    """The public path (wgpu-py's objects) in this process, beside the default device's path."""
    mp = pytest.MonkeyPatch()
    mp.setenv("DMLGPU_RUNNER", "public")
    device = dmlgpu.Device()
    mp.undo()
    assert device.runner.path.name == "public"
    yield device
    device.close()


@pytest.mark.parametrize("path", ["default", "public"])
def test_numpy_in_resident_and_large_on_each_path(device, public_device, path):
    dev = public_device if path == "public" else device
    rng = np.random.default_rng(5)
    small = adversarial((3, 1001), rng)
    large = rng.standard_normal((3, 300_000))  # 7 MiB: above a small call's 4 MiB
    large[1, 1234] = np.nan
    for x in (small, large):
        for op in ("argmax", "argmin"):
            same_bits(getattr(dmlgpu, op)(x, 1, nan_mode="propagate", device=dev, output_data_type=np.intp),
                      getattr(np, op)(x, axis=1, keepdims=True))
        t = dev.upload(x)
        assert t.desc.data_type.name == "FLOAT64"
        np.testing.assert_array_equal(t.numpy().view(np.uint64), x.view(np.uint64))  # the bits, NaN payloads too
        same_bits(dmlgpu.argmax(t, 1, nan_mode="propagate", output_data_type=np.intp).numpy(),
                  np.argmax(x, axis=1, keepdims=True))
        same_bits(dmlgpu.hardmax(t, 1).numpy(), oracle.hardmax(x, 1))
        t.release()


# --- every surface ---------------------------------------------------------------------------

def test_directml_surface_takes_float64_as_an_extension(device):
    """Descriptors take FLOAT64 (JSON too), HARDMAX writes FLOAT64; the DirectML tables do not list it."""
    desc = ArgMinOperatorDesc(TensorDesc("DML_TENSOR_DATA_TYPE_FLOAT64", (3, 4)), axes=[1])
    assert dmlgpu.operator_from_json(desc.to_json()) == desc
    assert desc.to_json()["Desc"]["InputTensor"]["DataType"] == "FLOAT64"
    x = adversarial((3, 4), np.random.default_rng(2))
    same_bits(device.compile(desc)(x), oracle.evaluate(desc, x))
    hard = ActivationHardmax1OperatorDesc(TensorDesc("FLOAT64", (3, 4)), axes=[0])
    assert hard.output_tensor.data_type.name == "FLOAT64"
    out = device.compile(hard)(x)
    assert out.dtype == np.float64 and set(np.unique(out)) <= {0.0, 1.0}
    same_bits(out, oracle.evaluate(hard, x))


def test_dmlgpu_numpy_is_numpy_on_doubles():
    rng = np.random.default_rng(6)
    for shape in [(1000,), (7, 130), (3, 4, 5)]:
        x = adversarial(shape, rng, 5)
        x.ravel()[rng.integers(x.size)] = 3.5  # a number in every array
        for axis in [None] + list(range(len(shape))):
            for op in ("argmax", "argmin"):
                got, want = getattr(dnp, op)(x, axis=axis), getattr(np, op)(x, axis=axis)
                assert type(got) is type(want) and np.array_equal(got, want), (op, shape, axis)
            finite = np.where(np.isnan(x).all(axis=axis, keepdims=True), 1.0, x)
            for op in ("nanargmax", "nanargmin"):
                got, want = getattr(dnp, op)(finite, axis=axis), getattr(np, op)(finite, axis=axis)
                assert type(got) is type(want) and np.array_equal(got, want), (op, shape, axis)
    with pytest.raises(ValueError, match="All-NaN slice encountered"):
        dnp.nanargmax(np.array([[1.0, 2.0], [np.nan, POOL[29]]]), axis=1)
    assert dnp.argmax(np.random.default_rng(0).random(1000)) == np.argmax(np.random.default_rng(0).random(1000))


def test_numpy_protocols_on_a_resident_float64_tensor(device):
    x = adversarial((6, 50), np.random.default_rng(7), 5)
    x[:, 0] = 1.0  # no slice of nothing but NaN
    t = device.upload(x)
    for fn in (np.argmax, np.argmin, np.nanargmax, np.nanargmin):
        got = fn(t, axis=1)
        assert isinstance(got, dmlgpu.Tensor)
        same_bits(np.asarray(got), fn(x, axis=1))
    t.release()


def test_dmlgpu_dask_numpy_is_dask_array_on_doubles(da):
    import dmlgpu.dask.numpy as ddn

    rng = np.random.default_rng(8)
    x = adversarial((9, 14), rng, 6)
    x[:, 3] = 2.0
    arr = da.from_array(x, chunks=(4, 5))
    for name in ("argmax", "argmin", "nanargmax", "nanargmin"):
        for axis in (None, 0, 1):
            ours = getattr(ddn, name)(arr, axis=axis)
            theirs = getattr(da, name)(arr, axis=axis)
            assert ours.dtype == theirs.dtype and ours.chunks == theirs.chunks
            same_bits(np.asarray(ours.compute()), np.asarray(getattr(np, name)(x, axis=axis)))


def test_onnx_double_argmax_argmin_hardmax():
    if os.environ.get("CI") == "true":
        import onnx  # CI must run it: a missing onnx is a failure, not a skip
    else:
        onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper

    import dmlgpu.onnx_backend as backend

    x = adversarial((4, 9), np.random.default_rng(9), 5)
    for op_type, attrs, want in [
        ("ArgMax", {"axis": 1, "keepdims": 0}, np.argmax(x, axis=1)),
        ("ArgMin", {"axis": 0, "select_last_index": 1}, oracle.argmin(x, 0, axis_direction="decreasing",
                                                                       nan_mode="propagate", output_data_type="int64")),
        ("Hardmax", {"axis": 1}, oracle.hardmax(x, 1, nan_mode="propagate")),
    ]:
        out_type = TensorProto.DOUBLE if op_type == "Hardmax" else TensorProto.INT64
        graph = helper.make_graph(
            [helper.make_node(op_type, ["x"], ["y"], **attrs)], "g",
            [helper.make_tensor_value_info("x", TensorProto.DOUBLE, list(x.shape))],
            [helper.make_tensor_value_info("y", out_type, list(want.shape))])
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
        onnx.checker.check_model(model)
        (got,) = backend.prepare(model).run([x])
        same_bits(got, want.astype(got.dtype))
