"""reduce_columns: reductions over outer axes whose outputs fill 16-byte quads, a quad of
outputs a thread reading neighbouring addresses row after row (shaders/reduce_columns.wgsl).

Family: ``columns``.
"""

from __future__ import annotations

import dataclasses
import math
from typing import TYPE_CHECKING

from .base import SOFTWARE_WIDER, Cover, Shape, power_of_two_at_least, split

if TYPE_CHECKING:
    from ..plan import Plan, Tuning

NAME = "reduce_columns"
READS_QUADS = True  # a quad of outputs a load
RACES = True


@dataclasses.dataclass(frozen=True)
class Settings:
    #: reduce_columns splits: chunk c of S takes rows c, c + S, c + 2S, ..., so that the
    #: threads in flight read neighbouring rows (off: chunk c takes the c-th run of rows;
    #: benchmarks/LOG.md, "The settings' measurements").
    columns_interleave: bool = True
    #: reduce_columns loads this many rows' quads before folding any (loads in flight a thread,
    #: against registers; benchmarks/LOG.md, "The settings' measurements").
    columns_unroll: int = 4
    #: reduce_columns, where chunks race: threads (lanes) a work item, their pairs merged in
    #: workgroup memory before one reaches the outputs' words, so that fewer pairs race for
    #: as many threads loading (benchmarks/LOG.md, "The settings' measurements").
    columns_lanes: int = 8


#: A CPU adapter's: one thread a work item (no barriers), two rows loaded at once.
SOFTWARE: dict = dict(columns_lanes=1, columns_unroll=2)

#: The walk before lanes, where the lanes' merges would not pay.
CANDIDATES: dict[str, tuple[dict, ...]] = {"columns": ({}, {"columns_lanes": 1, "columns_unroll": 2})}
SOFTWARE_CANDIDATES: dict[str, tuple[dict, ...]] = {
    "columns": ({}, SOFTWARE_WIDER),
}


def cover(shape: Shape, tuning: "Tuning") -> Cover | None:
    """Outputs that share 16-byte loads (``Shape.columns``), split by the thread kernel's
    settings into chunks of ``columns_lanes`` threads each; None otherwise."""
    if not shape.columns:
        return None
    quads = shape.outputs // shape.columns  # a quad of outputs a work item
    chunks, chunk = split(shape.count, quads, tuning.target_threads, tuning.min_chunk_thread, 0, shape.most)
    # Lanes only where chunks would race (a quad of outputs a thread has work enough
    # otherwise): a power of two that divides the workgroup, no more lanes than a chunk has rows.
    lanes = math.gcd(1 << (max(1, tuning.columns_lanes).bit_length() - 1), tuning.workgroup_size) if chunks > 1 else 1
    if lanes > 1:
        chunks, chunk = split(shape.count, quads * lanes, tuning.target_threads, tuning.min_chunk_thread * lanes, 0,
                              shape.most)
    while lanes > chunk:
        lanes //= 2
    return Cover(tuning.workgroup_size, chunks, chunk, math.ceil(quads * chunks * lanes / tuning.workgroup_size),
                 segment=lanes)


def family(shape: Shape, cover: Cover) -> str:
    return "columns"


def bucket(shape: Shape, cover: Cover) -> str:
    """The rows reduced, a power of two up to 256 (``r256+`` beyond): how many rows a thread
    loads before folding any pays with how many it has (a probe smaller than the call keeps
    them where they are many)."""
    rows = power_of_two_at_least(shape.count)
    return "r256+" if rows >= 256 else f"r{rows}"


def probe_shape(family: str, nbytes: int, size: int, rows_max_bytes: int) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """Rows of 16 KiB reduced over the outer axis, about ``nbytes`` of them."""
    return (max(4, nbytes // 16384), 16384 // size), (0,)


def plan_fields(shape: Shape, cover: Cover, tuning: "Tuning", loader: str) -> dict:
    return {"interleave": tuning.columns_interleave, "column_unroll": tuning.columns_unroll}


def parts(plan: "Plan") -> list[str]:
    return [NAME]
