"""Tensors beyond one binding or one buffer, planned without a GPU: grids, windows, schedules."""

import itertools

import pytest

from dmlgpu.desc import ActivationHardmax1OperatorDesc, ArgMaxOperatorDesc, TensorDesc
from dmlgpu.errors import DescriptorError
from dmlgpu.pieces import buffer_grid, buffer_spans, cell_lengths, schedule
from dmlgpu.plan import Capabilities

SMALL = Capabilities(max_storage_binding=4096, max_buffer=16384, shader_int64=True, offset_alignment=256)
LIMIT = 4096 - 256  # what a piece's span may reach, its window starting up to 256 bytes early


def span(desc, box):
    return (sum((b - a - 1) * s for (a, b), s in zip(box, desc.element_strides)) + 1) * desc.data_type.size


def test_cells_cut_the_largest_stride_first():
    f32 = ((7, 1), 4)  # (1000, 7) packed
    assert cell_lengths((1000, 7), [f32], 1024) == (36, 7)  # 36 rows: 1008 bytes
    assert cell_lengths((1000, 7), [((1, 1000), 4)], 1024) == (256, 1)  # columns; one spans 4000: ranges
    assert cell_lengths((3, 2000), [((2000, 1), 4)], 1024) == (1, 256)  # one row is too long: its ranges
    assert cell_lengths((4, 5), [((0, 1), 4)], 8) == (4, 2)  # a broadcast axis spans nothing


def test_cells_fit_every_tensor():
    lengths = cell_lengths((500, 8), [((8, 1), 1), ((1, 0), 8)], 1024)  # INT8 in, INT64 out
    assert lengths == (128, 8)  # the output's 8 bytes per row decide


def test_buffers_follow_the_max_buffer():
    assert buffer_spans(TensorDesc("FLOAT32", (100,)), SMALL) == [(0, 400)]
    # As few buffers as fit, of even sizes (multiples of 64 elements while they fit)
    assert [nbytes for _, nbytes in buffer_spans(TensorDesc("FLOAT32", (10000,)), SMALL)] == [13568, 13568, 12864]
    desc = TensorDesc("FLOAT32", (2, 5000))  # one row is beyond a buffer: rows, then ranges
    grid = buffer_grid(desc, SMALL)
    assert grid == (((0, 1), (1, 2)), ((0, 2560), (2560, 5000)))
    assert buffer_spans(desc, SMALL) == [(0, 10240), (10240, 9760), (20000, 10240), (30240, 9760)]


def pieces_cover(desc, s):
    """Every input element lies in exactly one first-pass piece (checked by counting)."""
    first_passes = [p for p in s.pieces if p.input is not None]
    assert sum(p.plan.output_count * p.plan.reduced_count for p in first_passes) == desc.element_count


def test_one_index_beyond_a_binding_cuts_the_next_axis():
    desc = TensorDesc("FLOAT32", (3, 2000))  # 8000 bytes a row
    s = schedule(ArgMaxOperatorDesc(desc, axes=[1]).lower(), SMALL, "ignore")
    pieces_cover(desc, s)
    assert s.merges == 3  # a group per row: its pieces' pairs, one merge
    firsts = [p for p in s.pieces if p.input is not None]
    assert all(p.plan.partials_only and p.input.size <= 4096 for p in firsts)
    assert sorted({p.plan.index_offset for p in firsts}) == [0, 704, 1408]  # 3 even ranges, each <= 960
    assert all(p.input.offset % 256 == 0 for p in firsts)


def test_reduced_axis_with_the_largest_stride_maps_indices():
    desc = TensorDesc("FLOAT32", (40, 50), strides=(1, 40))  # axis 1 has the largest stride
    s = schedule(ArgMaxOperatorDesc(desc, axes=[0, 1]).lower(), SMALL, "ignore")
    pieces_cover(desc, s)
    firsts = [p for p in s.pieces if p.input is not None]
    assert all(p.plan.remaps_index for p in firsts)  # a piece's index steps by 50 along axis 0
    assert [d.index_stride for d in firsts[0].plan.reduced] == [50, 1]
    assert [p.plan.index_offset for p in firsts][:2] == [0, firsts[0].plan.reduced[1].size]


