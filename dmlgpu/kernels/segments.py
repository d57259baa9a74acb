"""reduce_segments: contiguous rows, a segment of threads (a power of two, up to a workgroup)
a work item, walking 16-byte quads where rows allow it; long rows split into chunks that race
or merge (shaders/reduce_segments.wgsl, with a walk: walk_strided, walk_batched or walk_pairs).

Families: ``rows`` (one work item or more a row, unsplit), ``few_rows`` (rows split into chunks),
``single`` (one output) and ``multi_axis`` (contiguous rows over several reduced axes).
"""

from __future__ import annotations

import dataclasses
import math
from typing import TYPE_CHECKING

from .base import SOFTWARE_WIDER, Cover, Shape, cooperation, power_of_two_at_least, split

if TYPE_CHECKING:
    from ..plan import Plan, Tuning

NAME = "reduce_segments"
READS_QUADS = False  # quads only where the rows line up (Shape.per_quad)
RACES = True  # a split's work items may race to merge their pairs


@dataclasses.dataclass(frozen=True)
class Settings:
    #: Workgroups of at most this many threads where one output reduces contiguous elements
    #: (one long row, or all of a tensor): more workgroups share the multiprocessors (benchmarks/LOG.md, "The settings' measurements").
    single_output_workgroup_size: int = 128
    #: Split reductions until this many workgroups are in flight, but not into chunks shorter
    #: than the minimum a lane: a single long row (1, 151936) into chunks of a few elements a
    #: lane, a quad a thread, so that every multiprocessor has work; several rows into chunks
    #: of 128 a lane (benchmarks/LOG.md, "The settings' measurements").
    target_workgroups: int = 4096
    min_chunk_per_lane: int = 128
    min_chunk_per_lane_single: int = 4
    #: The segments kernel's walk over 16-byte quads: each thread loads this many quads before
    #: it folds them (loads in flight), and carries multi-axis offsets without divisions
    #: (0: the walk before, one quad at a time, an offset's division per quad). More loads in
    #: flight against registers, which cost occupancy (benchmarks/LOG.md, "The settings' measurements").
    batch: int = 2
    #: In that walk, quads are first tested against the best key of the thread's subgroup
    #: (shared after every batch where a subgroup lies in one segment, else the thread's own),
    #: and only those that may win get exact keys; for walks of at least this many quads a
    #: thread (0: never). 64-bit quads (walk_pairs.wgsl) are tested so too, on high words.
    skip_min_quads: int = 8
    #: Chunks of a split walk interleaved spans of the output's range (chunk c its segment's
    #: spans c, c + split, ...: the read ceiling's grid-stride pattern) rather than runs of
    #: their own, where a chunk holds at least two spans (a chunk of one span reads the same
    #: either way, and a shorter one would leave chunks empty) of one reduced dimension (several
    #: have not been measured interleaved) (benchmarks/LOG.md, "The settings' measurements").
    segments_interleave: bool = True


#: A CPU adapter's changes: a few hundred work items at most, long chunks a lane.
SOFTWARE = dict(single_output_workgroup_size=8, target_workgroups=64, min_chunk_per_lane=1024,
                min_chunk_per_lane_single=1024, segments_interleave=False)

CANDIDATES: dict[str, tuple[dict, ...]] = {
    "rows": ({}, {"workgroup_size": 128}),
    "few_rows": ({}, {"min_chunk_per_lane": 64}, {"workgroup_size": 128}, {"segments_interleave": False}),
    "single": ({}, {"single_output_workgroup_size": 256}, {"batch": 4}, {"segments_interleave": False}),
    "multi_axis": ({}, {"min_chunk_per_lane": 512, "batch": 4}),
}
SOFTWARE_CANDIDATES: dict[str, tuple[dict, ...]] = {
    family: ({}, SOFTWARE_WIDER) for family in ("rows", "few_rows", "single", "multi_axis")
}


def cover(shape: Shape, tuning: "Tuning") -> Cover | None:
    """Contiguous rows (the innermost reduced dimension has stride 1); None otherwise."""
    reduced, count, outputs, per_quad = shape.reduced, shape.count, shape.outputs, shape.per_quad
    if not (reduced and reduced[-1].in_stride == 1):
        return None
    wg = tuning.workgroup_size
    if outputs == 1:
        wg = min(wg, tuning.single_output_workgroup_size)
    loads = math.ceil(count / per_quad) if per_quad else count
    segment = min(wg, power_of_two_at_least(math.ceil(loads / tuning.loads_per_thread)))
    per_workgroup = wg // segment
    per_lane = tuning.min_chunk_per_lane_single if outputs == 1 else tuning.min_chunk_per_lane
    chunks, chunk = split(count, outputs, tuning.target_workgroups * per_workgroup, per_lane * segment, per_quad,
                          shape.most)
    return Cover(wg, chunks, chunk, math.ceil(outputs * chunks / per_workgroup), segment)


def family(shape: Shape, cover: Cover) -> str:
    return ("single" if shape.outputs == 1 else "multi_axis" if len(shape.reduced) > 1
            else "few_rows" if cover.split > 1 else "rows")


def bucket(shape: Shape, cover: Cover) -> str:
    """The threads a row (``seg``, a power of two that grows with the row up to a workgroup),
    or for one output the chunks it is split into (``x``, a power of two that grows with the
    elements up to ``target_workgroups``): what moves the best setting within the family (a
    choice for rows of 64 Ki elements does not hold for rows of 2 Ki, nor one for a 1 GiB
    reduction for a small call's), and what a probe smaller than the call keeps."""
    if shape.outputs == 1:
        return f"x{power_of_two_at_least(cover.split)}"
    return f"seg{cover.segment}"


def probe_shape(family: str, nbytes: int, size: int, rows_max_bytes: int) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """The shape a family's choice is measured on, of about ``nbytes``."""
    row = min(16384, nbytes // 4096)  # bytes of a row of rows: a few thousand rows, unsplit
    inner = min(16384, nbytes // 512)  # bytes of an inner row of multi_axis: a few of 256 outputs each
    shapes = {
        "rows": ((nbytes // row, row // size), (1,)),
        "few_rows": ((64, max(1024, min(nbytes // size // 64, 262144))), (1,)),
        "single": ((nbytes // size,), (0,)),
        "multi_axis": ((max(2, nbytes // (256 * inner)), 256, inner // size), (0, 2)),
    }
    return shapes[family]


def plan_fields(shape: Shape, cover: Cover, tuning: "Tuning", loader: str) -> dict:
    """The batched walk reads quads of contiguous rows (or whole-quad inner rows); a thread
    that walks many of them tests each against the best so far before keying it."""
    batch = tuning.batch if loader == "load_quads" else 0
    pairs = loader == "load_pair_quads"  # walk_pairs.wgsl, which skips too
    # quads (elements, for a loader without them) a thread walks in a chunk: its segment's spans
    spans = cover.chunk // (shape.per_quad or 1) // cover.segment
    skip_test = bool((batch or pairs) and tuning.skip_min_quads and spans >= tuning.skip_min_quads)
    interleave = (tuning.segments_interleave and cover.split > 1 and spans >= 2 and len(shape.reduced) == 1
                  and not shape.partials_only)
    return {"batch": batch, "skip_test": skip_test, "interleave": interleave}


def parts(plan: "Plan") -> list[str]:
    """64-bit quads have their own walk (two loads, their skip test)."""
    walk = "walk_pairs" if plan.loader == "load_pair_quads" else "walk_batched" if plan.batch else "walk_strided"
    return [*cooperation(plan), walk, NAME]
