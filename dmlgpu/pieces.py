"""Tensors larger than one storage binding or one buffer: pieces along one axis.

DirectML's tensors hold up to 2^32 - 1 elements (16 GiB of FLOAT32), but an adapter binds
at most ``max_storage_binding`` bytes at once (2 GiB on NVIDIA through Vulkan, 128 MiB on
lavapipe) and holds at most ``max_buffer`` bytes in one buffer (4 GiB). A tensor beyond
them lives in several buffers, cut along its *slice axis* (the axis with the largest
stride), and an operator runs piece by piece, each piece a window of one buffer:

- when the slice axis is kept, each piece is a reduction of its own, writing its outputs;
- when it is the first reduced axis (in ascending order), each piece writes partial
  (key, index) pairs, its indices offset by where the piece starts, and one merge pass
  over every piece's pairs applies the tie rule across pieces.

Other layouts beyond one binding are refused with the reason. Pure Python, like the planner.
"""

from __future__ import annotations

import dataclasses
import math

from .desc import ArgReduction, TensorDesc
from .errors import DescriptorError
from .plan import Capabilities, Plan, Tuning, merge_pass, plan, simplify


@dataclasses.dataclass(frozen=True)
class Window:
    """A byte range of one of a tensor's buffers, bound for one piece."""

    buffer: int  # which of the tensor's buffers
    offset: int  # bytes from that buffer's start; a multiple of the offset alignment
    size: int  # bytes bound; a multiple of 16


@dataclasses.dataclass(frozen=True)
class Piece:
    plan: Plan
    input: Window
    output: Window


@dataclasses.dataclass(frozen=True)
class Schedule:
    """The pieces of an operator in order, and the merge that follows them, if any."""

    pieces: tuple[Piece, ...]
    merge: Plan | None = None  # across pieces (slice axis reduced)
    partial_bytes: int = 0  # scratch for the pairs the pieces leave to ``merge``


def slice_axis(desc: TensorDesc) -> int:
    """The axis that addresses memory most coarsely: the largest stride of a size > 1."""
    strides = desc.element_strides
    return max(range(desc.rank), key=lambda a: (desc.sizes[a] > 1, strides[a], -a))


def slice_span(desc: TensorDesc, axis: int, a: int, b: int) -> tuple[int, int]:
    """(first byte, bytes) that indices [a, b) of ``axis`` reach."""
    strides, size = desc.element_strides, desc.data_type.size
    rest = sum((n - 1) * s for i, (n, s) in enumerate(zip(desc.sizes, strides)) if i != axis)
    first = a * strides[axis] * size
    end = ((b - 1) * strides[axis] + rest + 1) * size
    return first, end - first


def slices(desc: TensorDesc, axis: int, lo: int, hi: int, limit: int) -> list[tuple[int, int]]:
    """Ranges [a, b) covering [lo, hi) of ``axis``, each as long as ``limit`` bytes allow."""
    out, a = [], lo
    while a < hi:
        if slice_span(desc, axis, a, a + 1)[1] > limit:
            raise DescriptorError(
                f"input_tensor needs {slice_span(desc, axis, a, a + 1)[1]} bytes for one index of axis "
                f"{axis}, but this adapter binds at most {limit} bytes at once"
            )
        short, long = a + 1, hi  # the span grows with b: the longest range that fits
        while short < long:
            mid = (short + long + 1) // 2
            short, long = (mid, long) if slice_span(desc, axis, a, mid)[1] <= limit else (short, mid - 1)
        out.append((a, short))
        a = short
    return out


def buffer_slices(desc: TensorDesc, caps: Capabilities) -> list[tuple[int, int, int, int]]:
    """How a tensor of ``desc`` is held: (first index, end index, first byte, bytes) per buffer."""
    axis = slice_axis(desc)
    if desc.total_tensor_size_in_bytes <= caps.max_buffer:
        return [(0, desc.sizes[axis], 0, (desc.total_tensor_size_in_bytes + 15) & ~15)]
    return [(a, b, *slice_span(desc, axis, a, b))
            for a, b in slices(desc, axis, 0, desc.sizes[axis], caps.max_buffer)]


def _sliced(desc: TensorDesc, axis: int, a: int, b: int) -> TensorDesc:
    sizes = tuple(b - a if i == axis else n for i, n in enumerate(desc.sizes))
    return TensorDesc(desc.data_type, sizes, desc.element_strides)


