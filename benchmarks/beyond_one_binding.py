"""Show inputs beyond one binding and one buffer, up to DirectML's largest, on a real GPU.

    python benchmarks/beyond_one_binding.py          # the GPU's own limits, inputs up to 16 GiB
    python benchmarks/beyond_one_binding.py --small  # the same cases at 1/4096 scale, with the
                                                     # limits shrunk to match (runs on lavapipe)

Cases, each answer checked against NumPy (maxima planted in different pieces so that ties
straddle them), each with its GPU time:

1. argmax / argmin over all 1.2e9 FLOAT32 elements (4.8 GB): pieces of the reduced axis, merged;
2. argmax over (16000, 75000) rows of random data, beside (7000, 75000) rows that one binding
   holds whole, in the same process: what pieces cost per byte; then HARDMAX over those rows;
3. the same 4.8 GB as a transposed (20000, 60000) view reduced over both axes: the outermost
   axis in memory is the last reduced one, so pieces map their indices onto the whole's;
4. DirectML's largest tensor, (2, 2^31 - 1) FLOAT32 (16 GiB): one row is beyond a binding and a
   buffer, so each row is a group of pieces and a merge; argmax, argmin, then HARDMAX (whose
   16 GiB output is written by a merge per output window).
"""

import argparse
import time

import numpy as np

import dmlgpu
from dmlgpu.bench import warm_up
from dmlgpu.desc import ActivationHardmax1OperatorDesc, ArgMaxOperatorDesc, ArgMinOperatorDesc, TensorDesc
from dmlgpu.bench.gpu_timers import operator_gpu_times


def timed(op, source, out, repeats=5) -> float:
    """The median GPU time, after half a second of reads: the host-side checks before it
    leave the GPU idle long enough for its clock to drop (an unwarmed first run of
    (7000, 75000) rows measured 560 GB/s, a warmed one 2780)."""
    warm_up(op.device.runner, 256 << 20, 0.5)
    return float(np.median(operator_gpu_times(op, source, out, repeats)))


