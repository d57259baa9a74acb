"""Short rows on a CPU adapter (lavapipe): the CPU plans' reduce_rows (``SOFTWARE_TUNING``, rows
of at most 64 bytes, a shader per row width, every element at a constant place) against the
segments kernel (``rows_max_bytes=0``, one shader for every width, a loop a row). Issue 36: would
the segments kernel's fewer shaders cost lavapipe's users run time?

For each case (about 16 MiB, ARGMAX over axis 1) the first call of each tuning (its compile
and one run, Mesa's shader cache off) and the median of five resident calls
(``argmax(t, (1,)).numpy()``), the two tunings taking turns, one process::

    python benchmarks/studies/lavapipe_short_rows.py
"""

import dataclasses
import os
import statistics
import time

os.environ["MESA_SHADER_CACHE_DISABLE"] = "true"  # before the driver loads: every first call compiles

import numpy as np  # noqa: E402

import dmlgpu  # noqa: E402
from dmlgpu.tuning import SOFTWARE_TUNING  # noqa: E402

CASES = [(np.float32, 3), (np.float32, 5), (np.float32, 8), (np.float32, 16), (np.float16, 3), (np.float16, 21),
         (np.float16, 32), (np.int8, 3), (np.int8, 23), (np.int8, 64), (np.int32, 7), (np.uint16, 6)]


def main() -> None:
    devices = {"rows": dmlgpu.Device(tuning=SOFTWARE_TUNING),
               "segments": dmlgpu.Device(tuning=dataclasses.replace(SOFTWARE_TUNING, rows_max_bytes=0))}
    rng = np.random.default_rng(0)
    for dtype, width in CASES:
        n = (16 << 20) // (width * np.dtype(dtype).itemsize)
        x = (rng.standard_normal((n, width)) * 50).astype(dtype)
        firsts, tensors, times = {}, {}, {name: [] for name in devices}
        for name, device in devices.items():
            tensors[name] = device.upload(x)
            started = time.perf_counter()
            got = dmlgpu.argmax(tensors[name], (1,)).numpy()
            firsts[name] = time.perf_counter() - started
            assert (got.ravel() == np.argmax(x, 1)).all()
        for _ in range(5):
            for name in devices:
                started = time.perf_counter()
                dmlgpu.argmax(tensors[name], (1,)).numpy()
                times[name].append(time.perf_counter() - started)
        rows, segments = (statistics.median(times[name]) * 1e3 for name in devices)
        print(f"{np.dtype(dtype).name} ({n}, {width}): first call rows {firsts['rows'] * 1e3:5.0f} ms, segments "
              f"{firsts['segments'] * 1e3:5.0f} ms | resident rows {rows:6.1f} ms, segments {segments:6.1f} ms "
              f"({segments / rows:.2f}x)", flush=True)


if __name__ == "__main__":
    main()