def _window(buffers, index: int, first: int, size: int, align: int) -> tuple[Window, int]:
    """The window of bytes [first, first + size) in the tensor's buffer ``index``, its offset
    aligned down, and the bytes between the window's start and ``first``."""
    inside = first - buffers[index][2]
    offset = inside - inside % align
    rest = inside - offset
    return Window(index, offset, (rest + size + 15) & ~15), rest


def _holder(buffers, first: int, size: int) -> int:
    """The buffer that holds bytes [first, first + size)."""
    for i, (_, _, start, nbytes) in enumerate(buffers):
        if start <= first and first + size <= start + nbytes:
            return i
    raise DescriptorError("output_tensor's layout does not split into buffers along the input's pieces")


def schedule(red: ArgReduction, caps: Capabilities, nan_mode, tuning: Tuning = Tuning()) -> Schedule:
    """The pieces (and final merge) of a reduction on an adapter with these limits."""
    binding, align = caps.max_storage_binding, caps.offset_alignment
    whole_in, whole_out = red.input.total_tensor_size_in_bytes, red.output.total_tensor_size_in_bytes
    if whole_in <= binding and whole_out <= binding:
        return Schedule((Piece(plan(red, caps, nan_mode, tuning), Window(0, 0, (whole_in + 15) & ~15),
                               Window(0, 0, (whole_out + 15) & ~15)),))
    axis = slice_axis(red.input)
    reduced = axis in red.axes
    if reduced and axis != min(red.axes):
        raise DescriptorError(
            f"input_tensor needs {whole_in} bytes, more than this adapter binds at once ({binding}); "
            f"such tensors are cut along axis {axis} (the largest stride), which must then be kept or "
            f"the first reduced axis, not axis {axis} of axes {list(red.axes)}"
        )
    if reduced and whole_out > binding:
        raise DescriptorError(
            f"output_tensor.total_tensor_size_in_bytes is {whole_out}, but this adapter binds at most "
            f"{binding} bytes at once, and an output is cut only along a kept axis"
        )
    in_buffers, out_buffers = buffer_slices(red.input, caps), buffer_slices(red.output, caps)
    # A window starts up to `align` bytes before its slice and ends rounded up to 16 bytes.
    limit = (binding - align) & ~15
    inner = math.prod(red.input.sizes[a] for a in red.axes if a > axis)
    pieces, chunks = [], 0
    for index, (lo, hi, _, _) in enumerate(in_buffers):
        for a, b in slices(red.input, axis, lo, hi, limit):
            in_window, rest = _window(in_buffers, index, *slice_span(red.input, axis, a, b), align)
            sub_out = red.output if reduced else _sliced(red.output, axis, a, b)
            out_first, out_size = (0, (whole_out + 15) & ~15) if reduced else slice_span(red.output, axis, a, b)
            out_window, out_rest = _window(out_buffers, _holder(out_buffers, out_first, out_size),
                                           out_first, out_size, align)
            if out_window.size > binding:
                raise DescriptorError(
                    f"output_tensor needs {out_window.size} bytes for indices {a}..{b - 1} of axis {axis}, "
                    f"more than this adapter binds at once ({binding})"
                )
            sub = ArgReduction(red.op, _sliced(red.input, axis, a, b), sub_out, red.axes, red.direction)
            size_in, size_out = red.input.data_type.size, red.output.data_type.size
            p = plan(sub, caps, nan_mode, tuning, in_base=rest // size_in, partials_only=reduced)
            p = dataclasses.replace(
                p, out_base=out_rest // size_out, index_offset=a * inner if reduced else 0,
                slot_base=chunks * p.output_count if reduced else 0,
            )
            chunks += p.split
            pieces.append(Piece(p, in_window, out_window))
    if not reduced:
        return Schedule(tuple(pieces))
    kept, full_reduced = simplify(red)
    merge_kernel, merge_grid = merge_pass(chunks, pieces[0].plan.output_count, caps, tuning)
    merge = dataclasses.replace(
        pieces[0].plan, kernel="", loader="", kept=kept, reduced=full_reduced, split=chunks, chunk=0,
        merge_kernel=merge_kernel, merge_grid=merge_grid, in_base=0, out_base=0, index_offset=0,
        slot_base=0, partials_only=False,
    )
    return Schedule(tuple(pieces), merge, 16 * chunks * merge.output_count)
