"""The planner: which kernel suits a reduction, over which simplified shape, on what grid.

Pure Python: it reads an ``ArgReduction`` and the adapter's ``Capabilities`` (plain
numbers, filled in by the runner) and returns a ``Plan``. Nothing here imports wgpu,
so every decision can be tested on a machine without a GPU.
"""

from __future__ import annotations

import dataclasses
import math

from .desc import ArgReduction
from .errors import DescriptorError
from .types import AxisDirection, DataType, NanMode

#: Largest rank the kernels address after simplification (DirectML's limit).
MAX_DIMS = 8
#: Bytes of workgroup memory a shader may declare: WebGPU's default limit, which every adapter
#: grants and the runner asks no more than.
WORKGROUP_STORAGE = 16384


@dataclasses.dataclass(frozen=True)
class Tuning:
    """The planner's thresholds. Tests shrink them to reach every path on small inputs."""

    workgroup_size: int = 256
    #: Workgroups of at most this many threads where one output reduces contiguous elements
    #: (one long row, or all of a tensor): more workgroups share the SMs. 128 against 256 on
    #: the H100, interleaved: all_1gib 3008 / 2918 GB/s, (1, 151936) 7.5 / 7.7 us.
    single_output_workgroup_size: int = 128
    #: Contiguous rows get threads enough that each makes this many loads (a power of two,
    #: at most a workgroup of threads per row). With loops unrolled, 8 against 4 on the H100:
    #: rows of 256 FLOAT32 +14%, of 64 +11% (2: -19%, -16%); long rows take 256 threads either way.
    loads_per_thread: int = 8
    #: Split reductions until this many workgroups (segments kernel) or threads (thread
    #: kernel) are in flight, but not into chunks shorter than the minimum. A single long row
    #: (1, 151936) is split into chunks of a few elements a lane: about 300 workgroups of 128
    #: threads, a quad a thread, enough for every SM (7.5 us on the H100, against 23.8 in 18
    #: chunks of 32 a lane); several rows keep chunks of 128 a lane (interleaved on the H100, elements
    #: a lane 32 / 64 / 128 / 256 / 512: (64, 151936) FLOAT16 35.2 / 27.4 / 25.1 / 32.8 /
    #: 43.8 us, where each output's chunks race; (64, 256, 4096) over {0, 2} 1832 / 1829 /
    #: 2004 / 1880 / 1981 GB/s).
    target_workgroups: int = 4096
    min_chunk_per_lane: int = 128
    min_chunk_per_lane_single: int = 4
    #: (Columns: 2^17 threads against 2^18, racing, on the H100: cols 2880 / 2811 GB/s.)
    target_threads: int = 2**17
    min_chunk_thread: int = 64
    #: Splits into more chunks than this merge with a workgroup per output, and so do splits
    #: of fewer outputs than merge_workgroup_below (a thread an output would leave most of the
    #: GPU idle while it reads its chunks' pairs one after another).
    merge_workgroup_above: int = 64
    merge_workgroup_below: int = 256
    #: A segments or columns split of at most this many chunks runs in one dispatch where the
    #: adapter has 64-bit atomics: its work items race to merge their pairs and the last of an
    #: output's stores the winner (0: always a merge pass). On the H100, interleaved: all_1gib
    #: (4096 chunks) 2575 GB/s racing against 2482 with a merge pass, 256 and 16384 otherwise
    #: alike; cols (128 chunks) 2880 against 2769.
    race_max_chunks: int = 4096
    #: Merge within subgroups with shuffles where the adapter has them (off: the tree alone).
    subgroups: bool = True
    #: The segments kernel's walk over 16-byte quads: each thread loads this many quads before
    #: it folds them (loads in flight), and carries multi-axis offsets without divisions
    #: (0: the walk before, one quad at a time, an offset's division per quad). With loops
    #: unrolled, 2 against 1 on the H100: rows +2%, axes02 +6%, FLOAT16 +5%, all_1gib -2%;
    #: 4 costs INT8 25%.
    batch: int = 2
    #: In that walk, quads are first tested against the best key of the thread's subgroup
    #: (shared after every batch where a subgroup lies in one segment, else the thread's own),
    #: and only those that may win get exact keys; for walks of at least this many quads a
    #: thread (0: never). 64-bit quads (walk_pairs.wgsl) are tested so too, on high words.
    skip_min_quads: int = 8
    #: reduce_columns splits: chunk c of S takes rows c, c + S, c + 2S, ..., so that the
    #: threads in flight read neighbouring rows (off: chunk c takes the c-th run of rows;
    #: on the H100, cols +3%, wide_cols +2%, interleaved in one process).
    columns_interleave: bool = True
    #: reduce_columns loads this many rows' quads before folding any (loads in flight a thread):
    #: 2 against 1 on the H100, seg_classes +2.5%, tall_axis0 +1.6%, cols and wide_cols alike; 4
    #: costs cols 7%.
    columns_unroll: int = 2
    #: Packed rows up to this many bytes go to reduce_rows: a block of whole quads a thread
    #: (or a segment a row), workgroups striding over the rows (0: the segments kernel).
    rows_max_bytes: int = 1024
    #: At most this many workgroups for reduce_rows; each then strides over several tiles of
    #: rows (0: a workgroup a tile). 16384 against 4096 on the H100, interleaved: rows of 8,
    #: 64 and 256 FLOAT32 +3-4%.
    rows_groups: int = 16384
    #: reduce_rows takes only rows of whole quads (off: blocks of rows too). Rows of 3 FLOAT32
    #: on the H100 ran at 1322 GB/s in the segments kernel against 1135 in blocks of 4 rows
    #: while the blocks' arrays lived in memory; with loops unrolled, 1329 against 1542.
    rows_whole_quads: bool = False
    #: reduce_rows: rows of at most loads_per_thread quads go a block to a thread, a block
    #: being as many rows as make about this many quads (rows of 8 FLOAT32, 2 quads: one row
    #: a thread with 2 or 1, two rows with 4: 1720 / 1718 / 1327 GB/s on the H100).
    rows_block_loads: int = 2
    #: reduce_rows with several rows a thread (their results stored through workgroup memory)
    #: takes workgroups of at most this many threads: rows of 3 FLOAT32 on the H100, 2151 GB/s
    #: with 128 against 2034 with 256 (interleaved), and 128 leaves room to stage 8 rows a thread.
    several_rows_workgroup_size: int = 128
    #: reduce_rows with several rows a thread may store a tile's results through workgroup
    #: memory (staged_rows_fit) so that consecutive threads store consecutive rows (off: each
    #: thread stores its own, with no barrier: what a CPU adapter wants).
    row_stage: bool = True
    #: Quads are read as two 64-bit halves where the adapter has shader-int64
    #: (src_quads_wide.wgsl): half the loads, for CPU adapters that load each vector
    #: component of each lane on its own.
    wide_loads: bool = False
    #: Loops marked ``// unroll`` in the templates are written out (wgsl.unroll; off: loops).
    unroll: bool = True
    #: An experiment, never a default: keys are the elements' raw bits (answers are wrong), so
    #: that a kernel timed with it bounds what its key work costs (benchmarks/LOG.md).
    bound_no_keys: bool = False


