"""The planner: which kernel suits a reduction, over which simplified shape, on what grid.

Pure Python: it reads an ``ArgReduction`` and the adapter's ``Capabilities`` (plain
numbers, filled in by the runner) and returns a ``Plan``. Nothing here imports wgpu,
so every decision can be tested on a machine without a GPU.
"""

from __future__ import annotations

import dataclasses
import enum
import math

from . import kernels
from .desc import ArgReduction
from .kernels.base import Shape, grid_for, reads_quads
from .types import AxisDirection, DataType, NanMode

#: Largest rank the kernels address after simplification (DirectML's limit).
MAX_DIMS = 8


@dataclasses.dataclass(frozen=True)
class Tuning(kernels.base.Settings, kernels.rows.Settings, kernels.segments.Settings, kernels.columns.Settings,
             kernels.thread.Settings, kernels.merge.Settings):
    """The planner's settings: every kernel family's own (``dmlgpu/kernels/``), in one record
    that a plan reads. Tests shrink them to reach every path on small inputs."""


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


class Writes(enum.Enum):
    """What a pass writes: the one decision from which its store modules (``wgsl``), its
    bindings (``wgsl.passes``) and its scratch (``Plan``) follow."""

    RESULT = "the result, into the output (store_direct.wgsl)"
    PAIRS = "partial (key, index) pairs, into the scratch, for a merge (store_partial.wgsl)"
    RACE = "partial pairs merged in 64-bit atomic words; the last work item of an output stores the result (store_race.wgsl)"


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
    # What one kernel alone decides (kernels/*.py's plan_fields); the others leave these as they are.
    batch: int = 0  # quads a thread of reduce_segments loads at once (0: the one-at-a-time walk)
    skip_test: bool = False  # in that walk, quads that cannot beat the subgroup's best are skipped
    interleave: bool = False  # a chunk takes every split-th row (reduce_columns) or segment's span of quads (reduce_segments)
    column_unroll: int = 1  # reduce_columns: rows loaded before any is folded (1 for the other kernels)
    row_stage: bool = False  # reduce_rows, a block of several rows a thread: results stored through workgroup memory
    prefetch: bool = False  # reduce_rows, staged tiles: the next tile's quads loaded before this tile's are keyed
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
    # The winners' keys stored beside their indices (ArgReduction.keyed; shaders/store_index_key.wgsl).
    keyed: bool = False

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
    def writes(self) -> Writes:
        """What the first pass writes; a merge pass writes the result."""
        if self.race:
            return Writes.RACE
        return Writes.PAIRS if self.split > 1 or self.partials_only else Writes.RESULT

    @property
    def clears_output(self) -> bool:
        """HARDMAX zeroes its output, then writes a 1 per slice."""
        return self.op == "hardmax"

    @property
    def race_bytes(self) -> int:
        """Scratch for a racing first pass: a 64-bit word and a count per output (16 bytes)."""
        return 16 * self.output_count if self.writes is Writes.RACE else 0

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


