"""A case of kind "gpu": our operator's GPU time beside the ceiling kernel over the same input
buffer and the peers on the same data, timed in interleaved rounds; its answer checked once
against the oracle; then, for small inputs and latency cases, the wall time of whole calls
(NumPy in, NumPy out), and for latency cases p50/p99 beside the floor under any small call."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

import numpy as np

from .. import oracle
from ..desc import lower
from ..runtime import configured
from ..tensor import Tensor
from ..errors import DescriptorError
from .cases import Case
from .ceilings import Ceiling
from .peers import Peer
from .gpu_timers import operator_gpu_times
from .timing import (FloorTimer, Timer, call_timer, interleaved, interleaved_walls, median, native_floor_timer,
                     percentiles)

if TYPE_CHECKING:
    from .run import Bench

#: End-to-end (NumPy in, NumPy out) timing only for inputs up to this size: above it the
#: figure measures the bus and host copies, not the library.
E2E_MAX_BYTES = 64 << 20
#: Wall-clock seconds spent on each end-to-end measurement (at least 3 calls, at most 100);
#: latency cases get more calls, so that their p99 means something.
E2E_BUDGET_S = 0.5
LATENCY_BUDGET_S = 1.0
LATENCY_MAX_CALLS = 2000
#: Without --repeats, fewer repetitions when one dispatch is slow: about this many GPU
#: seconds per variant and case (at least 3 repetitions).
VARIANT_BUDGET_S = 2.0

#: A peer's copy of the input on its device, and its call of the case on that copy.
PeerData = tuple[Any, Callable[[], Any]]


def _plan_summary(plan) -> dict:
    """What the planner chose, as plain data (the fields it has; the planner is still growing)."""
    fields = ("kernel", "loader", "split", "chunk", "grid", "merge_grid")
    return {f: (list(v) if isinstance(v, tuple) else v) for f in fields if (v := getattr(plan, f, None)) is not None}


def run(bench: Bench, case: Case) -> dict:
    """The case's result: skipped when its input or output exceeds one binding or the
    adapter cannot run it; else its plan, bytes, answer, GPU times, ceiling and peers, and
    (``_end_to_end``) wall times of whole calls."""
    result = {**case.to_json(), "status": "ok"}
    red = lower(case.descriptor())
    caps = bench.runner.capabilities
    need = max(red.input.total_tensor_size_in_bytes, red.output.total_tensor_size_in_bytes)
    if need > caps.max_storage_binding:
        return {**result, "status": "skipped",
                "reason": f"{need} bytes exceed one binding ({caps.max_storage_binding}), which the bench "
                          f"and its ceiling read whole; see benchmarks/beyond_one_binding.py"}
    try:
        compiled = bench.device.compile(case.descriptor())
    except DescriptorError as err:
        return {**result, "status": "skipped", "reason": str(err)}
    result["plan"] = _plan_summary(compiled.plan)
    nbytes = red.input.total_tensor_size_in_bytes + red.output.total_tensor_size_in_bytes
    result["bytes"] = nbytes

    x = bench.host(case)
    buffers = []
    variants: dict[str, Timer] = {}
    peer_data: dict[str, PeerData] = {}
    try:
        # (Memory.storage rounds each size up to whole 16-byte quads: runtime.memory.bound_size)
        src = bench.runner.memory.storage(red.input.total_tensor_size_in_bytes)
        buffers.append(src)
        bench.runner.transfers.write(src, x)
        dst = bench.runner.memory.storage(red.output.total_tensor_size_in_bytes)
        buffers.append(dst)
        inp, out = Tensor(bench.device, red.input, [src]), Tensor(bench.device, red.output, [dst])
        ceiling = Ceiling(bench.runner, "copy" if case.op == "hardmax" else "read", src,
                          red.input.total_tensor_size_in_bytes)
        buffers += [ceiling.dst, ceiling.params]

        def ours(n):  # HARDMAX's clear of its output is timed with it
            return operator_gpu_times(compiled, inp, out, n)
        variants.update(ours=ours, ceiling=ceiling.gpu_times)
        # Untimed: two of each variant (the first also compiles and allocates).
        first = {name: variant(2) for name, variant in variants.items()}
        peer_errors = _add_peers(bench.peers, case, x, variants, first, peer_data)
        live = [peer for peer in bench.peers if peer.name in peer_data]
        result["correct"] = _answer_is_right(case, compiled, inp, out, x)

        result["repeats"] = repeats = _repeats(bench, first)
        _figures(result, interleaved(variants, repeats), nbytes, ceiling, peer_errors, live)

        result["e2e_s"] = result["e2e_resident_s"] = None
        if case.latency or red.input.total_tensor_size_in_bytes <= E2E_MAX_BYTES:
            _end_to_end(bench, case, x, inp, result, live, peer_data)
    finally:
        variants.clear()  # the peers' closures hold their copies of the input
        peer_data.clear()
        for peer in bench.peers:
            peer.release()
        for buffer in buffers:
            bench.runner.memory.free(buffer)
    return result


def _add_peers(peers: list[Peer], case: Case, x: np.ndarray, variants: dict[str, Timer], first: dict[str, np.ndarray],
               peer_data: dict[str, PeerData]) -> dict[str, dict[str, str]]:
    """Each peer's variant on its own copy of ``x``, run twice untimed like ours (into
    ``first``), its data and call kept in ``peer_data``; returns the errors of the peers that
    cannot run the case, by name."""
    peer_errors = {}
    for peer in peers:
        try:
            data = peer.upload(x)
            fn = peer.op(case, data)
            variant = variants[peer.name] = _peer_timer(peer, fn)
            first[peer.name] = variant(2)
            peer_data[peer.name] = (data, fn)
        except Exception as err:  # a peer that cannot do a case must not lose ours
            variants.pop(peer.name, None)
            peer_errors[peer.name] = {"error": f"{type(err).__name__}: {err}"}
    return peer_errors


def _peer_timer(peer: Peer, fn: Callable[[], Any]) -> Timer:
    """A timer of the peer's GPU time of ``fn`` (CUDA events)."""
    return lambda count: peer.gpu_times(fn, count)