def report(name: str, ok: bool, op, seconds: float, nbytes: int) -> bool:
    s = op.schedule
    print(f"{name}: {'ok' if ok else 'WRONG'}; {len(s.pieces) - s.merges} pieces, {s.merges} merges; "
          f"{seconds * 1e3:.2f} ms, {nbytes / seconds / 1e9:.1f} GB/s", flush=True)
    return ok


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--small", action="store_true", help="1/4096 scale with limits shrunk to match")
    args = parser.parse_args()
    scale = 4096 if args.small else 1
    smaller = {"max_storage_binding": 1 << 19, "max_buffer": 1 << 20} if args.small else None
    device = dmlgpu.Device(smaller=smaller)
    caps = device.runner.capabilities
    print(f"{device.name}: binds {caps.max_storage_binding} B, buffers of {caps.max_buffer} B", flush=True)
    ok = True

    # 1. all axes
    n = 1_200_000_000 // scale
    x = np.zeros(n, np.float32)
    x[[7, n // 2, n - 1]] = 5.0  # equal maxima in the first, a middle and the last piece
    x[n // 3 * 2 + 1] = -1.0
    start = time.perf_counter()
    flat = device.upload(x)
    print(f"uploaded {x.nbytes / 1e9:.2f} GB in {len(flat._buffers)} buffers, {time.perf_counter() - start:.1f} s")
    for cls, direction, want in ((ArgMaxOperatorDesc, "increasing", 7), (ArgMaxOperatorDesc, "decreasing", n - 1),
                                 (ArgMinOperatorDesc, "increasing", n // 3 * 2 + 1)):
        op = device.compile(cls(TensorDesc("FLOAT32", (n,)), TensorDesc("UINT32", (1,)), [0], direction))
        out = op.run(flat)
        got = int(out.numpy()[0])
        ok &= report(f"{cls.__name__[:6]} all axes {direction:10} = {got} (want {want})", got == want,
                     op, timed(op, flat, out), x.nbytes)

    # 3. a transposed view of the same memory, both axes reduced
    rows_t, cols_t = 20000 // (64 if args.small else 1), 60000 // (64 if args.small else 1)
    view = TensorDesc("FLOAT32", (rows_t, cols_t), strides=(1, rows_t))
    y = x[:rows_t * cols_t].reshape(cols_t, rows_t).T
    flat.release()
    flat = device.empty(view)
    flat.write(x[:rows_t * cols_t])  # the same bytes, in the view's buffers
    for cls, direction in ((ArgMaxOperatorDesc, "increasing"), (ArgMaxOperatorDesc, "decreasing")):
        op = device.compile(cls(view, TensorDesc("UINT32", (1, 1)), [0, 1], direction))
        out = op.run(flat)
        got = int(out.numpy().ravel()[0])
        hits = np.flatnonzero(y.ravel() == 5.0)  # row-major positions in the view
        want = int(hits[0] if direction == "increasing" else hits[-1])
        ok &= report(f"argmax transposed {direction:10} = {got} (want {want})", got == want, op,
                     timed(op, flat, out), 4 * rows_t * cols_t)
    flat.release()
    del x

    # 2. rows, pieced and whole, random data
    cols = 75000 // (16 if args.small else 1)
    rng = np.random.default_rng(1)
    for rows in (7000 // (256 if args.small else 1), 16000 // (256 if args.small else 1)):
        y = rng.standard_normal((rows, cols), dtype=np.float32)
        grid = device.upload(y)
        op = device.compile(ArgMaxOperatorDesc(TensorDesc("FLOAT32", (rows, cols)), axes=[1]))
        out = op.run(grid)
        ok &= report(f"argmax rows ({rows}, {cols})", np.array_equal(out.numpy().ravel(), np.argmax(y, axis=1)),
                     op, timed(op, grid, out), y.nbytes)
    hard = device.compile(ActivationHardmax1OperatorDesc(TensorDesc("FLOAT32", (rows, cols)), axes=[1]))
    out = hard.run(grid)
    got = out.numpy()
    good = bool((got.sum(axis=1) == 1).all() and np.array_equal(np.argmax(got, axis=1), np.argmax(y, axis=1)))
    ok &= report(f"hardmax rows ({rows}, {cols}), output in {len(out._buffers)} buffers", good, hard,
                 timed(hard, grid, out, 3), 2 * y.nbytes)
    grid.release()
    out.release()
    del y, got

    # 4. DirectML's largest tensor: two rows of 2^31 - 1 elements
    m = (2**31 - 1) // scale
    big = np.zeros((2, m), np.float32)
    big[0, [5, m - 1]] = 3.0  # a tie between the first and the last piece of row 0
    big[1, m // 2 + 7] = 2.0
    big[0, m - 2] = big[1, 123_457 // scale] = -1.0
    desc = TensorDesc("FLOAT32", (2, m))
    start = time.perf_counter()
    source = device.upload(big)
    print(f"uploaded {big.nbytes / 2**30:.2f} GiB in {len(source._buffers)} buffers, {time.perf_counter() - start:.1f} s")
    for cls, direction, want in ((ArgMaxOperatorDesc, "increasing", [5, m // 2 + 7]),
                                 (ArgMaxOperatorDesc, "decreasing", [m - 1, m // 2 + 7]),
                                 (ArgMinOperatorDesc, "increasing", [m - 2, 123_457 // scale])):
        op = device.compile(cls(desc, TensorDesc("UINT32", (2, 1)), [1], direction))
        out = op.run(source)
        got = out.numpy().ravel().tolist()
        ok &= report(f"{cls.__name__[:6]} (2, {m}) {direction:10} = {got} (want {want})", got == want,
                     op, timed(op, source, out), big.nbytes)
    hard = device.compile(ActivationHardmax1OperatorDesc(desc, axes=[1]))
    out = hard.run(source)
    got = out.numpy()
    ones = [np.flatnonzero(row).tolist() for row in got]
    good = ones == [[5], [m // 2 + 7]] and bool((got[0, [5]] == 1.0).all())
    ok &= report(f"hardmax (2, {m}): ones at {ones}, output in {len(out._buffers)} buffers", good, hard,
                 timed(hard, source, out, 3), 2 * big.nbytes)
    print("all answers right" if ok else "SOME ANSWERS WRONG")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
