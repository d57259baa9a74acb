"""The planner, without a GPU: simplification, kernel choice, splits and grids."""

import dataclasses
import math

import numpy as np
import pytest

from dmlgpu.desc import ActivationHardmax1OperatorDesc, ArgMaxOperatorDesc, TensorDesc
from dmlgpu.plan import Capabilities, Dim, Tuning, grid_for, merge_dims, plan, simplify

CAPS = Capabilities(max_storage_binding=2**31 - 4, max_buffer=2**32, max_workgroups_per_dim=65535, shader_int64=True)


def argmax_plan(sizes, axes, strides=None, data_type="FLOAT32", caps=CAPS, tuning=Tuning()):
    desc = ArgMaxOperatorDesc(TensorDesc(data_type, sizes, strides), axes=axes)
    return plan(desc.lower(), caps, tuning=tuning)


def test_merge_drops_ones_and_joins_contiguous_dims():
    dims = [Dim(4, 30, 6), Dim(1, 99, 99), Dim(5, 6, 1)]  # 30 == 6 * 5 but 6 != 1 * 5
    assert merge_dims(dims) == (Dim(4, 30, 6), Dim(5, 6, 1))
    assert merge_dims([Dim(4, 5, 0), Dim(5, 1, 0)]) == (Dim(20, 1, 0),)


def test_packed_all_axes_is_one_dimension():
    desc = ArgMaxOperatorDesc(TensorDesc("FLOAT32", (2, 3, 4)), axes=[0, 1, 2])
    assert simplify(desc.lower()) == ((), (Dim(24, 1, 0, 1),))


def test_reduced_axes_keep_ascending_order_when_strides_do_not():
    # A transposed view: axis 0 is innermost in memory. Axes {0,1} must not merge.
    desc = ArgMaxOperatorDesc(TensorDesc("FLOAT32", (3, 4), strides=(1, 3)), axes=[0, 1])
    assert simplify(desc.lower())[1] == (Dim(3, 1, 0, 4), Dim(4, 3, 0, 1))


def test_index_strides_of_a_piece_keep_dims_apart():
    # Rows 0..2 of a (3, 4) reduction's first axis as a piece of a (3, 6) whole: memory lines
    # up, but a step of axis 0 moves the index by 6, not 4, so the dims stay apart.
    desc = ArgMaxOperatorDesc(TensorDesc("FLOAT32", (3, 4), strides=(4, 1)), axes=[0, 1])
    assert simplify(desc.lower(), {0: 6, 1: 1})[1] == (Dim(3, 4, 0, 6), Dim(4, 1, 0, 1))
    p = plan(desc.lower(), CAPS, index_strides={0: 6, 1: 1})
    assert p.remaps_index and not plan(desc.lower(), CAPS).remaps_index


def test_kept_dims_put_smallest_input_stride_innermost():
    desc = ArgMaxOperatorDesc(TensorDesc("FLOAT32", (5, 6, 7), strides=(1, 5, 30)), axes=[1])
    kept, _ = simplify(desc.lower())
    assert [d.in_stride for d in kept] == [30, 1]


@pytest.mark.parametrize(
    "sizes, axes, kernel, loader, segment, split",
    [
        ((4096, 65536), [1], "reduce_segments", "load_quads", 256, 1),  # long rows: a workgroup each
        ((1, 151936), [1], "reduce_segments", "load_quads", 128, 295),  # one long row: a quad a thread, workgroups of 128
        ((2**28,), [0], "reduce_segments", "load_quads", 128, 4096),  # all axes: split
        ((65536, 4096), [0], "reduce_columns", "load_quads", 8, 16),  # outer axis: columns, split, 8 lanes a chunk
        ((16, 21, 512, 512), [1], "reduce_columns", "load_quads", 1, 1),  # middle axis
        ((16777216, 8), [1], "reduce_rows", "load_quads", 1, 1),  # many tiny rows: two a thread
        ((4194304, 64), [1], "reduce_rows", "load_quads", 2, 1),  # 128 rows a workgroup
        ((1048576, 3), [1], "reduce_rows", "load_quads", 1, 1),  # rows not whole quads: 4 rows (3 quads) a thread
        ((8, 16777216), [0], "reduce_columns", "load_quads", 1, 1),
        ((1048576, 3), [0], "reduce_thread", "load_packed", 1, 16384),  # 3 columns: not a quad
        ((64, 128, 4096), [0, 2], "reduce_segments", "load_quads", 256, 8),  # multi-axis, quads per row, 128 a lane
    ],
)
def test_kernel_choice_by_shape(sizes, axes, kernel, loader, segment, split):
    p = argmax_plan(sizes, axes)
    assert (p.kernel, p.loader, p.segment, p.split) == (kernel, loader, segment, split)
    assert p.split * p.chunk >= p.reduced_count > (p.split - 1) * p.chunk
    assert all(side <= CAPS.max_workgroups_per_dim for side in p.grid)
    assert (p.merge_grid is None) == (p.split == 1)