@dataclasses.dataclass(frozen=True)
class Capabilities:
    """What the planner needs to know of an adapter."""

    max_storage_binding: int
    max_buffer: int
    max_workgroups_per_dim: int = 65535
    shader_int64: bool = False
    offset_alignment: int = 256  # a storage binding's offset must be a multiple of this
    subgroups: bool = False  # the subgroup feature: shuffles merge within subgroups
    int64_atomics: bool = False  # shader-int64 and 64-bit atomics that return their old value
    software: bool = False  # a CPU adapter (lavapipe, WARP, SwiftShader): invocations are SIMD lanes of a few cores


@dataclasses.dataclass(frozen=True)
class Dim:
    """One dimension after simplification: its size and its strides in elements.

    ``index_stride``, for reduced dimensions: what a step adds to the index reported, which
    is row-major over the whole reduction's sizes; a piece of a reduction (see
    ``pieces.schedule``) may step it by more than its own row-major order would.
    """

    size: int
    in_stride: int
    out_stride: int
    index_stride: int = 0


@dataclasses.dataclass(frozen=True)
class Plan:
    """Everything the code generator and the runner need, and nothing they must work out.

    A plan has one pass, or two when ``split > 1``: the first reduces ``split`` chunks of
    each output's elements to partial (key, index) pairs, the second merges them.
    """

    kernel: str  # the first pass's template: "reduce_segments", "reduce_rows", "reduce_thread" or "reduce_columns"
    loader: str  # how elements are read: "load_packed", "load_quads", "load_pairs" or "load_pair_quads"
    op: str  # "argmax", "argmin" or "hardmax"
    input_type: DataType
    output_type: DataType
    increasing: bool
    nan_mode: NanMode
    int64: bool  # 64-bit keys as native u64 (True) or as two u32 words (False)
    subgroups: bool  # segments that fit a subgroup merge with shuffles
    batch: int  # quads a thread of reduce_segments loads at once (0: the one-at-a-time walk)
    skip_test: bool  # in that walk, quads that cannot beat the subgroup's best are skipped
    column_interleave: bool  # reduce_columns: a chunk takes every split-th row
    column_unroll: int  # reduce_columns: rows loaded before any is folded (1 for the other kernels)
    row_stage: bool  # reduce_rows, a block of several rows a thread: results stored through workgroup memory
    no_keys: bool  # Tuning.bound_no_keys: an experiment whose answers are wrong
    wide_loads: bool  # load_quads and load_pair_quads read each quad as two 64-bit halves (src_quads_wide.wgsl)
    unroll: bool  # Tuning.unroll: loops marked in the templates are written out
    kept: tuple[Dim, ...]  # dimensions that index outputs, the smallest input stride last
    reduced: tuple[Dim, ...]  # reduced dimensions, ascending axis order
    workgroup_size: int
    segment: int  # threads per work item of reduce_segments or reduce_rows (1 for the other kernels)
    # reduce_rows: elements a row, and rows a block (the kernel's text holds both)
    row_width: int
    block_rows: int
    split: int  # chunks per output
    chunk: int  # reduced elements per chunk
    grid: tuple[int, int, int]  # the first pass's
    merge_kernel: str | None  # the second pass's template, when split > 1
    merge_grid: tuple[int, int, int] | None
    # Where a piece of a tensor larger than one binding sits (see ``schedule``): element
    # offsets of its first input and output elements within their bound windows, the
    # index of its first reduced element, and the first slot of its partial pairs.
    in_base: int = 0
    out_base: int = 0
    index_offset: int = 0
    slot_base: int = 0
    partials_only: bool = False  # the first pass stores pairs for a merge after every piece
    # Output elements from out_base that a HARDMAX store may write (a merge run once per
    # window of a large output writes the winners that fall in its window).
    out_limit: int = 2**32 - 1
    # One dispatch for a split: the first pass's work items race to merge their pairs in
    # 64-bit atomic words (binding 3), and the last of an output's stores its winner.
    race: bool = False

    @property
    def output_count(self) -> int:
        return math.prod(d.size for d in self.kept)

    @property
    def reduced_count(self) -> int:
        return math.prod(d.size for d in self.reduced)

    @property
    def remaps_index(self) -> bool:
        """Whether reported indices step otherwise than row-major over ``reduced``."""
        inner = 1
        for d in reversed(self.reduced):
            if d.index_stride != inner:
                return True
            inner *= d.size
        return False

    @property
    def clears_output(self) -> bool:
        """HARDMAX zeroes its output, then writes a 1 per slice."""
        return self.op == "hardmax"

    @property
    def race_bytes(self) -> int:
        """Scratch for a racing first pass: a 64-bit word and a count per output (16 bytes)."""
        return 16 * self.output_count if self.race else 0

    @property
    def partial_bytes(self) -> int:
        """Scratch for the first pass's pairs (16 bytes each) when this plan merges them itself."""
        return 16 * self.output_count * self.split if self.merge_kernel and self.kernel else 0


