"""Which part of ``np.asarray(dmlgpu.numpy.argmax(t))`` costs over ``argmax(t).numpy()``: the
doors to one small call (llm_argmax's shape), interleaved in one process, p50/p99 of 3,000 each.

    python benchmarks/studies/numpy_doors.py
"""

import time

import numpy as np

import dmlgpu
import dmlgpu.numpy as dnp


def main() -> int:
    x = np.random.default_rng(0).standard_normal((1, 151936)).astype(np.float32)
    t = dmlgpu.default_device().upload(x)
    doors = {
        "argmax(t).numpy() [UINT32, NaN ignored]": lambda: dmlgpu.argmax(t, 1).numpy(),
        "argmax(t, intp, propagate).numpy()":
            lambda: dmlgpu.argmax(t, 1, output_data_type=np.intp, nan_mode="propagate").numpy(),
        "dnp.argmax(t, axis=1).numpy()": lambda: dnp.argmax(t, axis=1).numpy(),
        "np.asarray(dnp.argmax(t, axis=1))": lambda: np.asarray(dnp.argmax(t, axis=1)),
        "dnp.argmax(x, axis=1)": lambda: dnp.argmax(x, axis=1),
        "argmax(x, 1)": lambda: dmlgpu.argmax(x, 1),
    }
    for fn in doors.values():
        for _ in range(300):
            fn()
    walls: dict[str, list[float]] = {name: [] for name in doors}
    for _ in range(3000):
        for name, fn in doors.items():
            began = time.perf_counter()
            fn()
            walls[name].append(time.perf_counter() - began)
    for name, w in walls.items():
        print(f"{name:42s} p50 {1e6 * np.median(w):6.1f} us  p99 {1e6 * np.percentile(w, 99):6.1f} us")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