def shape_of(red: ArgReduction, caps: Capabilities, in_base: int = 0, partials_only: bool = False,
             index_strides: dict[int, int] | None = None, max_split: int | None = None) -> Shape:
    """A reduction simplified, as the kernels' covers read it (``plan`` says what the
    arguments of a piece mean)."""
    kept, reduced = simplify(red, index_strides)
    outputs = math.prod(d.size for d in kept)
    most = max(1, caps.max_storage_binding // (16 * outputs))
    if max_split is not None:
        most = min(most, max_split)
    return Shape(red, kept, reduced, outputs, math.prod(d.size for d in reduced),
                 elements_per_quad(red, reduced, kept, in_base), outputs_per_quad(red, reduced, kept, in_base),
                 in_base, partials_only, most)


def covered(shape: Shape, tuning: Tuning):
    """The first kernel family (in ``kernels.FIRST_PASS`` order) whose cover takes the shape,
    and its cover."""
    for kernel in kernels.FIRST_PASS:
        cover = kernel.cover(shape, tuning)
        if cover is not None:
            return kernel, cover
    raise AssertionError("reduce_thread covers every shape")


# Long because its last statement names every field of the Plan it makes; the kernel and its
# cover are the family's (kernels/).
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
    shape = shape_of(red, caps, in_base, partials_only, index_strides, max_split)
    kernel, cover = covered(shape, tuning)
    if red.input.data_type.size == 8:  # 64-bit elements: two a 16-byte load where rows allow it
        loader = "load_pair_quads" if shape.per_quad else "load_pairs"
    else:
        loader = "load_quads" if shape.per_quad or kernel.READS_QUADS else "load_packed"
    race = (kernel.RACES and 1 < cover.split <= tuning.race_max_chunks and caps.int64_atomics
            and red.input.data_type.size <= 4 and not partials_only)
    merge_kernel, merge_grid = ((None, None) if partials_only or race
                                else kernels.merge.merge_pass(cover.split, shape.outputs, caps, tuning))
    return Plan(
        kernel=kernel.NAME,
        loader=loader,
        op=red.op,
        input_type=red.input.data_type,
        output_type=red.output.data_type,
        increasing=red.direction is AxisDirection.INCREASING,
        nan_mode=nan_mode,
        int64=caps.shader_int64,
        subgroups=caps.subgroups and tuning.subgroups,
        no_keys=tuning.bound_no_keys,
        wide_loads=tuning.wide_loads and caps.shader_int64 and loader in ("load_quads", "load_pair_quads"),
        unroll=tuning.unroll,
        kept=shape.kept,
        reduced=shape.reduced,
        workgroup_size=cover.workgroup_size,
        segment=cover.segment,
        row_width=shape.count if cover.block_rows else 0,
        block_rows=cover.block_rows,
        split=cover.split,
        chunk=cover.chunk,
        grid=grid_for(cover.groups, caps.max_workgroups_per_dim),
        merge_kernel=merge_kernel,
        merge_grid=merge_grid,
        in_base=in_base,
        partials_only=partials_only,
        race=race,
        keyed=red.keyed,
        **kernel.plan_fields(shape, cover, tuning, loader),
    )


def family_of(red: ArgReduction, caps: Capabilities, tuning: Tuning = Tuning()) -> str:
    """The family of shapes a reduction belongs to, which a ``Tunings`` keeps one ``Tuning``
    for: the kernel ``tuning`` would give it and how that kernel covers it (each kernel's
    ``family``), the input's element bits, and after ``@`` the bucket of the cover (each
    kernel's ``bucket``: what moves the best setting within a kernel's family, such as the
    threads a row or the bytes of a row), so that a choice holds only for shapes like those it
    was measured on. ``"rows/32@seg256"``: long contiguous rows, a workgroup of 256 threads
    each; ``"few_rows/16@x4"``: rows split into 4 chunks that race or merge (few outputs);
    ``"single/32@x4096"``: one output; ``"multi_axis/32@seg256x8"``: contiguous rows over
    several reduced axes; ``"short_rows/8@256B"``: packed rows of at most ``rows_max_bytes``
    (``"narrow_rows/32@16B"``: of less than 16 bytes, several a load); ``"columns/32@r512"``:
    chunks of 512 rows; ``"thread/64"``, which has nothing to choose between."""
    shape = shape_of(red, caps)
    kernel, cover = covered(shape, tuning)
    family = f"{kernel.family(shape, cover)}/{red.input.data_type.size * 8}"
    bucket = kernel.bucket(shape, cover)
    return f"{family}@{bucket}" if bucket else family


def family_parts(family: str) -> tuple[str, int, str]:
    """(name, element bits, bucket) of a family ``family_of`` named: ``"rows/32@seg256"`` is
    ``("rows", 32, "seg256")``."""
    head, _, bucket = family.partition("@")
    name, _, bits = head.partition("/")
    return name, int(bits), bucket


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
