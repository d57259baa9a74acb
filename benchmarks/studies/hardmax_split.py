"""What bounds HARDMAX over rows: its write and its read, each timed alone, beside it.

    python benchmarks/studies/hardmax_split.py

On the default adapter, in one process, interleaved over five rounds (median GPU time of
five runs each, from timestamp queries), for the full suite's ``hardmax_rows`` input:
a kernel that only writes zeros over a buffer of the input's size (the copy ceiling's
kernel with its loads taken out: 16-byte stores, ``UNROLL`` a thread a step, over
several grids of workgroups of 256), ``clear_buffer``
(wgpu's own fill), our HARDMAX, and our ARGMAX over the same rows (which only reads them).
HARDMAX zeroes its output and reads its input: the fastest write plus the argmax is what it
can take at best, to set beside torch's HARDMAX in the bench. Beside them, the copy ceiling
(``shaders/copy_ceiling.wgsl``, as ``bench.Ceiling`` runs it) over the same bytes with
several grids, and torch's ``copy_`` of them where torch is importable: what a copy costs.
"""

from __future__ import annotations

import argparse

import numpy as np

import dmlgpu
from dmlgpu.bench import COPY_CEILING_UNROLL, find_peers, host_data, load_suite, warm_up
from dmlgpu.wgsl import template, unroll
from dmlgpu.bench.gpu_timers import operator_gpu_times
from dmlgpu.runtime import gpu_times

#: The copy ceiling's kernel (shaders/copy_ceiling.wgsl) with its loads replaced by zeros:
#: its stores alone.
LOADS = "quads[k] = src[i + k * stride];"
WRITE = template("copy_ceiling").replace(LOADS, "quads[k] = vec4<u32>(0u);")


def main() -> None:
    if LOADS not in template("copy_ceiling"):
        raise SystemExit("shaders/copy_ceiling.wgsl no longer loads as this script expects")
    device = dmlgpu.Device()
    runner = device.runner
    warm_up(runner, 256 << 20, 1.5)
    cases = {c.name: c for c in load_suite("full").cases}
    x = host_data(cases["hardmax_rows"], np.random.default_rng(0))
    nbytes = x.nbytes
    hardmax = device.compile(cases["hardmax_rows"].descriptor())
    argmax = device.compile(cases["rows"].descriptor())
    src = device.upload(x, hardmax.input_desc)
    out, indices = device.empty(hardmax.output_desc), device.empty(argmax.output_desc)
    target = runner.memory.storage(nbytes)
    count = runner.programs.uniform(np.array([nbytes // 16, 0, 0, 0], np.uint32))
    variants = {}
    for per_step in (1, 2, 4, 8):
        pipeline = runner.programs.pipeline(unroll(f"const UNROLL: u32 = {per_step}u;\n" + WRITE))
        for groups in (1056, 4224, 16384, 65535):
            steps = [(pipeline, runner.programs.bind(count, src._buffer, target), (groups, 1, 1))]
            variants[f"write x{per_step}, {groups} groups"] = lambda s=steps: np.median(gpu_times(runner, s, repeats=5))
    nothing = runner.programs.uniform(np.zeros(4, np.uint32))
    one = [(runner.programs.pipeline(unroll("const UNROLL: u32 = 1u;\n" + WRITE)), runner.programs.bind(nothing, src._buffer, target),
            (1, 1, 1))]
    variants["clear_buffer"] = lambda: np.median(gpu_times(runner, one, clear=[target], repeats=5))
    copy = runner.programs.pipeline(unroll(f"const UNROLL: u32 = {COPY_CEILING_UNROLL}u;\n" + template("copy_ceiling")))
    for groups in (4096, 16384, 65535):
        steps = [(copy, runner.programs.bind(count, src._buffer, target), (groups, 1, 1))]
        variants[f"copy ceiling, {groups} groups"] = lambda s=steps: np.median(gpu_times(runner, s, repeats=5))
    torch = next((p for p in find_peers() if p.name == "torch"), None)  # the bench's timing of torch
    if torch is not None:
        x_t = torch.torch.empty(nbytes // 4, device="cuda")
        y_t = torch.torch.empty_like(x_t)
        variants["torch copy_"] = lambda: np.median(torch.gpu_times(lambda: y_t.copy_(x_t), 5))
    variants["our HARDMAX"] = lambda: np.median(operator_gpu_times(hardmax, src, out, 5))
    variants["our ARGMAX (reads only)"] = lambda: np.median(operator_gpu_times(argmax, src, indices, 5))
    times: dict[str, list] = {k: [] for k in variants}
    for _ in range(5):
        for k, fn in variants.items():
            times[k].append(fn())
    print(f"{device.name}; {nbytes} bytes; median GPU time of 5 interleaved rounds; GB/s of the bytes read or written"
          " once (a copy and HARDMAX move twice as many)")
    for k, v in times.items():
        t = float(np.median(v))
        print(f"{k:26} {t * 1e6:8.1f} us  {nbytes / t / 1e9:6.0f} GB/s")


if __name__ == "__main__":
    argparse.ArgumentParser(description=__doc__.splitlines()[0]).parse_args()  # no options: --help only
    main()
