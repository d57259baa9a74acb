"""The NumPy oracle against the worked examples of docs/semantics.md, NumPy itself and hand-made edge cases."""

from __future__ import annotations

import itertools
import subprocess
import sys
import time

import numpy as np
import pytest

from dmlgpu import oracle
from dmlgpu.desc import (
    ActivationHardmax1OperatorDesc,
    ActivationHardmaxOperatorDesc,
    ArgMaxOperatorDesc,
    ReduceOperatorDesc,
    TensorDesc,
)
from dmlgpu.errors import DataError, DescriptorError
from dmlgpu.types import DataType, NanMode

NAN = np.nan
INT_TYPES = ["int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64"]
ALL_TYPES = ["float64", "float32", "float16", *INT_TYPES]


def last_index(x: np.ndarray, axis: int, numpy_arg) -> np.ndarray:
    """NumPy's arg-reduction with the last of equal extremes winning (DECREASING)."""
    flipped = numpy_arg(np.flip(x, axis), axis=axis, keepdims=True)
    return x.shape[axis] - 1 - flipped


# --- docs/semantics.md#worked-examples ---------------------------------------------------

SPEC_3X3 = np.array([[1, 2, 3], [3, 0, 4], [2, 5, 2]], np.float32)


@pytest.mark.parametrize(
    "op, axes, expected",
    [
        (oracle.argmax, [0], [[1, 2, 1]]),
        (oracle.argmax, [1], [[2], [2], [1]]),
        (oracle.argmax, [0, 1], [[7]]),
        (oracle.argmin, [0], [[0, 1, 2]]),
        (oracle.argmin, [1], [[0], [1], [0]]),
        (oracle.argmin, [0, 1], [[4]]),
    ],
)
def test_spec_index_examples(op, axes, expected):
    out = op(SPEC_3X3, axes)
    assert out.dtype == np.uint32
    np.testing.assert_array_equal(out, np.array(expected, np.uint32), strict=True)


SPEC_2X2X2 = np.array([[[12, 0], [-101, 11]], [[3, 234], [0, -101]]], np.float32)


@pytest.mark.parametrize(
    "axes, expected",
    [
        ([1], [[[1, 0], [0, 1]], [[1, 1], [0, 0]]]),
        ([0], [[[1, 0], [0, 1]], [[0, 1], [1, 0]]]),
        ([0, 2], [[[0, 0], [0, 1]], [[0, 1], [0, 0]]]),
    ],
)
def test_spec_hardmax_examples(axes, expected):
    np.testing.assert_array_equal(
        oracle.hardmax(SPEC_2X2X2, axes), np.array(expected, np.float32), strict=True
    )


@pytest.mark.parametrize(
    "op, values, increasing, decreasing",
    [(oracle.argmax, [3, 2, 1, 2, 3], 0, 4), (oracle.argmin, [1, 2, 3, 2, 1], 0, 4)],
)
@pytest.mark.parametrize("dtype", ALL_TYPES)
def test_spec_tie_examples(op, values, increasing, decreasing, dtype):
    x = np.array(values, dtype)
    assert op(x, 0).tolist() == [increasing]
    assert op(x, 0, axis_direction="decreasing").tolist() == [decreasing]


# --- agreement with NumPy where its semantics are the same ------------------------------


@pytest.mark.parametrize("dtype", ALL_TYPES)
@pytest.mark.parametrize("axis", [0, 1, 2])
def test_single_axis_matches_numpy(dtype, axis):
    rng = np.random.default_rng(axis)
    x = rng.integers(0, 5, size=(7, 6, 5)).astype(dtype)  # few values: many ties
    np.testing.assert_array_equal(oracle.argmax(x, axis), np.argmax(x, axis, keepdims=True))
    np.testing.assert_array_equal(oracle.argmin(x, axis), np.argmin(x, axis, keepdims=True))
    np.testing.assert_array_equal(
        oracle.argmax(x, axis, axis_direction="decreasing"), last_index(x, axis, np.argmax)
    )
    np.testing.assert_array_equal(
        oracle.argmin(x, axis, axis_direction="decreasing"), last_index(x, axis, np.argmin)
    )


@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_continuous_floats_match_numpy(dtype):
    x = np.random.default_rng(1).standard_normal((33, 65)).astype(dtype)
    for axis in (0, 1):
        np.testing.assert_array_equal(oracle.argmax(x, axis), np.argmax(x, axis, keepdims=True))
        np.testing.assert_array_equal(oracle.argmin(x, axis), np.argmin(x, axis, keepdims=True))


