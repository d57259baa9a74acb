"""reduce_thread: anything else, a thread an output (or a chunk of one) walking its elements
with their strides (shaders/reduce_thread.wgsl).

Family: ``thread``.
"""

from __future__ import annotations

import dataclasses
import math
from typing import TYPE_CHECKING

from .base import Cover, Shape, split

if TYPE_CHECKING:
    from ..plan import Plan, Tuning

NAME = "reduce_thread"
READS_QUADS = False
RACES = False


@dataclasses.dataclass(frozen=True)
class Settings:
    #: Split reductions until this many threads are in flight (reduce_thread, reduce_columns),
    #: but not into chunks shorter than ``min_chunk_thread`` (benchmarks/LOG.md, "The settings' measurements").
    target_threads: int = 2**17
    min_chunk_thread: int = 64


#: A CPU adapter's changes: a few hundred long work items.
SOFTWARE = dict(target_threads=512, min_chunk_thread=1024)

CANDIDATES: dict[str, tuple[dict, ...]] = {}
SOFTWARE_CANDIDATES: dict[str, tuple[dict, ...]] = {}


def cover(shape: Shape, tuning: "Tuning") -> Cover:
    """Any shape: a thread an output's chunk."""
    chunks, chunk = split(shape.count, shape.outputs, tuning.target_threads, tuning.min_chunk_thread, shape.per_quad,
                          shape.most)
    return Cover(tuning.workgroup_size, chunks, chunk, math.ceil(shape.outputs * chunks / tuning.workgroup_size))


def family(shape: Shape, cover: Cover) -> str:
    return "thread"


def bucket(shape: Shape, cover: Cover) -> str:
    return ""  # nothing to choose between


def probe_shape(family: str, nbytes: int, size: int, rows_max_bytes: int) -> tuple[tuple[int, ...], tuple[int, ...]]:
    raise KeyError(family)  # nothing to choose between


def plan_fields(shape: Shape, cover: Cover, tuning: "Tuning", loader: str) -> dict:
    return {}


def parts(plan: "Plan") -> list[str]:
    return [NAME]
