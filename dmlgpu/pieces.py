"""Tensors larger than one storage binding or one buffer: a grid of pieces.

DirectML's tensors hold up to 2^32 - 1 elements (16 GiB of FLOAT32), but an adapter binds
at most ``max_storage_binding`` bytes at once (2 GiB on NVIDIA through Vulkan, 128 MiB on
lavapipe) and holds at most ``max_buffer`` bytes in one buffer (4 GiB). Such tensors are cut
into a *grid*: every axis is partitioned into ranges, and a cell is one range per axis.

- A tensor's **buffers** are the cells of a grid whose cells each span at most
  ``max_buffer`` bytes (``buffer_grid``); it depends on the descriptor alone.
- An operator's **pieces** are the cells of a finer grid: each cell's input and output span
  fit one binding, and each lies inside one buffer of each tensor.

``cell_lengths`` finds the largest cells that fit: it cuts the axis with the largest stride
of a tensor that does not fit, to single indices where one index does not fit (then the next
axis), else to the longest ranges that do. Since a span depends only on a cell's lengths,
every cell of one level is cut alike, so the result is a grid.

When no reduced axis is cut, each piece is a reduction of its own and writes its outputs.
Otherwise the cells that share their kept ranges form a *group*: each writes partial
(key, index) pairs, its indices mapped to the whole reduction's, and a merge applies the tie
rule across them and writes the group's outputs. Pure Python, like the planner.
"""

from __future__ import annotations

import bisect
import dataclasses
import itertools
import math

from .desc import ArgReduction, TensorDesc
from .errors import DescriptorError
from .kernels.merge import merge_pass
from .plan import Capabilities, Plan, Tuning, Tunings, plan, row_major_index_strides, simplify

Box = tuple[tuple[int, int], ...]  # a range [start, end) per axis
Grid = tuple[tuple[tuple[int, int], ...], ...]  # the ranges of each axis


@dataclasses.dataclass(frozen=True)
class Window:
    """A byte range of one of a tensor's buffers, bound for one piece."""

    buffer: int  # which of the tensor's buffers
    offset: int  # bytes from that buffer's start; a multiple of the offset alignment
    size: int  # bytes bound; a multiple of 16


@dataclasses.dataclass(frozen=True)
class Piece:
    """One step of a schedule: a plan and what it binds. ``input=None``: the plan is a merge
    that reads the scratch pairs; ``output=None``: the plan writes pairs to the scratch."""

    plan: Plan
    input: Window | None
    output: Window | None


@dataclasses.dataclass(frozen=True)
class Schedule:
    """The steps of an operator in order, and the scratch its partial pairs need."""

    pieces: tuple[Piece, ...]
    partial_bytes: int = 0

    @property
    def scratch_bytes(self) -> int:
        """The scratch a dispatch needs between first passes and their merges: the schedule's
        pairs across pieces, or a plan's own split's (DirectML's temporary resource)."""
        return max([self.partial_bytes] + [p.plan.partial_bytes for p in self.pieces])

    @property
    def merges(self) -> int:
        return sum(p.input is None for p in self.pieces)


def _span(strides, size: int, lengths) -> int:
    """Bytes from the first to the last element of a cell with these lengths."""
    return (sum((n - 1) * s for n, s in zip(lengths, strides)) + 1) * size


def _first(strides, size: int, box: Box) -> int:
    """The byte offset of a cell's first element."""
    return sum(a * s for (a, _), s in zip(box, strides)) * size


def _round16(n: int) -> int:
    return (n + 15) & ~15


def cell_lengths(sizes, tensors, limit: int) -> tuple[int, ...]:
    """Per-axis lengths of the largest cells whose span is at most ``limit`` bytes in every
    one of ``tensors`` ((element strides, element size) over the same axes)."""
    lengths = list(sizes)

    def over():
        return next((t for t in tensors if _span(*t, lengths) > limit), None)

    while (tensor := over()) is not None:
        strides = tensor[0]
        axis = max((a for a, n in enumerate(lengths) if n > 1 and strides[a] > 0), key=lambda a: (strides[a], -a),
                   default=None)
        if axis is None:
            raise DescriptorError(f"one element of {tensor[1]} bytes is more than the {limit} bytes a piece may span here")
        whole, lengths[axis] = lengths[axis], 1
        if over() is None:  # the longest range that fits; else single indices, and cut on
            short, long = 1, whole
            while short < long:
                lengths[axis] = mid = (short + long + 1) // 2
                short, long = (mid, long) if over() is None else (short, mid - 1)
            lengths[axis] = short
    return tuple(lengths)


