"""Descriptor validation (docs/semantics.md), without a GPU.

Every rule is tested at its boundary: one value just inside (accepted) and one just
outside (refused). A refusal must be a ``DescriptorError`` whose message names the
field, the value given and the rule; an argument of the wrong kind is a ``TypeError``.
"""

from __future__ import annotations

import dataclasses
import json
import re

import numpy as np
import pytest

from dmlgpu.desc import (
    ActivationHardmax1OperatorDesc,
    ActivationHardmaxOperatorDesc,
    ArgMaxOperatorDesc,
    ArgMinOperatorDesc,
    ReduceOperatorDesc,
    TensorDesc,
    calc_buffer_tensor_size,
    lower,
    operator_from_json,
)
from dmlgpu.errors import DescriptorError
from dmlgpu.types import (
    INDEX_TYPE_CAPACITY,
    MAX_ELEMENTS,
    AxisDirection,
    DataType,
    FeatureLevel,
    ReduceFunction,
    TensorFlags,
)

#: DirectML's ten types of these operators, then FLOAT64, dmlgpu's extension beyond them.
ALL_TYPES = ["FLOAT32", "FLOAT16", "UINT32", "UINT16", "UINT8", "INT32", "INT16", "INT8", "UINT64", "INT64", "FLOAT64"]
TYPE_LIST = ", ".join(ALL_TYPES)
INDEX_TYPES = ["INT32", "UINT32", "INT64", "UINT64"]
NON_INDEX_TYPES = [t for t in ALL_TYPES if t not in INDEX_TYPES]


def rx(*parts: str) -> str:
    """A regex requiring each literal part, in this order, in one message."""
    return ".*".join(re.escape(p) for p in parts)


def t(data_type="FLOAT32", sizes=(2, 3, 4), **kw) -> TensorDesc:
    return TensorDesc(data_type, sizes, **kw)


def test_descriptor_error_is_a_value_error():
    assert issubclass(DescriptorError, ValueError)


def test_descriptors_are_frozen():
    """Validation cannot be bypassed by changing a field after construction."""
    desc = t()
    with pytest.raises(dataclasses.FrozenInstanceError):
        desc.sizes = (0,)
    op = ArgMaxOperatorDesc(desc, axes=[0])
    with pytest.raises(dataclasses.FrozenInstanceError):
        op.axes = (7,)


# --- section 1: TensorDesc ----------------------------------------------------------------

TENSOR_ACCEPTED = {
    "rank 1": dict(sizes=[1]),
    "rank 8": dict(sizes=[1] * 8),
    "rank 8, sizes 2": dict(sizes=[2] * 8),
    "size 1": dict(sizes=[3, 1]),
    "2^32-1 elements, two dims": dict(sizes=[65535, 65537]),
    "2^32-1 elements, one dim": dict(sizes=[2**32 - 1]),
    "2^32-1 elements, UINT8": dict(data_type="UINT8", sizes=[2**32 - 1]),
    "strides, same length": dict(sizes=[2, 3], strides=[3, 1]),
    "stride 0 (broadcast)": dict(sizes=[2, 3], strides=[0, 1]),
    "all strides 0": dict(sizes=[2, 3], strides=[0, 0]),
    "padded strides": dict(sizes=[2, 3], strides=[8, 2]),
    "total = calc": dict(sizes=[2, 3], total_tensor_size_in_bytes=24),
    "total = calc + 4": dict(sizes=[2, 3], total_tensor_size_in_bytes=28),
    "total not a multiple of the element size": dict(
        data_type="UINT64", sizes=[1], total_tensor_size_in_bytes=12),
    "alignment 0": dict(guaranteed_base_offset_alignment=0),
    "alignment = element size, FLOAT32": dict(guaranteed_base_offset_alignment=4),
    "alignment 8, FLOAT32": dict(guaranteed_base_offset_alignment=8),
    "alignment 256, FLOAT32": dict(guaranteed_base_offset_alignment=256),
    "alignment 1, UINT8": dict(data_type="UINT8", guaranteed_base_offset_alignment=1),
    "alignment 2, FLOAT16": dict(data_type="FLOAT16", guaranteed_base_offset_alignment=2),
    "alignment 8, INT64": dict(data_type="INT64", guaranteed_base_offset_alignment=8),
    "flags NONE": dict(flags="NONE"),
    "flags OWNED_BY_DML": dict(flags="OWNED_BY_DML"),
    "flags, DirectML spelling": dict(flags="DML_TENSOR_FLAG_OWNED_BY_DML"),
    **{f"data type {name}": dict(data_type=name) for name in ALL_TYPES},
}


@pytest.mark.parametrize("kw", TENSOR_ACCEPTED.values(), ids=TENSOR_ACCEPTED.keys())
def test_tensor_accepted(kw):
    kw = {"data_type": "FLOAT32", "sizes": [2, 3], **kw}
    desc = TensorDesc(**kw)
    assert desc.sizes == tuple(kw["sizes"])
    assert desc.rank == len(kw["sizes"])
    if "strides" in kw:
        assert desc.strides == tuple(kw["strides"])
    if "total_tensor_size_in_bytes" in kw:
        assert desc.total_tensor_size_in_bytes == kw["total_tensor_size_in_bytes"]


