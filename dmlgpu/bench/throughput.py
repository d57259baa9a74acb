"""A case of kind "throughput": calls per second from several threads at once, as a web server's
workers or Dask's threaded scheduler make them, for dmlgpu (NumPy in and out; a GPU-resident
input read back, as users write it, with no ``release()``) and torch beside it, at each of the
case's numbers of threads, the variants taking turns."""

from __future__ import annotations

import threading
import time
from typing import TYPE_CHECKING, Any, Callable

import numpy as np

from .. import oracle
from .cases import Case
from .peers import TorchPeer

if TYPE_CHECKING:
    from .run import Bench

#: Seconds each variant runs at each number of threads (after a short untimed start).
SECONDS = 1.0


def rate(fn: Callable[[], Any], threads: int, seconds: float) -> float:
    """Calls of ``fn`` per second from ``threads`` threads started together, over ``seconds``;
    an error in any thread is raised."""
    return timed_rate(fn, threads, seconds)[0]


def timed_rate(fn: Callable[[], Any], threads: int, seconds: float) -> tuple[float, list]:
    """``rate``, and every call's wall seconds (for percentiles)."""
    times: list[list] = [[] for _ in range(threads)]
    errors: list = []
    start = threading.Barrier(threads + 1)
    deadline = [0.0]

    def loop(k: int) -> None:
        mine, clock = times[k], time.perf_counter
        start.wait()
        try:
            now = clock()
            while now < deadline[0]:
                fn()
                then, now = now, clock()
                mine.append(now - then)
        except Exception as err:  # raised below, in the caller's thread
            errors.append(err)

    workers = [threading.Thread(target=loop, args=(k,), daemon=True) for k in range(threads)]
    for w in workers:
        w.start()
    began = time.perf_counter()
    deadline[0] = began + seconds
    start.wait()
    for w in workers:
        w.join()
    if errors:
        raise errors[0]
    return sum(len(t) for t in times) / (time.perf_counter() - began), [x for t in times for x in t]


def run(bench: Bench, case: Case) -> dict:
    """Calls per second at each number of threads, by variant: ``numpy`` (dmlgpu, NumPy in and
    out), ``resident`` (``dmlgpu.argmax(t, axes).numpy()`` on a GPU-resident ``t``), and
    ``torch numpy`` / ``torch resident`` where torch is importable; each answer checked once."""
    import dmlgpu

    result = {**case.to_json(), "status": "ok"}
    x = bench.host(case)
    want = oracle.evaluate(case.descriptor(), x)
    op, device = getattr(dmlgpu, case.op), bench.device
    t = device.upload(x)
    variants: dict[str, Callable[[], Any]] = {
        "numpy": lambda: op(x, case.axes, device=device),
        "resident": lambda: op(t, case.axes).numpy(),
    }
    torch = next((p for p in bench.peers if isinstance(p, TorchPeer)), None)
    if torch is not None:
        data = torch.upload(x)
        fn = torch.op(case, data)
        variants["torch numpy"] = lambda: torch.to_numpy(torch.op(case, torch.upload(x))())
        variants["torch resident"] = lambda: torch.to_numpy(fn())
    result["correct"] = all(np.array_equal(np.asarray(variants[name]()).reshape(want.shape), want.astype(np.int64))
                            for name in ("numpy", "resident"))
    calls: dict[str, dict[str, float]] = {name: {} for name in variants}
    names = list(variants)
    for i, threads in enumerate(case.threads):
        for name in names[i % len(names):] + names[:i % len(names)]:
            rate(variants[name], threads, 0.1 * SECONDS)  # untimed: every thread's first calls
            calls[name][str(threads)] = rate(variants[name], threads, SECONDS)
    result["calls_per_s"] = calls
    t.release()
    if torch is not None:
        torch.release()
    return result