def test_reduced_axis_cut_into_ranges_needs_no_remap():
    s = schedule(ArgMaxOperatorDesc(TensorDesc("FLOAT32", (10000,)), axes=[0]).lower(), SMALL, "ignore")
    firsts = [p for p in s.pieces if p.input is not None]
    assert len(firsts) > 2 and s.merges == 1 and not any(p.plan.remaps_index for p in firsts)
    assert {p.input.buffer for p in firsts} == {0, 1, 2}  # pieces never straddle buffers
    merge = s.pieces[-1]
    assert merge.input is None and merge.plan.split == sum(p.plan.split for p in firsts)
    assert s.partial_bytes == 16 * merge.plan.split
    slots = [p.plan.slot_base for p in firsts]
    assert slots == sorted(slots) and slots[0] == 0


def test_kept_axis_gives_independent_pieces():
    s = schedule(ActivationHardmax1OperatorDesc(TensorDesc("FLOAT16", (300, 20)), axes=[1]).lower(), SMALL, "ignore")
    assert s.merges == 0 and len(s.pieces) == 4
    assert [p.output.buffer for p in s.pieces] == [0, 0, 0, 0]
    assert all(not p.plan.partials_only for p in s.pieces)


def test_hardmax_with_a_cut_slice_merges_once_per_output_window():
    desc = TensorDesc("FLOAT32", (2, 3000))  # each slice is beyond a binding and the output too
    s = schedule(ActivationHardmax1OperatorDesc(desc, axes=[1]).lower(), SMALL, "ignore")
    pieces_cover(desc, s)
    merges = [p for p in s.pieces if p.input is None]
    firsts = [p for p in s.pieces if p.input is not None]
    assert len(merges) == len(firsts)  # every cell's output window gets a merge run
    assert all(m.plan.out_limit * 4 == m.output.size for m in merges)
    assert all(m.plan.out_limit < 2**32 - 1 for m in merges)


def test_output_larger_than_the_input_cuts_by_the_output():
    desc = ArgMaxOperatorDesc(TensorDesc("INT8", (5000, 1)), TensorDesc("INT64", (5000, 1)), axes=[1])
    s = schedule(desc.lower(), SMALL, "ignore")  # 5000 bytes in, 40000 out
    assert s.merges == 0 and all(p.output.size <= 4096 for p in s.pieces)
    assert len({p.output.buffer for p in s.pieces}) == 3


def test_groups_shrink_until_their_pairs_fit():
    desc = TensorDesc("FLOAT32", (4, 2, 300), strides=(300, 1200, 1))  # axis 1 (reduced) outermost
    s = schedule(ArgMaxOperatorDesc(desc, axes=[1]).lower(), SMALL, "ignore")
    pieces_cover(desc, s)
    assert s.merges >= 1 and 0 < s.partial_bytes <= 4096


@pytest.mark.parametrize("shape, strides, axes", [
    ((3, 2000), None, (1,)),
    ((2000, 3), None, (0,)),
    ((40, 50), (1, 40), (0, 1)),
    ((6, 7, 300), (1, 6 * 300, 6), (0, 2)),
    ((2, 3, 4, 500), None, (0, 3)),
])
def test_every_schedule_fits_its_bindings(shape, strides, axes):
    desc = TensorDesc("FLOAT32", shape, strides)
    s = schedule(ArgMaxOperatorDesc(desc, axes=list(axes)).lower(), SMALL, "ignore")
    pieces_cover(desc, s)
    for p in s.pieces:
        for w in (p.input, p.output):
            assert w is None or (w.offset % 256 == 0 and w.size % 16 == 0 and w.size <= 4096)
    assert s.partial_bytes <= 4096


def test_what_fits_is_one_piece():
    s = schedule(ArgMaxOperatorDesc(TensorDesc("FLOAT32", (10, 10)), axes=[1]).lower(), SMALL, "ignore")
    assert len(s.pieces) == 1 and s.merges == 0 and s.pieces[0].plan.in_base == 0


def test_buffer_grid_cells_each_fit_a_buffer():
    desc = TensorDesc("UINT8", (3, 7, 5000), strides=(40000, 5000, 1))
    grid = buffer_grid(desc, SMALL)
    for box in itertools.product(*grid):
        assert span(desc, box) <= 16384
    assert sum(nbytes for _, nbytes in buffer_spans(desc, SMALL)) >= desc.element_count


def test_a_single_element_cannot_exceed_anything():
    with pytest.raises(DescriptorError):  # a reasonable bound on what a test adapter may claim
        schedule(ArgMaxOperatorDesc(TensorDesc("FLOAT32", (4, 1000)), axes=[1]).lower(),
                 Capabilities(max_storage_binding=256, max_buffer=16384, offset_alignment=256), "ignore")