TENSOR_REFUSED = {
    "rank 0": (dict(sizes=[]), rx("sizes has 0 entries", "1 to 8")),
    "rank 9": (dict(sizes=[1] * 9), rx("sizes has 9 entries", "1 to 8")),
    "size 0": (dict(sizes=[2, 0]), rx("sizes[1] is 0", "at least 1")),
    "size 0 first": (dict(sizes=[0, 2]), rx("sizes[0] is 0", "at least 1")),
    "size -1": (dict(sizes=[-1]), rx("sizes[0] is -1", "at least 1")),
    "2^32 elements, two dims": (
        dict(sizes=[65536, 65536]), rx("sizes [65536, 65536]", "4294967296 elements", "4294967295")),
    "2^32 elements, one dim": (dict(sizes=[2**32]), rx("sizes [4294967296]", "4294967295")),
    "2^32 elements, UINT8": (dict(data_type="UINT8", sizes=[2**16, 2**16]), rx("4294967296 elements")),
    "strides too short": (dict(sizes=[2, 3], strides=[1]), rx("strides has 1 entries", "sizes has 2", "match")),
    "strides too long": (
        dict(sizes=[2, 3], strides=[3, 1, 1]), rx("strides has 3 entries", "sizes has 2", "match")),
    "strides empty": (dict(sizes=[2, 3], strides=[]), rx("strides has 0 entries", "sizes has 2")),
    "stride -1": (dict(sizes=[2, 3], strides=[3, -1]), rx("strides[1] is -1", "at least 0")),
    "stride -1 first": (dict(sizes=[2, 3], strides=[-1, 0]), rx("strides[0] is -1", "at least 0")),
    "total = calc - 4": (
        dict(sizes=[2, 3], total_tensor_size_in_bytes=20), rx("total_tensor_size_in_bytes is 20", "at least 24")),
    "total = calc - 1": (
        dict(sizes=[2, 3], total_tensor_size_in_bytes=23), rx("total_tensor_size_in_bytes is 23", "at least 24")),
    "total 0": (dict(sizes=[2, 3], total_tensor_size_in_bytes=0), rx("total_tensor_size_in_bytes is 0", "24")),
    "total below padded calc": (
        dict(sizes=[2, 3], strides=[4, 1], total_tensor_size_in_bytes=24),
        rx("total_tensor_size_in_bytes is 24", "at least 28")),
    "total = calc + 2": (
        dict(sizes=[2, 3], total_tensor_size_in_bytes=26), rx("total_tensor_size_in_bytes is 26", "multiple of 4")),
    "total = calc + 1": (
        dict(sizes=[2, 3], total_tensor_size_in_bytes=25), rx("total_tensor_size_in_bytes is 25", "multiple of 4")),
    "total UINT8 3 bytes": (
        dict(data_type="UINT8", sizes=[3], total_tensor_size_in_bytes=3),
        rx("total_tensor_size_in_bytes is 3", "at least 4")),
    "total UINT8 5 bytes": (
        dict(data_type="UINT8", sizes=[3], total_tensor_size_in_bytes=5),
        rx("total_tensor_size_in_bytes is 5", "multiple of 4")),
    "alignment 2, FLOAT32": (
        dict(guaranteed_base_offset_alignment=2),
        rx("guaranteed_base_offset_alignment is 2", "power of two", "element size (4)")),
    "alignment 1, FLOAT32": (
        dict(guaranteed_base_offset_alignment=1), rx("guaranteed_base_offset_alignment is 1", "element size (4)")),
    "alignment 1, FLOAT16": (
        dict(data_type="FLOAT16", guaranteed_base_offset_alignment=1),
        rx("guaranteed_base_offset_alignment is 1", "element size (2)")),
    "alignment 4, INT64": (
        dict(data_type="INT64", guaranteed_base_offset_alignment=4),
        rx("guaranteed_base_offset_alignment is 4", "element size (8)")),
    "alignment 12 (not a power of two)": (
        dict(guaranteed_base_offset_alignment=12), rx("guaranteed_base_offset_alignment is 12", "power of two")),
    "alignment 6 (not a power of two)": (
        dict(guaranteed_base_offset_alignment=6), rx("guaranteed_base_offset_alignment is 6", "power of two")),
    "alignment 3, UINT8 (not a power of two)": (
        dict(data_type="UINT8", guaranteed_base_offset_alignment=3),
        rx("guaranteed_base_offset_alignment is 3", "power of two")),
    "alignment -4": (
        dict(guaranteed_base_offset_alignment=-4), rx("guaranteed_base_offset_alignment is -4", "power of two")),
    "flags unknown": (dict(flags="BOGUS"), rx("flags is 'BOGUS'", "NONE, OWNED_BY_DML")),
    **{
        f"data type {name}": (dict(data_type=name), rx(f"data_type is '{name}'", f"one of {TYPE_LIST}"))
        for name in ["UINT4", "INT4", "DML_TENSOR_DATA_TYPE_UINT4", "float128", "bfloat16", "bool", ""]
    },
}


@pytest.mark.parametrize("kw, match", TENSOR_REFUSED.values(), ids=TENSOR_REFUSED.keys())
def test_tensor_refused(kw, match):
    kw = {"data_type": "FLOAT32", "sizes": [2, 3], **kw}
    with pytest.raises(DescriptorError, match=match):
        TensorDesc(**kw)


# calc_buffer_tensor_size: (data type, sizes, strides or None, bytes)
CALC_CASES = {
    "FLOAT32 packed": ("FLOAT32", [2, 3], None, 24),
    "FLOAT32 packed, explicit strides": ("FLOAT32", [2, 3], [3, 1], 24),
    "FLOAT32 padded rows": ("FLOAT32", [2, 3], [4, 1], 28),  # last index 1*4 + 2*1 = 6
    "FLOAT32 padded both": ("FLOAT32", [2, 3], [8, 2], 52),
    "FLOAT32 transposed": ("FLOAT32", [2, 3], [1, 2], 24),
    "FLOAT32 broadcast rows": ("FLOAT32", [4, 5], [0, 1], 20),
    "FLOAT32 broadcast cols": ("FLOAT32", [4, 5], [1, 0], 16),
    "FLOAT32 broadcast all": ("FLOAT32", [4, 5], [0, 0], 4),
    "FLOAT32 one element": ("FLOAT32", [1], None, 4),
    "FLOAT32 size-1 dim with a huge stride": ("FLOAT32", [1, 3], [1000, 1], 12),
    "UINT8 [1]": ("UINT8", [1], None, 4),
    "UINT8 [3]": ("UINT8", [3], None, 4),
    "UINT8 [4]": ("UINT8", [4], None, 4),
    "UINT8 [5]": ("UINT8", [5], None, 8),
    "UINT8 [2,3] packed": ("UINT8", [2, 3], [3, 1], 8),
    "INT8 broadcast": ("INT8", [7], [0], 4),
    "FLOAT16 [2]": ("FLOAT16", [2], None, 4),
    "FLOAT16 [3]": ("FLOAT16", [3], None, 8),
    "FLOAT16 strided [3]": ("FLOAT16", [3], [2], 12),  # (4 + 1) * 2 = 10 -> 12
    "INT16 [5]": ("INT16", [5], None, 12),
    "INT64 [3]": ("INT64", [3], None, 24),
    "UINT64 [1]": ("UINT64", [1], None, 8),
    "UINT64 strided": ("UINT64", [2, 2], [3, 1], 40),
    "FLOAT32 2^32-1 elements": ("FLOAT32", [2**32 - 1], None, 4 * (2**32 - 1)),
    "UINT8 2^32-1 elements": ("UINT8", [2**32 - 1], None, 2**32),
}


@pytest.mark.parametrize("data_type, sizes, strides, expected", CALC_CASES.values(), ids=CALC_CASES.keys())
def test_calc_buffer_tensor_size(data_type, sizes, strides, expected):
    assert calc_buffer_tensor_size(data_type, sizes, strides) == expected
    assert calc_buffer_tensor_size(DataType.parse(data_type, "data_type").value, sizes, strides) == expected
    assert TensorDesc(data_type, sizes, strides).total_tensor_size_in_bytes == expected


@pytest.mark.parametrize("data_type, sizes, strides, expected", CALC_CASES.values(), ids=CALC_CASES.keys())
def test_total_size_boundary_around_calc(data_type, sizes, strides, expected):
    """At calc and calc + 4: accepted. At calc - 1: too small. At calc + 2: not a multiple of 4."""
    for total in (expected, expected + 4):
        assert TensorDesc(data_type, sizes, strides, total_tensor_size_in_bytes=total).total_tensor_size_in_bytes == total
    with pytest.raises(DescriptorError, match=rx(f"total_tensor_size_in_bytes is {expected - 1}", f"at least {expected}")):
        TensorDesc(data_type, sizes, strides, total_tensor_size_in_bytes=expected - 1)
    with pytest.raises(DescriptorError, match=rx(f"total_tensor_size_in_bytes is {expected + 2}", "multiple of 4")):
        TensorDesc(data_type, sizes, strides, total_tensor_size_in_bytes=expected + 2)


