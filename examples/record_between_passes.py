"""dmlgpu's ARGMAX recorded between two passes of your own, in one encoder and one submit.

You own the wgpu device (wgpu-py's shared default device), the buffers and the command
encoder; dmlgpu is a guest on them, as DirectML is on an application's D3D12 device:

1. your pass writes logits into your buffer, from byte 256 on (a header before them);
2. dmlgpu's ARGMAX, compiled on your device, is recorded after it, reading the logits where
   they are and writing the token ids into another buffer of yours;
3. your next pass reads the ids: it picks each row's logit at its id;

then one submit, one read-back, and the answer checked against NumPy.

    python examples/record_between_passes.py
"""

import numpy as np
import wgpu
import wgpu.utils

import dmlgpu

ROWS, VOCAB = 8, 50_000
OFFSET = 256  # where the logits start in their buffer: a multiple of any device's offset alignment
U = wgpu.BufferUsage

# Pass 1: logits[r, v] in [0, 1) from an integer hash of the element's index
WRITE_LOGITS = f"""
@group(0) @binding(0) var<storage, read_write> logits: array<f32>;
@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) id: vec3<u32>) {{
    let i = id.x + id.y * 256u * 1024u;
    if (i >= {ROWS * VOCAB}u) {{ return; }}
    var h = i * 2654435761u;
    h = (h ^ (h >> 16u)) * 2246822519u;
    h = h ^ (h >> 13u);
    logits[i] = f32(h >> 8u) * (1.0 / 16777216.0);  // exact: a 24-bit integer over 2^24
}}
"""

# Pass 3: each row's logit at the id dmlgpu found
PICK = f"""
@group(0) @binding(0) var<storage, read> logits: array<f32>;
@group(0) @binding(1) var<storage, read> ids: array<u32>;
@group(0) @binding(2) var<storage, read_write> picked: array<f32>;
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) id: vec3<u32>) {{
    if (id.x < {ROWS}u) {{ picked[id.x] = logits[id.x * {VOCAB}u + ids[id.x]]; }}
}}
"""


def numpy_logits() -> np.ndarray:
    """What pass 1 writes, computed the same way on the host."""
    i = np.arange(ROWS * VOCAB, dtype=np.uint32)
    h = i * np.uint32(2654435761)
    h = (h ^ (h >> np.uint32(16))) * np.uint32(2246822519)
    h = h ^ (h >> np.uint32(13))
    return ((h >> np.uint32(8)).astype(np.float32) * np.float32(1 / 16777216)).reshape(ROWS, VOCAB)


def your_pass(gpu, encoder, wgsl: str, bindings: list, groups: tuple) -> None:
    """A compute pass of yours: its pipeline (auto layout) and its bind group."""
    pipeline = gpu.create_compute_pipeline(layout="auto", compute={"module": gpu.create_shader_module(code=wgsl),
                                                                   "entry_point": "main"})
    group = gpu.create_bind_group(layout=pipeline.get_bind_group_layout(0), entries=[
        {"binding": i, "resource": {"buffer": b.buffer, "offset": b.offset, "size": b.size}}
        for i, b in enumerate(bindings)])
    compute = encoder.begin_compute_pass()
    compute.set_pipeline(pipeline)
    compute.set_bind_group(0, group)
    compute.dispatch_workgroups(*groups)
    compute.end()


def main() -> int:
    gpu = wgpu.utils.get_default_device()  # yours, shared with any library that uses wgpu-py's default

    # dmlgpu on your device: an operator compiled once, and what it needs bound
    device = dmlgpu.Device.from_wgpu(gpu)
    op = device.compile(dmlgpu.ArgMaxOperatorDesc(dmlgpu.TensorDesc("FLOAT32", [ROWS, VOCAB]), axes=[1]))
    props = op.binding_properties  # temporary_resource_size: the scratch of a split's partial pairs

    # your buffers: the logits after a header, the ids, the picked logits, a read-back
    nbytes = op.input_desc.total_tensor_size_in_bytes
    logits = gpu.create_buffer(size=OFFSET + nbytes, usage=U.STORAGE)
    ids = gpu.create_buffer(size=op.output_desc.total_tensor_size_in_bytes, usage=U.STORAGE | U.COPY_SRC)
    picked = gpu.create_buffer(size=4 * ROWS, usage=U.STORAGE | U.COPY_SRC)
    readback = gpu.create_buffer(size=8 * ROWS, usage=U.MAP_READ | U.COPY_DST)
    temporary = None
    if props.temporary_resource_size:
        temporary = gpu.create_buffer(size=props.temporary_resource_size, usage=U.STORAGE)

    # DirectML's binding table: your buffers, with offsets and sizes (DML_BUFFER_BINDING)
    logits_binding = dmlgpu.BufferBinding(logits, OFFSET, nbytes)
    ids_binding = dmlgpu.BufferBinding(ids, 0, ids.size)
    table = op.binding_table(input=logits_binding, output=ids_binding, temporary=temporary)

    # one encoder: your pass, dmlgpu's dispatch, your pass; then one submit
    encoder = gpu.create_command_encoder()
    groups = -(-ROWS * VOCAB // 256)
    your_pass(gpu, encoder, WRITE_LOGITS, [logits_binding], (min(groups, 1024), -(-groups // 1024), 1))
    op.record(encoder, table)  # IDMLCommandRecorder::RecordDispatch: nothing submitted
    your_pass(gpu, encoder, PICK, [logits_binding, ids_binding, dmlgpu.BufferBinding(picked, 0, picked.size)],
              (1, 1, 1))
    encoder.copy_buffer_to_buffer(ids, 0, readback, 0, 4 * ROWS)
    encoder.copy_buffer_to_buffer(picked, 0, readback, 4 * ROWS, 4 * ROWS)
    gpu.queue.submit([encoder.finish()])

    readback.map_sync(wgpu.MapMode.READ)
    raw = np.frombuffer(readback.read_mapped(), np.uint8).copy()
    readback.unmap()
    got_ids, got_picked = raw[:4 * ROWS].view(np.uint32), raw[4 * ROWS:].view(np.float32)

    want = numpy_logits()
    ok = np.array_equal(got_ids, np.argmax(want, axis=1)) and np.array_equal(got_picked, want.max(axis=1))
    print(f"argmax of {ROWS} rows of {VOCAB} logits on {device.name}, recorded between two passes of yours in "
          f"one submit (temporary resource: {props.temporary_resource_size} bytes): "
          f"{'matches NumPy' if ok else 'DIFFERS from NumPy'}")
    print(f"ids {got_ids.tolist()}")
    device.close()  # dmlgpu's own buffers and pipelines go; your device and buffers stay
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
