"""Cases of kind "numpy" and "loop", the host's side of a call: a whole NumPy-in, NumPy-out call
on a large input beside NumPy on the CPU, torch's pageable path, the upload alone and the
read-back alone (and its bound on this host); or GPU-resident calls back to back against the
rate their GPU time allows."""

from __future__ import annotations

import concurrent.futures
import time
from typing import TYPE_CHECKING, Callable

import numpy as np

from .. import oracle
from ..runtime import copy_in_parts
from .cases import Case
from .peers import TorchPeer
from .timing import call_timer, interleaved, median
from .gpu_timers import operator_gpu_times

if TYPE_CHECKING:
    from .run import Bench

#: Timed rounds of each transfer case (whole NumPy calls of 256 MiB to 1 GiB), and the calls
#: of a back-to-back resident loop.
TRANSFER_ROUNDS = 5
LOOP_CALLS = 200


def run(bench: Bench, case: Case) -> dict:
    """A whole NumPy-in, NumPy-out call on a large input, beside NumPy on the CPU and torch's
    pageable path (interleaved rounds of wall times), with the upload alone and the
    read-back alone; or a loop of back-to-back resident calls against their GPU time."""
    import dmlgpu

    result = {**case.to_json(), "status": "ok"}
    x = bench.host(case)
    desc = case.descriptor()
    want = oracle.evaluate(desc, x)
    op = getattr(dmlgpu, case.op)
    result["bytes"] = x.nbytes
    if case.kind == "loop":
        return _loop(bench, case, x, want, result)
    got = op(x, case.axes, device=bench.device)
    result["correct"] = bool(np.array_equal(got, want.astype(got.dtype)))
    del got
    calls = {"ours": lambda: op(x, case.axes, device=bench.device), "numpy": lambda: _numpy_op(case, x)}
    torch = next((p for p in bench.peers if isinstance(p, TorchPeer)), None)
    if torch is not None:
        calls["torch_pageable"] = torch.pageable(case, x)

    def upload():
        bench.device.upload(x).release()

    calls["upload"] = upload
    resident = bench.device.upload(x)
    out = op(resident, case.axes, device=bench.device)
    calls["read_back"] = out.numpy
    fill, fill_threads = None, bench.runner.transfers.copies.threads[False]  # as many threads as the runner's reads
    if case.op == "hardmax":  # the read-back's bound: a new array filled from host memory
        fill = concurrent.futures.ThreadPoolExecutor(fill_threads)
        source = x.reshape(-1).view(np.uint8)
        calls["host_fill"] = lambda: _fill_new(source, fill, fill_threads)
    try:
        samples = _walls_in_turn(calls)
    finally:
        if fill is not None:
            fill.shutdown()
        out.release()
        resident.release()
        if torch is not None:
            torch.release()
    medians = {name: median(t) for name, t in samples.items()}
    result.update(e2e_s=medians["ours"], numpy_s=medians["numpy"], samples_s=samples,
                  gbps=x.nbytes / medians["ours"] / 1e9,
                  upload_gbps=x.nbytes / medians["upload"] / 1e9,
                  read_back_gbps=want.nbytes / medians["read_back"] / 1e9,
                  **({"host_fill_gbps": x.nbytes / medians["host_fill"] / 1e9, "host_fill_threads": fill_threads}
                     if fill is not None else {}),
                  x_numpy=medians["numpy"] / medians["ours"])
    if "torch_pageable" in medians:
        result.update(torch_pageable_s=medians["torch_pageable"],
                      x_torch_pageable=medians["torch_pageable"] / medians["ours"])
    return result


def _walls_in_turn(calls: dict[str, Callable[[], object]]) -> dict[str, list[float]]:
    """Each call once untimed (it compiles, allocates, warms the paths), then the wall seconds
    of TRANSFER_ROUNDS calls of each in interleaved rounds, one call a turn (``interleaved``:
    while TRANSFER_ROUNDS is at most its ROUNDS)."""
    for fn in calls.values():
        fn()
    walls = interleaved({name: call_timer(fn) for name, fn in calls.items()}, TRANSFER_ROUNDS)
    return {name: w.tolist() for name, w in walls.items()}


def _loop(bench: Bench, case: Case, x: np.ndarray, want: np.ndarray, result: dict) -> dict:
    """LOOP_CALLS GPU-resident calls back to back (each result released), then one read:
    the wall time per call against the GPU time of one call."""
    import dmlgpu

    op = getattr(dmlgpu, case.op)
    inp = bench.device.upload(x)
    try:
        first = op(inp, case.axes, device=bench.device)
        result["correct"] = bool(np.array_equal(first.numpy(), want.astype(first.dtype)))
        gpu_s = median(operator_gpu_times(bench.device.compile(case.descriptor()), inp, first, 10))
        first.release()
        walls = []
        for _ in range(3):
            start = time.perf_counter()
            for i in range(LOOP_CALLS):
                last = op(inp, case.axes, device=bench.device)
                if i < LOOP_CALLS - 1:
                    last.release()
            last.numpy()  # waits for every call before it
            last.release()
            walls.append((time.perf_counter() - start) / LOOP_CALLS)
    finally:
        inp.release()
    wall = median(walls)
    result.update(gpu_s=gpu_s, wall_per_call_s=wall, pct_of_gpu_rate=100.0 * gpu_s / wall, calls=LOOP_CALLS)
    return result


def _numpy_op(case: Case, x: np.ndarray) -> np.ndarray:
    """The case on the CPU with NumPy, as a NumPy user writes it."""
    (axis,) = case.axes
    if case.op == "hardmax":
        out = np.zeros_like(x)
        np.put_along_axis(out, np.expand_dims(np.argmax(x, axis), axis), 1, axis)
        return out
    return (np.argmax if case.op == "argmax" else np.argmin)(x, axis)


def _fill_new(source: np.ndarray, pool, parts: int) -> np.ndarray:
    """A new array filled from ``source`` in host memory, in ``parts`` on ``pool``'s threads
    (split as the runner's reads are): its page faults and copy, which bound a read-back into
    a new array on this host."""
    out = np.empty_like(source)
    copy_in_parts(pool, out, source, parts)
    return out