def test_the_float64_bandwidth_case_reads_two_doubles_a_load_in_one_pass():
    """The full suite's rows_f64, (4096, 32768) FLOAT64 over axis 1 (1 GiB), as the H100's
    limits plan it: a workgroup of 256 threads a row, each loading 64 16-byte quads (two
    doubles each) and testing them on their high words before keying them, no split and no
    merge pass; 64-bit keys never race (their pairs would not fit the atomic word)."""
    for shader_int64 in (True, False):
        caps = dataclasses.replace(CAPS, shader_int64=shader_int64, int64_atomics=shader_int64)
        p = argmax_plan((4096, 32768), [1], data_type="FLOAT64", caps=caps)
        assert (p.kernel, p.loader, p.segment, p.workgroup_size, p.split) == (
            "reduce_segments", "load_pair_quads", 256, 256, 1)
        assert p.merge_kernel is None and not p.race and p.grid == (4096, 1, 1) and p.int64 is shader_int64
        assert p.skip_test and p.batch == 0  # walk_pairs.wgsl's skip test; batches are walk_batched's
    one_row = argmax_plan((1, 2**24), [1], data_type="FLOAT64", caps=dataclasses.replace(CAPS, int64_atomics=True))
    assert one_row.loader == "load_pair_quads" and one_row.split > 1 and not one_row.race
    assert one_row.chunk % 2 == 0 and one_row.merge_kernel == "merge_partials_workgroup"


def test_quads_need_16_byte_aligned_rows():
    assert argmax_plan((64, 1024), [1]).loader == "load_quads"
    assert argmax_plan((64, 1024), [1], strides=(1026, 1)).loader == "load_packed"  # 1026 % 4 != 0
    assert argmax_plan((64, 1024), [1], data_type="FLOAT16", strides=(1032, 1)).loader == "load_quads"
    assert argmax_plan((64, 1024), [1], data_type="INT64").loader == "load_pair_quads"  # two a quad
    assert argmax_plan((64, 1024), [1], data_type="FLOAT64").loader == "load_pair_quads"
    assert argmax_plan((64, 1024), [1], data_type="FLOAT64", strides=(1025, 1)).loader == "load_pairs"  # 1025 % 2
    assert argmax_plan((64, 1024), [0], data_type="FLOAT64").loader == "load_pairs"  # columns: a thread an output
    assert argmax_plan((64, 1024), [1], data_type="UINT8", strides=(1032, 1)).loader == "load_packed"  # 1032 % 16


def test_quads_need_an_input_of_at_least_one_quad():
    """A caller's binding holds only the tensor's bytes: a shader declaring quads cannot bind fewer than 16."""
    assert argmax_plan((1, 3), [1]).loader == "load_packed"
    assert argmax_plan((1, 4), [1]).loader == "load_quads"
    assert argmax_plan((2, 3), [1], data_type="FLOAT16").loader == "load_packed"  # 12 bytes
    assert argmax_plan((3, 3), [1], data_type="FLOAT16").kernel == "reduce_rows"  # 20
    assert argmax_plan((2, 6), [1], data_type="UINT8").loader == "load_packed"  # 12 bytes
    assert argmax_plan((2, 7), [1], data_type="UINT8").loader == "load_quads"  # 14, in whole words 16
    assert argmax_plan((4, 4), [0], data_type="UINT8").kernel != "reduce_columns"
    assert argmax_plan((1, 16), [0], data_type="UINT8").kernel == "reduce_columns"