def _repeats(bench: Bench, first: dict) -> int:
    """--repeats, else as many as VARIANT_BUDGET_S gives the slowest variant of the untimed
    ``first`` calls, from 3 to the suite's repeats."""
    if bench.repeats is not None:
        return bench.repeats
    slowest = max(median(t) for t in first.values())
    return max(3, min(bench.suite.repeats, int(VARIANT_BUDGET_S / max(slowest, 1e-9))))


def _answer_is_right(case: Case, compiled, inp, out, x: np.ndarray) -> bool:
    """Our answer, checked once against the oracle."""
    compiled.run(inp, out)
    got = out.numpy()
    want = oracle.evaluate(case.descriptor(), x)
    return bool(got.shape == want.shape and np.array_equal(got, want.astype(got.dtype)))


def _figures(result: dict, samples: dict[str, np.ndarray], nbytes: int, ceiling: Ceiling, peer_errors: dict,
             live: list[Peer]) -> None:
    """Our GPU time, the ceiling's and the live peers' from their samples, into ``result``."""
    ours_s = median(samples["ours"])
    result.update(gpu_s=ours_s, gpu_min_s=float(samples["ours"].min()), gbps=nbytes / ours_s / 1e9,
                  gpu_samples_s=samples["ours"].tolist())
    ceiling_s = median(samples["ceiling"])
    result["ceiling"] = {"kernel": f"{ceiling.kind}_ceiling", "bytes": ceiling.bytes, "gpu_s": ceiling_s,
                         "gbps": ceiling.bytes / ceiling_s / 1e9, "gpu_samples_s": samples["ceiling"].tolist()}
    result["pct_of_ceiling"] = 100.0 * result["gbps"] / result["ceiling"]["gbps"]

    result["peers"] = dict(peer_errors)
    for peer in live:
        peer_s = median(samples[peer.name])
        result["peers"][peer.name] = {"gpu_s": peer_s, "gbps": nbytes / peer_s / 1e9, "speedup": peer_s / ours_s,
                                      "gpu_samples_s": samples[peer.name].tolist()}


#: The latency figures of calls as users write them (``_as_written``), beside the bench's own,
#: and the same NumPy and as-written resident calls on a device opened with no copy helpers
#: and no spinning (``_quiet``).
AS_WRITTEN = ("resident_as_written", "numpy_module", "numpy_module_resident", "onnx", "numpy_quiet", "resident_quiet")


def _quiet(bench: Bench, case: Case, x: np.ndarray) -> tuple[Any, dict[str, Timer]]:
    """A second device on the bench's adapter opened with ``configure(copy_helpers=0,
    spin_us=0)`` (the process's settings put back as they were at once), its input uploaded, and timers of
    its NumPy call (``numpy_quiet``) and its resident call as users write it
    (``resident_quiet``): what the quiet setting costs, timed in turn with the rest."""
    import dmlgpu

    with configured(copy_helpers=0, spin_us=0):
        device = dmlgpu.Device(bench.device.name)
    op = getattr(dmlgpu, case.op)
    t = device.upload(x)
    return device, {"numpy_quiet": call_timer(lambda: op(x, case.axes, device=device)),
                    "resident_quiet": call_timer(lambda: op(t, case.axes).numpy())}


