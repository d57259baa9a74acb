"""reduce_rows: short packed rows, a block of whole 16-byte quads a thread (or a segment of
threads a row), workgroups striding over tiles of rows (shaders/reduce_rows.wgsl).

Families: ``short_rows`` (rows of at most ``rows_max_bytes``) and ``narrow_rows`` (rows of less
than 16 bytes, several a load).
"""

from __future__ import annotations

import dataclasses
import math
from typing import TYPE_CHECKING

from .base import SOFTWARE_WIDER, WORKGROUP_STORAGE, Cover, Shape, cooperation, power_of_two_at_least, reads_quads

if TYPE_CHECKING:
    from ..plan import Plan, Tuning

NAME = "reduce_rows"
#: Reads its rows in 16-byte quads, whatever ``Shape.per_quad`` says (its rows are packed and aligned).
READS_QUADS = True
#: A split's work items cannot race to merge their pairs (it never splits).
RACES = False


@dataclasses.dataclass(frozen=True)
class Settings:
    #: Packed rows up to this many bytes go to reduce_rows: a block of whole quads a thread
    #: (or a segment a row), workgroups striding over the rows (0: the segments kernel).
    rows_max_bytes: int = 1024
    #: At most this many workgroups for reduce_rows; each then strides over several tiles of
    #: rows (0: a workgroup a tile), so that no workgroup is spent on a few rows (benchmarks/LOG.md, "The settings' measurements").
    rows_groups: int = 16384
    #: reduce_rows takes only rows of whole quads (off: blocks of rows too, which its unrolled
    #: loops keep in registers; benchmarks/LOG.md, "The settings' measurements").
    rows_whole_quads: bool = False
    #: reduce_rows: rows of at most loads_per_thread quads go a block to a thread, a block
    #: being as many rows as make about this many quads: loads in flight against the rows a
    #: thread must key (benchmarks/LOG.md, "The settings' measurements").
    rows_block_loads: int = 2
    #: reduce_rows with several rows a thread (their results stored through workgroup memory)
    #: takes workgroups of at most this many threads, which leaves room to stage 8 rows a
    #: thread (benchmarks/LOG.md, "The settings' measurements").
    several_rows_workgroup_size: int = 128
    #: reduce_rows with several rows a thread may store a tile's results through workgroup
    #: memory (staged_rows_fit) so that consecutive threads store consecutive rows (off: each
    #: thread stores its own, with no barrier: what a CPU adapter wants).
    row_stage: bool = True
    #: reduce_rows with a tile's results staged (``row_stage``): a thread loads its next tile's
    #: quads before it keys this tile's, so that they travel during its keys and the staging's
    #: barriers (rows of 3 FLOAT32 +8% on a GPU); unstaged tiles, which have no barriers to
    #: hide, lost 12-21% with it (benchmarks/LOG.md, thirteenth session, "The prefetches measured").
    rows_prefetch: bool = True


#: A CPU adapter's changes: workgroups of one SIMD register's lanes, rows of more than a few
#: quads on the segments kernel (its loop is not written out), no workgroup memory between rows.
SOFTWARE = dict(several_rows_workgroup_size=8, rows_max_bytes=64, row_stage=False)

CANDIDATES: dict[str, tuple[dict, ...]] = {"short_rows": ({}, {"loads_per_thread": 4})}
SOFTWARE_CANDIDATES: dict[str, tuple[dict, ...]] = {
    "short_rows": ({}, SOFTWARE_WIDER),
}


def row_blocks(shape: Shape, tuning: "Tuning") -> tuple[int, int] | None:
    """(threads a block, rows a block) of reduce_rows, or None where it does not serve: one
    packed run of rows of at most ``rows_max_bytes``, its first element aligned to a quad.

    A block is a whole number of 16-byte quads: the fewest rows that make them (rows of 3
    FLOAT32: 4), times as many as keep it within ``loads_per_thread`` quads, taken by one
    thread; aligned rows longer than that are a block each, split among a power of two of
    threads that load about ``loads_per_thread`` quads each.
    """
    red, reduced, kept = shape.red, shape.reduced, shape.kept
    size = red.input.data_type.size
    if size > 4 or not reads_quads(red) or len(reduced) != 1 or len(kept) != 1 or not tuning.rows_max_bytes:
        return None
    width = reduced[0].size
    if reduced[0].in_stride != 1 or kept[0].in_stride != width or width * size > tuning.rows_max_bytes:
        return None
    if shape.in_base % (16 // size) or (tuning.rows_whole_quads and (width * size) % 16):
        return None
    loads = tuning.loads_per_thread
    rows = 16 // math.gcd(width * size, 16)
    quads = rows * width * size // 16
    if quads <= loads:
        return 1, rows * max(1, tuning.rows_block_loads // quads)
    if rows > 1:  # rows that are not whole quads: a thread a block, if its quads are few
        return (1, rows) if quads <= 2 * loads else None
    segment = power_of_two_at_least(math.ceil(quads / loads))
    return (segment, 1) if segment <= tuning.workgroup_size else None


def staged_rows_fit(wg: int, block_rows: int) -> bool:
    """Whether reduce_rows may store a tile's results through workgroup memory: a pair (8
    bytes) a row, beside the tree's pair a thread (tree.wgsl), within WORKGROUP_STORAGE.
    Staged, consecutive threads store consecutive rows (benchmarks/LOG.md, "The settings' measurements": ``row_stage``)."""
    return wg * (block_rows + 1) * 8 <= WORKGROUP_STORAGE


def cover(shape: Shape, tuning: "Tuning") -> Cover | None:
    """Short packed rows (``row_blocks``), unsplit; None for anything else."""
    blocks = None if shape.partials_only else row_blocks(shape, tuning)
    if not blocks:
        return None
    wg = tuning.workgroup_size
    segment, block_rows = blocks
    if block_rows > 1:
        wg = min(wg, tuning.several_rows_workgroup_size)
    groups = math.ceil(math.ceil(shape.outputs / block_rows) / (wg // segment))
    groups = min(groups, tuning.rows_groups) if tuning.rows_groups else groups
    return Cover(wg, 1, shape.count, groups, segment, block_rows)


def family(shape: Shape, cover: Cover) -> str:
    return "narrow_rows" if shape.count * shape.element_size < 16 else "short_rows"


def bucket(shape: Shape, cover: Cover) -> str:
    """Rows of a power of two of bytes: how many rows a block and threads a row a setting gives
    them differs with their width."""
    return f"{power_of_two_at_least(shape.count * shape.element_size)}B"


def probe_shape(family: str, nbytes: int, size: int, rows_max_bytes: int) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """The shape a ``short_rows`` choice is measured on: rows of 256 bytes (or of the adapter's
    ``rows_max_bytes``), about ``nbytes`` of them."""
    short = min(256, rows_max_bytes)
    return (nbytes // short, short // size), (1,)


def plan_fields(shape: Shape, cover: Cover, tuning: "Tuning", loader: str) -> dict:
    """A block of several rows a thread stores its results through workgroup memory, where asked
    and where they fit; such a tile's next quads are loaded ahead where asked."""
    row_stage = (tuning.row_stage and cover.segment == 1 and cover.block_rows > 1
                 and staged_rows_fit(cover.workgroup_size, cover.block_rows))
    return {"row_stage": row_stage, "prefetch": row_stage and tuning.rows_prefetch}


def parts(plan: "Plan") -> list[str]:
    return [*cooperation(plan), NAME]