def nan_sprinkled(seed: int) -> np.ndarray:
    """Tied float32 values with a quarter NaN, and rows 0 and 1 entirely NaN."""
    rng = np.random.default_rng(seed)
    x = rng.integers(0, 4, size=(9, 12)).astype(np.float32)
    x[rng.random(x.shape) < 0.25] = NAN
    x[:2] = NAN
    return x


def test_propagate_increasing_matches_numpy():
    x = nan_sprinkled(2)
    for op, numpy_arg in [(oracle.argmax, np.argmax), (oracle.argmin, np.argmin)]:
        np.testing.assert_array_equal(
            op(x, 1, nan_mode="propagate"), numpy_arg(x, 1, keepdims=True)
        )


def test_ignore_increasing_matches_nanarg_where_a_number_is_present():
    x = nan_sprinkled(3)[2:]
    assert not np.isnan(x).all(axis=1).any()
    for op, numpy_arg in [(oracle.argmax, np.nanargmax), (oracle.argmin, np.nanargmin)]:
        np.testing.assert_array_equal(op(x, 1), numpy_arg(x, 1, keepdims=True))


# --- NaN ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "values, mode, direction, max_index, min_index",
    [
        ([1, NAN, 3, NAN], "ignore", "increasing", 2, 0),
        ([1, NAN, 3, NAN], "propagate", "increasing", 1, 1),
        ([1, NAN, 3, NAN], "propagate", "decreasing", 3, 3),
        ([NAN, 5, 2, 5, 2], "ignore", "increasing", 1, 2),
        ([NAN, 5, 2, 5, 2], "ignore", "decreasing", 3, 4),
        ([NAN, -np.inf, NAN], "ignore", "increasing", 1, 1),
        ([np.inf, NAN], "ignore", "decreasing", 0, 0),
        ([NAN, NAN, NAN], "ignore", "increasing", 0, 0),
        ([NAN, NAN, NAN], "ignore", "decreasing", 2, 2),
        ([NAN, NAN, NAN], "propagate", "increasing", 0, 0),
        ([NAN, NAN, NAN], "propagate", "decreasing", 2, 2),
    ],
)
@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_nan(values, mode, direction, max_index, min_index, dtype):
    x = np.array(values, dtype)
    assert oracle.argmax(x, 0, axis_direction=direction, nan_mode=mode).tolist() == [max_index]
    assert oracle.argmin(x, 0, axis_direction=direction, nan_mode=mode).tolist() == [min_index]


def test_nan_mode_accepts_the_enum_and_rejects_unknown_names():
    x = np.array([1, NAN, 3], np.float32)
    assert oracle.argmax(x, 0, nan_mode=NanMode.PROPAGATE).tolist() == [1]
    with pytest.raises(DescriptorError, match="nan_mode is 'numpy'"):
        oracle.argmax(x, 0, nan_mode="numpy")


def test_nan_mode_has_no_effect_on_integers():
    x = np.array([4, 1, 4], np.int32)
    assert oracle.argmax(x, 0, nan_mode="propagate").tolist() == [0]


@pytest.mark.parametrize(
    "mode, expected", [("ignore", [0, 0, 1, 0]), ("propagate", [0, 1, 0, 0])]
)
def test_hardmax_nan(mode, expected):
    x = np.array([[1, NAN, 3, NAN]], np.float32)
    assert oracle.hardmax(x, 1, nan_mode=mode).tolist() == [expected]


def test_hardmax_all_nan_marks_the_first():
    x = np.full((1, 3), NAN, np.float16)
    assert oracle.hardmax(x, 1).tolist() == [[1, 0, 0]]


# --- value edge cases ------------------------------------------------------------------


@pytest.mark.parametrize("dtype", ["float32", "float16"])
@pytest.mark.parametrize("values", [[-0.0, 0.0], [0.0, -0.0]])
def test_signed_zeros_tie(dtype, values):
    x = np.array(values, dtype)
    for op in (oracle.argmax, oracle.argmin):
        assert op(x, 0).tolist() == [0]
        assert op(x, 0, axis_direction="decreasing").tolist() == [1]