def merge_dims(dims: list[Dim]) -> tuple[Dim, ...]:
    """Drop size-1 dimensions and merge neighbours that address memory as one.

    Dimension ``a`` followed by ``b`` merge when, for every stride, stepping ``a`` once
    equals stepping ``b`` through its whole size; the row-major order of the elements,
    and so every flat index, is unchanged.
    """
    merged: list[Dim] = []
    for d in dims:
        if d.size == 1:
            continue
        if merged:
            a = merged[-1]
            if all(x == y * d.size for x, y in zip(dataclasses.astuple(a)[1:], dataclasses.astuple(d)[1:])):
                merged[-1] = dataclasses.replace(d, size=a.size * d.size)
                continue
        merged.append(d)
    return tuple(merged)


def row_major_index_strides(red: ArgReduction) -> dict[int, int]:
    """What a step of each reduced axis adds to the reported index: row-major over the
    reduced axes in ascending order (docs/semantics.md#index-ties-floats-nan-integers)."""
    sizes = red.input.sizes
    return {a: math.prod(sizes[b] for b in red.axes if b > a) for a in red.axes}


def simplify(red: ArgReduction, index_strides: dict[int, int] | None = None) -> tuple[tuple[Dim, ...], tuple[Dim, ...]]:
    """The kept and reduced dimensions of a reduction, simplified.

    Reduced dimensions carry the output stride only for HARDMAX (whose output has the
    input's shape); for the index operators their output stride is 0. ``index_strides``
    (by axis) are a whole reduction's when ``red`` is a piece of it; by default the
    reported index is row-major over ``red``'s own reduced sizes.
    """
    in_strides = red.input.element_strides
    out_strides = red.output.element_strides
    hardmax = red.op == "hardmax"
    sizes = red.input.sizes
    if index_strides is None:
        index_strides = row_major_index_strides(red)
    kept, reduced = [], []
    for axis, size in enumerate(sizes):
        if axis in red.axes:
            reduced.append(Dim(size, in_strides[axis], out_strides[axis] if hardmax else 0, index_strides[axis]))
        else:
            kept.append(Dim(size, in_strides[axis], out_strides[axis]))
    # Outputs may be visited in any order: put the smallest input stride innermost, so
    # neighbouring work items read neighbouring addresses, then merge what lines up.
    kept.sort(key=lambda d: (d.in_stride, d.out_stride), reverse=True)
    return merge_dims(kept), merge_dims(reduced)


