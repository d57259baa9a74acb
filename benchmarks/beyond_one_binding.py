"""Show an input above 4 GiB (more than one binding and one buffer) on a real GPU.

    python benchmarks/beyond_one_binding.py

Argmax and argmin over all 1.2e9 FLOAT32 elements (4.8 GB: pieces of the reduced axis,
merged with the tie rule), argmax over the rows of the same memory as (16000, 75000)
(pieces of a kept axis), and HARDMAX over those rows (the output cut too). Maxima are
planted in different pieces so that ties straddle them; every answer is checked against
NumPy, and the GPU time of each is printed.
"""

import time

import numpy as np

import dmlgpu
from dmlgpu.desc import ActivationHardmax1OperatorDesc, ArgMaxOperatorDesc, ArgMinOperatorDesc, TensorDesc

ROWS, COLS = 16000, 75000
N = ROWS * COLS


def main() -> None:
    device = dmlgpu.Device()
    caps = device.runner.capabilities
    print(f"{device.name}: binds {caps.max_storage_binding} B, buffers of {caps.max_buffer} B")
    x = np.zeros(N, np.float32)
    x[[7, N // 2, N - 1]] = 5.0  # equal maxima in the first, a middle and the last piece
    x[N // 3 * 2 + 1] = -1.0
    start = time.perf_counter()
    flat = device.upload(x)
    print(f"uploaded {x.nbytes / 1e9:.1f} GB in {len(flat._buffers)} buffers, {time.perf_counter() - start:.1f} s")
    for cls, direction, want in ((ArgMaxOperatorDesc, "increasing", 7), (ArgMaxOperatorDesc, "decreasing", N - 1),
                                 (ArgMinOperatorDesc, "increasing", N // 3 * 2 + 1)):
        op = device.compile(cls(TensorDesc("FLOAT32", (N,)), TensorDesc("UINT32", (1,)), [0], direction))
        out = op.run(flat)
        got = int(out.numpy()[0])
        seconds = float(np.median(op.gpu_times(flat, out, 5)))
        print(f"{cls.__name__[:6]} all axes {direction:10}: {got} (want {want}) "
              f"{'ok' if got == want else 'WRONG'}; {len(op.schedule.pieces)} pieces; "
              f"{seconds * 1e3:.2f} ms, {x.nbytes / seconds / 1e9:.0f} GB/s")
    rows = TensorDesc("FLOAT32", (ROWS, COLS))
    grid = device.empty(rows)
    grid.write(x)  # the same bytes, as rows
    y = x.reshape(ROWS, COLS)
    op = device.compile(ArgMaxOperatorDesc(rows, axes=[1]))
    out = op.run(grid)
    ok = np.array_equal(out.numpy().ravel(), np.argmax(y, axis=1))
    seconds = float(np.median(op.gpu_times(grid, out, 5)))
    print(f"argmax rows (16000, 75000): {'ok' if ok else 'WRONG'}; {len(op.schedule.pieces)} pieces; "
          f"{seconds * 1e3:.2f} ms, {x.nbytes / seconds / 1e9:.0f} GB/s")
    hard = device.compile(ActivationHardmax1OperatorDesc(rows, axes=[1]))
    out = hard.run(grid)
    got = out.numpy()
    ok = bool((got.sum(axis=1) == 1).all() and np.array_equal(np.argmax(got, axis=1), np.argmax(y, axis=1)))
    seconds = float(np.median(hard.gpu_times(grid, out, 3)))
    print(f"hardmax rows (16000, 75000): {'ok' if ok else 'WRONG'}; {len(hard.schedule.pieces)} pieces, "
          f"output in {len(out._buffers)} buffers; {seconds * 1e3:.2f} ms, {2 * x.nbytes / seconds / 1e9:.0f} GB/s")


if __name__ == "__main__":
    main()