def _as_written(case: Case, x: np.ndarray, inp) -> dict[str, Timer]:
    """Timers of a latency case's call as users write it, with no ``release()``: the result
    of ``dmlgpu.argmax(t, axes)`` read back and dropped (``resident_as_written``); and, for a
    one-axis ARGMAX/ARGMIN, the other doors: ``dmlgpu.numpy`` NumPy in (``numpy_module``) and
    on a resident tensor read back with ``np.asarray`` (``numpy_module_resident``), and an
    ONNX model of one node through ``dmlgpu.onnx_backend``'s ``rep.run`` (``onnx``, where
    onnx is importable)."""
    import dmlgpu
    import dmlgpu.numpy as dnp

    op = getattr(dmlgpu, case.op)
    timers = {"resident_as_written": call_timer(lambda: op(inp, case.axes).numpy())}
    if case.op == "hardmax" or len(case.axes) != 1:
        return timers
    axis = case.axes[0]
    numpy_op = getattr(dnp, case.op)
    timers["numpy_module"] = call_timer(lambda: numpy_op(x, axis=axis))
    timers["numpy_module_resident"] = call_timer(lambda: np.asarray(numpy_op(inp, axis=axis)))
    try:
        import onnx
        from onnx import helper

        import dmlgpu.onnx_backend as backend
    except ImportError:
        return timers
    node = helper.make_node("ArgMax" if case.op == "argmax" else "ArgMin", ["x"], ["y"], axis=axis, keepdims=0)
    elem = helper.np_dtype_to_tensor_dtype(x.dtype)
    graph = helper.make_graph([node], case.name, [helper.make_tensor_value_info("x", elem, x.shape)],
                              [helper.make_tensor_value_info("y", onnx.TensorProto.INT64,
                                                             [n for i, n in enumerate(x.shape) if i != axis])])
    rep = backend.prepare(helper.make_model(graph), dml_device=inp.device)
    timers["onnx"] = call_timer(lambda: rep.run([x]))
    return timers


def _end_to_end(bench: Bench, case: Case, x: np.ndarray, inp, result: dict, peers: list[Peer],
                peer_data: dict[str, PeerData]) -> None:
    """Wall times of whole calls: NumPy in and out, beside the peers'; for latency cases
    also a GPU-resident input with the result read back to NumPy, p50 and p99 of many
    calls, the bare floor of a dispatch and read-back through the same runner and
    straight through wgpu-native: all of them sampled in interleaved rounds
    (``interleaved_walls``)."""
    import dmlgpu

    op = getattr(dmlgpu, case.op)
    budget, most = (LATENCY_BUDGET_S, LATENCY_MAX_CALLS) if case.latency else (E2E_BUDGET_S, 100)
    timers = {"numpy": call_timer(lambda: op(x, case.axes, device=bench.device))}
    floor = quiet = None
    if case.latency:
        def resident():
            r = op(inp, case.axes, device=bench.device)
            r.numpy()
            r.release()

        timers["resident"] = call_timer(resident)
        timers.update(_as_written(case, x, inp))
        quiet, quiet_timers = _quiet(bench, case, x)
        timers.update(quiet_timers)
        floor = timers["floor"] = FloorTimer(bench.runner)
        for name, upload in (("native_floor", None), ("native_floor_upload", x)):
            native = native_floor_timer(bench.runner, None if upload is None else
                                        np.ascontiguousarray(upload).reshape(-1).view(np.uint8))
            if native is not None:
                timers[name] = native
    for peer in peers:
        data, fn = peer_data[peer.name]
        timers[peer.name + " numpy"] = call_timer(lambda peer=peer: peer.to_numpy(peer.op(case, peer.upload(x))()))
        if case.latency:
            timers[peer.name + " resident"] = call_timer(lambda peer=peer, fn=fn: peer.to_numpy(fn()))
    try:
        walls = interleaved_walls(timers, budget, most)
    finally:
        if floor is not None:
            floor.release()
        if quiet is not None:
            quiet.close()
    result["e2e_s"] = median(walls["numpy"])
    if case.latency:
        result["e2e_resident_s"] = median(walls["resident"])
        result["latency_times"] = {name: percentiles(walls[name]) for name in
                                   ("numpy", "resident", "floor", "native_floor", "native_floor_upload") + AS_WRITTEN
                                   if name in walls}
    for peer in peers:
        entry = result["peers"][peer.name]
        entry["e2e_s"] = median(walls[peer.name + " numpy"])
        entry["e2e_resident_s"] = None
        if case.latency:
            entry["e2e_resident_s"] = median(walls[peer.name + " resident"])
            entry["latency_times"] = {"numpy": percentiles(walls[peer.name + " numpy"]),
                                      "resident": percentiles(walls[peer.name + " resident"])}