def grid_for(count: int, max_per_dim: int) -> tuple[int, int, int]:
    """A 3-D grid of at least ``count`` workgroups, none of its sides over the limit."""
    x = min(count, max_per_dim)
    rows = math.ceil(count / x)
    y = min(rows, max_per_dim)
    z = math.ceil(rows / y)
    if z > max_per_dim:
        raise DescriptorError(f"{count} outputs need more than {max_per_dim}^3 workgroups")
    return (x, y, z)


def reads_quads(red: ArgReduction) -> bool:
    """Whether the input may be read in 16-byte quads: it holds at least a quad's bytes. A
    caller's binding holds only the tensor's ``total_tensor_size_in_bytes`` (docs/binding.md),
    and a shader that declares its input as quads cannot be bound to fewer than 16 bytes."""
    return red.input.total_tensor_size_in_bytes >= 16


def elements_per_quad(red: ArgReduction, reduced: tuple[Dim, ...], kept: tuple[Dim, ...], in_base: int = 0) -> int:
    """Elements in a 16-byte load when the reduced rows are contiguous and every quad is
    aligned, else 0 (64-bit elements: 2, read by load_pair_quads). With several reduced
    dimensions the innermost must also be a whole number of quads, so that no quad straddles
    two rows."""
    size = red.input.data_type.size
    if not reads_quads(red) or not reduced or reduced[-1].in_stride != 1:
        return 0
    per_quad = 16 // size
    outer = reduced[:-1]
    if outer and reduced[-1].size % per_quad:
        return 0
    aligned = in_base % per_quad == 0 and all(d.in_stride % per_quad == 0 for d in kept + outer)
    return per_quad if aligned else 0


