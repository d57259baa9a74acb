"""What every kernel family shares: the shape a cover reads, the cover it returns, the settings
no one kernel owns, and the arithmetic of splitting.

A kernel family is a module of this package (``rows``, ``segments``, ``columns``, ``thread``,
``merge``) holding, for one WGSL template: ``NAME`` (the template), its ``Settings`` (a frozen
dataclass whose field defaults are a GPU's built-in values) and ``SOFTWARE`` (a CPU adapter's
changes to them), ``cover`` (whether it takes a simplified shape, and on what grid and split),
``family`` and ``bucket`` (which family of shapes a covered shape belongs to, and where in it:
what a calibration's choice is kept for), its calibration
``CANDIDATES`` and ``SOFTWARE_CANDIDATES`` by family and ``probe_shape`` (the shape a family's
choice is measured on), ``plan_fields`` (the plan's fields it alone decides) and ``parts`` (the
templates its pass is assembled from, after the common ones). Pure Python: nothing here
imports wgpu.
"""

from __future__ import annotations

import dataclasses
import math
from typing import TYPE_CHECKING

from ..errors import DescriptorError

if TYPE_CHECKING:
    from ..desc import ArgReduction
    from ..plan import Dim, Plan

#: Bytes of workgroup memory a shader may declare: WebGPU's default limit, which every adapter
#: grants and the runner asks no more than.
WORKGROUP_STORAGE = 16384


@dataclasses.dataclass(frozen=True)
class Slot:
    """One binding of a pass's bind group."""

    binding: int
    name: str
    kind: str  # WebGPU's buffer binding type: "uniform", "read-only-storage" or "storage"
    holds: str


#: The bindings of every pass, each bound whether or not its shader declares it: the one table
#: from which the runtime's layouts and bind groups, the read-write variant of a pass
#: (``wgsl.writable_input``) and an exported module's layouts are made.
SLOTS = (
    Slot(0, "params", "uniform", "the pass's parameters (common.wgsl's Params)"),
    Slot(1, "input", "read-only-storage", "what the pass reads: the input's window, or a merge's scratch pairs"),
    Slot(2, "output", "storage", "what the pass writes: the output's window, or a split's scratch pairs"),
    Slot(3, "race", "storage", "what a racing pass keeps between dispatches (64-bit words and counts); else a "
                               "small buffer no shader declares"),
    Slot(4, "input_words", "read-only-storage", "the input's range again, which a pass reading it in 16-byte quads "
                                                "declares as words (a range may end inside a quad); in the shared "
                                                "layout, a small buffer no shader declares"),
)
SLOT = {s.name: s for s in SLOTS}


def layout(shared: bool = False) -> tuple[tuple[int, str], ...]:
    """(binding, WebGPU's buffer type) of each slot. ``shared``: the layout of a pass whose input
    lies in the buffer it writes (WebGPU refuses a buffer bound read-only and writable in one
    dispatch): its input bound writable too, its second binding of the input a small buffer."""
    return tuple((s.binding, "storage" if shared and s.name == "input" else s.kind) for s in SLOTS)


@dataclasses.dataclass(frozen=True)
class Settings:
    """Settings every kernel reads."""

    workgroup_size: int = 256
    #: Contiguous rows get threads enough that each makes this many loads (a power of two,
    #: at most a workgroup of threads per row): enough loads in flight a thread without
    #: leaving short rows to few threads (benchmarks/LOG.md, "The settings' measurements").
    loads_per_thread: int = 8
    #: Merge within subgroups with shuffles where the adapter has them (off: the tree alone).
    subgroups: bool = True
    #: Quads are read as two 64-bit halves where the adapter has shader-int64
    #: (src_quads_wide.wgsl): half the loads, for CPU adapters that load each vector
    #: component of each lane on its own.
    wide_loads: bool = False
    #: Loops marked ``// unroll`` in the templates are written out (wgsl.unroll; off: loops).
    unroll: bool = True
    #: An experiment, never a default: keys are the elements' raw bits (answers are wrong), so
    #: that a kernel timed with it bounds what its key work costs (benchmarks/LOG.md).
    bound_no_keys: bool = False