@pytest.mark.parametrize(
    "dtype, low, high",
    [("int64", 2**60, 2**60 + 1), ("uint64", 2**64 - 2, 2**64 - 1), ("int64", -(2**63), -(2**63) + 1)],
)
def test_64_bit_values_beyond_float_precision(dtype, low, high):
    assert float(low) == float(high)  # a float comparison could not tell them apart
    x = np.array([low, high, low, high], dtype)
    assert oracle.argmax(x, 0).tolist() == [1]
    assert oracle.argmax(x, 0, axis_direction="decreasing").tolist() == [3]
    assert oracle.argmin(x, 0).tolist() == [0]
    assert oracle.argmin(x, 0, axis_direction="decreasing").tolist() == [2]


@pytest.mark.parametrize("dtype", ["int8", "uint8", "int16", "uint16", "int32", "uint32"])
def test_integer_range_ends(dtype):
    info = np.iinfo(dtype)
    x = np.array([info.min, info.max, 0, info.min, info.max], dtype)
    assert oracle.argmax(x, 0).tolist() == [1]
    assert oracle.argmax(x, 0, axis_direction="decreasing").tolist() == [4]
    assert oracle.argmin(x, 0).tolist() == [0]
    assert oracle.argmin(x, 0, axis_direction="decreasing").tolist() == [3]


@pytest.mark.parametrize("dtype", ["float64", "float32", "float16"])
def test_subnormals_are_not_flushed(dtype):
    tiny = np.finfo(dtype).smallest_subnormal
    assert tiny != 0
    x = np.array([0, tiny, 0], dtype)
    assert oracle.argmax(x, 0).tolist() == [1]
    assert oracle.argmin(np.array([0, -tiny, 0], dtype), 0).tolist() == [1]
    assert oracle.argmin(x, 0, axis_direction="decreasing").tolist() == [2]


@pytest.mark.parametrize("dtype, bits", [("float64", [0x7FF0000000000001, 0xFFF0000000000001, 0x7FF0000100000000]),
                                         ("float32", [0x7F800001, 0xFF800001, 0x7F800100])])
def test_signalling_nan_beside_numbers(dtype, bits):
    """A NaN of any payload is skipped (or propagates) as any NaN. NumPy's own fmax reduction
    over columns returns NaN for fmax(inf, signalling NaN), so that the next number wins: the
    oracle must not lean on it."""
    u = np.dtype(dtype).str.replace("f", "u")
    for nan in np.array(bits, u).view(dtype):
        x = np.array([[np.inf, 1.0], [nan, 2.0], [1.0, 1.0]], dtype)
        assert oracle.argmax(x, 0).tolist() == [[0, 1]]
        assert oracle.argmin(-x, 0).tolist() == [[0, 1]]
        assert oracle.argmax(x, 0, nan_mode="propagate").tolist() == [[1, 1]]
        assert oracle.hardmax(x, 0)[:, 0].tolist() == [1, 0, 0]


def test_float16_values_one_ulp_apart():
    one_up = np.nextafter(np.float16(1), np.float16(2))
    x = np.array([1, one_up, 1], np.float16)
    assert oracle.argmax(x, 0).tolist() == [1]
    assert oracle.hardmax(x, 0).tolist() == [0, 1, 0]


# --- multi-axis index order --------------------------------------------------------------


def argmax_by_loop(x: np.ndarray) -> list[int]:
    """ARGMAX over axes {0, 2} of a 3-d array, INCREASING, written as plain loops."""
    out = []
    for j in range(x.shape[1]):
        best, best_index = None, None
        for flat, (i, k) in enumerate(itertools.product(range(x.shape[0]), range(x.shape[2]))):
            if best is None or x[i, j, k] > best:
                best, best_index = x[i, j, k], flat
        out.append(best_index)
    return out


@pytest.mark.parametrize("axes", [[0, 2], [2, 0]])
def test_multi_axis_flat_index_is_row_major_over_ascending_axes(axes):
    x = np.random.default_rng(4).integers(0, 6, size=(2, 3, 4)).astype(np.int16)
    out = oracle.argmax(x, axes)
    assert out.shape == (1, 3, 1)
    assert out.ravel().tolist() == argmax_by_loop(x)