def test_merge_kernel_follows_the_number_of_chunks_and_outputs():
    few_outputs = argmax_plan((1, 151936), [1])
    many_chunks = argmax_plan((2**28,), [0])
    many_outputs = argmax_plan((1024, 2**20), [1])  # 4 chunks each
    assert few_outputs.merge_kernel == "merge_partials_workgroup" and few_outputs.merge_grid == (1, 1, 1)
    assert many_chunks.merge_kernel == "merge_partials_workgroup" and many_chunks.merge_grid == (1, 1, 1)
    assert many_outputs.split == 4 and many_outputs.merge_kernel == "merge_partials"
    assert many_outputs.merge_grid == (4, 1, 1)
    few = argmax_plan((64, 151936), [1], tuning=Tuning(merge_workgroup_below=0, race_max_chunks=0))
    assert few.split == 4 and few.merge_kernel == "merge_partials"  # several rows: at least 128 a lane
    assert argmax_plan((1, 151936), [1]).split == 295  # one row: 4 a lane, every SM busy
    assert argmax_plan((4096, 65536), [1]).merge_kernel is None


def test_a_split_races_in_one_dispatch_where_the_adapter_has_64_bit_atomics():
    atomics = dataclasses.replace(CAPS, int64_atomics=True)
    one = argmax_plan((1, 151936), [1], caps=atomics)
    assert one.race and one.split == 295 and one.merge_kernel is None and one.partial_bytes == 0
    assert one.race_bytes == 16
    assert argmax_plan((64, 151936), [1], caps=atomics, data_type="FLOAT16").race  # 64 rows of 4 chunks
    assert not argmax_plan((1, 151936), [1]).race  # no atomics: a merge pass
    assert argmax_plan((2**28,), [0], caps=atomics).race  # 4096 chunks race too
    assert not argmax_plan((2**28,), [0], caps=atomics, tuning=Tuning(race_max_chunks=2048)).race  # too many
    assert not argmax_plan((1, 151936), [1], caps=atomics, data_type="INT64").race  # 64-bit keys
    assert not argmax_plan((1, 151936), [1], caps=atomics, tuning=Tuning(race_max_chunks=0)).race
    assert not argmax_plan((4096, 65536), [1], caps=atomics).race  # nothing to merge
    cols = argmax_plan((65536, 4096), [0], caps=atomics)  # columns race too
    assert cols.kernel == "reduce_columns" and cols.race and cols.merge_kernel is None
    assert not argmax_plan((65536, 4096), [0], caps=atomics, tuning=Tuning(race_max_chunks=0)).race
    assert not argmax_plan((1048576, 3), [0], caps=atomics).race  # reduce_thread keeps its merge pass


def test_one_output_over_contiguous_elements_takes_smaller_workgroups():
    assert argmax_plan((1, 151936), [1]).workgroup_size == 128
    assert argmax_plan((1, 151936), [1], tuning=Tuning(single_output_workgroup_size=256)).workgroup_size == 256
    assert argmax_plan((2, 151936), [1]).workgroup_size == 256  # two outputs
    assert argmax_plan((151936, 1), [0]).workgroup_size == 128  # one output, however it is written


def test_quads_over_several_reduced_dims_need_whole_quad_rows():
    assert argmax_plan((64, 128, 4096), [0, 2]).loader == "load_quads"
    assert argmax_plan((64, 128, 4094), [0, 2]).loader == "load_packed"  # a quad would straddle rows
    assert argmax_plan((64, 128, 4096), [0, 2], strides=(128 * 4098, 4098, 1)).loader == "load_packed"


def test_quad_chunks_are_whole_quads():
    p = argmax_plan((1, 100003), [1], tuning=Tuning(min_chunk_per_lane_single=1, target_workgroups=7))
    assert p.split == 7 and p.chunk % 4 == 0


def test_grid_never_exceeds_the_limit():
    assert grid_for(65535, 65535) == (65535, 1, 1)
    assert grid_for(65536, 65535) == (65535, 2, 1)
    assert grid_for(65535 * 65535 + 1, 65535) == (65535, 65535, 2)
    p = argmax_plan((2**22, 8), [1], caps=Capabilities(2**31, 2**32, 1000, True))
    assert all(side <= 1000 for side in p.grid)


def test_hardmax_plans_clear_the_output():
    desc = ActivationHardmax1OperatorDesc(TensorDesc("FLOAT16", (8, 300)), axes=[1])
    p = plan(desc.lower(), CAPS)
    assert p.clears_output and p.op == "hardmax"
    assert not argmax_plan((8, 300), [1]).clears_output