def _partition(bounds, length: int) -> tuple[tuple[int, int], ...]:
    """Each range of ``bounds`` cut into as few ranges of at most ``length`` as it takes, of
    even lengths (multiples of 64 where that fits, so that 16-byte loads stay aligned)."""
    out = []
    for lo, hi in bounds:
        even = -(-(hi - lo) // -(-(hi - lo) // length))
        step = min(length, -(-even // 64) * 64)
        out += [(a, min(a + step, hi)) for a in range(lo, hi, step)]
    return tuple(out)


def _refine(*partitions) -> tuple[tuple[int, int], ...]:
    """The ranges between every boundary of several partitions of one axis."""
    cuts = sorted({a for part in partitions for a, _ in part} | {part[-1][1] for part in partitions})
    return tuple(zip(cuts, cuts[1:]))


def buffer_grid(desc: TensorDesc, caps: Capabilities) -> Grid:
    """How a tensor of ``desc`` is held: the grid whose cells are its buffers."""
    if desc.total_tensor_size_in_bytes <= caps.max_buffer:
        return tuple(((0, n),) for n in desc.sizes)
    lengths = cell_lengths(desc.sizes, [(desc.element_strides, desc.data_type.size)], caps.max_buffer & ~15)
    return tuple(_partition(((0, n),), length) for n, length in zip(desc.sizes, lengths))


def buffer_spans(desc: TensorDesc, caps: Capabilities) -> list[tuple[int, int]]:
    """(first byte, bytes) of each buffer of a tensor of ``desc``, in ``buffer_grid`` order."""
    cells = list(itertools.product(*buffer_grid(desc, caps)))
    if len(cells) == 1:
        return [(0, _round16(desc.total_tensor_size_in_bytes))]
    strides, size = desc.element_strides, desc.data_type.size
    return [(_first(strides, size, box), _round16(_span(strides, size, [b - a for a, b in box]))) for box in cells]


def tensor_needs(desc: TensorDesc, spans) -> list[int]:
    """The bytes of a tensor that each of its buffers holds (``buffer_spans``), in whole
    4-byte words: for a tensor in one buffer, its ``total_tensor_size_in_bytes``, which
    DirectML's ``DMLCalcBufferTensorSize`` rounds up to 4 (a bound buffer's size is
    DWORD-aligned), and all that a binding of it must hold."""
    total = desc.total_tensor_size_in_bytes
    return [min(nbytes, (total - first + 3) & ~3) for first, nbytes in spans]


def _buffer_of(grid: Grid, box: Box) -> int:
    """The index of the buffer (a cell of ``grid``) that holds cell ``box``."""
    index = 0
    for ranges, (a, _) in zip(grid, box):
        index = index * len(ranges) + bisect.bisect_right([lo for lo, _ in ranges], a) - 1
    return index


def _sliced(desc: TensorDesc, box: Box) -> TensorDesc:
    return TensorDesc(desc.data_type, tuple(b - a for a, b in box), desc.element_strides)


class _Tensor:
    """One operand as the scheduler sees it: its layout over the input's axes and its buffers."""

    def __init__(self, desc: TensorDesc, caps: Capabilities, axes_of_one: set[int], full_sizes):
        self.desc, self.caps = desc, caps
        self.axes_of_one = axes_of_one  # input axes along which this tensor has size 1
        self.strides = tuple(0 if a in axes_of_one else s for a, s in enumerate(desc.element_strides))
        self.size = desc.data_type.size
        self.grid = buffer_grid(desc, caps)
        self.spans = buffer_spans(desc, caps)
        # The buffer grid over the input's axes: whole along the axes of size 1.
        self.partitions = [((0, n),) if a in axes_of_one else part
                           for a, (n, part) in enumerate(zip(full_sizes, self.grid))]

    def own(self, box: Box) -> Box:
        return tuple((0, 1) if a in self.axes_of_one else r for a, r in enumerate(box))

    def window(self, box: Box) -> tuple[Window, int]:
        """The window that holds cell ``box`` (its start aligned down), and the element
        offset of the cell's first element in it."""
        own = self.own(box)
        buffer = _buffer_of(self.grid, own)
        inside = _first(self.desc.element_strides, self.size, own) - self.spans[buffer][0]
        offset = inside - inside % self.caps.offset_alignment
        rest = inside - offset
        span = _span(self.desc.element_strides, self.size, [b - a for a, b in own])
        return Window(buffer, offset, _round16(rest + span)), rest // self.size


class TooManyPieces(DescriptorError):
    """A schedule would have more pieces than its caller asked for at most (``schedule``'s
    ``most``); ``count`` is a number of pieces it is sure to reach."""

    def __init__(self, count: int):
        super().__init__(f"{count} pieces or more")
        self.count = count


def _cells(sizes, lengths) -> int:
    return math.prod(-(-n // length) for n, length in zip(sizes, lengths))


# Long, for one reason: its closures share the partition grid and the tensors' windows, and
# split into functions each would take most of this one's state as arguments.
def schedule(red: ArgReduction, caps: Capabilities, nan_mode, tuning: Tuning | Tunings = Tuning(),
             most: int | None = None) -> Schedule:
    """The pieces (and merges) of a reduction on an adapter with these limits. A ``Tunings``
    gives the whole reduction's family one ``Tuning``, which every piece and merge plans with.
    With ``most``, a schedule sure to have more pieces than that raises ``TooManyPieces`` as
    soon as that is known, before any long list of ranges or pieces is made."""
    if isinstance(tuning, Tunings):
        tuning = tuning.for_reduction(red, caps)
    binding, align = caps.max_storage_binding, caps.offset_alignment
    whole_in, whole_out = red.input.total_tensor_size_in_bytes, red.output.total_tensor_size_in_bytes
    if whole_in <= binding and whole_out <= binding:
        return Schedule((Piece(plan(red, caps, nan_mode, tuning), Window(0, 0, _round16(whole_in)),
                               Window(0, 0, _round16(whole_out))),))
    sizes, hardmax = red.input.sizes, red.op == "hardmax"
    reduced = set(red.axes)
    kept_axes = [a for a in range(len(sizes)) if a not in reduced]
    out_one = set() if hardmax else reduced  # the output's axes of size 1, which its windows do not cut
    out_strides = tuple(0 if a in out_one else s for a, s in enumerate(red.output.element_strides))
    # A window starts up to `align` bytes before its cell and ends rounded up to 16 bytes.
    limit = (binding - align) & ~15
    lengths = list(cell_lengths(sizes, [(red.input.element_strides, red.input.data_type.size),
                                        (out_strides, red.output.data_type.size)], limit))

    def refuse_above(count: int) -> None:
        if most is not None and count > most:
            raise TooManyPieces(count)

    refuse_above(_cells(sizes, lengths))
    for desc in (red.input, red.output):
        if desc.total_tensor_size_in_bytes > caps.max_buffer:
            refuse_above(_cells(desc.sizes, cell_lengths(desc.sizes, [(desc.element_strides, desc.data_type.size)],
                                                          caps.max_buffer & ~15)))
    inp = _Tensor(red.input, caps, set(), sizes)
    out = _Tensor(red.output, caps, out_one, sizes)
    grid = [_partition(_refine(pi, po), n) for pi, po, n in zip(inp.partitions, out.partitions, lengths)]

    def sub(box: Box) -> ArgReduction:
        return dataclasses.replace(red, input=_sliced(red.input, box), output=_sliced(red.output, out.own(box)))

    def piece_plan(box: Box, **kw) -> tuple[Plan, Window]:
        window, base = inp.window(box)
        return plan(sub(box), caps, nan_mode, tuning, in_base=base, **kw), window

    def out_window(box: Box, p: Plan, **kw) -> Piece:
        window, base = out.window(box)
        return Piece(dataclasses.replace(p, out_base=base, **kw), None, window)

    if all(len(grid[a]) == 1 for a in reduced):  # each piece reduces whole slices
        refuse_above(math.prod(len(g) for g in grid))
        pieces = []
        for box in itertools.product(*grid):
            p, in_window = piece_plan(box)
            pieces.append(dataclasses.replace(out_window(box, p), input=in_window))
        return Schedule(tuple(pieces))

    # Groups of cells that share their kept ranges; each group's pairs fit the scratch.
    cells = math.prod(len(grid[a]) for a in reduced)
    scratch_limit = min(binding, caps.max_buffer)

    def longest(axis: int) -> int:
        return max(b - a for a, b in grid[axis])

    per_group = cells + (cells if hardmax else 1)  # the pieces, then one merge (one per cell for HARDMAX)
    while 16 * cells * math.prod(longest(k) for k in kept_axes) > scratch_limit:
        widest = max((k for k in kept_axes if longest(k) > 1), key=longest, default=None)
        if widest is None:
            raise DescriptorError(
                f"input_tensor is cut into {cells} pieces along its reduced axes; their partial pairs "
                f"({16 * cells} bytes per output) exceed what this adapter binds at once ({scratch_limit})"
            )
        shorter = (longest(widest) + 1) // 2
        refuse_above(math.prod(len(grid[k]) for k in kept_axes if k != widest) * -(-sizes[widest] // shorter)
                     * per_group)
        grid[widest] = _partition(grid[widest], shorter)
    refuse_above(math.prod(len(grid[k]) for k in kept_axes) * per_group)
    if hardmax and _span(red.output.element_strides, 1, sizes) > 2**32:
        raise DescriptorError(
            f"output_tensor spans {_span(red.output.element_strides, 1, sizes)} elements; a HARDMAX whose "
            f"reduced axes are cut into pieces addresses its output with 32-bit offsets (at most 2^32)"
        )
    index_strides = row_major_index_strides(red)
    pieces, scratch = [], 0
    for kept_box in itertools.product(*(grid[k] for k in kept_axes)):
        outputs = math.prod(b - a for a, b in kept_box)
        max_split = max(1, scratch_limit // (16 * outputs) // cells)
        chunks, group = 0, []
        for red_box in itertools.product(*(grid[r] for r in sorted(reduced))):
            ranges = dict(zip(kept_axes, kept_box)) | dict(zip(sorted(reduced), red_box))
            box = tuple(ranges[a] for a in range(len(sizes)))
            p, in_window = piece_plan(box, partials_only=True, index_strides=index_strides, max_split=max_split)
            offset = sum(box[r][0] * index_strides[r] for r in reduced)
            group.append(box)
            pieces.append(Piece(dataclasses.replace(p, index_offset=offset, slot_base=chunks * outputs), in_window, None))
            chunks += p.split
        whole = tuple((0, n) if a in reduced else ranges[a] for a, n in enumerate(sizes))
        merge = _merge_plan(pieces[-1].plan, sub(whole), chunks, caps, tuning)
        if hardmax:  # the winners may lie in any cell's output: a merge per cell's window
            first = _first(red.output.element_strides, 1, whole)
            for box in group:
                window, _ = out.window(box)
                start = (out.spans[window.buffer][0] + window.offset) // out.size
                pieces.append(Piece(dataclasses.replace(merge, out_base=(first - start) % 2**32,
                                                        out_limit=window.size // out.size), None, window))
        else:
            pieces.append(out_window(whole, merge))
        scratch = max(scratch, 16 * chunks * outputs)
    return Schedule(tuple(pieces), scratch)


def _merge_plan(piece: Plan, whole: ArgReduction, chunks: int, caps: Capabilities, tuning: Tuning) -> Plan:
    """The merge of a group's ``chunks`` pairs per output, over its whole reduction."""
    kept, reduced = simplify(whole)
    kernel, grid = merge_pass(chunks, piece.output_count, caps, tuning)
    return dataclasses.replace(
        piece, kernel="", loader="", kept=kept, reduced=reduced, split=chunks, chunk=0, merge_kernel=kernel,
        merge_grid=grid, in_base=0, out_base=0, index_offset=0, slot_base=0, partials_only=False,
    )
