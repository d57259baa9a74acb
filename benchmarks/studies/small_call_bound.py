"""What the least Python could make of a small call: issue 34's 1.25x, bounded.

    python benchmarks/studies/small_call_bound.py [--calls 3000] [--rounds 6]

On the default adapter, in one process, in turns after warm-up, p50 wall of a (1, 151936)
FLOAT32 argmax's round trip four ways, each against wgpu-native's bare round trip from Python
(``bench.gpu_timers.bare_round_trips``) timed in the same rounds:

- **as written**: ``dmlgpu.argmax(t, 1).numpy()``;
- **lean**: the same call with only the Python it cannot do without, written out flat: the
  compiled operator found by its key, an output tensor from the pool, its passes bound and
  recorded, a NumPy array for the answer, the read's map found, and our three C calls
  (``dml_record_calls`` between wgpu-py's error capture and release, ``dml_submit_calls``,
  ``dml_read``), under the runner's lock, with none of the checks, the other threads' batch or
  Ctrl-C's deferral that the library also does;
- **C calls only**: the three C calls and the error capture on the compiled operator's passes,
  bound once to a kept output (no Python call at all);
- **bare from C** (``in_c``): wgpu-native's round trip with no interpreter in it.

If "lean" is above 1.25x the bare round trip from Python, no rewrite of the library's Python
reaches the target; if "C calls only" is, neither does any Python over our C calls.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import dmlgpu
from dmlgpu.bench.gpu_timers import bare_round_trips
from dmlgpu.runtime.native import MAP_TIMEOUT_S, Deferred, Handle
from dmlgpu.tensor import Storage, Tensor


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=3000)
    parser.add_argument("--rounds", type=int, default=6)
    args = parser.parse_args()
    device = dmlgpu.Device()
    runner, n = device.runner, device.runner.path
    memory, transfers = runner.memory, runner.transfers
    x = np.random.default_rng(0).standard_normal((1, 151936)).astype(np.float32)
    t = device.upload(x)
    key = ("argmax", 1, "increasing", "uint32", "ignore", t.desc)
    dmlgpu.argmax(t, 1, device=device).numpy()
    op = device.by_call[key]
    hot, errors, fns, handle, queue, spin_s = n.hot, n.errors, n.fns, n.handle, n.queue, n.spin_s
    calls, command_buffers = n.hot_ffi.new("DmlCall *[]", 2), n.hot_ffi.new("void *[]", 2)

    def lean():
        compiled = device.by_call.get(key)
        desc = compiled.output_desc
        buffer = memory.storage(4, readable=True)
        output = Tensor(device, desc, [buffer], None, Storage(memory, [buffer]))
        steps = compiled._program.flat_steps(t, output)
        out = np.empty(desc.sizes, np.uint32)
        with runner.lock:
            m = transfers._read_maps.get(buffer)
            if m is None:
                m = transfers._read_maps[buffer] = n.new_map(Handle(buffer._internal), buffer.size)
            read, ticket = m.call or n.read_call(m, buffer, 0)
            read.ticket = 0
            kept: list = []
            calls[0], calls[1] = Deferred(n, steps, output._buffers if compiled._clears else None).call(kept), read
            errors.capture("finish")
            finished = hot.dml_record_calls(fns, handle, calls, 2, command_buffers, 0)
            if errors.release("finish") is not None:
                raise RuntimeError("finish failed")
            hot.dml_submit_calls(fns, queue, calls, 2, command_buffers, finished)
            hot.dml_read(fns, handle, m.state, spin_s, MAP_TIMEOUT_S, ticket, buffer._internal, m.size,
                         n.hot_ffi.from_buffer(out.reshape(-1).view(np.uint8), require_writable=True), out.nbytes)
        return out

    def lean_submitted_at_the_call():
        compiled = device.by_call.get(key)
        desc = compiled.output_desc
        buffer = memory.storage(4, readable=True)
        output = Tensor(device, desc, [buffer], None, Storage(memory, [buffer]))
        steps = compiled._program.flat_steps(t, output)
        with runner.lock:  # the call: its passes recorded and submitted at once
            kept: list = []
            calls[0] = Deferred(n, steps, output._buffers if compiled._clears else None).call(kept)
            errors.capture("finish")
            finished = hot.dml_record_calls(fns, handle, calls, 1, command_buffers, 0)
            if errors.release("finish") is not None:
                raise RuntimeError("finish failed")
            hot.dml_submit_calls(fns, queue, calls, 1, command_buffers, finished)
            ticket = n.hot_ffi.addressof(calls[0], "ticket")
        out = np.empty(desc.sizes, np.uint32)  # the read: the output's map, started once the GPU runs
        with runner.lock:
            m = transfers._read_maps.get(buffer)
            if m is None:
                m = transfers._read_maps[buffer] = n.new_map(Handle(buffer._internal), buffer.size)
            hot.dml_map(fns, buffer._internal, 0, m.size, m.state)
            hot.dml_read(fns, handle, m.state, spin_s, MAP_TIMEOUT_S, ticket, buffer._internal, m.size,
                         n.hot_ffi.from_buffer(out.reshape(-1).view(np.uint8), require_writable=True), out.nbytes)
        return out

    kept_output = op.run(t)
    kept_output.numpy()
    m = transfers._read_maps[kept_output._buffers[0]]
    read, ticket = m.call or n.read_call(m, kept_output._buffers[0], 0)
    out = np.empty(4, np.uint8)
    fixed = (Deferred(n, op._program.flat_steps(t, kept_output), kept_output._buffers if op._clears else None)
             .call([]), read)
    out_c, buffer_c = n.hot_ffi.from_buffer(out, require_writable=True), kept_output._buffers[0]._internal

    def c_calls_only():
        read.ticket = 0
        calls[0], calls[1] = fixed
        errors.capture("finish")
        finished = hot.dml_record_calls(fns, handle, calls, 2, command_buffers, 0)
        errors.release("finish")
        hot.dml_submit_calls(fns, queue, calls, 2, command_buffers, finished)
        hot.dml_read(fns, handle, m.state, spin_s, MAP_TIMEOUT_S, ticket, buffer_c, m.size, out_c, 4)

    def as_written():
        return dmlgpu.argmax(t, 1, device=device).numpy()

    expected = int(np.argmax(x))
    assert int(lean().item()) == int(as_written().item()) == expected
    assert int(lean_submitted_at_the_call().item()) == expected
    ways = {"as written": as_written, "lean": lean, "lean, submitted at the call": lean_submitted_at_the_call,
            "C calls only": c_calls_only}
    for fn in ways.values():
        for _ in range(300):
            fn()
    times: dict = {name: [] for name in ("bare from Python", "bare from C", *ways)}
    per_round = max(1, args.calls // args.rounds)
    clock = time.perf_counter_ns
    for _ in range(args.rounds):
        for name, fn in ways.items():
            walls = times[name]
            for _ in range(per_round):
                start = clock()
                fn()
                walls.append(clock() - start)
        for name, in_c in (("bare from Python", False), ("bare from C", True)):
            times[name] += [s * 1e9 for s in bare_round_trips(runner, per_round, in_c=in_c)]
    assert int(lean().item()) == int(as_written().item()) == expected
    bare = np.median(times["bare from Python"])
    print(f"{device.name}; (1, 151936) FLOAT32, {per_round * args.rounds} calls each in {args.rounds} rounds; "
          f"p50 us and against the bare round trip from Python")
    for name, walls in times.items():
        p50 = np.median(walls)
        print(f"{name:28} {p50 / 1e3:7.1f} us  {p50 / bare:5.2f}x  (p99 {np.percentile(walls, 99) / 1e3:7.1f} us)")


if __name__ == "__main__":
    main()