def test_batched_walk_and_skip_test_where_threads_walk_many_quads():
    rows = argmax_plan((4096, 65536), [1])  # 64 quads a thread
    assert (rows.batch, rows.skip_test) == (2, True)
    short = argmax_plan((4096, 1024), [1], tuning=Tuning(loads_per_thread=4))  # 4 quads a thread: nothing to skip
    assert (short.batch, short.skip_test) == (2, False)
    assert argmax_plan((64, 128, 4096), [0, 2]).batch == 2  # multi-axis quads: the odometer
    assert argmax_plan((4096, 65536), [1], tuning=Tuning(batch=4)).batch == 4
    assert argmax_plan((1048576, 3), [1]).batch == 0  # no quads: the element walk
    assert argmax_plan((65536, 4096), [0]).batch == 0  # other kernels walk their own way
    off = argmax_plan((4096, 65536), [1], tuning=Tuning(batch=0))
    assert (off.batch, off.skip_test) == (0, False)
    assert not argmax_plan((4096, 65536), [1], tuning=Tuning(skip_min_quads=0)).skip_test


@pytest.mark.parametrize(
    "sizes, data_type, strides, blocks",
    [
        ((16777216, 8), "FLOAT32", None, (1, 1)),  # 2 quads a row, a row a thread (rows_block_loads)
        ((33554432, 3), "FLOAT32", None, (1, 4)),  # 4 rows make 3 quads
        ((1000, 3), "INT8", None, (1, 16)),  # 16 rows make 3 quads
        ((1000, 13), "FLOAT32", None, (1, 4)),  # 4 rows make 13 quads: a thread's, within twice loads_per_thread
        ((1000, 17), "FLOAT32", None, None),  # 4 rows make 17 quads: too many for a thread
        ((1000, 16), "FLOAT32", None, (1, 1)),
        ((4194304, 64), "FLOAT32", None, (2, 1)),  # 16 quads a row: 2 threads a row
        ((1048576, 256), "FLOAT32", None, (8, 1)),
        ((1000, 257), "FLOAT32", None, None),  # beyond rows_max_bytes
        ((1000, 8), "FLOAT32", (12, 1), None),  # padded rows are not one run
        ((1000, 8), "INT64", None, None),
    ],
)
def test_short_packed_rows_go_to_reduce_rows(sizes, data_type, strides, blocks):
    blocks_of_rows = Tuning(rows_whole_quads=False)
    p = argmax_plan(sizes, [1], strides=strides, data_type=data_type, tuning=blocks_of_rows)
    assert ((p.segment, p.block_rows) if p.kernel == "reduce_rows" else None) == blocks
    whole_only = argmax_plan(sizes, [1], strides=strides, data_type=data_type, tuning=Tuning(rows_whole_quads=True))
    whole = blocks is not None and sizes[1] * np.dtype(data_type.lower()).itemsize % 16 == 0
    assert (whole_only.kernel == "reduce_rows") == whole
    assert argmax_plan(sizes, [1], strides=strides, data_type=data_type) == p  # blocks of rows: the default
    if blocks:
        assert p.row_width == sizes[1] and p.split == 1 and p.loader == "load_quads"
        assert p.grid[0] <= Tuning().rows_groups
    off = argmax_plan(sizes, [1], strides=strides, data_type=data_type, tuning=Tuning(rows_max_bytes=0))
    assert off.kernel != "reduce_rows" and off.row_width == 0


def test_short_rows_of_several_a_thread_store_through_workgroup_memory_where_it_fits():
    assert argmax_plan((1048576, 3), [1]).row_stage  # 4 rows a thread
    assert not argmax_plan((16777216, 8), [1]).row_stage  # a row a thread stores next to its neighbours already
    assert argmax_plan((1048576, 3), [1]).workgroup_size == 128  # several rows a thread
    assert argmax_plan((16777216, 8), [1]).workgroup_size == 256
    wide = Tuning(several_rows_workgroup_size=256)
    half = argmax_plan((1024, 3), [1], data_type="FLOAT16", tuning=wide)  # 8 rows a thread: 256 x 9 pairs exceed 16 KiB
    assert half.block_rows == 8 and not half.row_stage
    assert argmax_plan((1024, 3), [1], data_type="FLOAT16").row_stage  # in workgroups of 128 they fit
    assert not argmax_plan((1024, 3), [1], data_type="INT8").row_stage  # 16 rows a thread: 128 x 17 pairs do not
    assert not argmax_plan((4194304, 64), [1]).row_stage  # a row over two threads


