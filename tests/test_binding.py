"""DirectML's binding model on the caller's own wgpu device (issue 25): ``Device.from_wgpu``,
binding properties, binding tables of the caller's buffers, ``record`` into the caller's
encoder between passes of theirs, ``Device.wrap`` and ``Tensor.bindings``.

Every kernel family records between two passes of the caller's in one submit, bound at offset
0 and at an offset, and is held to the oracle bit for bit; the bytes of the caller's buffers
around what was bound are checked untouched. Each rule of a binding is tested at its boundary.
"""

from __future__ import annotations

import gc
import pathlib
import re
import subprocess
import sys
import zlib

import numpy as np
import pytest
import wgpu

import dmlgpu
from dmlgpu import BufferBinding, layout, oracle
from dmlgpu.binding import tensor_needs
from dmlgpu.desc import ActivationHardmax1OperatorDesc, ArgMaxOperatorDesc, ArgMinOperatorDesc, TensorDesc
from dmlgpu.errors import AdapterError, DataError
from dmlgpu.plan import Tuning
from dmlgpu.types import DataType

ROOT = pathlib.Path(__file__).resolve().parent.parent
U = wgpu.BufferUsage
#: dmlgpu's optional features, as a caller who wants them all would ask for them
OPTIONAL = ("shader-int64", "subgroup", "timestamp-query", "shader-int64-atomic-all-ops", "mappable-primary-buffers")
GARBAGE = 0xA5  # what the caller's buffers hold around the ranges bound

#: The caller's passes: copy words from one binding to another (the first writes the logits,
#: the last reads the indices): arrayLength bounds both.
COPY_WGSL = """
@group(0) @binding(0) var<storage, read> src: array<u32>;
@group(0) @binding(1) var<storage, read_write> dst: array<u32>;
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) id: vec3<u32>) {
    let i = id.x + id.y * 64u * 1024u;
    if (i < arrayLength(&src) && i < arrayLength(&dst)) { dst[i] = src[i]; }
}
"""


def clamped(source: str) -> str:
    """WGSL whose every index into a pass's input (``src``, and ``src_words`` where a shader reads
    it as words too) is clamped to the binding's last element, as wgpu's bounds-check policy for
    buffers does on an adapter without robust buffer access 2: there an index past a binding
    reads other data, where lavapipe reads the words of a quad that lie inside it."""
    out, start = [], 0
    while (m := re.search(r"\b(src|src_words)\[", source[start:])) is not None:
        name, first = m.group(1), start + m.end()
        end, depth = first, 1
        while depth:
            depth += {"[": 1, "]": -1}.get(source[end], 0)
            end += 1
        out += [source[start:start + m.start()], f"{name}[min({clamped(source[first:end - 1])}, arrayLength(&{name}) - 1u)]"]
        start = end
    return "".join(out) + source[start:]


@pytest.fixture(scope="module")
def gpu():
    """The caller's wgpu device: the adapter wgpu picks, with dmlgpu's optional features it has,
    its shaders' reads of an input clamped to the binding (``clamped``)."""
    adapter = wgpu.gpu.request_adapter_sync(power_preference="high-performance")
    device = adapter.request_device_sync(required_features=[f for f in OPTIONAL if f in adapter.features])
    create = device.create_shader_module
    device.create_shader_module = lambda *, code, **kw: create(code=clamped(code), **kw)
    return device