@pytest.mark.parametrize("name", ALL_TYPES)
def test_alignment_boundary_per_type(name):
    """The smallest power of two at the element size is accepted; half of it, and 3x it, are not."""
    size = DataType.parse(name, "data_type").size
    for align in (0, size, 2 * size, 64):
        assert TensorDesc(name, [4], guaranteed_base_offset_alignment=align).guaranteed_base_offset_alignment == align
    refused = [3 * size] + ([size // 2] if size > 1 else [])
    for align in refused:
        with pytest.raises(DescriptorError, match=rx(f"guaranteed_base_offset_alignment is {align}", f"({size})")):
            TensorDesc(name, [4], guaranteed_base_offset_alignment=align)


def test_packed_strides_default():
    assert t(sizes=(2, 3, 4)).element_strides == (12, 4, 1)
    assert t(sizes=(2, 3, 4)).strides is None
    assert t(sizes=(2, 3, 4), strides=(1, 2, 6)).element_strides == (1, 2, 6)


# --- enum spellings -----------------------------------------------------------------------

@pytest.mark.parametrize("spelling", ["float32", "FLOAT32", "DML_TENSOR_DATA_TYPE_FLOAT32",
                                      "dml_tensor_data_type_float32", " Float32 ", DataType.FLOAT32])
def test_data_type_spellings(spelling):
    desc = TensorDesc(spelling, [2])
    assert desc.data_type is DataType.FLOAT32
    assert desc == TensorDesc(DataType.FLOAT32, [2])


@pytest.mark.parametrize("name", ALL_TYPES)
def test_every_data_type_in_every_spelling(name):
    member = DataType[name]
    for spelling in (name, name.lower(), f"DML_TENSOR_DATA_TYPE_{name}", member):
        assert DataType.parse(spelling, "data_type") is member


@pytest.mark.parametrize("spelling, member", [
    ("DECREASING", AxisDirection.DECREASING),
    ("decreasing", AxisDirection.DECREASING),
    ("DML_AXIS_DIRECTION_DECREASING", AxisDirection.DECREASING),
    (AxisDirection.DECREASING, AxisDirection.DECREASING),
    ("INCREASING", AxisDirection.INCREASING),
    ("DML_AXIS_DIRECTION_INCREASING", AxisDirection.INCREASING),
])
def test_axis_direction_spellings(spelling, member):
    desc = ArgMaxOperatorDesc(t(), axes=[1], axis_direction=spelling)
    assert desc.axis_direction is member
    assert desc == ArgMaxOperatorDesc(t(), axes=[1], axis_direction=member)


@pytest.mark.parametrize("spelling, member", [
    ("ARGMAX", ReduceFunction.ARGMAX),
    ("argmax", ReduceFunction.ARGMAX),
    ("DML_REDUCE_FUNCTION_ARGMAX", ReduceFunction.ARGMAX),
    (ReduceFunction.ARGMIN, ReduceFunction.ARGMIN),
    ("DML_REDUCE_FUNCTION_ARGMIN", ReduceFunction.ARGMIN),
])
def test_reduce_function_spellings(spelling, member):
    assert ReduceOperatorDesc(spelling, t(), axes=[0]).function is member


@pytest.mark.parametrize("spelling, member", [
    ("NONE", TensorFlags.NONE),
    ("DML_TENSOR_FLAG_NONE", TensorFlags.NONE),
    ("owned_by_dml", TensorFlags.OWNED_BY_DML),
    ("DML_TENSOR_FLAG_OWNED_BY_DML", TensorFlags.OWNED_BY_DML),
])
def test_flag_spellings(spelling, member):
    assert t(flags=spelling).flags is member


@pytest.mark.parametrize("spelling, member", [
    ("3.0", FeatureLevel.FL_3_0), (3.0, FeatureLevel.FL_3_0), (3, FeatureLevel.FL_3_0),
    ("DML_FEATURE_LEVEL_3_0", FeatureLevel.FL_3_0), (FeatureLevel.FL_3_0, FeatureLevel.FL_3_0),
    ("4.1", FeatureLevel.FL_4_1), (4.1, FeatureLevel.FL_4_1), ("DML_FEATURE_LEVEL_4_1", FeatureLevel.FL_4_1),
    ("5.1", FeatureLevel.FL_5_1), (5.1, FeatureLevel.FL_5_1), ("DML_FEATURE_LEVEL_5_1", FeatureLevel.FL_5_1),
    ("5_1", FeatureLevel.FL_5_1), (0x5100, FeatureLevel.FL_5_1), (" dml_feature_level_2_1 ", FeatureLevel.FL_2_1),
    (1, FeatureLevel.FL_1_0), (0x6400, FeatureLevel.FL_6_4),
])
def test_feature_level_spellings(spelling, member):
    assert FeatureLevel.parse(spelling) is member


@pytest.mark.parametrize("enum_cls, field, value, choices", [
    (AxisDirection, "axis_direction", "SIDEWAYS", "INCREASING, DECREASING"),
    (AxisDirection, "axis_direction", "DML_AXIS_DIRECTION_UP", "INCREASING, DECREASING"),
    (ReduceFunction, "function", "ARGMEDIAN", "ARGMAX, ARGMIN"),
    (TensorFlags, "flags", "DML_TENSOR_FLAG_FOO", "NONE, OWNED_BY_DML"),
    (FeatureLevel, "feature_level", "7.0", "1.0, 2.0, 2.1, 3.0, 3.1, 4.0, 4.1, 5.0, 5.1, 5.2, 6.0, 6.1, 6.2, 6.3, 6.4"),
    (FeatureLevel, "feature_level", "DML_FEATURE_LEVEL_0_9", "1.0, 2.0"),
])
def test_unknown_enum_spelling(enum_cls, field, value, choices):
    with pytest.raises(DescriptorError, match=rx(f"{field} is ", value, choices)):
        enum_cls.parse(value, field)


# --- sections 2-4: the operators ----------------------------------------------------------

def argmax(inp, out=None, axes=(0,)):
    return ArgMaxOperatorDesc(inp, out, axes)


def argmin(inp, out=None, axes=(0,)):
    return ArgMinOperatorDesc(inp, out, axes)


def hardmax1(inp, out=None, axes=(0,)):
    return ActivationHardmax1OperatorDesc(inp, out, axes)


def reduce_argmax(inp, out=None, axes=(0,)):
    return ReduceOperatorDesc("ARGMAX", inp, out, axes)


def reduce_argmin(inp, out=None, axes=(0,)):
    return ReduceOperatorDesc("ARGMIN", inp, out, axes)


AXIS_OPS = [argmax, argmin, hardmax1, reduce_argmax, reduce_argmin]
INDEX_OPS = [argmax, argmin, reduce_argmax, reduce_argmin]
OP_IDS = lambda f: f.__name__  # noqa: E731


AXES_ACCEPTED = [[0], [1], [2], [0, 1], [2, 0], [0, 1, 2], [2, 1, 0], np.array([1, 2]), (np.int64(2),)]


@pytest.mark.parametrize("make", AXIS_OPS, ids=OP_IDS)
@pytest.mark.parametrize("axes", AXES_ACCEPTED, ids=str)
def test_axes_accepted(make, axes):
    """axis = rank - 1 is the last one accepted; any order, any integer kind."""
    desc = make(t(sizes=(2, 3, 4)), axes=axes)
    assert desc.axes == tuple(int(a) for a in axes)
    assert desc.lower().axes == tuple(sorted(int(a) for a in axes))


AXES_REFUSED = {
    "empty": ([], rx("axes is empty", "at least one")),
    "axis = rank": ([3], rx("axes[0] is 3", "[0, 2]", "rank-3")),
    "axis = rank, second": ([0, 3], rx("axes[1] is 3", "[0, 2]")),
    "axis -1": ([-1], rx("axes[0] is -1", "[0, 2]")),
    "axis -3": ([-3], rx("axes[0] is -3", "[0, 2]")),
    "duplicate": ([0, 0], rx("axes[1] is 0", "axis 0 is listed twice")),
    "duplicate, later": ([1, 2, 1], rx("axes[2] is 1", "axis 1 is listed twice")),
    "four axes of rank 3": ([0, 1, 2, 0], rx("axes[3] is 0", "listed twice")),
}


@pytest.mark.parametrize("make", AXIS_OPS, ids=OP_IDS)
@pytest.mark.parametrize("axes, match", AXES_REFUSED.values(), ids=AXES_REFUSED.keys())
def test_axes_refused(make, axes, match):
    with pytest.raises(DescriptorError, match=match):
        make(t(sizes=(2, 3, 4)), axes=axes)


@pytest.mark.parametrize("make", AXIS_OPS, ids=OP_IDS)
def test_axes_rank_1_boundary(make):
    make(t(sizes=(5,)), axes=[0])
    with pytest.raises(DescriptorError, match=rx("axes[0] is 1", "[0, 0]", "rank-1")):
        make(t(sizes=(5,)), axes=[1])


@pytest.mark.parametrize("make", INDEX_OPS, ids=OP_IDS)
@pytest.mark.parametrize("out_type", INDEX_TYPES)
def test_index_output_accepted(make, out_type):
    inp = t(sizes=(2, 3, 4))
    desc = make(inp, t(out_type, (2, 1, 4)), axes=[1])
    assert desc.output_tensor.data_type is DataType[out_type]


@pytest.mark.parametrize("make", INDEX_OPS, ids=OP_IDS)
@pytest.mark.parametrize("in_type", ALL_TYPES)
def test_index_input_types_at_default_level(make, in_type):
    """All eleven input types construct; the feature level is checked separately."""
    make(t(in_type, (2, 3)), axes=[1])


@pytest.mark.parametrize("make", INDEX_OPS, ids=OP_IDS)
def test_index_output_inferred(make):
    desc = make(t(sizes=(2, 3, 4)), axes=[2, 0])
    assert desc.output_tensor == TensorDesc("UINT32", (1, 3, 1))


INDEX_OUTPUT_REFUSED = {
    "rank 2 for rank 3": (
        dict(sizes=(1, 3)), rx("output_tensor has 2 dimensions", "input_tensor has 3", "match")),
    "rank 4 for rank 3": (
        dict(sizes=(1, 3, 4, 1)), rx("output_tensor has 4 dimensions", "input_tensor has 3")),
    "reduced axis size 2": (
        dict(sizes=(2, 3, 4)), rx("output_tensor.sizes[0] is 2", "axis 0 is reduced", "must be 1")),
    "reduced axis size 0": (
        dict(sizes=(0, 3, 4)), rx("sizes[0] is 0", "at least 1")),
    "kept axis larger": (
        dict(sizes=(1, 4, 4)),
        rx("output_tensor.sizes[1] is 4", "axis 1 is not reduced", "input_tensor.sizes[1] (3)")),
    "kept axis reduced to 1": (
        dict(sizes=(1, 3, 1)),
        rx("output_tensor.sizes[2] is 1", "axis 2 is not reduced", "input_tensor.sizes[2] (4)")),
    "kept axis smaller": (
        dict(sizes=(1, 2, 4)), rx("output_tensor.sizes[1] is 2", "input_tensor.sizes[1] (3)")),
    **{
        f"output type {name}": (
            dict(data_type=name), rx(f"output_tensor.data_type is {name}", "INT32, UINT32, INT64, UINT64"))
        for name in NON_INDEX_TYPES
    },
    "stride 0 on a kept axis of size 3": (
        dict(strides=(12, 0, 1)), rx("output_tensor.strides[1] is 0", "two elements at one address")),
    "stride 0 on the innermost axis": (
        dict(strides=(0, 4, 0)), rx("output_tensor.strides[2] is 0", "two elements at one address")),
    "overlapping strides": (
        dict(strides=(12, 1, 1)), rx("output_tensor.strides[2] is 1", "two elements at one address", "greater than 2")),
    "rows overlapping": (
        dict(strides=(12, 3, 1)), rx("output_tensor.strides[1] is 3", "greater than 3")),
}


@pytest.mark.parametrize("make", INDEX_OPS, ids=OP_IDS)
@pytest.mark.parametrize("kw, match", INDEX_OUTPUT_REFUSED.values(), ids=INDEX_OUTPUT_REFUSED.keys())
def test_index_output_refused(make, kw, match):
    """Input (2, 3, 4) reduced over axis 0: the output must be (1, 3, 4) of an index type."""
    with pytest.raises(DescriptorError, match=match):
        make(t("FLOAT32", (2, 3, 4)), TensorDesc(**{"data_type": "UINT32", "sizes": (1, 3, 4), **kw}), axes=[0])


OUTPUT_STRIDES_ACCEPTED = {
    "stride 0 on the reduced axis (size 1)": (0, 4, 1), "packed": (12, 4, 1),
    "padded": (100, 5, 1), "transposed": (0, 1, 3), "column-major": (1, 1, 3), "gaps": (0, 8, 2),
}


@pytest.mark.parametrize("make", INDEX_OPS, ids=OP_IDS)
@pytest.mark.parametrize("strides", OUTPUT_STRIDES_ACCEPTED.values(), ids=OUTPUT_STRIDES_ACCEPTED.keys())
def test_index_output_strides_accepted(make, strides):
    make(t("FLOAT32", (2, 3, 4)), TensorDesc("UINT32", (1, 3, 4), strides), axes=[0])


def test_output_self_overlap_boundary():
    """sizes (1, 3, 4), axis 2 stride 1 reaches index 3: axis 1 needs stride 4 or more."""
    argmax(t(sizes=(2, 3, 4)), TensorDesc("UINT32", (1, 3, 4), (0, 4, 1)))
    with pytest.raises(DescriptorError, match=rx("output_tensor.strides[1] is 3", "greater than 3")):
        argmax(t(sizes=(2, 3, 4)), TensorDesc("UINT32", (1, 3, 4), (0, 3, 1)))


@pytest.mark.parametrize("make", AXIS_OPS, ids=OP_IDS)
def test_input_stride_0_accepted(make):
    """Inputs may broadcast (stride 0 with size > 1); only outputs may not self-overlap."""
    desc = make(t(sizes=(2, 3, 4), strides=(0, 0, 1)), axes=[1])
    assert desc.input_tensor.strides == (0, 0, 1)
    make(t(sizes=(2, 3, 4), strides=(0, 0, 0)), axes=[0, 1, 2])


# Capacity of the output index type: (output type, input sizes, axes)
CAPACITY_ACCEPTED = {
    "INT32, 2^31-1 reduced": ("INT32", (2**31 - 1,), (0,)),
    "INT32, 2^31-1 reduced, other axis kept": ("INT32", (2, 2**31 - 1), (1,)),
    "INT32, 2^31 elements but 2^30 reduced": ("INT32", (2, 2**30), (1,)),
    "UINT32, 2^32-1 reduced (the largest tensor)": ("UINT32", (2**32 - 1,), (0,)),
    "UINT32, 2^32-1 over two axes": ("UINT32", (65535, 65537), (0, 1)),
    "INT64, 2^31 reduced": ("INT64", (2**31,), (0,)),
    "INT64, 2^32-1 reduced": ("INT64", (2**32 - 1,), (0,)),
    "UINT64, 2^32-1 reduced": ("UINT64", (2**32 - 1,), (0,)),
}


@pytest.mark.parametrize("make", INDEX_OPS, ids=OP_IDS)
@pytest.mark.parametrize("out_type, sizes, axes", CAPACITY_ACCEPTED.values(), ids=CAPACITY_ACCEPTED.keys())
def test_index_capacity_accepted(make, out_type, sizes, axes):
    out_sizes = tuple(1 if i in axes else n for i, n in enumerate(sizes))
    desc = make(t("UINT8", sizes), TensorDesc(out_type, out_sizes), axes=axes)
    assert desc.lower().reduced_count <= INDEX_TYPE_CAPACITY[DataType[out_type]]


CAPACITY_REFUSED = {
    "INT32, 2^31 reduced": ((2**31,), (0,), 2**31),
    "INT32, 2^31 reduced over two axes": ((2, 2**30), (0, 1), 2**31),
    "INT32, 2^31 reduced over two of three axes": ((2**30, 2, 1), (0, 1), 2**31),
    "INT32, 2^32-2 reduced": ((2**31 - 1, 2), (0, 1), 2**32 - 2),
    "INT32, 2^32-1 reduced": ((65535, 65537), (0, 1), 2**32 - 1),
}


@pytest.mark.parametrize("make", INDEX_OPS, ids=OP_IDS)
@pytest.mark.parametrize("sizes, axes, count", CAPACITY_REFUSED.values(), ids=CAPACITY_REFUSED.keys())
def test_index_capacity_refused(make, sizes, axes, count):
    out_sizes = tuple(1 if i in axes else n for i, n in enumerate(sizes))
    with pytest.raises(DescriptorError, match=rx("output_tensor.data_type is INT32", f"{count} reduced elements",
                                                 "2147483647")):
        make(t("FLOAT16", sizes), TensorDesc("INT32", out_sizes), axes=axes)


def test_uint32_holds_every_tensor():
    """A UINT32 output can never overflow: no tensor has more than 2^32 - 1 elements."""
    assert INDEX_TYPE_CAPACITY[DataType.UINT32] == MAX_ELEMENTS == 2**32 - 1
    assert INDEX_TYPE_CAPACITY[DataType.INT32] == 2**31 - 1


# --- feature levels -----------------------------------------------------------------------

@pytest.mark.parametrize("make", INDEX_OPS, ids=OP_IDS)
@pytest.mark.parametrize("in_type", ALL_TYPES)
@pytest.mark.parametrize("level", ["3.0", "4.0", "4.1", "DML_FEATURE_LEVEL_3_0", 4.1, "5.0", "6.4"])
def test_feature_level(make, in_type, level):
    desc = make(t(in_type, (2, 3)), axes=[1])
    if FeatureLevel.parse(level) < FeatureLevel.FL_4_1 and in_type in ("INT64", "UINT64"):
        with pytest.raises(DescriptorError, match=rx(f"input_tensor.data_type is {in_type}",
                                                     f"feature level {FeatureLevel.parse(level).value}",
                                                     "FLOAT32", "INT8", "(from feature level 4.1)")):
            desc.check_feature_level(level)
    else:
        desc.check_feature_level(level)


@pytest.mark.parametrize("make", [hardmax1, lambda inp, out=None, axes=None: ActivationHardmaxOperatorDesc(inp, out)],
                         ids=["hardmax1", "hardmax"])
@pytest.mark.parametrize("in_type", ["FLOAT32", "FLOAT16", "FLOAT64"])
def test_hardmax_feature_levels(make, in_type):
    """Each type at every level the operator has (tests/test_feature_levels.py: the levels);
    FLOAT64 is dmlgpu's extension beyond DirectML."""
    desc = make(t(in_type, (2, 3)), axes=[1])
    desc.check_feature_level("5.1")
    desc.check_feature_level("6.4")
    with pytest.raises(DescriptorError, match=rx("feature_level is '9.9'")):
        desc.check_feature_level("9.9")


@pytest.mark.parametrize("make", INDEX_OPS, ids=OP_IDS)
def test_unknown_feature_level(make):
    with pytest.raises(DescriptorError, match=rx("feature_level is '5.3'", "1.0, 2.0", "6.4")):
        make(t(), axes=[0]).check_feature_level("5.3")


# --- section 3: HARDMAX1 and HARDMAX ------------------------------------------------------

@pytest.mark.parametrize("in_type", ["FLOAT32", "FLOAT16", "FLOAT64"])
@pytest.mark.parametrize("out_strides", [None, (12, 4, 1), (1, 2, 6), (100, 20, 2), (12, 4, 1)])
def test_hardmax1_accepted(in_type, out_strides):
    """FLOAT32/FLOAT16 (and FLOAT64, beyond DirectML); output of the same type and sizes, with
    strides of its own."""
    desc = hardmax1(t(in_type, (2, 3, 4)), TensorDesc(in_type, (2, 3, 4), out_strides), axes=[1])
    assert desc.output_tensor.strides == out_strides


@pytest.mark.parametrize("in_type", ["FLOAT32", "FLOAT16", "FLOAT64"])
def test_hardmax_output_inferred(in_type):
    inp = t(in_type, (2, 3, 4), strides=(0, 4, 1))
    assert hardmax1(inp, axes=[1]).output_tensor == TensorDesc(in_type, (2, 3, 4))
    assert ActivationHardmaxOperatorDesc(inp).output_tensor == TensorDesc(in_type, (2, 3, 4))


def test_hardmax_output_stride_0_on_size_1():
    hardmax1(t(sizes=(2, 1, 4)), TensorDesc("FLOAT32", (2, 1, 4), (4, 0, 1)), axes=[0])
    with pytest.raises(DescriptorError, match=rx("output_tensor.strides[0] is 0", "two elements at one address")):
        hardmax1(t(sizes=(2, 1, 4)), TensorDesc("FLOAT32", (2, 1, 4), (0, 0, 1)), axes=[0])


HARDMAX_REFUSED = {
    **{
        f"input {name}": (
            name, name, (2, 3, 4), None,
            rx(f"input_tensor.data_type is {name}", "FLOAT32 or FLOAT16 (and FLOAT64, beyond DirectML)"))
        for name in ALL_TYPES if name not in ("FLOAT32", "FLOAT16", "FLOAT64")
    },
    "output FLOAT16 for FLOAT32": (
        "FLOAT32", "FLOAT16", (2, 3, 4), None,
        rx("output_tensor.data_type is FLOAT16", "input_tensor.data_type (FLOAT32)")),
    "output FLOAT32 for FLOAT16": (
        "FLOAT16", "FLOAT32", (2, 3, 4), None,
        rx("output_tensor.data_type is FLOAT32", "input_tensor.data_type (FLOAT16)")),
    "output UINT32 (an index type)": (
        "FLOAT32", "UINT32", (2, 3, 4), None, rx("output_tensor.data_type is UINT32", "(FLOAT32)")),
    "output sizes reduced like ARGMAX": (
        "FLOAT32", "FLOAT32", (2, 1, 4), None, rx("output_tensor.sizes is [2, 1, 4]", "input_tensor.sizes ([2, 3, 4])")),
    "output size one larger": (
        "FLOAT32", "FLOAT32", (2, 3, 5), None, rx("output_tensor.sizes is [2, 3, 5]", "([2, 3, 4])")),
    "output rank 4": (
        "FLOAT32", "FLOAT32", (2, 3, 4, 1), None, rx("output_tensor.sizes is [2, 3, 4, 1]", "([2, 3, 4])")),
    "output rank 2": ("FLOAT32", "FLOAT32", (2, 3), None, rx("output_tensor.sizes is [2, 3]", "([2, 3, 4])")),
    "output stride 0 with size 3": (
        "FLOAT32", "FLOAT32", (2, 3, 4), (12, 0, 1), rx("output_tensor.strides[1] is 0", "two elements at one address")),
    "output strides overlapping": (
        "FLOAT32", "FLOAT32", (2, 3, 4), (12, 3, 1), rx("output_tensor.strides[1] is 3", "greater than 3")),
}


@pytest.mark.parametrize("old", [False, True], ids=["HARDMAX1", "HARDMAX"])
@pytest.mark.parametrize("in_type, out_type, out_sizes, out_strides, match", HARDMAX_REFUSED.values(),
                         ids=HARDMAX_REFUSED.keys())
def test_hardmax_refused(old, in_type, out_type, out_sizes, out_strides, match):
    inp = t(in_type, (2, 3, 4))
    out = TensorDesc(out_type, out_sizes, out_strides)
    with pytest.raises(DescriptorError, match=match):
        if old:
            ActivationHardmaxOperatorDesc(inp, out)
        else:
            hardmax1(inp, out, axes=[1])


def test_hardmax_refuses_bad_input_type_with_inferred_output():
    with pytest.raises(DescriptorError, match=rx("input_tensor.data_type is INT32", "FLOAT32 or FLOAT16")):
        hardmax1(t("INT32"), axes=[0])
    with pytest.raises(DescriptorError, match=rx("input_tensor.data_type is UINT8", "FLOAT32 or FLOAT16")):
        ActivationHardmaxOperatorDesc(t("UINT8"))


HARDMAX_SHAPES = [(5,), (2, 3), (2, 3, 4), (1, 2, 1, 3), (2,) * 8]


@pytest.mark.parametrize("sizes", HARDMAX_SHAPES, ids=str)
@pytest.mark.parametrize("in_type", ["FLOAT32", "FLOAT16"])
def test_hardmax_is_hardmax1_on_last_axis(sizes, in_type):
    inp = t(in_type, sizes)
    old = ActivationHardmaxOperatorDesc(inp)
    new = ActivationHardmax1OperatorDesc(inp, axes=[len(sizes) - 1])
    assert old.lower() == new.lower() == lower(old)
    assert old.lower().op == "hardmax"
    assert old.lower().axes == (len(sizes) - 1,)
    assert old.lower().direction is AxisDirection.INCREASING
    if len(sizes) > 1:
        assert old.lower() != ActivationHardmax1OperatorDesc(inp, axes=[0]).lower()


def test_hardmax_is_hardmax1_with_explicit_strided_output():
    inp = t("FLOAT16", (2, 3, 4), strides=(0, 4, 1))
    out = TensorDesc("FLOAT16", (2, 3, 4), (1, 2, 6), total_tensor_size_in_bytes=64)
    assert ActivationHardmaxOperatorDesc(inp, out).lower() == ActivationHardmax1OperatorDesc(inp, out, [2]).lower()


# --- section 4: REDUCE --------------------------------------------------------------------

@pytest.mark.parametrize("function, cls", [("ARGMAX", ArgMaxOperatorDesc), ("ARGMIN", ArgMinOperatorDesc),
                                           ("DML_REDUCE_FUNCTION_ARGMIN", ArgMinOperatorDesc)])
@pytest.mark.parametrize("axes", [[0], [2], [2, 0], [0, 1, 2]], ids=str)
@pytest.mark.parametrize("out_type", [None, "INT32", "UINT64"])
def test_reduce_is_arg_increasing(function, cls, axes, out_type):
    inp = t("INT16", (2, 3, 4), strides=(0, 4, 1))
    out = None if out_type is None else TensorDesc(
        out_type, tuple(1 if i in axes else n for i, n in enumerate(inp.sizes)))
    red = ReduceOperatorDesc(function, inp, out, axes)
    arg = cls(inp, out, axes, "INCREASING")
    assert red.lower() == arg.lower() == lower(red)
    assert red.lower().direction is AxisDirection.INCREASING
    assert red.lower() != cls(inp, out, axes, "DECREASING").lower()
    assert red.output_tensor == arg.output_tensor
    assert red.axes == arg.axes


@pytest.mark.parametrize("function", [f.name for f in ReduceFunction if f.name not in ("ARGMAX", "ARGMIN")])
def test_reduce_other_functions_refused(function):
    with pytest.raises(DescriptorError, match=rx(f"function is {function}", "only ARGMAX and ARGMIN")):
        ReduceOperatorDesc(function, t(), axes=[0])
    with pytest.raises(DescriptorError, match=rx(f"function is {function}", "only ARGMAX and ARGMIN")):
        ReduceOperatorDesc(f"DML_REDUCE_FUNCTION_{function}", t(), axes=[0])


def test_reduce_unknown_function():
    with pytest.raises(DescriptorError, match=rx("function is 'MEDIAN'", "ARGMAX", "SUM_SQUARE")):
        ReduceOperatorDesc("MEDIAN", t(), axes=[0])


def test_lower_refuses_non_descriptors():
    with pytest.raises(TypeError, match="TensorDesc"):
        lower(t())


# --- wrong kinds: TypeError ---------------------------------------------------------------

TENSOR_TYPE_ERRORS = {
    "sizes a string": (dict(sizes="abc"), "sizes"),
    "sizes bytes": (dict(sizes=b"\x01"), "sizes"),
    "sizes an int": (dict(sizes=3), "sizes"),
    "sizes None": (dict(sizes=None), "sizes"),
    "sizes float": (dict(sizes=[2, 1.5]), r"sizes\[1\]"),
    "sizes whole float": (dict(sizes=[2.0]), r"sizes\[0\]"),
    "sizes bool": (dict(sizes=[True]), r"sizes\[0\]"),
    "sizes string item": (dict(sizes=["2"]), r"sizes\[0\]"),
    "strides a string": (dict(strides="ab"), "strides"),
    "strides float": (dict(strides=[3, 1.0]), r"strides\[1\]"),
    "data_type int": (dict(data_type=32), "data_type"),
    "data_type None": (dict(data_type=None), "data_type"),
    "data_type numpy dtype": (dict(data_type=np.float32), "data_type"),
    "flags int": (dict(flags=0), "flags"),
    "total float": (dict(total_tensor_size_in_bytes=24.9), "total_tensor_size_in_bytes"),
    "total whole float": (dict(total_tensor_size_in_bytes=24.0), "total_tensor_size_in_bytes"),
    "total string": (dict(total_tensor_size_in_bytes="24"), "total_tensor_size_in_bytes"),
    "total bool": (dict(total_tensor_size_in_bytes=True), "total_tensor_size_in_bytes"),
    "alignment float": (dict(guaranteed_base_offset_alignment=4.5), "guaranteed_base_offset_alignment"),
    "alignment string": (dict(guaranteed_base_offset_alignment="4"), "guaranteed_base_offset_alignment"),
    "alignment None": (dict(guaranteed_base_offset_alignment=None), "guaranteed_base_offset_alignment"),
}


@pytest.mark.parametrize("kw, match", TENSOR_TYPE_ERRORS.values(), ids=TENSOR_TYPE_ERRORS.keys())
def test_tensor_wrong_kinds(kw, match):
    kw = {"data_type": "FLOAT32", "sizes": [2, 3], **kw}
    with pytest.raises(TypeError, match=match):
        TensorDesc(**kw)


def test_numpy_integers_are_integers():
    desc = TensorDesc("FLOAT32", np.array([2, 3]), np.array([4, 1], np.uint8),
                      total_tensor_size_in_bytes=np.int64(28), guaranteed_base_offset_alignment=np.uint32(16))
    assert desc == TensorDesc("FLOAT32", [2, 3], [4, 1], total_tensor_size_in_bytes=28,
                              guaranteed_base_offset_alignment=16)
    assert all(type(n) is int for n in (*desc.sizes, *desc.strides, desc.total_tensor_size_in_bytes,
                                         desc.guaranteed_base_offset_alignment))


OP_TYPE_ERRORS = {
    "argmax input dict": (lambda: ArgMaxOperatorDesc({"DataType": "FLOAT32", "Sizes": [2]}, axes=[0]), "input_tensor"),
    "argmin input None": (lambda: ArgMinOperatorDesc(None, axes=[0]), "input_tensor"),
    "argmax output dict": (lambda: ArgMaxOperatorDesc(t(), {"DataType": "UINT32"}, [0]), "output_tensor"),
    "argmax axes float": (lambda: ArgMaxOperatorDesc(t(), axes=1.5), "axes"),
    "argmax axes int": (lambda: ArgMaxOperatorDesc(t(), axes=1), "axes"),
    "argmax axes string": (lambda: ArgMaxOperatorDesc(t(), axes="0"), "axes"),
    "argmax axes None": (lambda: ArgMaxOperatorDesc(t(), axes=None), "axes"),
    "argmax axes float item": (lambda: ArgMaxOperatorDesc(t(), axes=[0.0]), r"axes\[0\]"),
    "argmax axes bool item": (lambda: ArgMaxOperatorDesc(t(), axes=[False]), r"axes\[0\]"),
    "argmax direction int": (lambda: ArgMaxOperatorDesc(t(), axes=[0], axis_direction=1), "axis_direction"),
    "hardmax1 input dict": (lambda: ActivationHardmax1OperatorDesc({}, axes=[0]), "input_tensor"),
    "hardmax1 output list": (lambda: ActivationHardmax1OperatorDesc(t(), [2, 3, 4], [0]), "output_tensor"),
    "hardmax1 axes float": (lambda: ActivationHardmax1OperatorDesc(t(), axes=1.5), "axes"),
    "hardmax input dict": (lambda: ActivationHardmaxOperatorDesc({}), "input_tensor"),
    "hardmax output dict": (lambda: ActivationHardmaxOperatorDesc(t(), {}), "output_tensor"),
    "reduce function int": (lambda: ReduceOperatorDesc(1, t(), axes=[0]), "function"),
    "reduce input dict": (lambda: ReduceOperatorDesc("ARGMAX", {}, axes=[0]), "input_tensor"),
    "reduce axes float": (lambda: ReduceOperatorDesc("ARGMAX", t(), axes=1.5), "axes"),
    "feature level list": (lambda: ArgMaxOperatorDesc(t(), axes=[0]).check_feature_level([3]), "feature_level"),
    "feature level bool": (lambda: ArgMaxOperatorDesc(t(), axes=[0]).check_feature_level(True), "feature_level"),
    "calc data_type int": (lambda: calc_buffer_tensor_size(4, [2]), "data_type"),
    "json a list": (lambda: operator_from_json([1, 2]), "operator"),
    "json Desc a list": (lambda: operator_from_json({"Type": "ARGMAX", "Desc": []}), "ARGMAX"),
    "json tensor a list": (
        lambda: operator_from_json({"Type": "ARGMAX", "Desc": {"InputTensor": [2, 3], "Axes": [0]}}), "TensorDesc"),
}


@pytest.mark.parametrize("call, match", OP_TYPE_ERRORS.values(), ids=OP_TYPE_ERRORS.keys())
def test_operator_wrong_kinds(call, match):
    with pytest.raises(TypeError, match=match):
        call()


# --- JSON ---------------------------------------------------------------------------------

def _json_cases():
    inp = t("FLOAT32", (2, 3, 4))
    strided = TensorDesc("INT64", (2, 3, 4), (0, 8, 2), flags="OWNED_BY_DML", total_tensor_size_in_bytes=256,
                         guaranteed_base_offset_alignment=16)
    half = TensorDesc("FLOAT16", (3, 5), (1, 3), guaranteed_base_offset_alignment=2)
    return {
        "ARGMAX inferred output": ArgMaxOperatorDesc(inp, axes=[1]),
        "ARGMAX DECREASING, strided": ArgMaxOperatorDesc(
            strided, TensorDesc("INT32", (1, 3, 1), (0, 1, 0), total_tensor_size_in_bytes=64), [2, 0], "DECREASING"),
        "ARGMIN": ArgMinOperatorDesc(inp, TensorDesc("UINT64", (1, 1, 1)), [0, 1, 2]),
        "ARGMIN UINT8 rank 1": ArgMinOperatorDesc(t("UINT8", (7,)), axes=[0], axis_direction="DECREASING"),
        "ACTIVATION_HARDMAX1": ActivationHardmax1OperatorDesc(inp, axes=[0, 2]),
        "ACTIVATION_HARDMAX1 strided FLOAT16": ActivationHardmax1OperatorDesc(
            half, TensorDesc("FLOAT16", (3, 5), (8, 1), flags="OWNED_BY_DML"), [1]),
        "ACTIVATION_HARDMAX": ActivationHardmaxOperatorDesc(inp),
        "ACTIVATION_HARDMAX FLOAT16": ActivationHardmaxOperatorDesc(half, TensorDesc("FLOAT16", (3, 5), (5, 1))),
        "REDUCE ARGMAX": ReduceOperatorDesc("ARGMAX", inp, axes=[2]),
        "REDUCE ARGMIN": ReduceOperatorDesc("ARGMIN", strided, TensorDesc("INT64", (2, 1, 1)), [1, 2]),
    }


JSON_CASES = _json_cases()


@pytest.mark.parametrize("desc", JSON_CASES.values(), ids=JSON_CASES.keys())
def test_json_round_trip(desc):
    obj = desc.to_json()
    assert operator_from_json(obj) == desc
    text = json.dumps(obj)
    assert operator_from_json(text) == desc
    assert operator_from_json(text.encode()) == desc
    assert operator_from_json(json.loads(text)) == desc
    assert operator_from_json(obj).lower() == desc.lower()
    assert operator_from_json(obj).to_json() == obj
    assert type(operator_from_json(obj)) is type(desc)


@pytest.mark.parametrize("desc", JSON_CASES.values(), ids=JSON_CASES.keys())
def test_json_with_directml_prefixes(desc):
    """DirectML's spellings anywhere in the JSON: DML_OPERATOR_, DML_TENSOR_DATA_TYPE_, and so on."""
    obj = desc.to_json()
    obj["Type"] = "DML_OPERATOR_" + obj["Type"]
    d = obj["Desc"]
    for key in ("InputTensor", "OutputTensor"):
        d[key]["DataType"] = "DML_TENSOR_DATA_TYPE_" + d[key]["DataType"]
        d[key]["Flags"] = "DML_TENSOR_FLAG_" + d[key]["Flags"]
    if "AxisDirection" in d:
        d["AxisDirection"] = "DML_AXIS_DIRECTION_" + d["AxisDirection"]
    if "Function" in d:
        d["Function"] = "DML_REDUCE_FUNCTION_" + d["Function"]
    assert operator_from_json(json.dumps(obj)) == desc


@pytest.mark.parametrize("type_name, cls", [
    ("DML_OPERATOR_ARGMAX", ArgMaxOperatorDesc), ("DML_OPERATOR_ARGMIN", ArgMinOperatorDesc),
    ("argmax", ArgMaxOperatorDesc), ("DML_OPERATOR_ACTIVATION_HARDMAX1", ActivationHardmax1OperatorDesc),
])
def test_json_minimal(type_name, cls):
    """Only the required fields: counts, strides, flags, sizes in bytes and the output may be left out."""
    obj = {"Type": type_name, "Desc": {"InputTensor": {"DataType": "FLOAT32", "Sizes": [2, 3]}, "Axes": [1]}}
    assert operator_from_json(obj) == cls(TensorDesc("FLOAT32", [2, 3]), axes=[1])


def test_json_minimal_hardmax_and_reduce():
    inp = {"DataType": "float16", "Sizes": [4]}
    assert operator_from_json({"Type": "DML_OPERATOR_ACTIVATION_HARDMAX", "Desc": {"InputTensor": inp}}) == \
        ActivationHardmaxOperatorDesc(TensorDesc("FLOAT16", [4]))
    assert operator_from_json(
        {"Type": "DML_OPERATOR_REDUCE", "Desc": {"Function": "DML_REDUCE_FUNCTION_ARGMIN", "InputTensor": inp,
                                                 "Axes": [0]}}
    ) == ReduceOperatorDesc("ARGMIN", TensorDesc("FLOAT16", [4]), axes=[0])


def _argmax_json(**desc_changes):
    obj = ArgMaxOperatorDesc(t("FLOAT32", (2, 3)), axes=[1]).to_json()
    obj["Desc"].update(desc_changes)
    return obj


def _with(obj, path, value):
    """A copy of `obj` with the entry at `path` (a list of keys) set to `value`, or removed if it is `...`."""
    obj = json.loads(json.dumps(obj))
    node = obj
    for key in path[:-1]:
        node = node[key]
    if value is ...:
        del node[path[-1]]
    else:
        node[path[-1]] = value
    return obj


BASE = {name: desc.to_json() for name, desc in JSON_CASES.items()}
ARGMAX_JSON = BASE["ARGMAX inferred output"]  # FLOAT32 (2, 3, 4), axes [1]
HARDMAX1_JSON = BASE["ACTIVATION_HARDMAX1"]  # axes [0, 2]
HARDMAX_JSON = BASE["ACTIVATION_HARDMAX"]
REDUCE_JSON = BASE["REDUCE ARGMAX"]  # axes [2]

JSON_REFUSED = {
    "unknown Type": (_with(ARGMAX_JSON, ["Type"], "DML_OPERATOR_SOFTMAX"),
                     rx("Type is 'DML_OPERATOR_SOFTMAX'", "ARGMAX, ARGMIN")),
    "unknown top-level field": (_with(ARGMAX_JSON, ["Version"], 1), rx("unknown field", "Version")),
    "unknown ARGMAX field": (_with(ARGMAX_JSON, ["Desc", "Axis"], [1]), rx("ARGMAX", "unknown field", "'Axis'")),
    "unknown HARDMAX1 field": (
        _with(HARDMAX1_JSON, ["Desc", "AxisDirection"], "INCREASING"),
        rx("ACTIVATION_HARDMAX1", "unknown field", "AxisDirection")),
    "HARDMAX has no Axes": (
        _with(HARDMAX_JSON, ["Desc", "Axes"], [0]), rx("ACTIVATION_HARDMAX", "unknown field", "Axes")),
    "unknown REDUCE field": (
        _with(REDUCE_JSON, ["Desc", "AxisDirection"], "DECREASING"), rx("REDUCE", "unknown field", "AxisDirection")),
    "unknown tensor field": (
        _with(ARGMAX_JSON, ["Desc", "InputTensor", "Size"], [2, 3, 4]), rx("InputTensor", "unknown field", "Size")),
    "unknown output tensor field": (
        _with(HARDMAX_JSON, ["Desc", "OutputTensor", "strides"], [12, 4, 1]),
        rx("OutputTensor", "unknown field", "strides")),
    "ARGMAX AxisCount too large": (
        _with(ARGMAX_JSON, ["Desc", "AxisCount"], 2), rx("AxisCount is 2", "Axes has 1 entries")),
    "ARGMAX AxisCount 0": (_with(ARGMAX_JSON, ["Desc", "AxisCount"], 0), rx("AxisCount is 0", "Axes has 1 entries")),
    "HARDMAX1 AxisCount too small": (
        _with(HARDMAX1_JSON, ["Desc", "AxisCount"], 1), rx("AxisCount is 1", "Axes has 2 entries")),
    "REDUCE AxisCount too large": (
        _with(REDUCE_JSON, ["Desc", "AxisCount"], 3), rx("AxisCount is 3", "Axes has 1 entries")),
    "input DimensionCount too large": (
        _with(ARGMAX_JSON, ["Desc", "InputTensor", "DimensionCount"], 4),
        rx("InputTensor.DimensionCount is 4", "Sizes has 3 entries")),
    "output DimensionCount too small": (
        _with(ARGMAX_JSON, ["Desc", "OutputTensor", "DimensionCount"], 2),
        rx("OutputTensor.DimensionCount is 2", "Sizes has 3 entries")),
    "nested size 0": (
        _with(ARGMAX_JSON, ["Desc", "InputTensor", "Sizes"], [0, 3, 4]),
        rx("InputTensor.sizes[0] is 0", "at least 1")),
    "nested data type": (
        _with(HARDMAX1_JSON, ["Desc", "OutputTensor", "DataType"], "BFLOAT16"),
        rx("OutputTensor.data_type is 'BFLOAT16'", "one of")),
    "nested total size": (
        _with(REDUCE_JSON, ["Desc", "InputTensor", "TotalTensorSizeInBytes"], 92),
        rx("InputTensor.total_tensor_size_in_bytes is 92", "at least 96")),
    "nested stride": (
        _with(ARGMAX_JSON, ["Desc", "InputTensor", "Strides"], [12, -4, 1]),
        rx("InputTensor.strides[1] is -4", "at least 0")),
    "nested alignment": (
        _with(ARGMAX_JSON, ["Desc", "OutputTensor", "GuaranteedBaseOffsetAlignment"], 2),
        rx("OutputTensor.guaranteed_base_offset_alignment is 2", "element size (4)")),
    "axis out of range": (_with(ARGMAX_JSON, ["Desc", "Axes"], [3]), rx("axes[0] is 3", "[0, 2]")),
    "output type": (
        _with(ARGMAX_JSON, ["Desc", "OutputTensor", "DataType"], "FLOAT32"), rx("output_tensor.data_type is FLOAT32")),
    "direction": (_with(ARGMAX_JSON, ["Desc", "AxisDirection"], "UP"), rx("axis_direction is 'UP'")),
    "REDUCE SUM": (_with(REDUCE_JSON, ["Desc", "Function"], "DML_REDUCE_FUNCTION_SUM"), rx("function is SUM")),
    "missing Desc": (_with(ARGMAX_JSON, ["Desc"], ...), rx("operator", "missing", "Desc")),
    "missing Type": (_with(ARGMAX_JSON, ["Type"], ...), rx("operator", "missing", "Type")),
    "missing Axes": (_with(ARGMAX_JSON, ["Desc", "Axes"], ...), rx("ARGMAX", "missing", "Axes")),
    "missing InputTensor": (_with(HARDMAX_JSON, ["Desc", "InputTensor"], ...), rx("missing", "InputTensor")),
    "missing Function": (_with(REDUCE_JSON, ["Desc", "Function"], ...), rx("REDUCE", "missing", "Function")),
    "missing Sizes": (
        _with(ARGMAX_JSON, ["Desc", "InputTensor", "Sizes"], ...), rx("InputTensor", "missing", "Sizes")),
    "missing DataType": (
        _with(HARDMAX1_JSON, ["Desc", "OutputTensor", "DataType"], ...), rx("OutputTensor", "missing", "DataType")),
}


@pytest.mark.parametrize("obj, match", JSON_REFUSED.values(), ids=JSON_REFUSED.keys())
def test_json_refused(obj, match):
    with pytest.raises(DescriptorError, match=match):
        operator_from_json(obj)
    with pytest.raises(DescriptorError, match=match):
        operator_from_json(json.dumps(obj))


def test_json_counts_that_match_are_accepted():
    obj = _with(HARDMAX1_JSON, ["Desc", "AxisCount"], 2)
    obj = _with(obj, ["Desc", "InputTensor", "DimensionCount"], 3)
    assert operator_from_json(obj) == JSON_CASES["ACTIVATION_HARDMAX1"]


def test_tensor_json_round_trip():
    for desc in (t(), TensorDesc("UINT8", [3], [5], "OWNED_BY_DML", 16, 1)):
        assert TensorDesc.from_json(desc.to_json()) == desc
        assert TensorDesc.from_json(json.loads(json.dumps(desc.to_json()))) == desc