#: A CPU adapter's changes to ``Settings``: workgroups of one SIMD register's lanes, a thread
#: walking a row (or a chunk of one) alone (``loads_per_thread`` so large that a segment is one
#: thread), no subgroup shuffles, and quads read in 64-bit halves.
SOFTWARE = dict(workgroup_size=8, loads_per_thread=1 << 20, subgroups=False, wide_loads=True)
#: What a CPU adapter's calibration tries besides its default, for every family it measures:
#: workgroups of 64 lanes wherever a workgroup's size is set.
SOFTWARE_WIDER = {"workgroup_size": 64, "single_output_workgroup_size": 64, "several_rows_workgroup_size": 64}


@dataclasses.dataclass(frozen=True)
class Shape:
    """A reduction simplified (``plan.simplify``), as the kernels' covers read it."""

    red: "ArgReduction"
    kept: tuple["Dim", ...]
    reduced: tuple["Dim", ...]
    outputs: int  # output elements
    count: int  # reduced elements per output
    per_quad: int  # elements in a 16-byte load of a reduced row (plan.elements_per_quad), or 0
    columns: int  # outputs sharing a 16-byte load (plan.outputs_per_quad), or 0
    in_base: int  # the element offset of the first input element in its bound window
    partials_only: bool  # a piece of a reduction cut into pieces: it stores partial pairs
    most: int  # chunks per output at most (the pairs of a split fit one binding)

    @property
    def element_size(self) -> int:
        return self.red.input.data_type.size


@dataclasses.dataclass(frozen=True)
class Cover:
    """How a kernel covers a shape: its workgroups, the threads of a work item and rows of a
    block (reduce_rows), and how each output's elements are split into chunks."""

    workgroup_size: int
    split: int  # chunks per output
    chunk: int  # reduced elements per chunk
    groups: int  # workgroups of the first pass
    segment: int = 1  # threads per work item
    block_rows: int = 0  # reduce_rows: rows a block


def reads_quads(red: "ArgReduction") -> bool:
    """Whether the input may be read in 16-byte quads: it holds at least a quad's bytes. A
    caller's binding holds only the tensor's ``total_tensor_size_in_bytes`` (docs/binding.md),
    and a shader that declares its input as quads cannot be bound to fewer than 16 bytes."""
    return red.input.total_tensor_size_in_bytes >= 16


def power_of_two_at_least(n: int) -> int:
    return 1 << max(0, n - 1).bit_length()


def split(count: int, outputs: int, target: int, min_chunk: int, align: int, most: int) -> tuple[int, int]:
    """(chunks, chunk length): enough work items for ``target``, chunks of at least
    ``min_chunk``, at most ``most`` chunks."""
    chunks = max(1, min(math.ceil(target / outputs), count // min_chunk, most))
    chunk = math.ceil(count / chunks)
    chunk = math.ceil(chunk / align) * align if align else chunk
    return math.ceil(count / chunk), chunk


def grid_for(count: int, max_per_dim: int) -> tuple[int, int, int]:
    """A 3-D grid of at least ``count`` workgroups, none of its sides over the limit."""
    x = min(count, max_per_dim)
    rows = math.ceil(count / x)
    y = min(rows, max_per_dim)
    z = math.ceil(rows / y)
    if z > max_per_dim:
        raise DescriptorError(f"{count} outputs need more than {max_per_dim}^3 workgroups")
    return (x, y, z)


def cooperation(plan: "Plan") -> list[str]:
    """The parts of a kernel whose threads cooperate within a workgroup: the merge within
    segments, with subgroup shuffles where the plan has them, else the tree alone."""
    return ["invocation_subgroups", "tree", "tree_subgroups"] if plan.subgroups else ["invocation", "tree", "tree_only"]