class Caller:
    """The caller's side: buffers, a copy pass, one encoder, one submit."""

    def __init__(self, gpu):
        self.gpu = gpu
        self.layout = gpu.create_bind_group_layout(entries=[
            {"binding": 0, "visibility": wgpu.ShaderStage.COMPUTE, "buffer": {"type": "read-only-storage"}},
            {"binding": 1, "visibility": wgpu.ShaderStage.COMPUTE, "buffer": {"type": "storage"}}])
        self.pipeline = gpu.create_compute_pipeline(
            layout=gpu.create_pipeline_layout(bind_group_layouts=[self.layout]),
            compute={"module": gpu.create_shader_module(code=COPY_WGSL), "entry_point": "main"})

    def buffer(self, size: int, data: bytes | None = None, usage=U.STORAGE | U.COPY_DST | U.COPY_SRC,
               fill: int = GARBAGE):
        """A buffer of ``size`` bytes (whole words) holding ``fill``, ``data`` at its start."""
        raw = np.full((size + 3) & ~3, fill, np.uint8)
        if data is not None:
            raw[:len(data)] = np.frombuffer(data, np.uint8)
        buffer = self.gpu.create_buffer(size=raw.size, usage=usage)
        self.gpu.queue.write_buffer(buffer, 0, raw)
        return buffer

    def copy(self, encoder, src: BufferBinding, dst: BufferBinding, nbytes: int) -> None:
        """A pass of the caller's: ``nbytes`` (whole words) from ``src`` to ``dst``."""
        words = (nbytes + 3) // 4
        group = self.gpu.create_bind_group(layout=self.layout, entries=[
            {"binding": 0, "resource": {"buffer": src.buffer, "offset": src.offset, "size": words * 4}},
            {"binding": 1, "resource": {"buffer": dst.buffer, "offset": dst.offset, "size": words * 4}}])
        compute = encoder.begin_compute_pass()
        compute.set_pipeline(self.pipeline)
        compute.set_bind_group(0, group)
        groups = -(-words // 64)
        compute.dispatch_workgroups(min(groups, 1024), -(-groups // 1024), 1)
        compute.end()

    def read(self, buffer) -> np.ndarray:
        return np.frombuffer(self.gpu.queue.read_buffer(buffer), np.uint8)


@pytest.fixture(scope="module")
def caller(gpu):
    return Caller(gpu)


def spans_of(op, desc):
    return op.input_spans if desc is op.input_desc else op.output_spans


def placed(caller, op, desc, offset: int, data: np.ndarray | None = None):
    """The caller's buffers for a tensor of ``desc``: one a buffer of the tensor, the tensor's
    part from ``offset``, garbage around it; the bindings, and the buffers."""
    bindings = []
    for need in tensor_needs(desc, spans_of(op, desc)):
        buffer = caller.buffer(offset + ((need + 15) & ~15) + 48)
        bindings.append(BufferBinding(buffer, offset, need))
    return bindings


def record_between(dev, caller, desc, x: np.ndarray, offsets, temporary=True, nan_mode="ignore"):
    """``desc`` compiled on ``dev``, recorded between two passes of the caller's at each of
    ``offsets`` (the input's and output's), all in one encoder and one submit; each result
    checked against the oracle bit for bit, and the bytes around every binding untouched."""
    op = dev.compile(desc, nan_mode=nan_mode)
    raw = np.frombuffer(memoryview(layout.bytes_for(op.input_desc, x)).cast("B"), np.uint8)
    want = oracle.evaluate(desc, np.ascontiguousarray(x), nan_mode=nan_mode)
    gpu, encoder, runs = caller.gpu, caller.gpu.create_command_encoder(), []
    for offset in offsets:
        inputs, outputs = placed(caller, op, op.input_desc, offset), placed(caller, op, op.output_desc, offset)
        results = [caller.buffer(b.size) for b in outputs]
        size = op.binding_properties.temporary_resource_size
        scratch = BufferBinding(caller.buffer(offset + size), offset, size) if size and temporary else None
        for (first, _), b in zip(op.input_spans, inputs):  # the caller's first pass writes the input
            source = caller.buffer(b.size, raw[first:first + b.size].tobytes())
            caller.copy(encoder, BufferBinding(source), b, b.size)
        op.record(encoder, op.binding_table(input=inputs, output=outputs, temporary=scratch))
        for b, result in zip(outputs, results):  # and the last reads the output
            caller.copy(encoder, b, BufferBinding(result), b.size)
        runs.append((outputs, results))
    gpu.queue.submit([encoder.finish()])
    for outputs, results in runs:
        out = np.zeros(op.output_desc.total_tensor_size_in_bytes, np.uint8)
        for (first, _), b, result in zip(op.output_spans, outputs, results):
            out[first:first + b.size] = caller.read(result)[:b.size]
            around = caller.read(b.buffer)
            assert (around[:b.offset] == GARBAGE).all() and (around[b.offset + ((b.size + 3) & ~3):] == GARBAGE).all()
        got = np.array(layout.view(op.output_desc, out))
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_array_equal(got.view(f"u{got.itemsize}"), want.view(f"u{want.itemsize}"))
    return op


# --- every kernel family, recorded between the caller's passes --------------------------

SMALL = Tuning(workgroup_size=32, loads_per_thread=1, target_workgroups=64, min_chunk_per_lane=1,
               min_chunk_per_lane_single=1, target_threads=512, min_chunk_thread=5, merge_workgroup_above=16,
               rows_max_bytes=0, race_max_chunks=0, merge_workgroup_below=0)
ROWS = Tuning(workgroup_size=32, rows_groups=2, rows_block_loads=4, loads_per_thread=4)
RACE = Tuning(workgroup_size=32, loads_per_thread=1, target_workgroups=16, min_chunk_per_lane=1,
              min_chunk_per_lane_single=1, rows_max_bytes=0)
PIECES = Tuning(workgroup_size=32, target_workgroups=8, min_chunk_per_lane=2, min_chunk_per_lane_single=2,
                target_threads=256, min_chunk_thread=8, merge_workgroup_above=16)
LIMITS = {"max_storage_binding": 4096, "max_buffer": 16384}

FAMILIES = [  # (name, tuning, smaller, type, shape, axes, layout, what the schedule must show)
    ("segments+merge", SMALL, None, DataType.FLOAT32, (6, 1000), (1,), "packed", "reduce_segments"),
    ("thread", SMALL, None, DataType.FLOAT16, (300, 7, 6), (0, 2), "permuted", "reduce_thread"),
    ("columns", SMALL, None, DataType.FLOAT32, (64, 16), (0,), "packed", "reduce_columns"),
    ("rows", ROWS, None, DataType.FLOAT32, (517, 5), (1,), "packed", "reduce_rows"),
    ("race", RACE, None, DataType.FLOAT32, (3, 4096), (1,), "packed", "race"),
    ("pieces-kept", PIECES, LIMITS, DataType.FLOAT32, (700, 12), (1,), "packed", "pieces"),
    ("pieces-merged", PIECES, LIMITS, DataType.FLOAT32, (3000,), (0,), "packed", "merges"),
    ("pieces-buffers", PIECES, LIMITS, DataType.FLOAT16, (2, 9000), (1,), "packed", "buffers"),
    ("segments-int", SMALL, None, DataType.INT8, (4, 1024), (1,), "padded", "reduce_segments"),
]


@pytest.fixture(scope="module")
def family_devices(gpu):
    """One dmlgpu device a tuning, all on the caller's one wgpu device."""
    return {}


def family_device(gpu, family_devices, tuning, smaller):
    key = (tuning, tuple(sorted((smaller or {}).items())))
    if key not in family_devices:
        family_devices[key] = dmlgpu.Device.from_wgpu(gpu, tuning=tuning, smaller=smaller)
    return family_devices[key]


def shows(op, what: str) -> bool:
    s, p = op.schedule, op.plan
    return {"race": p.race, "pieces": len(s.pieces) > 1 and not s.merges, "merges": s.merges > 0,
            "buffers": len(op.input_spans) > 1}.get(what, p.kernel == what)


def in_layout(x: np.ndarray, kind: str) -> np.ndarray:
    if kind == "permuted":
        return np.ascontiguousarray(x.transpose(2, 0, 1)).transpose(1, 2, 0)
    if kind == "padded":
        big = np.zeros([n + 2 for n in x.shape], x.dtype)
        big[tuple(slice(1, n + 1) for n in x.shape)] = x
        return big[tuple(slice(1, n + 1) for n in x.shape)]
    return x


def tie_values(data_type: DataType, shape, seed: int) -> np.ndarray:
    """Few values, so slices tie; NaN and infinities among a float's."""
    rng = np.random.default_rng(seed)
    pool = np.array([-2, 0, 1, 3, np.nan, np.inf] if data_type.is_float else [-7, 0, 3, 9], data_type.numpy)
    return rng.choice(pool, size=shape)


@pytest.mark.parametrize("family", FAMILIES, ids=[f[0] for f in FAMILIES])
def test_every_family_recorded_between_passes(gpu, caller, family_devices, family):
    """Each operator and both NaN modes on each family, at offset 0 and at an offset, between
    the caller's passes, against the oracle bit for bit."""
    name, tuning, smaller, data_type, shape, axes, kind, what = family
    dev = family_device(gpu, family_devices, tuning, smaller)
    x = in_layout(tie_values(data_type, shape, zlib.crc32(name.encode())), kind)
    desc_input = layout.describe(x)[0]
    align = dev.runner.capabilities.offset_alignment
    runs = [(ArgMaxOperatorDesc(desc_input, axes=axes), "ignore"),
            (ArgMinOperatorDesc(desc_input, axes=axes, axis_direction="DECREASING"), "propagate")]
    if data_type.is_float:
        runs.append((ActivationHardmax1OperatorDesc(desc_input, axes=axes), "ignore" if len(name) % 2 else "propagate"))
    for desc, nan_mode in runs:
        op = record_between(dev, caller, desc, x, offsets=(0, 3 * align), nan_mode=nan_mode if data_type.is_float else "ignore")
        assert shows(op, what), (name, op.plan.kernel)


def test_merges_take_a_temporary_and_racing_splits_none(gpu, family_devices):
    merged = family_device(gpu, family_devices, SMALL, None).compile(ArgMaxOperatorDesc(TensorDesc("FLOAT32", (6, 1000)), axes=[1]))
    assert merged.plan.merge_kernel and merged.binding_properties.temporary_resource_size == 6 * merged.plan.split * 16
    racing = family_device(gpu, family_devices, RACE, None).compile(ArgMaxOperatorDesc(TensorDesc("FLOAT32", (3, 4096)), axes=[1]))
    assert racing.plan.race and racing.binding_properties == dmlgpu.BindingProperties(0, 0)
    whole = dmlgpu.Device.from_wgpu(gpu).compile(ArgMaxOperatorDesc(TensorDesc("FLOAT32", (3, 40)), axes=[1]))
    assert whole.binding_properties.temporary_resource_size == 0


def test_a_device_with_no_optional_feature():
    """wgpu-py's default device, with none of the optional features: 64-bit keys as words."""
    default = wgpu.utils.get_default_device()
    dev = dmlgpu.Device.from_wgpu(default)
    assert dev.runner.features <= set(default.features)
    assert dev.runner.capabilities.shader_int64 == ("shader-int64" in default.features)
    x = tie_values(DataType.INT64, (5, 300), 3)
    x[1, 7] = 2**60 + 1
    record_between(dev, Caller(default), ArgMaxOperatorDesc(TensorDesc("INT64", x.shape), axes=[1]), x, offsets=(0, 256))
    t = dev.upload(x)
    np.testing.assert_array_equal(dmlgpu.argmax(t, 1).numpy(), oracle.argmax(x, 1))


# --- each rule of a binding at its boundary --------------------------------------------


@pytest.fixture(scope="module")
def dev(gpu):
    return dmlgpu.Device.from_wgpu(gpu)


def small_op(dev, rows: int = 2):
    """ARGMAX over rows of FLOAT32 whose input is ``rows * align`` bytes (offsets line up)."""
    align = dev.runner.capabilities.offset_alignment
    return dev.compile(ArgMaxOperatorDesc(TensorDesc("FLOAT32", (rows, align // (4 * rows) * rows)), axes=[1]))


def run_table(caller, op, table, x) -> np.ndarray:
    """Write ``x`` into the table's input, record, submit; the output as an array."""
    b = table.inputs[0]
    encoder = caller.gpu.create_command_encoder()
    source = caller.buffer(x.nbytes, x.tobytes())
    caller.copy(encoder, BufferBinding(source), b, x.nbytes)
    op.record(encoder, table)
    caller.gpu.queue.submit([encoder.finish()])
    out = table.outputs[0]
    raw = caller.read(out.buffer)[out.offset:out.offset + op.output_desc.total_tensor_size_in_bytes]
    return np.array(layout.view(op.output_desc, raw))


def test_offset_alignment_boundary(dev, caller):
    op = small_op(dev)
    align = dev.runner.capabilities.offset_alignment
    buffer, out = caller.buffer(4 * align), caller.buffer(4 * align)
    for offset in (align + 4, align - 4):
        with pytest.raises(DataError, match=rf"^input\.offset is {offset}, but it must be a multiple of the device's "
                                            rf"min_storage_buffer_offset_alignment \({align}\)$"):
            op.binding_table(input=BufferBinding(buffer, offset), output=out)
        with pytest.raises(DataError, match=rf"^output\.offset is {offset}, but it must be a multiple"):
            op.binding_table(input=buffer, output=BufferBinding(out, offset))
    x = np.random.default_rng(1).standard_normal(op.input_desc.sizes).astype(np.float32)
    table = op.binding_table(input=BufferBinding(buffer, align), output=BufferBinding(out, align))
    np.testing.assert_array_equal(run_table(caller, op, table, x), oracle.argmax(x, 1))


def test_size_boundary(dev, caller):
    op = small_op(dev)
    total, out_total = op.input_desc.total_tensor_size_in_bytes, op.output_desc.total_tensor_size_in_bytes
    buffer, out = caller.buffer(2 * total), caller.buffer(64)
    with pytest.raises(DataError, match=rf"^input\.size is {total - 1}, but it must be at least its tensor's "
                                        rf"total_tensor_size_in_bytes \({total}\)$"):
        op.binding_table(input=BufferBinding(buffer, 0, total - 1), output=out)
    with pytest.raises(DataError, match=rf"^output\.size is {out_total - 1}, but it must be at least"):
        op.binding_table(input=buffer, output=BufferBinding(out, 0, out_total - 1))
    with pytest.raises(DataError, match=rf"^input\.size is {2 * total + 4}, but its buffer holds only {2 * total}"):
        op.binding_table(input=BufferBinding(buffer, 0, 2 * total + 4), output=out)
    x = np.random.default_rng(2).standard_normal(op.input_desc.sizes).astype(np.float32)
    table = op.binding_table(input=BufferBinding(buffer, 0, total), output=BufferBinding(out, 0, out_total))
    np.testing.assert_array_equal(run_table(caller, op, table, x), oracle.argmax(x, 1))


def test_a_buffer_of_exactly_the_tensor_is_enough(dev, caller):
    """DirectML's rule: a bound buffer holds the tensor's total_tensor_size_in_bytes (60 here,
    not a whole number of 16-byte quads) and nothing more; 4 bytes fewer is refused, saying so."""
    op = dev.compile(ArgMaxOperatorDesc(TensorDesc("FLOAT32", (3, 5)), axes=[1]))
    x = np.array([[1, 5, 2, 5, 0], [7, 1, 1, 1, 7], [0, 0, 0, 0, 9]], np.float32)
    out = caller.buffer(12)
    with pytest.raises(DataError, match=r"^input holds 56 bytes from offset 0 \(the rest of its buffer\), but it "
                                        r"must be at least its tensor's total_tensor_size_in_bytes \(60\)$"):
        op.binding_table(input=caller.buffer(56), output=out)
    with pytest.raises(DataError, match=r"^output holds 8 bytes from offset 0 \(the rest of its buffer\), but it "
                                        r"must be at least its tensor's total_tensor_size_in_bytes \(12\)$"):
        op.binding_table(input=caller.buffer(60), output=caller.buffer(8))
    table = op.binding_table(input=caller.buffer(60), output=out)
    np.testing.assert_array_equal(run_table(caller, op, table, x), [[1], [0], [4]])


def test_a_buffer_without_storage_usage(dev, caller):
    op = small_op(dev)
    mapped = caller.gpu.create_buffer(size=1024, usage=U.MAP_READ | U.COPY_DST)
    with pytest.raises(DataError, match=r"^output\.buffer has usage COPY_DST\|MAP_READ, but a bound buffer needs "
                                        r"STORAGE usage"):
        op.binding_table(input=caller.buffer(1024), output=mapped)


def test_a_buffer_of_another_device(dev, caller, gpu):
    op = small_op(dev)
    other = gpu.adapter.request_device_sync()
    theirs = other.create_buffer(size=1024, usage=U.STORAGE)
    with pytest.raises(DataError, match=r"^input\.buffer belongs to another wgpu device than the operator's"):
        op.binding_table(input=theirs, output=caller.buffer(64))
    with pytest.raises(DataError, match=r"^encoder belongs to another wgpu device"):
        op.record(other.create_command_encoder(), op.binding_table(input=caller.buffer(1024), output=caller.buffer(64)))


def test_input_and_output_overlapping_and_adjacent(dev, caller):
    """In one buffer: overlapping is refused; adjacent works (a pass that reads and writes one
    buffer, through the shared layout)."""
    op = small_op(dev, rows=4)
    total = op.input_desc.total_tensor_size_in_bytes  # 2 offset alignments
    align = total // 2
    buffer = caller.buffer(4 * total)
    with pytest.raises(DataError, match=rf"^input \(bytes \[0, {total}\) of its buffer\) and output \(bytes "
                                        rf"\[{align}, {align + 16}\)\) overlap"):
        op.binding_table(input=BufferBinding(buffer, 0, total), output=BufferBinding(buffer, align))
    x = np.random.default_rng(3).standard_normal(op.input_desc.sizes).astype(np.float32)
    table = op.binding_table(input=BufferBinding(buffer, 0, total), output=BufferBinding(buffer, total, 16))
    np.testing.assert_array_equal(run_table(caller, op, table, x), oracle.argmax(x, 1))
    assert (caller.read(buffer)[total + 16:] == GARBAGE).all()


# FLOAT16 and INT8 rows of more than 16 elements: reduce_rows's loops stay loops (written out,
# their shaders are 3 to 5 times the text, a compile of seconds), the bytes ending as (3, 13)'s
# and (2, 15)'s: 14 modulo 16, inside the binding's last quad
@pytest.mark.parametrize("data_type, shapes", [(DataType.FLOAT32, [(1, 15), *((m, 3) for m in range(284, 292))]),
                                               (DataType.FLOAT16, [(3, 21)]), (DataType.INT8, [(2, 23)])],
                         ids=lambda v: getattr(v, "name", ""))
def test_input_and_output_in_one_buffer_bound_exactly(dev, caller, data_type, shapes):
    """Input and output at two offsets of one buffer, each bound to exactly its bytes (the input
    ending inside a quad, after one tile of reduce_rows's blocks or several): the passes read
    the input through the shared layout, bound once there (two writable bindings of it would
    overlap), and nothing of the buffer's but the output changes."""
    align = dev.runner.capabilities.offset_alignment
    for shape in shapes:
        x = few_values(data_type, shape, 11)
        for name, desc in ops_on(data_type, shape, [1]):
            op = dev.compile(desc)
            need, out_need = op.input_desc.total_tensor_size_in_bytes, op.output_desc.total_tensor_size_in_bytes
            at = -(-need // align) * align
            guard = winning_byte(name, data_type)
            buffer = caller.buffer(at + out_need + GUARD_BYTES, fill=guard)
            raw = np.full(need, guard, np.uint8)
            raw[:x.nbytes] = x.view(np.uint8).ravel()
            caller.gpu.queue.write_buffer(buffer, 0, raw)
            table = op.binding_table(input=BufferBinding(buffer, 0, need), output=BufferBinding(buffer, at, out_need))
            encoder = caller.gpu.create_command_encoder()
            op.record(encoder, table)
            caller.gpu.queue.submit([encoder.finish()])
            held = caller.read(buffer)
            got = np.array(layout.view(op.output_desc, held[at:at + out_need]))
            want = oracle.evaluate(desc, x)
            np.testing.assert_array_equal(got.view(f"u{got.itemsize}"), want.view(f"u{want.itemsize}"), err_msg=repr(desc))
            assert (held[:need] == raw).all()
            assert (held[need:at] == guard).all() and (held[at + out_need:] == guard).all()


def test_temporary_boundary(gpu, caller, family_devices):
    dev = family_device(gpu, family_devices, SMALL, None)
    op = dev.compile(ArgMaxOperatorDesc(TensorDesc("FLOAT32", (6, 1000)), axes=[1]))
    need = op.binding_properties.temporary_resource_size
    src, out = caller.buffer(24000), caller.buffer(need + 256)
    with pytest.raises(DataError, match=rf"^temporary is None, but this operator needs a temporary resource of "
                                        rf"{need} bytes \(binding_properties\.temporary_resource_size\)"):
        op.binding_table(input=src, output=out)
    with pytest.raises(DataError, match=rf"^temporary\.size is {need - 1}, but it must be at least "
                                        rf"binding_properties\.temporary_resource_size \({need}\)$"):
        op.binding_table(input=src, output=out, temporary=BufferBinding(caller.buffer(need), 0, need - 1))
    with pytest.raises(DataError, match=r"^output \(bytes \[0, 24\) of its buffer\) and temporary"):
        op.binding_table(input=src, output=BufferBinding(out, 0, 24), temporary=BufferBinding(out, 0, need))
    # the temporary in the output's buffer, right after it: the merge reads and writes one buffer
    align = dev.runner.capabilities.offset_alignment
    x = tie_values(DataType.FLOAT32, (6, 1000), 4)
    table = op.binding_table(input=src, output=BufferBinding(out, 0, 24), temporary=BufferBinding(out, align, need))
    np.testing.assert_array_equal(run_table(caller, op, table, x), oracle.argmax(x, 1))


def test_tables_refuse_what_is_not_theirs(dev, caller):
    op, other = small_op(dev), small_op(dev, rows=1)
    buffer, out = caller.buffer(1024), caller.buffer(64)
    with pytest.raises(TypeError, match=r"^input must be a dmlgpu\.BufferBinding, a wgpu\.GPUBuffer or a "
                                        r"dmlgpu\.Tensor, not ndarray"):
        op.binding_table(input=np.zeros(4))
    with pytest.raises(DataError, match=r"^the binding table has no output bound \(bind_outputs\)"):
        op.record(caller.gpu.create_command_encoder(), op.binding_table(input=buffer))
    with pytest.raises(DataError, match=r"^table was made for another operator"):
        op.record(caller.gpu.create_command_encoder(), other.binding_table(input=buffer, output=out))
    with pytest.raises(TypeError, match=r"^encoder must be a wgpu\.GPUCommandEncoder"):
        op.record(caller.gpu, op.binding_table(input=buffer, output=out))
    with pytest.raises(DataError, match=r"^bind_inputs takes one entry for the operator's one input"):
        op.binding_table().bind_inputs([[BufferBinding(buffer)], None])
    with pytest.raises(DataError, match=r"^BufferBinding\.offset is -4, but it must be >= 0"):
        BufferBinding(buffer, -4)
    table = dmlgpu.BindingTable(op)  # DirectML's way: bind one by one
    table.bind_inputs([BufferBinding(buffer)])
    table.bind_outputs([out])
    table.bind_temporary_resource(None)
    table.bind_persistent_resource(None)
    x = np.random.default_rng(5).standard_normal(op.input_desc.sizes).astype(np.float32)
    np.testing.assert_array_equal(run_table(caller, op, table, x), oracle.argmax(x, 1))


def test_from_wgpu_says_what_the_device_lacks(gpu):
    with pytest.raises(TypeError, match=r"^gpu_device must be a wgpu\.GPUDevice"):
        dmlgpu.Device.from_wgpu(gpu.adapter)
    with pytest.raises(AdapterError, match=r"max-compute-workgroup-size-x is \d+, but the planner's "
                                           r"Tuning\.workgroup_size \(at least 4096\).*max-compute-invocations"):
        dmlgpu.Device.from_wgpu(gpu, tuning=Tuning(workgroup_size=4096))
    if "shader-int64" not in wgpu.utils.get_default_device().features:
        with pytest.raises(AdapterError, match=r"int64 is True, but the wgpu device .*lacks shader-int64"):
            dmlgpu.Device.from_wgpu(wgpu.utils.get_default_device(), int64=True)


# --- tensors over the caller's buffers, and the caller's passes over ours -------------------


def test_wrap_at_an_offset_runs_everywhere(dev, caller):
    """A tensor over the caller's buffer at an offset: op.run, dmlgpu.argmax, dmlgpu.numpy,
    numpy() and write; HARDMAX into a wrapped output clears only the tensor's bytes."""
    align = dev.runner.capabilities.offset_alignment
    x = tie_values(DataType.FLOAT32, (7, 33), 6)
    buffer = caller.buffer(3 * align + x.nbytes + 64, None)
    caller.gpu.queue.write_buffer(buffer, 3 * align, x.tobytes())
    t = dev.wrap(buffer, TensorDesc("FLOAT32", x.shape), offset=3 * align)
    np.testing.assert_array_equal(t.numpy(), x)
    np.testing.assert_array_equal(dmlgpu.argmax(t, 1).numpy(), oracle.argmax(x, 1))
    import dmlgpu.numpy as dnp
    np.testing.assert_array_equal(np.asarray(dnp.argmin(t, axis=0)), np.argmin(x, axis=0))
    y = -x
    t.write(layout.bytes_for(t.desc, y))
    np.testing.assert_array_equal(t.numpy(), y)
    hard = dev.compile(ActivationHardmax1OperatorDesc(t.desc, axes=[1]))
    out_buffer = caller.buffer(2 * align + x.nbytes + 64)
    out = dev.wrap(BufferBinding(out_buffer, 2 * align, x.nbytes), hard.output_desc)
    hard.run(t, out)
    np.testing.assert_array_equal(out.numpy(), oracle.hardmax(y, 1))
    raw = caller.read(out_buffer)
    assert (raw[:2 * align] == GARBAGE).all() and (raw[2 * align + x.nbytes:] == GARBAGE).all()
    with pytest.raises(DataError, match=r"^buffer\.offset is 4, but it must be a multiple"):
        dev.wrap(buffer, t.desc, offset=4)
    with pytest.raises(DataError, match=r"^input \(bytes .*\) and output \(bytes .*\) overlap"):
        hard.run(t, dev.wrap(buffer, hard.output_desc, offset=3 * align))
    t.release()
    assert caller.read(buffer).size  # the caller's buffer lives on


def test_wrap_beyond_one_buffer(gpu, caller, family_devices):
    """A tensor held in several buffers: a list of bindings, one a buffer, each at an offset."""
    dev = family_device(gpu, family_devices, PIECES, LIMITS)
    x = tie_values(DataType.FLOAT32, (9000, 2), 10)
    desc = TensorDesc("FLOAT32", x.shape)
    op = dev.compile(ArgMaxOperatorDesc(desc, axes=[0]))
    bindings = placed(caller, op, op.input_desc, 2 * dev.runner.capabilities.offset_alignment)
    assert len(bindings) > 1
    t = dev.wrap(bindings, desc)
    t.write(x)
    np.testing.assert_array_equal(t.numpy(), x)
    np.testing.assert_array_equal(op.run(t).numpy(), oracle.argmax(x, 0))
    np.testing.assert_array_equal(dmlgpu.argmin(t, 1).numpy(), oracle.argmin(x, 1))
    assert t.bindings == bindings
    with pytest.raises(DataError, match=rf"^buffer is 1 buffer bindings, but a tensor of FLOAT32 \[9000, 2\] is held "
                                        rf"in {len(bindings)} buffers on this device"):
        dev.wrap(bindings[:1], desc)


def test_tensor_bindings_feed_the_callers_passes(dev, caller):
    """An uploaded tensor and an operator's output, read by the caller's own pass."""
    x = np.random.default_rng(7).standard_normal((5, 64)).astype(np.float32)
    t = dev.upload(x)
    result = dev.compile(ArgMaxOperatorDesc(t.desc, axes=[1])).run(t)  # pending: bindings submit it
    encoder = caller.gpu.create_command_encoder()
    copies = [caller.buffer(x.nbytes), caller.buffer(20)]
    for tensor, copy in zip((t, result), copies):
        (b,) = tensor.bindings
        assert b.size == tensor.desc.total_tensor_size_in_bytes
        caller.copy(encoder, b, BufferBinding(copy), b.size)
    caller.gpu.queue.submit([encoder.finish()])
    np.testing.assert_array_equal(caller.read(copies[0]).view(np.float32), x.ravel())
    np.testing.assert_array_equal(caller.read(copies[1]).view(np.uint32), oracle.argmax(x, 1).ravel())


# --- bindings of exactly the tensor's bytes (issue 35) -----------------------------------
#
# A binding holds the tensor's total_tensor_size_in_bytes, DirectML's DMLCalcBufferTensorSize:
# its elements' bytes rounded up to 4, which ends inside a 16-byte quad three times in four for
# FLOAT32. Around each binding the caller's buffer holds a guard: around an input (and in its
# binding's bytes past the last element), bytes that would win were they read as elements; around
# an output, GARBAGE; both are checked untouched.

GUARD_BYTES = 48
UNSIGNED = (DataType.UINT8, DataType.UINT16, DataType.UINT32, DataType.UINT64)
EVERY_TYPE = (DataType.FLOAT32, DataType.FLOAT16, DataType.UINT32, DataType.INT32, DataType.UINT16,
              DataType.INT16, DataType.UINT8, DataType.INT8, DataType.UINT64, DataType.INT64, DataType.FLOAT64)


def winning_byte(op: str, data_type: DataType) -> int:
    """A byte whose repetition, read as elements, beats every value of ``few_values``: ARGMAX's
    and HARDMAX's largest, ARGMIN's smallest."""
    if op == "argmin":
        return 0x00 if data_type in UNSIGNED else 0xFB
    return 0x7B


def few_values(data_type: DataType, shape, seed: int) -> np.ndarray:
    """Few values, so that slices tie (NaN among a float's), each beaten by ``winning_byte``'s."""
    pool = [-2, -0.0, 1, 3, np.nan] if data_type.is_float else [1, 2, 5, 9] if data_type in UNSIGNED else [-3, 0, 3, 9]
    return np.random.default_rng(seed).choice(np.array(pool, data_type.numpy), size=shape)


def bound_bytes(desc, spans) -> int:
    """The bytes from a tensor's first to the end of its last binding (each ends in a whole word)."""
    return max(first + n for (first, _), n in zip(spans, tensor_needs(desc, spans)))


def record_exact(encoder, caller, op, x: np.ndarray, offset: int, guard: int) -> tuple:
    """``op`` on ``x`` recorded into bindings of exactly its tensors' bytes (one a buffer of
    ``pieces.buffer_spans``) at ``offset`` of the caller's buffers, between the caller's pass
    that writes the input and the one that reads the output buffers whole (the guards with the
    results); what ``check_exact`` checks."""
    raw = np.full(bound_bytes(op.input_desc, op.input_spans), guard, np.uint8)  # past the last element too
    data = np.frombuffer(memoryview(layout.bytes_for(op.input_desc, x)).cast("B"), np.uint8)
    raw[:data.size] = data

    def exact(desc, spans, fill: int) -> list:
        needs = tensor_needs(desc, spans)
        return [BufferBinding(caller.buffer(offset + n + GUARD_BYTES, fill=fill), offset, n) for n in needs]

    inputs, outputs = exact(op.input_desc, op.input_spans, guard), exact(op.output_desc, op.output_spans, GARBAGE)
    copies = [caller.buffer(b.buffer.size) for b in outputs]
    size = op.binding_properties.temporary_resource_size
    for (first, _), b in zip(op.input_spans, inputs):
        caller.copy(encoder, BufferBinding(caller.buffer(b.size, raw[first:first + b.size].tobytes())), b, b.size)
    op.record(encoder, op.binding_table(input=inputs, output=outputs, temporary=caller.buffer(size) if size else None))
    for b, copy in zip(outputs, copies):
        caller.copy(encoder, BufferBinding(b.buffer), BufferBinding(copy), copy.size)
    return op, x, outputs, copies


def check_exact(caller, recorded: tuple) -> None:
    """The answer bit for bit, and the guard around every output binding untouched."""
    op, x, outputs, copies = recorded
    out = np.zeros(bound_bytes(op.output_desc, op.output_spans), np.uint8)
    for (first, _), b, copy in zip(op.output_spans, outputs, copies):
        held = caller.read(copy)
        out[first:first + b.size] = held[b.offset:b.offset + b.size]
        assert (held[:b.offset] == GARBAGE).all() and (held[b.offset + b.size:] == GARBAGE).all(), repr(op.desc)
    got = np.array(layout.view(op.output_desc, out[:op.output_desc.total_tensor_size_in_bytes]))
    want = oracle.evaluate(op.desc, x)
    np.testing.assert_array_equal(got.view(f"u{got.itemsize}"), want.view(f"u{want.itemsize}"), err_msg=repr(op.desc))


def tail_cases(data_type: DataType, align: int) -> list[tuple]:
    """(shape, axis, rows) whose bytes end at every residue modulo 16 and modulo the offset
    alignment: one row (the segments kernel reading quads, its ragged tail in a quad cut by the
    binding's end; read in words below 16 bytes), and rows of 3 (``rows`` true: reduce_rows,
    whose last block may end inside a quad or past the binding), fewer than a workgroup's tile
    and several tiles."""
    size = data_type.size
    span = max(16, align) // size  # elements of every residue of bytes, past a quad's
    return [((1, n), 1, False) for n in [*range(1, 16 // size), *range(span, 2 * span)]] + \
        [((m, 3), 1, True) for m in [*range(1, max(16, align) // 4 + 2), *range(300, 308)]]


def ops_on(data_type: DataType, shape, axes) -> list:
    """ARGMAX with the last of equal extremes (a wrong tail element shows), ARGMIN with the
    first into INT64 indices, and HARDMAX on a float."""
    desc = TensorDesc(data_type.name, shape)
    indices64 = TensorDesc("INT64", [1 if a in axes else n for a, n in enumerate(shape)])
    ops = [("argmax", ArgMaxOperatorDesc(desc, axes=axes, axis_direction="DECREASING")),
           ("argmin", ArgMinOperatorDesc(desc, indices64, axes=axes))]
    if data_type.is_float:
        ops.append(("argmax", ActivationHardmax1OperatorDesc(desc, axes=axes)))
    return ops


@pytest.mark.parametrize("data_type", EVERY_TYPE, ids=lambda t: t.name)
def test_exact_bindings_of_every_size_and_type(dev, caller, data_type):
    """Every operator on every type, the tensors' bytes ending at every residue modulo 16 and
    modulo the offset alignment, at offsets of 0 to 2 alignments, each bound to exactly its
    bytes, recorded between the caller's passes in one submit. One operator of a type runs on
    the rows of 3, the others on the one row (an operator a shader, each a compile), in turn
    over the types: each operator meets both kernels, and signed and unsigned types on each."""
    align = dev.runner.capabilities.offset_alignment
    encoder, recorded, kernels = caller.gpu.create_command_encoder(), [], set()
    t = EVERY_TYPE.index(data_type)
    rows_op = (2 - t) % 3 if data_type.is_float else (t + t // 2) % 2  # the operator of the rows of 3
    for i, (shape, axis, rows) in enumerate(tail_cases(data_type, align)):
        x = few_values(data_type, shape, i)
        for k, (name, desc) in enumerate(ops_on(data_type, shape, [axis])):
            if (k == rows_op) != rows:
                continue
            op = dev.compile(desc)
            kernels.add(op.plan.kernel)
            recorded.append(record_exact(encoder, caller, op, x, align * (i % 3), winning_byte(name, data_type)))
    caller.gpu.queue.submit([encoder.finish()])
    for r in recorded:
        check_exact(caller, r)
    assert kernels >= ({"reduce_segments"} if data_type.size == 8 else {"reduce_segments", "reduce_rows"})


EXACT_FAMILIES = [  # (tuning, smaller, type, shape, axes, what the schedule must show)
    (SMALL, None, DataType.FLOAT32, (1, 4001), (1,), "reduce_segments"),  # split, merged through the temporary
    (RACE, None, DataType.FLOAT16, (1, 4099), (1,), "race"),
    (SMALL, None, DataType.INT8, (1027, 5), (0,), "reduce_thread"),
    (ROWS, None, DataType.FLOAT32, (517, 3), (1,), "reduce_rows"),  # tiles of 32 blocks: four whole, one cut
    (ROWS, None, DataType.INT8, (1001, 3), (1,), "reduce_rows"),
    (SMALL, None, DataType.UINT8, (53, 32), (0,), "reduce_columns"),
    (PIECES, LIMITS, DataType.FLOAT32, (1, 3001), (1,), "merges"),
    (PIECES, LIMITS, DataType.FLOAT16, (2, 9001), (1,), "buffers"),
]


@pytest.mark.parametrize("family", EXACT_FAMILIES, ids=lambda f: f"{f[2].name}-{f[5]}")
def test_exact_bindings_of_every_family(gpu, caller, family_devices, family):
    """Splits, races, other kernels, pieces and tensors in several buffers on exact bindings."""
    tuning, smaller, data_type, shape, axes, what = family
    dev = family_device(gpu, family_devices, tuning, smaller)
    align = dev.runner.capabilities.offset_alignment
    x = few_values(data_type, shape, len(shape))
    encoder, recorded = caller.gpu.create_command_encoder(), []
    for k, (name, op_desc) in enumerate(ops_on(data_type, shape, axes)):
        op = dev.compile(op_desc)
        assert shows(op, what), (what, op.plan.kernel)
        recorded.append(record_exact(encoder, caller, op, x, align * k, winning_byte(name, data_type)))
    caller.gpu.queue.submit([encoder.finish()])
    for r in recorded:
        check_exact(caller, r)


@pytest.fixture(params=["native", "public"])
def path_device(request, gpu, monkeypatch):
    """dmlgpu on the caller's device, on each of the runner's paths (an install built without
    the hot loop, CI's no-hot wheel, has only the public one: asking for native gets it)."""
    from dmlgpu.runtime import hot

    monkeypatch.setenv("DMLGPU_RUNNER", request.param)
    device = dmlgpu.Device.from_wgpu(gpu)
    built = hot.library_path()[0] is not None
    assert device.runner.path.name == (request.param if built else "public")
    yield device
    device.close()


@pytest.mark.parametrize("data_type", [DataType.FLOAT32, DataType.FLOAT16, DataType.INT8, DataType.INT64],
                         ids=lambda t: t.name)
def test_wrapped_exact_buffers_run_on_both_paths(path_device, caller, data_type):
    """``Device.wrap`` of a buffer holding exactly a tensor, as a new user writes it: run, the
    NumPy-level call, ``numpy()``, ``write``; outputs wrapped in exact bindings too (HARDMAX's
    FLOAT16 halves set in 32-bit words), the guard past every binding untouched."""
    dev, gpu = path_device, caller.gpu
    for n in range(16 // data_type.size * 40, 16 // data_type.size * 41):  # every residue of 16 bytes
        x = few_values(data_type, (1, n), n)
        desc = TensorDesc(data_type.name, x.shape)
        need = desc.total_tensor_size_in_bytes
        own = gpu.create_buffer_with_data(data=np.pad(x.ravel().view(np.uint8), (0, need - x.nbytes)),
                                          usage=U.STORAGE | U.COPY_SRC | U.COPY_DST)
        assert own.size == need
        t = dev.wrap(own, desc)
        np.testing.assert_array_equal(dmlgpu.argmax(t, 1, axis_direction="decreasing", device=dev).numpy(),
                                      oracle.argmax(x, 1, axis_direction="decreasing"))
        guarded = caller.buffer(need + GUARD_BYTES, fill=winning_byte("argmin", data_type))
        w = dev.wrap(guarded, desc, size=need)
        w.write(x)
        np.testing.assert_array_equal(w.numpy(), x)
        op = dev.compile(ArgMinOperatorDesc(desc, axes=[1]))
        out_buffer = caller.buffer(op.output_desc.total_tensor_size_in_bytes + GUARD_BYTES)
        out = dev.wrap(out_buffer, op.output_desc, size=op.output_desc.total_tensor_size_in_bytes)
        np.testing.assert_array_equal(op.run(w, out).numpy(), oracle.argmin(x, 1))
        assert (caller.read(guarded)[need:] == winning_byte("argmin", data_type)).all()
        assert (caller.read(out_buffer)[op.output_desc.total_tensor_size_in_bytes:] == GARBAGE).all()
        if data_type.is_float:
            hard = dev.compile(ActivationHardmax1OperatorDesc(desc, axes=[1]))
            hard_buffer = caller.buffer(need + GUARD_BYTES)
            hard.run(t, dev.wrap(hard_buffer, desc, size=need))
            dev.flush()  # submitted: the caller reads the buffer itself
            held = caller.read(hard_buffer)
            np.testing.assert_array_equal(held[:x.nbytes].view(x.dtype).reshape(x.shape), oracle.hardmax(x, 1))
            assert (held[need:] == GARBAGE).all()


# --- nothing of the caller's destroyed or leaked ----------------------------------------


def counts() -> dict:
    gc.collect()
    return dict(wgpu._classes.object_tracker.counts)


def test_many_record_and_submit_cycles_hold_nothing_more(dev, caller):
    """Recording again and again on the same buffers makes no bind group, buffer or pipeline
    after the first, and dmlgpu holds no more memory."""
    op = small_op(dev)
    x = np.random.default_rng(8).standard_normal(op.input_desc.sizes).astype(np.float32)
    buffer, out = caller.buffer(x.nbytes, x.tobytes()), caller.buffer(64)
    readback = caller.gpu.create_buffer(size=8, usage=U.MAP_READ | U.COPY_DST)
    table = op.binding_table(input=buffer, output=out)

    def cycle() -> np.ndarray:
        encoder = caller.gpu.create_command_encoder()
        op.record(encoder, table)
        encoder.copy_buffer_to_buffer(out, 0, readback, 0, 8)
        caller.gpu.queue.submit([encoder.finish()])
        readback.map_sync(wgpu.MapMode.READ)
        got = np.frombuffer(readback.read_mapped(), np.uint32).copy()
        readback.unmap()
        return got

    cycle()
    before, held = counts(), dev.runner.memory.held_bytes
    for _ in range(300):
        got = cycle()
    after = counts()
    np.testing.assert_array_equal(got, oracle.argmax(x, 1).ravel())
    assert dev.runner.memory.held_bytes == held
    assert {k: v for k, v in after.items() if v > before.get(k, 0)} == {}


def test_close_leaves_the_callers_device_working(gpu, caller):
    before = counts()
    own = dmlgpu.Device.from_wgpu(gpu, tuning=SMALL)
    op = own.compile(ArgMaxOperatorDesc(TensorDesc("FLOAT32", (6, 1000)), axes=[1]))
    x = tie_values(DataType.FLOAT32, (6, 1000), 9)
    np.testing.assert_array_equal(op.run(own.upload(x)).numpy(), oracle.argmax(x, 1))
    buffer = caller.buffer(x.nbytes, x.tobytes())
    t = own.wrap(buffer, op.input_desc)
    np.testing.assert_array_equal(op(x), oracle.argmax(x, 1))
    assert own.runner.memory.held_bytes > 0
    own.close()
    with pytest.raises(dmlgpu.DeviceLostError):
        t.numpy()
    del own, op, t
    # the caller's device works on: a buffer, a pass of theirs, read back; and their buffer is whole
    copy = caller.buffer(x.nbytes)
    encoder = gpu.create_command_encoder()
    caller.copy(encoder, BufferBinding(buffer), BufferBinding(copy), x.nbytes)
    gpu.queue.submit([encoder.finish()])
    np.testing.assert_array_equal(caller.read(copy).view(np.float32), x.ravel())
    after = counts()
    grown = {k: v - before.get(k, 0) for k, v in after.items() if v > before.get(k, 0)}
    assert not {k for k in grown if k in ("GPUBuffer", "GPUComputePipeline", "GPUBindGroup")} - {"GPUBuffer"}
    assert grown.get("GPUBuffer", 0) <= 2  # the caller's two buffers of this test


def test_the_example_runs():
    """examples/record_between_passes.py, as CI runs it."""
    done = subprocess.run([sys.executable, str(ROOT / "examples" / "record_between_passes.py")],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "matches NumPy" in done.stdout
