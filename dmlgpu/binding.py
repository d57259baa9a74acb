"""DirectML's binding model on a wgpu device: buffer bindings, binding properties, binding tables.

An application using DirectML owns its device and command list: it asks a compiled operator
for its binding properties (the temporary and persistent memory it needs), binds buffers of
its own with offsets (``DML_BUFFER_BINDING``) in a binding table, and records the dispatch into
its own command list (``IDMLCommandRecorder::RecordDispatch``), submitting it itself. Here the
device is a ``wgpu.GPUDevice`` (``Device.from_wgpu``) and the command list a
``wgpu.GPUCommandEncoder``; this module owns ``BufferBinding``, ``BindingProperties`` and
``BindingTable``, and the rules a caller's buffer is held to wherever one is bound
(``checked_bindings``, ``check_apart``): by binding tables, ``Device.wrap`` and ``run`` on
wrapped tensors. ``CompiledOperator.record`` records a table's dispatch
(``runtime/recorder.py``). docs/binding.md maps each DirectML interface to its counterpart.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

import numpy as np

from .errors import DataError
from .pieces import tensor_needs
from .runtime import STORAGE_USAGE, device_of, is_buffer, usage_names

if TYPE_CHECKING:
    from .device import Device
    from .operator import CompiledOperator
    from .tensor_desc import TensorDesc


@dataclasses.dataclass(frozen=True)
class BufferBinding:
    """``DML_BUFFER_BINDING``: ``size`` bytes of a ``wgpu.GPUBuffer`` from byte ``offset``
    (``size`` None: to the end of the buffer)."""

    buffer: Any
    offset: int = 0
    size: int | None = None

    def __post_init__(self) -> None:
        for name in ("offset", "size"):
            value = getattr(self, name)
            if value is None and name == "size":
                continue
            if not isinstance(value, (int, np.integer)) or isinstance(value, bool):
                raise TypeError(f"BufferBinding.{name} must be an int, not {type(value).__name__} ({value!r})")
            if value < 0:
                raise DataError(f"BufferBinding.{name} is {value}, but it must be >= 0")
            object.__setattr__(self, name, int(value))


@dataclasses.dataclass(frozen=True)
class BindingProperties:
    """``DML_BINDING_PROPERTIES``: the least bytes of the temporary resource a dispatch needs
    bound (the partial pairs between a split's first pass and its merge; 0: none is needed) and
    of the persistent resource (always 0: an operator keeps the words its racing passes share
    itself, zeroed when it is compiled, and every dispatch leaves them zero).
    ``RequiredDescriptorCount`` has no counterpart: wgpu has no descriptor heaps. As in
    DirectML, an input or output binding needs only its tensor's ``total_tensor_size_in_bytes``
    (``TotalTensorSizeInBytes``), which no property repeats."""

    temporary_resource_size: int
    persistent_resource_size: int = 0


def _as_list(field: str, value) -> list:
    """A binding as a list of ``BufferBinding``: one, a ``wgpu.GPUBuffer`` (all of it), a list of
    them (a tensor held in several buffers), or a ``Tensor`` (its ``bindings``)."""
    if isinstance(value, (list, tuple)):
        items = list(value)
    elif isinstance(getattr(value, "bindings", None), list):  # a Tensor (duck-typed: tensor.py imports this module)
        items = value.bindings
    else:
        items = [value]
    out = []
    for item in items:
        if is_buffer(item):
            item = BufferBinding(item)
        if not isinstance(item, BufferBinding):
            raise TypeError(f"{field} must be a dmlgpu.BufferBinding, a wgpu.GPUBuffer or a dmlgpu.Tensor, "
                            f"not {type(item).__name__}")
        out.append(item)
    return out


# Long: one rule after another, in the order a reader checks a binding, each with its message.
def _checked(name: str, b: BufferBinding, need: int, what: str, device: "Device") -> BufferBinding:
    """One binding held to the rules (module docstring), with its size filled in. What it must
    hold is DirectML's rule and no more: ``need`` bytes from its offset (an input's last quad
    may end inside it: the kernels read that quad's words, ``shaders/load_quads.wgsl``)."""
    buffer = b.buffer
    if not is_buffer(buffer):
        raise TypeError(f"{name}.buffer must be a wgpu.GPUBuffer, not {type(buffer).__name__}")
    if device_of(buffer) is not device.runner.device:
        raise DataError(f"{name}.buffer belongs to another wgpu device than the operator's "
                        f"({device.name!r}); bind buffers made on Device.wgpu_device")
    if not buffer.usage & STORAGE_USAGE:
        raise DataError(f"{name}.buffer has usage {usage_names(buffer.usage)}, but a bound buffer needs "
                        f"STORAGE usage (wgpu.BufferUsage.STORAGE)")
    align = device.runner.capabilities.offset_alignment
    if b.offset % align:
        raise DataError(f"{name}.offset is {b.offset}, but it must be a multiple of the device's "
                        f"min_storage_buffer_offset_alignment ({align})")
    room = buffer.size - b.offset
    if room < 0:
        raise DataError(f"{name}.offset is {b.offset}, past the end of its buffer ({buffer.size} bytes)")
    size = room if b.size is None else b.size
    if size > room:
        raise DataError(f"{name}.size is {size}, but its buffer holds only {room} bytes from offset {b.offset}")
    if size < need:
        held = f"{name}.size is {size}" if b.size is not None else \
            f"{name} holds {size} bytes from offset {b.offset} (the rest of its buffer)"
        raise DataError(f"{held}, but it must be at least {what} ({need})")
    return BufferBinding(buffer, b.offset, size)


def checked_bindings(field: str, value, desc: "TensorDesc", spans, device: "Device") -> tuple[BufferBinding, ...]:
    """``value`` (see ``_as_list``) bound for a tensor of ``desc`` held in buffers ``spans``
    (``pieces.buffer_spans``: one binding a buffer), each binding held to the rules, its size
    filled in. Errors name ``field`` (``field[k]`` for a tensor in several buffers), the value
    and the rule."""
    bindings = _as_list(field, value)
    if len(bindings) != len(spans):
        raise DataError(f"{field} is {len(bindings)} buffer bindings, but a tensor of {desc.data_type.name} "
                        f"{list(desc.sizes)} is held in {len(spans)} buffers on this device (one binding a buffer)")
    one = len(spans) == 1
    out = []
    for k, (b, need) in enumerate(zip(bindings, tensor_needs(desc, spans))):
        what = "its tensor's total_tensor_size_in_bytes" if one else f"the bytes of its tensor that buffer {k} holds"
        out.append(_checked(field if one else f"{field}[{k}]", b, need, what, device))
    return tuple(out)


def named(field: str, bindings, needs) -> list[tuple[str, BufferBinding, int]]:
    """(name, binding, bytes it holds) of each binding of a tensor, for ``check_apart``."""
    one = len(bindings) == 1
    return [(field if one else f"{field}[{k}]", b, n) for k, (b, n) in enumerate(zip(bindings, needs))]


def check_apart(ranges: list[tuple[str, BufferBinding, int]]) -> None:
    """A ``DataError`` if two of the (name, binding, bytes used) overlap in one buffer: what an
    operator reads, writes and keeps between its passes must be apart (adjacent is apart)."""
    for i, (a, x, n) in enumerate(ranges):
        for b, y, m in ranges[i + 1:]:
            if x.buffer is y.buffer and x.offset < y.offset + m and y.offset < x.offset + n:
                raise DataError(f"{a} (bytes [{x.offset}, {x.offset + n}) of its buffer) and {b} (bytes "
                                f"[{y.offset}, {y.offset + m})) overlap, but an operator's input, output and "
                                f"temporary resource must not")


def clears(bindings, needs) -> list[tuple]:
    """(buffer, offset, size) of each binding's bytes of the tensor (``needs``: ``tensor_needs``,
    whole words that every binding holds): what a HARDMAX zeroes before its passes write the ones."""
    return [(b.buffer, b.offset, n) for b, n in zip(bindings, needs)]


def bases(bindings) -> tuple:
    """(buffer, offset, end) of each binding, what ``operator.Program`` binds windows from: a
    window ends at most at ``end``, its binding's end in whole words, so that no pass reads or
    writes a byte of the caller's beyond the binding."""
    return tuple((b.buffer, b.offset, b.offset + (b.size & ~3)) for b in bindings)


class BindingTable:
    """``IDMLBindingTable`` for one compiled operator (``CompiledOperator.binding_table``): the
    caller's buffers its dispatch binds, each checked when it is bound (the buffer of the
    operator's wgpu device, STORAGE usage, the offset a multiple of the device's
    ``min_storage_buffer_offset_alignment``, the size at least the tensor's
    ``total_tensor_size_in_bytes``), and the whole (``validate``: input and output bound, a
    temporary resource where one is needed, nothing overlapping) before anything is recorded."""

    def __init__(self, operator: "CompiledOperator"):
        self.operator = operator
        self.inputs: tuple | None = None  # each: the BufferBindings of a tensor, sizes filled in
        self.outputs: tuple | None = None
        self.temporary: BufferBinding | None = None
        self.persistent: BufferBinding | None = None
        self._ready: tuple | None = None  # what validate found, until something is bound again

    @staticmethod
    def _one(kind: str, bindings) -> Any:
        """The binding of the operator's one input or output: DirectML's array with an entry an
        input (``[binding]``), or the entry alone. A list whose first item is a buffer binding
        is one entry: the bindings of a tensor held in several buffers."""
        if isinstance(bindings, (list, tuple)) and bindings and not isinstance(bindings[0], BufferBinding) \
                and not is_buffer(bindings[0]):
            if len(bindings) != 1:
                raise DataError(f"bind_{kind} takes one entry for the operator's one {kind[:-1]} "
                                f"(DirectML's array of DML_BINDING_DESC), not {len(bindings)}")
            return bindings[0]
        return bindings

    def bind_inputs(self, bindings) -> None:
        """DirectML's ``BindInputs``: ``[binding]`` (or the binding alone) for the operator's one
        input: a ``BufferBinding``, a ``wgpu.GPUBuffer`` (all of it), a ``Tensor`` (its
        ``bindings``), a list of ``BufferBinding`` for a tensor held in several buffers, or
        None (unbound)."""
        op, value = self.operator, self._one("inputs", bindings)
        self.inputs = None if value is None else checked_bindings(
            "input", value, op.input_desc, op.input_spans, op.device)
        self._ready = None

    def bind_outputs(self, bindings) -> None:
        """DirectML's ``BindOutputs``, as ``bind_inputs`` for the operator's one output."""
        op, value = self.operator, self._one("outputs", bindings)
        self.outputs = None if value is None else checked_bindings(
            "output", value, op.output_desc, op.output_spans, op.device)
        self._ready = None

    def _resource(self, field: str, binding, need: int) -> BufferBinding | None:
        if binding is None:
            return None
        (b,) = _as_list(field, [binding])
        return _checked(field, b, need, f"binding_properties.{field}_resource_size", self.operator.device)

    def bind_temporary_resource(self, binding) -> None:
        """DirectML's ``BindTemporaryResource``: a ``BufferBinding`` (or ``wgpu.GPUBuffer``) of at
        least ``binding_properties.temporary_resource_size`` bytes, which the dispatch may
        overwrite; None where that size is 0."""
        self.temporary = self._resource("temporary", binding, self.operator.binding_properties.temporary_resource_size)
        self._ready = None

    def bind_persistent_resource(self, binding) -> None:
        """DirectML's ``BindPersistentResource``: these operators need none
        (``persistent_resource_size`` is 0), so None; a binding given is checked and unused."""
        self.persistent = self._resource("persistent", binding, 0)

    def validate(self) -> tuple:
        """Check the table as a whole (``DataError`` otherwise) and return what a dispatch binds:
        (input bases, output bases, temporary window or None, HARDMAX's clears); ``record``
        calls it before it records anything."""
        if self._ready is not None:
            return self._ready
        op = self.operator
        if self.inputs is None or self.outputs is None:
            missing = "input" if self.inputs is None else "output"
            raise DataError(f"the binding table has no {missing} bound (bind_{missing}s), but a dispatch needs one")
        need = op.binding_properties.temporary_resource_size
        if need and self.temporary is None:
            raise DataError(f"temporary is None, but this operator needs a temporary resource of {need} bytes "
                            f"(binding_properties.temporary_resource_size): bind_temporary_resource")
        in_needs, out_needs = tensor_needs(op.input_desc, op.input_spans), tensor_needs(op.output_desc, op.output_spans)
        ranges = named("input", self.inputs, in_needs) + named("output", self.outputs, out_needs)
        temporary = None
        if need and self.temporary is not None:
            ranges.append(("temporary", self.temporary, need))
            temporary = (self.temporary.buffer, self.temporary.offset, need)
        check_apart(ranges)
        self._ready = (bases(self.inputs), bases(self.outputs), temporary,
                       clears(self.outputs, out_needs))
        return self._ready
