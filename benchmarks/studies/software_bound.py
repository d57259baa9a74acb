"""What bounds an argmax on a software adapter (lavapipe): ours beside np.argmax and beside bare
kernels that only read the same bytes, in one process, interleaved.

    python benchmarks/studies/software_bound.py [--rows 4096] [--cols 16384] [--rounds 5]

FLOAT32 (rows, cols) over axis 1 (issue 33's case: (4096, 16384), 256 MiB). Timed, wall clock,
each round in turn: ``np.argmax``; dmlgpu with NumPy in (``op(x)``) and on a resident input
(``op.run(t).numpy()``), on the adapter's default tuning; and three kernels with no key work at
all, each a thread a row folding the row's words with ``max`` (so the answer is not an argmax):
loads of ``vec4<u32>`` (16 bytes as four 32-bit components), of ``vec2<u64>`` (the same bytes
as two 64-bit components: dmlgpu's ``wide_loads``), and ``textureLoad`` of an ``rgba32uint``
texture holding the same bytes (copied in from the buffer first, the copy timed apart). On a
Mesa older than 23, lavapipe loads each component of each lane of a storage buffer on its own,
and only texture fetches use the CPU's gathers: the fastest of these kernels bounds what any
kernel reading that buffer can do on this adapter.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import wgpu

import dmlgpu
from dmlgpu import ArgMaxOperatorDesc, TensorDesc

_HEAD = """
@group(0) @binding(1) var<storage, read_write> out: array<u32>;
const ROW_QUADS: u32 = {quads}u;
const ROWS: u32 = {rows}u;
"""
_KERNELS = {
    "read vec4<u32>": ("@group(0) @binding(0) var<storage, read> src: array<vec4<u32>>;",
                       "let q = src[base + i];"),
    "read vec2<u64>": ("@group(0) @binding(0) var<storage, read> src: array<vec2<u64>>;",
                       "let h = src[base + i]; let q = vec4<u32>(u32(h.x), u32(h.x >> 32u), u32(h.y), u32(h.y >> 32u));"),
    "read texture": ("@group(0) @binding(0) var src: texture_2d<u32>;\nconst WIDTH: u32 = {width}u;",
                     "let t = base + i; let q = textureLoad(src, vec2<u32>(t % WIDTH, t / WIDTH), 0);"),
}
_BODY = """
@compute @workgroup_size(8)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {{
    let row = gid.x;
    if (row >= ROWS) {{ return; }}
    let base = row * ROW_QUADS;
    var m = vec4<u32>(0u);
    for (var i = 0u; i < ROW_QUADS; i++) {{
        {load}
        m = max(m, q);
    }}
    out[row] = max(max(m.x, m.y), max(m.z, m.w));
}}
"""


class Bare:
    """The read-only kernels over a resident tensor's buffer, in windows of at most one binding."""

    def __init__(self, device: dmlgpu.Device, tensor, rows: int, cols: int):
        gpu = device.wgpu_device
        (self.buffer,) = tensor._buffers
        self.gpu = gpu
        binding = device.runner.capabilities.max_storage_binding
        rows_a_window = max(1, min(rows, binding // (cols * 4)))
        self.windows = [(r, min(rows_a_window, rows - r)) for r in range(0, rows, rows_a_window)]
        self.out = gpu.create_buffer(size=4 * rows, usage=wgpu.BufferUsage.STORAGE | wgpu.BufferUsage.COPY_SRC)
        quads = cols // 4
        width = 2048
        self.texture_rows = (rows * quads + width - 1) // width
        self.texture = gpu.create_texture(size=(width, self.texture_rows, 1), format=wgpu.TextureFormat.rgba32uint,
                                          usage=wgpu.TextureUsage.TEXTURE_BINDING | wgpu.TextureUsage.COPY_DST)
        self.width, self.rows, self.cols = width, rows, cols
        self.runs = {}
        for name, (decl, load) in _KERNELS.items():
            code = _HEAD.format(quads=quads, rows=rows) + decl.format(width=width) + _BODY.format(load=load)
            pipeline = gpu.create_compute_pipeline(layout="auto", compute={
                "module": gpu.create_shader_module(code=code), "entry_point": "main"})
            groups = []
            for first, count in ([(0, rows)] if "texture" in name else self.windows):
                source = ({"buffer": self.buffer, "offset": first * cols * 4, "size": count * cols * 4}
                          if "texture" not in name else self.texture.create_view())
                out = {"buffer": self.out, "offset": first * 4, "size": count * 4}
                groups.append((gpu.create_bind_group(layout=pipeline.get_bind_group_layout(0), entries=[
                    {"binding": 0, "resource": source}, {"binding": 1, "resource": out}]), count))
            self.runs[name] = (pipeline, groups)

    def _wait(self):
        self.gpu.queue.read_buffer(self.out, 0, 4)

    def copy_to_texture(self) -> None:
        encoder = self.gpu.create_command_encoder()
        full = self.rows * self.cols // 4 // self.width
        encoder.copy_buffer_to_texture({"buffer": self.buffer, "offset": 0, "bytes_per_row": self.width * 16,
                                        "rows_per_image": full}, {"texture": self.texture}, (self.width, full, 1))
        self.gpu.queue.submit([encoder.finish()])
        self._wait()

    def read(self, name: str) -> None:
        pipeline, groups = self.runs[name]
        encoder = self.gpu.create_command_encoder()
        for group, count in groups:
            compute = encoder.begin_compute_pass()
            compute.set_pipeline(pipeline)
            compute.set_bind_group(0, group)
            compute.dispatch_workgroups((count + 7) // 8)
            compute.end()
        self.gpu.queue.submit([encoder.finish()])
        self._wait()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=4096)
    parser.add_argument("--cols", type=int, default=16384)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    device = dmlgpu.Device()
    x = np.random.default_rng(0).random((args.rows, args.cols), dtype=np.float32)
    op = device.compile(ArgMaxOperatorDesc(TensorDesc("FLOAT32", list(x.shape)), axes=[1]))
    resident = device.upload(x)
    bare = Bare(device, resident, args.rows, args.cols)
    want = np.argmax(x, 1)
    assert np.array_equal(op(x).ravel(), want) and np.array_equal(op.run(resident).numpy().ravel(), want)
    timed = {
        "np.argmax": lambda: np.argmax(x, 1),
        "dmlgpu, NumPy in": lambda: op(x),
        "dmlgpu, resident": lambda: op.run(resident).numpy(),
        "copy buffer to texture": bare.copy_to_texture,
        **{name: (lambda n=name: bare.read(n)) for name in _KERNELS},
    }
    bare.copy_to_texture()
    for name in _KERNELS:
        bare.read(name)
    seconds: dict[str, list[float]] = {name: [] for name in timed}
    for _ in range(args.rounds):
        for name, call in timed.items():
            start = time.perf_counter()
            call()
            seconds[name].append(time.perf_counter() - start)
    plan = op.plan
    print(f"{device.name}; FLOAT32 {x.shape} over axis 1 ({x.nbytes >> 20} MiB); plan: {plan.kernel}, "
          f"workgroup {plan.workgroup_size}, segment {plan.segment}, wide loads {plan.wide_loads}; "
          f"median of {args.rounds} interleaved rounds, wall time")
    base = np.median(seconds["np.argmax"])
    for name, values in seconds.items():
        median = float(np.median(values))
        print(f"  {name:24} {median * 1e3:9.1f} ms  {median / base:6.1f}x np.argmax  {x.nbytes / median / 1e9:6.2f} GB/s")


if __name__ == "__main__":
    main()
