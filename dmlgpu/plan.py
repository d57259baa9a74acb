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
#: Threads per workgroup of the workgroup-per-output kernel.
WORKGROUP_SIZE = 256


@dataclasses.dataclass(frozen=True)
class Capabilities:
    """What the planner needs to know of an adapter."""

    max_storage_binding: int
    max_buffer: int
    max_workgroups_per_dim: int = 65535
    shader_int64: bool = False

    @classmethod
    def unlimited(cls) -> "Capabilities":
        """An adapter with generous limits, for planning without one."""
        return cls(2**31, 2**32, 65535, True)


@dataclasses.dataclass(frozen=True)
class Dim:
    """One dimension after simplification: its size and its strides in elements."""

    size: int
    in_stride: int
    out_stride: int


@dataclasses.dataclass(frozen=True)
class Plan:
    """Everything the code generator and the runner need, and nothing they must work out."""

    kernel: str  # the template in shaders/, e.g. "reduce_workgroup"
    op: str  # "argmax", "argmin" or "hardmax"
    input_type: DataType
    output_type: DataType
    increasing: bool
    nan_mode: NanMode
    int64: bool  # 64-bit keys as native u64 (True) or as two u32 words (False)
    kept: tuple[Dim, ...]  # dimensions that index outputs, row-major
    reduced: tuple[Dim, ...]  # reduced dimensions, ascending axis order
    workgroup_size: int
    grid: tuple[int, int, int]

    @property
    def output_count(self) -> int:
        return math.prod(d.size for d in self.kept)

    @property
    def reduced_count(self) -> int:
        return math.prod(d.size for d in self.reduced)

    @property
    def clears_output(self) -> bool:
        """HARDMAX zeroes its output, then writes a 1 per slice."""
        return self.op == "hardmax"


def merge_dims(dims: list[Dim]) -> tuple[Dim, ...]:
    """Drop size-1 dimensions and merge neighbours that address memory as one.

    Dimension ``a`` followed by ``b`` merge when, for both strides, stepping ``a`` once
    equals stepping ``b`` through its whole size; the row-major order of the elements,
    and so every flat index, is unchanged.
    """
    merged: list[Dim] = []
    for d in dims:
        if d.size == 1:
            continue
        if merged:
            a = merged[-1]
            if a.in_stride == d.in_stride * d.size and a.out_stride == d.out_stride * d.size:
                merged[-1] = Dim(a.size * d.size, d.in_stride, d.out_stride)
                continue
        merged.append(d)
    return tuple(merged)


def simplify(red: ArgReduction) -> tuple[tuple[Dim, ...], tuple[Dim, ...]]:
    """The kept and reduced dimensions of a reduction, simplified.

    Reduced dimensions carry the output stride only for HARDMAX (whose output has the
    input's shape); for the index operators their output stride is 0.
    """
    in_strides = red.input.element_strides
    out_strides = red.output.element_strides
    hardmax = red.op == "hardmax"
    kept, reduced = [], []
    for axis, size in enumerate(red.input.sizes):
        if axis in red.axes:
            reduced.append(Dim(size, in_strides[axis], out_strides[axis] if hardmax else 0))
        else:
            kept.append(Dim(size, in_strides[axis], out_strides[axis]))
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


def check_fits(red: ArgReduction, caps: Capabilities) -> None:
    """Refuse tensors that one storage binding of this adapter cannot hold."""
    for field, tensor in (("input_tensor", red.input), ("output_tensor", red.output)):
        if tensor.total_tensor_size_in_bytes > caps.max_storage_binding:
            raise DescriptorError(
                f"{field}.total_tensor_size_in_bytes is {tensor.total_tensor_size_in_bytes}, but "
                f"this adapter binds at most {caps.max_storage_binding} bytes per buffer"
            )


def plan(red: ArgReduction, caps: Capabilities, nan_mode=NanMode.IGNORE) -> Plan:
    """The plan for one reduction on one adapter."""
    nan_mode = NanMode.parse(nan_mode, "nan_mode")
    check_fits(red, caps)
    kept, reduced = simplify(red)
    output_count = math.prod(d.size for d in kept)
    return Plan(
        kernel="reduce_workgroup",
        op=red.op,
        input_type=red.input.data_type,
        output_type=red.output.data_type,
        increasing=red.direction is AxisDirection.INCREASING,
        nan_mode=nan_mode,
        int64=caps.shader_int64,
        kept=kept,
        reduced=reduced,
        workgroup_size=WORKGROUP_SIZE,
        grid=grid_for(output_count, caps.max_workgroups_per_dim),
    )