def test_multi_axis_hardmax_marks_the_loop_position():
    x = np.random.default_rng(5).integers(0, 3, size=(2, 3, 4)).astype(np.float32)
    expected = np.zeros_like(x)
    for j, flat in enumerate(argmax_by_loop(x)):
        expected[flat // 4, j, flat % 4] = 1
    np.testing.assert_array_equal(oracle.hardmax(x, [0, 2]), expected, strict=True)


# --- evaluate() on descriptors -----------------------------------------------------------


def test_evaluate_accepts_every_descriptor_and_its_lowering():
    inp = TensorDesc("FLOAT32", (3, 3))
    expected_index = np.array([[2], [2], [1]], np.uint32)
    reduce = ReduceOperatorDesc("ARGMAX", inp, None, [1])
    np.testing.assert_array_equal(oracle.evaluate(reduce, SPEC_3X3), expected_index, strict=True)
    np.testing.assert_array_equal(
        oracle.evaluate(reduce.lower(), SPEC_3X3), expected_index, strict=True
    )
    legacy = oracle.evaluate(ActivationHardmaxOperatorDesc(inp), SPEC_3X3)
    hardmax1 = oracle.evaluate(ActivationHardmax1OperatorDesc(inp, None, [1]), SPEC_3X3)
    np.testing.assert_array_equal(legacy, hardmax1, strict=True)


@pytest.mark.parametrize("data_type", ["INT32", "UINT32", "INT64", "UINT64"])
def test_output_dtype_follows_the_output_descriptor(data_type):
    out = oracle.argmax(SPEC_3X3, [0, 1], output_data_type=data_type)
    assert out.dtype == DataType.parse(data_type, "t").numpy
    assert out.tolist() == [[7]]


def test_evaluate_refuses_data_that_does_not_match():
    desc = ArgMaxOperatorDesc(TensorDesc("FLOAT32", (3, 3)), None, [0])
    with pytest.raises(DataError, match=r"shape \(3, 4\).*\[3, 3\]"):
        oracle.evaluate(desc, np.zeros((3, 4), np.float32))
    with pytest.raises(DataError, match="dtype <f2.*FLOAT32"):
        oracle.evaluate(desc, np.zeros((3, 3), np.float16))


@pytest.mark.parametrize("axes", [-1, [0, -1], [2]])
def test_wrappers_pass_bad_axes_to_the_descriptor(axes):
    with pytest.raises(DescriptorError, match=r"axes\[\d\] is"):
        oracle.argmax(SPEC_3X3, axes)


def test_wrappers_accept_a_big_endian_array():
    assert oracle.argmax(SPEC_3X3.astype(">f4"), 1).ravel().tolist() == [2, 2, 1]


# --- view() ----------------------------------------------------------------------------


def test_view_with_padded_strides():
    desc = TensorDesc("FLOAT32", (2, 3), strides=(5, 1))
    buffer = np.arange(8, dtype=np.float32).tobytes()
    out = oracle.view(desc, buffer)
    np.testing.assert_array_equal(out, np.array([[0, 1, 2], [5, 6, 7]], np.float32), strict=True)


def test_view_with_a_broadcast_stride():
    desc = TensorDesc("INT16", (3, 4), strides=(0, 1))
    out = oracle.view(desc, bytearray(np.array([7, -8, 9, -10], np.int16).tobytes()))
    assert out.tolist() == [[7, -8, 9, -10]] * 3
    assert oracle.argmin(np.ascontiguousarray(out), 1).ravel().tolist() == [3, 3, 3]


def test_view_reads_any_buffer_kind_as_little_endian_bytes():
    values = np.array([1.5, -2.0], np.float32)
    desc = TensorDesc("FLOAT32", (2,))
    for buffer in (values.tobytes(), memoryview(values), values.view(np.uint32), values.view(np.uint8)):
        np.testing.assert_array_equal(oracle.view(desc, buffer), values, strict=True)


def test_view_is_read_only():
    out = oracle.view(TensorDesc("UINT8", (4,)), bytearray(4))
    with pytest.raises(ValueError):
        out[0] = 1


def test_view_of_eight_byte_elements_with_a_total_that_is_not_a_multiple_of_eight():
    desc = TensorDesc("UINT64", (1,), total_tensor_size_in_bytes=12)
    buffer = np.array([0xFFFFFFFF, 0xFFFFFFFF, 0], np.uint32)  # 12 bytes
    assert oracle.view(desc, buffer).tolist() == [2**64 - 1]


def test_view_refuses_a_buffer_smaller_than_the_descriptor():
    desc = TensorDesc("FLOAT32", (2, 3), strides=(5, 1))  # 8 elements: 32 bytes
    with pytest.raises(DataError, match="holds 28 bytes.*is 32"):
        oracle.view(desc, bytes(28))


# --- the module itself -------------------------------------------------------------------


def test_oracle_does_not_import_wgpu():
    code = "import sys, dmlgpu.oracle; sys.exit('wgpu' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code]).returncode == 0


@pytest.mark.parametrize("shape, axes", [((2**21, 2), [1]), ((2**22,), [0]), ((256, 128, 128), [0, 2])])
def test_a_few_million_elements_in_seconds_not_minutes(shape, axes):
    """The oracle stays vectorized (a loop over elements in Python would take minutes). A guard,
    not a speed target: about 0.3 s alone, 1.2 s was seen beside another worker on a loaded
    2-core machine, so the bound is 10 s."""
    x = np.random.default_rng(6).standard_normal(shape).astype(np.float32)
    start = time.perf_counter()
    oracle.argmax(x, axes, axis_direction="decreasing", nan_mode="propagate")
    oracle.hardmax(x, axes)
    assert time.perf_counter() - start < 10.0


# --- order_keys: the oracle's order as integers (dmlgpu.dask merges partial results by them)


def _by_keys(keys: np.ndarray, increasing: bool) -> np.ndarray:
    """Per column: the largest key, then the smallest (or largest) index among equal keys."""
    best = keys == keys.max(axis=0, keepdims=True)
    return np.argmax(best, axis=0) if increasing else keys.shape[0] - 1 - np.argmax(best[::-1], axis=0)


@pytest.mark.parametrize("dtype", ALL_TYPES)
@pytest.mark.parametrize("mode", ["ignore", "propagate"])
def test_order_keys_reduce_as_the_oracle_does(dtype, mode):
    rng = np.random.default_rng(7)
    info = np.iinfo(dtype) if dtype in INT_TYPES else np.finfo(dtype)
    special = [info.min, info.max, 0, 1]
    if dtype not in INT_TYPES:
        special += [-0.0, np.inf, -np.inf, NAN, NAN, info.smallest_subnormal, -info.smallest_subnormal]
    x = rng.choice(np.array(special, dtype), size=(12, 400))
    x[:, :5] = NAN if dtype not in INT_TYPES else x[:, :5]  # all-NaN columns
    for want_max, op in ((True, oracle.argmax), (False, oracle.argmin)):
        keys = oracle.order_keys(x, want_max=want_max, nan_mode=mode)
        assert keys.dtype == np.uint64 and keys.shape == x.shape
        for direction in ("increasing", "decreasing"):
            want = op(x, 0, axis_direction=direction, nan_mode=mode).ravel()
            np.testing.assert_array_equal(_by_keys(keys, direction == "increasing"), want)


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_order_keys_tie_exactly_the_equal_values(dtype):
    info = np.finfo(dtype)
    floats = np.array([-0.0, 0.0, NAN, -NAN, info.smallest_subnormal, -np.inf, np.inf, info.max], dtype)
    keys = oracle.order_keys(floats, want_max=True, nan_mode="ignore")
    assert keys[0] == keys[1] and keys[2] == keys[3] == 0 and len(set(keys.tolist())) == 6
    up = oracle.order_keys(floats, want_max=False, nan_mode="propagate")
    assert up[2] == up[3] > max(up[[0, 1, 4, 5, 6, 7]]) and up[6] == 1  # NaN above every number; +inf the least


def test_order_keys_of_64_bit_values():
    big = np.array([2**63 - 1, 2**63 - 2, -(2**63), -1], np.int64)  # beyond float precision
    assert oracle.order_keys(big, want_max=True).argsort().tolist() == [2, 3, 1, 0]
    assert oracle.order_keys(big.astype(">i8"), want_max=False).argsort().tolist() == [0, 1, 3, 2]
    doubles = np.array([1.0, np.nextafter(1.0, 2.0), -np.nextafter(1.0, 2.0), -1.0, 5e-324, -5e-324], np.float64)
    assert oracle.order_keys(doubles, want_max=True).argsort().tolist() == [2, 3, 5, 4, 0, 1]  # equal as float32
    with pytest.raises(TypeError, match="longdouble|float128"):
        oracle.order_keys(np.zeros(2, np.longdouble), want_max=True)