def test_columns_plans_take_the_tunings_walk_and_other_plans_keep_its_defaults():
    runs = argmax_plan((65536, 4096), [0], tuning=Tuning(columns_interleave=False, columns_unroll=3, columns_lanes=1))
    assert (runs.kernel, runs.interleave, runs.column_unroll, runs.split) == ("reduce_columns", False, 3, 128)
    cols = argmax_plan((65536, 4096), [0])
    assert (cols.interleave, cols.column_unroll, cols.segment, cols.split) == (True, 4, 8, 16)  # the defaults
    tall = argmax_plan((8, 16777216), [0])  # a quad of outputs a thread is work enough: unsplit
    assert (tall.kernel, tall.split) == ("reduce_columns", 1)
    rows = argmax_plan((4096, 65536), [1], tuning=Tuning(columns_unroll=2))
    assert (rows.interleave, rows.column_unroll) == (False, 1)  # not a columns plan


def test_split_segments_interleave_where_a_chunk_holds_two_spans():
    """A split's chunks take grid-stride spans by default where each holds at least two of its
    segment's spans; a chunk of one span (a long row cut for every multiprocessor) keeps its run."""
    whole = argmax_plan((16384, 16384), [0, 1])
    assert (whole.kernel, whole.split > 1, whole.interleave) == ("reduce_segments", True, True)
    batch = argmax_plan((64, 151936), [1], data_type="FLOAT16")
    assert (batch.split > 1, batch.interleave) == (True, True)
    row = argmax_plan((1, 151936), [1], data_type="FLOAT16")  # chunks of 64 quads for 128 threads
    assert (row.split > 1, row.interleave) == (True, False)
    runs = argmax_plan((64, 151936), [1], data_type="FLOAT16", tuning=Tuning(segments_interleave=False))
    assert (runs.split, runs.interleave) == (batch.split, False)
    assert not argmax_plan((4096, 65536), [1]).interleave  # unsplit rows
    two = argmax_plan((64, 256, 4096), [0, 2], tuning=Tuning(min_chunk_per_lane=512, batch=4))
    assert (two.split > 1, two.interleave) == (True, False)  # two reduced dimensions walk their runs


def test_columns_lanes_share_a_chunk_and_keep_the_threads():
    one = argmax_plan((65536, 4096), [0], tuning=Tuning(columns_lanes=1))
    four = argmax_plan((65536, 4096), [0], tuning=Tuning(columns_lanes=4))
    assert (one.segment, one.split, four.segment, four.split) == (1, 128, 4, 32)  # 4x fewer pairs racing
    assert math.prod(four.grid) == math.prod(one.grid)  # as many threads loading
    # Lanes are a power of two dividing the workgroup, and no more than a chunk has rows.
    assert argmax_plan((65536, 4096), [0], tuning=Tuning(columns_lanes=6, workgroup_size=64)).segment == 4
    assert argmax_plan((3, 4096), [0], tuning=Tuning(columns_lanes=8, min_chunk_thread=1)).segment == 2
    # No lanes where a chunk would not race: a quad of outputs a thread is work enough.
    assert argmax_plan((8, 16777216), [0], tuning=Tuning(columns_lanes=8)).segment == 1
    assert argmax_plan((4096, 65536), [1], tuning=Tuning(columns_lanes=4)).kernel != "reduce_columns"


def test_marked_loops_are_written_out_with_constant_indices():
    from dmlgpu.wgsl import UNROLL_MAX, integer_constants, shader_sources, template, unroll

    loop = "for (var k = 0u; k < N; k++) { // unroll\n    a[k] = b[k];\n}\n"
    two = "const N: u32 = 4u / 2u;\n"
    assert unroll(two + loop) == two + "{ const k = 0u;\n    a[k] = b[k];\n}{ const k = 1u;\n    a[k] = b[k];\n}\n"
    assert unroll(loop) == loop  # an undeclared bound stays a loop
    many = f"const N = {UNROLL_MAX + 1}u;\n"
    assert unroll(many + loop) == many + loop
    with pytest.raises(ValueError, match="breaks or continues"):
        unroll(two + loop.replace("a[k] = b[k];", "if (k > 0u) { continue; }"))
    assert integer_constants("const A = 0x10u;\nconst B: u32 = (A + 2u) / 4u % 3u;\nconst C = select(1u, 2u, true);") == {"A": 16, "B": 1}
    cols = argmax_plan((65536, 4096), [0])
    first = shader_sources(cols)[0]
    assert "// unroll" not in first and "const u = 1u;" in first  # COL_UNROLL rows, written out
    off = shader_sources(argmax_plan((65536, 4096), [0], tuning=Tuning(unroll=False)))[0]
    marked = sum(template(name).count("// unroll") for name in ("load_quads", "reduce_columns"))
    assert off.count("// unroll") == marked and "const u = " not in off
