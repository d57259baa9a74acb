"""How the bench takes its samples: variants timed in interleaved rounds (``interleaved``,
``interleaved_walls``), wall-clock timers of calls (``call_timer``), the floor under any small
call (``FloorTimer``, ``native_floor_timer``), and the statistics reported (``median``,
``percentiles``).

The GPU-side timers it drives (timestamp queries, the bare round trip through wgpu-native)
are in ``gpu_timers``."""

from __future__ import annotations

import statistics
import time
from typing import Callable

import numpy as np

from .ceilings import Ceiling
from .gpu_timers import bare_round_trips

#: Timed rounds per case; the variants take turns within each round.
ROUNDS = 5

#: What ``interleaved`` times: ``timer(count)`` takes ``count`` samples and returns their
#: seconds (``gpu_timers.gpu_times``, ``Ceiling.gpu_times``, a ``call_timer``, a ``FloorTimer``).
Timer = Callable[[int], np.ndarray]


def interleaved(variants: dict[str, Timer], repeats) -> dict[str, np.ndarray]:
    """Time the variants in rounds, taking turns (the order rotates each round), ``repeats``
    samples each (an int, or a dict of them by name); ``variants`` maps a name to a function
    that takes ``count`` samples (``gpu_times(count)``, a ``call_timer``)."""
    names = list(variants)
    counts = repeats if isinstance(repeats, dict) else dict.fromkeys(names, repeats)
    rounds = max(1, min(ROUNDS, max(counts.values())))
    samples: dict[str, list] = {n: [] for n in names}
    for r in range(rounds):
        for name in names[r % len(names):] + names[:r % len(names)]:
            count = counts[name] // rounds + (r < counts[name] % rounds)
            if count:
                samples[name].extend(variants[name](count))
    return {n: np.array(s) for n, s in samples.items()}


def median(a) -> float:
    return float(statistics.median(a))


def percentiles(times: np.ndarray) -> dict:
    """p50 and p99 of wall times, in seconds."""
    return {"p50_s": float(np.percentile(times, 50)), "p99_s": float(np.percentile(times, 99)), "calls": len(times)}


def interleaved_walls(timers: dict[str, Timer], budget_s: float, most: int) -> dict:
    """Wall seconds of calls of each timer, sampled in interleaved rounds (``interleaved``),
    so that a spell of a slow host falls on all of them alike; ``timers`` maps a name to
    ``timer(count)``, which times ``count`` calls and returns their seconds. Each gets as many
    calls as ``budget_s`` allows by its first three (3..``most``), which are not kept."""
    counts = {name: max(3, min(most, int(budget_s / max(float(np.median(timer(3))), 1e-6))))
              for name, timer in timers.items()}
    return interleaved(timers, counts)


def call_timer(fn: Callable) -> Timer:
    """A timer for ``interleaved_walls``: the wall seconds of each of ``count`` calls of ``fn``."""

    def timer(count: int) -> np.ndarray:
        times = np.empty(count)
        for i in range(count):
            start = time.perf_counter()
            fn()
            times[i] = time.perf_counter() - start
        return times

    return timer


class FloorTimer:
    """The bare floor under any small call, through the runner: one dispatch of a
    1-workgroup kernel and a 16-byte read-back (record, submit, map, copy out), its output
    where a small output of ours is (``Runner.in_place``: in mappable memory). A timer for
    ``interleaved_walls``; ``release()`` when done."""

    def __init__(self, runner):
        self.runner = runner
        self.src = runner.memory.storage(16)
        self.ceiling = Ceiling(runner, "read", self.src, 16, readable=runner.in_place)
        self.out = np.empty(16, np.uint8)
        self.timer = call_timer(self.once)

    def once(self) -> None:
        self.runner.dispatch(self.ceiling.steps)
        self.runner.transfers.read_into(self.ceiling.dst, self.out)

    def __call__(self, count: int) -> np.ndarray:
        return self.timer(count)

    def release(self) -> None:
        self.ceiling.release()
        self.runner.memory.free(self.src)


def native_floor_timer(runner, upload: np.ndarray | None = None):
    """A timer for ``interleaved_walls`` of the same round trip straight through wgpu-native,
    with nothing of ours in between (``gpu_timers.bare_round_trips``), after a queue write of
    ``upload`` if given: what bounds a small call on this machine. None on the public path."""
    if bare_round_trips(runner, 1, upload) is None:
        return None
    return lambda count: bare_round_trips(runner, count, upload)
