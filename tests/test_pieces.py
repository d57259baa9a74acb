"""Tensors beyond one binding or one buffer, planned without a GPU: slices, windows, schedules."""

import pytest

from dmlgpu.desc import ActivationHardmax1OperatorDesc, ArgMaxOperatorDesc, TensorDesc
from dmlgpu.errors import DescriptorError
from dmlgpu.pieces import buffer_slices, schedule, slice_axis, slice_span, slices
from dmlgpu.plan import Capabilities

SMALL = Capabilities(max_storage_binding=4096, max_buffer=16384, shader_int64=True, offset_alignment=256)


def test_slice_axis_is_the_largest_stride():
    assert slice_axis(TensorDesc("FLOAT32", (4, 5, 6))) == 0
    assert slice_axis(TensorDesc("FLOAT32", (4, 5, 6), strides=(1, 4, 20))) == 2
    assert slice_axis(TensorDesc("FLOAT32", (1, 5, 6))) == 1  # size 1 cannot be cut


def test_slice_span_counts_every_byte_the_slice_reaches():
    desc = TensorDesc("FLOAT32", (10, 7))
    assert slice_span(desc, 0, 2, 4) == (2 * 7 * 4, 56)
    assert slice_span(desc, 0, 0, 10) == (0, 280)
    assert slice_span(TensorDesc("FLOAT32", (10, 7), strides=(8, 1)), 0, 9, 10) == (288, 28)


def test_slices_are_the_longest_that_fit_and_cover_everything():
    desc = TensorDesc("FLOAT32", (1000, 3))  # 12 bytes a row
    parts = slices(desc, 0, 0, 1000, 1024)
    assert parts[0] == (0, 85) and parts[-1][1] == 1000  # 85 rows: 1020 bytes
    assert all(b == c for (_, b), (c, _) in zip(parts, parts[1:]))
    assert all(slice_span(desc, 0, a, b)[1] <= 1024 for a, b in parts)
    assert all(slice_span(desc, 0, a, b + 1)[1] > 1024 for a, b in parts[:-1])


def test_one_index_beyond_the_limit_is_refused():
    with pytest.raises(DescriptorError, match=r"needs 8000 bytes for one index of axis 0, but this adapter binds at most 3840"):
        schedule(ArgMaxOperatorDesc(TensorDesc("FLOAT32", (3, 2000)), axes=[1]).lower(), SMALL, "ignore")


def test_buffers_follow_the_max_buffer():
    assert buffer_slices(TensorDesc("FLOAT32", (100,)), SMALL) == [(0, 100, 0, 400)]
    parts = buffer_slices(TensorDesc("FLOAT32", (10000,)), SMALL)
    assert [nbytes for *_, nbytes in parts] == [16384, 16384, 7232]


def test_reduced_slice_axis_gives_partial_pieces_and_one_merge():
    s = schedule(ArgMaxOperatorDesc(TensorDesc("FLOAT32", (10000,)), axes=[0]).lower(), SMALL, "ignore")
    assert len(s.pieces) > 2 and all(p.plan.partials_only for p in s.pieces)
    assert [p.plan.index_offset for p in s.pieces][:2] == [0, s.pieces[1].plan.index_offset]
    assert s.merge is not None and s.merge.split == sum(p.plan.split for p in s.pieces)
    assert {p.input.buffer for p in s.pieces} == {0, 1, 2}
    assert all(p.input.offset % 256 == 0 and p.input.size <= 4096 for p in s.pieces)


def test_kept_slice_axis_gives_independent_pieces():
    s = schedule(ActivationHardmax1OperatorDesc(TensorDesc("FLOAT16", (300, 20)), axes=[1]).lower(), SMALL, "ignore")
    assert s.merge is None and len(s.pieces) == 4
    assert [p.output.buffer for p in s.pieces] == [0, 0, 0, 0]
    assert all(not p.plan.partials_only for p in s.pieces)


def test_reduced_slice_axis_that_is_not_the_first_reduced_is_refused():
    desc = TensorDesc("FLOAT32", (40, 50), strides=(1, 40))  # axis 1 has the largest stride
    with pytest.raises(DescriptorError, match=r"cut along axis 1 .* must then be kept or the first reduced axis"):
        schedule(ArgMaxOperatorDesc(desc, axes=[0, 1]).lower(), SMALL, "ignore")


def test_what_fits_is_one_piece():
    s = schedule(ArgMaxOperatorDesc(TensorDesc("FLOAT32", (10, 10)), axes=[1]).lower(), SMALL, "ignore")
    assert len(s.pieces) == 1 and s.merge is None and s.pieces[0].plan.in_base == 0
