"""Run times of a CPU adapter's plans on lavapipe, for comparing two installs in turns (issue 36:
does reading ARGMIN and the tie rule from the parameters cost a CPU adapter run time?).

Each case uploads about 16 MiB once and times 7 resident calls (`f(t, axes).numpy()`) after two
warm-up calls, ARGMAX INCREASING and ARGMIN DECREASING; medians in milliseconds go to the JSON.
Run each install's copy in fresh processes, alternating, e.g.::

    for r in 1 2 3; do (cd ../A && .venv/bin/python $S a-$r.json); (cd ../B && .venv/bin/python $S b-$r.json); done
"""

import json
import statistics
import sys
import time

import numpy as np

import dmlgpu

CASES = [("rows f32", (1024, 4096), np.float32, (1,)), ("cols f32", (4096, 1024), np.float32, (0,)),
         ("tiny_rows8 f32", (262144, 8), np.float32, (1,)), ("tiny_rows3 f32", (349525, 3), np.float32, (1,)),
         ("single f32", (1 << 22,), np.float32, (0,)), ("axes02 f32", (64, 64, 1024), np.float32, (0, 2)),
         ("rows int8", (1024, 16384), np.int8, (1,)), ("rows f16", (1024, 8192), np.float16, (1,))]


def main() -> None:
    rng = np.random.default_rng(0)
    device = dmlgpu.Device()
    out = {}
    for name, shape, dtype, axes in CASES:
        t = device.upload((rng.standard_normal(shape) * 50).astype(dtype))
        for op, direction in (("argmax", "increasing"), ("argmin", "decreasing")):
            call = getattr(dmlgpu, op)
            for _ in range(2):
                call(t, axes, axis_direction=direction).numpy()
            times = []
            for _ in range(7):
                started = time.perf_counter()
                call(t, axes, axis_direction=direction).numpy()
                times.append(time.perf_counter() - started)
            out[f"{name} {op} {direction}"] = statistics.median(times) * 1e3
    json.dump(out, open(sys.argv[1], "w"), indent=1)


if __name__ == "__main__":
    main()
