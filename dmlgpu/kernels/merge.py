"""How a split merges: the second pass over partial (key, index) pairs, a thread or a workgroup
an output (shaders/merge_partials.wgsl, merge_partials_workgroup.wgsl), or no second pass where
a first pass's work items race to merge in 64-bit atomic words (shaders/store_race.wgsl).
"""

from __future__ import annotations

import dataclasses
import math
from typing import TYPE_CHECKING

from .base import cooperation, grid_for

if TYPE_CHECKING:
    from ..plan import Capabilities, Plan, Tuning

THREAD = "merge_partials"
WORKGROUP = "merge_partials_workgroup"


@dataclasses.dataclass(frozen=True)
class Settings:
    #: Splits into more chunks than this merge with a workgroup per output, and so do splits
    #: of fewer outputs than merge_workgroup_below (a thread an output would leave most of the
    #: GPU idle while it reads its chunks' pairs one after another).
    merge_workgroup_above: int = 64
    merge_workgroup_below: int = 256
    #: A segments or columns split of at most this many chunks runs in one dispatch where the
    #: adapter has 64-bit atomics: its work items race to merge their pairs and the last of an
    #: output's stores the winner (0: always a merge pass), which spares a dispatch and the
    #: pairs' round trip through memory (benchmarks/LOG.md, "The settings' measurements").
    race_max_chunks: int = 4096


SOFTWARE: dict = {}


def merge_pass(chunks: int, outputs: int, caps: "Capabilities", tuning: "Tuning"):
    """The merge kernel and grid for ``chunks`` partial pairs per output (none for one chunk)."""
    if chunks <= 1:
        return None, None
    by_workgroup = chunks > tuning.merge_workgroup_above or outputs < tuning.merge_workgroup_below
    groups = outputs if by_workgroup else math.ceil(outputs / tuning.workgroup_size)
    return (WORKGROUP if by_workgroup else THREAD), grid_for(groups, caps.max_workgroups_per_dim)


def parts(plan: "Plan") -> list[str]:
    """The merge pass's own parts, after the pairs' loader and the store."""
    return [*cooperation(plan), WORKGROUP] if plan.merge_kernel == WORKGROUP else [THREAD]
