"""How much of a small call is dmlgpu's Python, and how much wgpu-native's work through our C calls.

    python benchmarks/studies/small_call_glue.py [--calls 6000]

On the default adapter, in one process, a (1, 151936) FLOAT32 argmax's small calls, interleaved in
rounds after warm-up: our floor (a one-workgroup pass through the runner and its 16-byte read),
the compiled operator on a kept output with its 4-byte read, and the call as users write it
(``dmlgpu.argmax(t, 1).numpy()``); each again with the three C calls of ``_hot.c`` it makes
(``dml_record_calls``, ``dml_submit_calls``, ``dml_read``: recording, submitting, then waiting
for the map and copying out) timed one by one, what is left being Python (and cffi) between
them; and wgpu-native's bare round trip, from Python and from C
(``dmlgpu.bench.gpu_timers.bare_round_trips``). p50 of each, in microseconds. Then a profile of
the call as written, by Python function.
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import time

import numpy as np

import dmlgpu
from dmlgpu.bench import Ceiling
from dmlgpu.bench.gpu_timers import bare_round_trips

TIMED = ("dml_record_calls", "dml_submit_calls", "dml_read")


class _TimedHot:
    """The C library with the calls ``TIMED`` timed into ``times`` (name -> list of ns)."""

    def __init__(self, hot, times: dict):
        self._hot, self._times = hot, times

    def __getattr__(self, name):
        fn = getattr(self._hot, name)
        if name not in TIMED:
            return fn
        times = self._times.setdefault(name, [])

        def timed(*args):
            start = time.perf_counter_ns()
            result = fn(*args)
            times.append(time.perf_counter_ns() - start)
            return result

        return timed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=6000)
    args = parser.parse_args()
    device = dmlgpu.Device()
    runner, path = device.runner, device.runner.path
    x = np.random.default_rng(0).standard_normal((1, 151936)).astype(np.float32)
    t = device.upload(x)
    ceiling = Ceiling(runner, "read", runner.memory.storage(16), 16, readable=runner.in_place)
    sixteen, four = np.empty(16, np.uint8), np.empty(4, np.uint8)
    compiled = device.compile(dmlgpu.ArgMaxOperatorDesc(dmlgpu.TensorDesc("FLOAT32", x.shape), axes=[1]))
    out = compiled.run(t)

    def floor():
        runner.dispatch(ceiling.steps)
        runner.transfers.read_into(ceiling.dst, sixteen)

    def compiled_call():
        compiled.run(t, out)
        runner.transfers.read_into(out._buffers[0], four)

    def as_written():
        dmlgpu.argmax(t, 1, device=device).numpy()

    calls = {"our floor": floor, "compiled, kept output": compiled_call, "argmax(t, 1).numpy()": as_written}
    for fn in calls.values():
        for _ in range(300):
            fn()
    hot, rounds = path.hot, 6
    per_round = max(1, args.calls // rounds)
    results: dict = {}
    for _ in range(rounds):
        for timed in (False, True):
            for name, fn in calls.items():
                parts: dict = {}
                path.hot = _TimedHot(hot, parts) if timed else hot
                walls = []
                for _ in range(per_round):
                    start = time.perf_counter_ns()
                    fn()
                    walls.append(time.perf_counter_ns() - start)
                entry = results.setdefault(name + (", C calls timed" if timed else ""), {"wall": []})
                entry["wall"] += walls
                for part, times in parts.items():
                    entry.setdefault(part, []).extend(times)
        path.hot = hot
        for name, in_c in (("wgpu-native bare, Python", False), ("wgpu-native bare, C", True)):
            bare = bare_round_trips(runner, per_round, in_c=in_c)
            if bare is not None:
                results.setdefault(name, {"wall": []})["wall"] += [s * 1e9 for s in bare]
    print(f"{device.name}; (1, 151936) FLOAT32, {per_round * rounds} calls each; p50, us")
    for name, entry in results.items():
        p50 = {part: np.median(v) / 1e3 for part, v in entry.items()}
        line = f"{name:36} wall {p50.pop('wall'):6.1f}"
        if p50:
            line += "".join(f"  {part.removeprefix('dml_')} {v:5.1f}" for part, v in p50.items())
            line += f"  Python between {np.median(entry['wall']) / 1e3 - sum(p50.values()):5.1f}"
        print(line)
    profile = cProfile.Profile()
    profile.enable()
    for _ in range(3000):
        as_written()
    profile.disable()
    pstats.Stats(profile).sort_stats("tottime").print_stats(25)


if __name__ == "__main__":
    main()