def outputs_per_quad(red: ArgReduction, reduced: tuple[Dim, ...], kept: tuple[Dim, ...], in_base: int = 0) -> int:
    """Outputs whose elements share each 16-byte load when neighbouring outputs are
    contiguous and every quad is aligned (reductions over outer axes), else 0."""
    size = red.input.data_type.size
    if size > 4 or not reads_quads(red) or not kept or kept[-1].in_stride != 1:
        return 0
    per_quad = 16 // size
    aligned = (in_base % per_quad == 0 and kept[-1].size % per_quad == 0
               and all(d.in_stride % per_quad == 0 for d in kept[:-1] + reduced))
    return per_quad if aligned else 0


def row_blocks(red: ArgReduction, reduced: tuple[Dim, ...], kept: tuple[Dim, ...], tuning: Tuning,
               in_base: int = 0) -> tuple[int, int] | None:
    """(threads a block, rows a block) of reduce_rows, or None where it does not serve: one
    packed run of rows of at most ``rows_max_bytes``, its first element aligned to a quad.

    A block is a whole number of 16-byte quads: the fewest rows that make them (rows of 3
    FLOAT32: 4), times as many as keep it within ``loads_per_thread`` quads, taken by one
    thread; aligned rows longer than that are a block each, split among a power of two of
    threads that load about ``loads_per_thread`` quads each.
    """
    size = red.input.data_type.size
    if size > 4 or not reads_quads(red) or len(reduced) != 1 or len(kept) != 1 or not tuning.rows_max_bytes:
        return None
    width = reduced[0].size
    if reduced[0].in_stride != 1 or kept[0].in_stride != width or width * size > tuning.rows_max_bytes:
        return None
    if in_base % (16 // size) or (tuning.rows_whole_quads and (width * size) % 16):
        return None
    loads = tuning.loads_per_thread
    rows = 16 // math.gcd(width * size, 16)
    quads = rows * width * size // 16
    if quads <= loads:
        return 1, rows * max(1, tuning.rows_block_loads // quads)
    if rows > 1:  # rows that are not whole quads: a thread a block, if its quads are few
        return (1, rows) if quads <= 2 * loads else None
    segment = _power_of_two_at_least(math.ceil(quads / loads))
    return (segment, 1) if segment <= tuning.workgroup_size else None


def staged_rows_fit(wg: int, block_rows: int) -> bool:
    """Whether reduce_rows may store a tile's results through workgroup memory: a pair (8
    bytes) a row, beside the tree's pair a thread (tree.wgsl), within WORKGROUP_STORAGE.
    Staged, consecutive threads store consecutive rows: rows of 3 FLOAT32 (4 rows a thread)
    on the H100, 2029 GB/s against 1581 with each thread storing its own four."""
    return wg * (block_rows + 1) * 8 <= WORKGROUP_STORAGE


def _power_of_two_at_least(n: int) -> int:
    return 1 << max(0, n - 1).bit_length()


def _split(count: int, outputs: int, target: int, min_chunk: int, align: int, most: int) -> tuple[int, int]:
    """(chunks, chunk length): enough work items for ``target``, chunks of at least
    ``min_chunk``, at most ``most`` chunks."""
    chunks = max(1, min(math.ceil(target / outputs), count // min_chunk, most))
    chunk = math.ceil(count / chunks)
    chunk = math.ceil(chunk / align) * align if align else chunk
    return math.ceil(count / chunk), chunk


def _kernel(red: ArgReduction, kept: tuple[Dim, ...], reduced: tuple[Dim, ...], tuning: Tuning, in_base: int,
            partials_only: bool, count: int, outputs: int, per_quad: int, columns: int, most: int) -> tuple:
    """Which kernel suits the simplified shape, and how it covers it: (kernel, workgroup
    size, segment, rows a block, split, chunk, workgroups). Short packed rows
    go to ``reduce_rows``, contiguous rows to ``reduce_segments``, outer axes whose outputs
    fill quads to ``reduce_columns``, anything else to ``reduce_thread``."""
    wg = tuning.workgroup_size
    segment, block_rows = 1, 0
    blocks = None if partials_only else row_blocks(red, reduced, kept, tuning, in_base)
    if blocks:  # short packed rows
        kernel = "reduce_rows"
        segment, block_rows = blocks
        if block_rows > 1:
            wg = min(wg, tuning.several_rows_workgroup_size)
        split, chunk = 1, count
        groups = math.ceil(math.ceil(outputs / block_rows) / (wg // segment))
        groups = min(groups, tuning.rows_groups) if tuning.rows_groups else groups
    elif reduced and reduced[-1].in_stride == 1:  # contiguous rows
        kernel = "reduce_segments"
        if outputs == 1:
            wg = min(wg, tuning.single_output_workgroup_size)
        loads = math.ceil(count / per_quad) if per_quad else count
        segment = min(wg, _power_of_two_at_least(math.ceil(loads / tuning.loads_per_thread)))
        per_workgroup = wg // segment
        per_lane = tuning.min_chunk_per_lane_single if outputs == 1 else tuning.min_chunk_per_lane
        split, chunk = _split(count, outputs, tuning.target_workgroups * per_workgroup, per_lane * segment,
                              per_quad, most)
        groups = math.ceil(outputs * split / per_workgroup)
    elif columns:
        kernel = "reduce_columns"
        threads = outputs // columns  # a quad of outputs a thread
        split, chunk = _split(count, threads, tuning.target_threads, tuning.min_chunk_thread, 0, most)
        groups = math.ceil(threads * split / wg)
    else:
        kernel = "reduce_thread"
        split, chunk = _split(count, outputs, tuning.target_threads, tuning.min_chunk_thread, per_quad, most)
        groups = math.ceil(outputs * split / wg)
    return kernel, wg, segment, block_rows, split, chunk, groups


# Long because its last statement names every field of the Plan it makes; the kernel and its
# split are chosen in _kernel.
def plan(red: ArgReduction, caps: Capabilities, nan_mode=NanMode.IGNORE, tuning: "Tuning | Tunings" = Tuning(),
         in_base: int = 0, partials_only: bool = False, index_strides: dict[int, int] | None = None,
         max_split: int | None = None) -> Plan:
    """The plan for one reduction (or one piece of one, see ``pieces.schedule``) on one adapter.

    For a piece: ``in_base`` is the element offset of the input's first element in its
    bound window (its alignment decides whether 16-byte loads line up); ``partials_only``
    stores partial pairs for a merge that the schedule adds; ``index_strides`` are the whole
    reduction's (``simplify``); ``max_split`` bounds the chunks per output. The partial
    pairs of a split always fit one binding.
    """
    nan_mode = NanMode.parse(nan_mode, "nan_mode")
    if isinstance(tuning, Tunings):
        tuning = tuning.for_reduction(red, caps)
    kept, reduced = simplify(red, index_strides)
    outputs = math.prod(d.size for d in kept)
    most = max(1, caps.max_storage_binding // (16 * outputs))
    if max_split is not None:
        most = min(most, max_split)
    count = math.prod(d.size for d in reduced)
    per_quad = elements_per_quad(red, reduced, kept, in_base)
    columns = outputs_per_quad(red, reduced, kept, in_base)
    kernel, wg, segment, block_rows, split, chunk, groups = _kernel(
        red, kept, reduced, tuning, in_base, partials_only, count, outputs, per_quad, columns, most)
    if red.input.data_type.size == 8:  # 64-bit elements: two a 16-byte load where rows allow it
        loader = "load_pair_quads" if per_quad else "load_pairs"
    else:
        loader = "load_quads" if per_quad or kernel in ("reduce_columns", "reduce_rows") else "load_packed"
    # The batched walk reads quads of contiguous rows (or whole-quad inner rows); a thread
    # that walks many of them tests each against the best so far before keying it.
    batch = tuning.batch if kernel == "reduce_segments" and loader == "load_quads" else 0
    pairs = kernel == "reduce_segments" and loader == "load_pair_quads"  # walk_pairs.wgsl, which skips too
    skip_test = bool((batch or pairs) and tuning.skip_min_quads
                     and chunk // per_quad // segment >= tuning.skip_min_quads)
    race = (kernel in ("reduce_segments", "reduce_columns") and 1 < split <= tuning.race_max_chunks and caps.int64_atomics
            and red.input.data_type.size <= 4 and not partials_only)
    merge_kernel, merge_grid = (None, None) if partials_only or race else merge_pass(split, outputs, caps, tuning)
    max_dim = caps.max_workgroups_per_dim
    return Plan(
        kernel=kernel,
        loader=loader,
        op=red.op,
        input_type=red.input.data_type,
        output_type=red.output.data_type,
        increasing=red.direction is AxisDirection.INCREASING,
        nan_mode=nan_mode,
        int64=caps.shader_int64,
        subgroups=caps.subgroups and tuning.subgroups,
        batch=batch,
        skip_test=skip_test,
        column_interleave=kernel == "reduce_columns" and tuning.columns_interleave,
        column_unroll=tuning.columns_unroll if kernel == "reduce_columns" else 1,
        row_stage=(tuning.row_stage and kernel == "reduce_rows" and segment == 1 and block_rows > 1
                   and staged_rows_fit(wg, block_rows)),
        no_keys=tuning.bound_no_keys,
        wide_loads=tuning.wide_loads and caps.shader_int64 and loader in ("load_quads", "load_pair_quads"),
        unroll=tuning.unroll,
        kept=kept,
        reduced=reduced,
        workgroup_size=wg,
        segment=segment,
        row_width=count if block_rows else 0,
        block_rows=block_rows,
        split=split,
        chunk=chunk,
        grid=grid_for(groups, max_dim),
        merge_kernel=merge_kernel,
        merge_grid=merge_grid,
        in_base=in_base,
        partials_only=partials_only,
        race=race,
    )


def merge_pass(chunks: int, outputs: int, caps: Capabilities, tuning: Tuning):
    """The merge kernel and grid for ``chunks`` partial pairs per output (none for one chunk)."""
    if chunks <= 1:
        return None, None
    by_workgroup = chunks > tuning.merge_workgroup_above or outputs < tuning.merge_workgroup_below
    groups = outputs if by_workgroup else math.ceil(outputs / tuning.workgroup_size)
    return ("merge_partials_workgroup" if by_workgroup else "merge_partials"), grid_for(groups, caps.max_workgroups_per_dim)


def family_of(red: ArgReduction, caps: Capabilities, tuning: Tuning = Tuning()) -> str:
    """The family of shapes a reduction belongs to, which a ``Tunings`` keeps one ``Tuning``
    for: the kernel ``tuning`` would give it and how that kernel covers it, and the input's
    element bits. ``"rows/32"``: long contiguous rows, one work item or more each;
    ``"few_rows/16"``: rows split into chunks that race or merge (few outputs); ``"single/32"``:
    one output; ``"multi_axis/32"``: contiguous rows over several reduced axes;
    ``"short_rows/8"``: packed rows of at most ``rows_max_bytes`` (``"narrow_rows/32"``: of
    less than 16 bytes, several a load); ``"columns/32"`` and
    ``"thread/64"`` as their kernels."""
    kept, reduced = simplify(red)
    outputs = math.prod(d.size for d in kept)
    count = math.prod(d.size for d in reduced)
    most = max(1, caps.max_storage_binding // (16 * max(1, outputs)))
    kernel, _wg, _seg, _rows, split, _chunk, _groups = _kernel(
        red, kept, reduced, tuning, 0, False, count, outputs, elements_per_quad(red, reduced, kept),
        outputs_per_quad(red, reduced, kept), most)
    if kernel == "reduce_rows":
        name = "narrow_rows" if count * red.input.data_type.size < 16 else "short_rows"
    elif kernel == "reduce_segments":
        name = ("single" if outputs == 1 else "multi_axis" if len(reduced) > 1
                else "few_rows" if split > 1 else "rows")
    else:
        name = kernel[len("reduce_"):]
    return f"{name}/{red.input.data_type.size * 8}"


@dataclasses.dataclass(frozen=True)
class Tunings:
    """A ``Tuning`` for each family of shapes (``family_of``) where one was chosen for an
    adapter, ``default`` for the rest. The planner picks by the reduction's family, with the
    family itself decided under ``default``."""

    default: Tuning = Tuning()
    families: tuple[tuple[str, Tuning], ...] = ()

    def for_family(self, family: str) -> Tuning:
        return dict(self.families).get(family, self.default)

    def for_reduction(self, red: ArgReduction, caps: Capabilities) -> Tuning:
        return self.for_family(family_of(red, caps, self.default)) if self.families else self.default
