"""``dmlgpu.dask.numpy`` against ``dmlgpu.dask`` on the same data: the same graph, task for
task, and the same time (issue 28: the NumPy-flavoured surface costs nothing more).

    python benchmarks/dask_numpy_parity.py                 # 64 MiB of float32 in 4 MiB chunks
    python benchmarks/dask_numpy_parity.py --repeats 21 --scheduler sync

The array is ``benchmarks/dask_gpus.py --small``'s: (1024, 16384) float32 in (256, 4096) chunks
(4 MiB each, 16 of them), reduced over axis 0, so every output's slice is split among chunks
and their partials are merged. It is made and persisted in this process before anything is
timed; chunks run on the default device under Dask's threaded scheduler (``--scheduler``).
Three reductions, each computed once untimed (operators compiled), then in turn
``--repeats`` times (interleaved, each first in turn, so that drift touches all alike):

- ``dmlgpu.dask.argmax(x, 0)``: DirectML's defaults (UINT32, NaN ignored);
- ``dmlgpu.dask.argmax(x, 0, nan_mode="propagate", output_data_type="int64")``: the operator
  that ``dmlgpu.dask.numpy.argmax``'s chunks run;
- ``dmlgpu.dask.numpy.argmax(x, 0)``.

It prints each graph's size (``len(graph)``: the numpy one must equal ``dmlgpu.dask``'s) and
the median wall time of each, with the numpy one's over each other's. The answers are checked
against ``numpy.argmax``. On lavapipe the times move by several percent from run to run.
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1024)
    parser.add_argument("--cols", type=int, default=16384)
    parser.add_argument("--chunks", default="256,4096")
    parser.add_argument("--repeats", type=int, default=11)
    parser.add_argument("--scheduler", default="threads")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)

    import dask
    import dask.array as da

    import dmlgpu
    import dmlgpu.dask as dd
    import dmlgpu.dask.numpy as ddn

    chunks = tuple(int(n) for n in args.chunks.split(","))
    x = da.random.default_rng(args.seed).random((args.rows, args.cols), dtype=np.float32, chunks=chunks)
    with dask.config.set(scheduler=args.scheduler):
        x = x.persist()
        want = np.argmax(x.compute(), axis=0)
        runs = {
            "dmlgpu.dask.argmax(x, 0)": lambda: dd.argmax(x, 0),
            "dmlgpu.dask.argmax(x, 0, propagate, int64)": lambda: dd.argmax(
                x, 0, nan_mode="propagate", output_data_type="int64"),
            "dmlgpu.dask.numpy.argmax(x, 0)": lambda: ddn.argmax(x, 0),
        }
        print(f"{dmlgpu.default_device().name}: argmax over axis 0 of float32 {x.shape}, chunks {chunks} "
              f"({x.npartitions} of {chunks[0] * chunks[1] * 4 / 2**20:g} MiB), scheduler {args.scheduler}")
        times: dict[str, list[float]] = {name: [] for name in runs}
        for name, build in runs.items():
            result = build().compute()
            assert np.array_equal(result.reshape(want.shape), want), name
        order = list(runs.items())
        for repeat in range(args.repeats):
            for name, build in order[repeat % 3:] + order[:repeat % 3]:  # each first in turn
                start = time.perf_counter()
                build().compute()
                times[name].append(time.perf_counter() - start)
    sizes = {name: len(build().__dask_graph__()) for name, build in runs.items()}
    medians = {name: statistics.median(t) for name, t in times.items()}
    numpy_name = "dmlgpu.dask.numpy.argmax(x, 0)"
    for name in runs:
        print(f"  {name:45s} graph {sizes[name]:5d} tasks   median {medians[name] * 1e3:8.1f} ms   "
              f"numpy's / this {medians[numpy_name] / medians[name]:6.3f}")
    same = sizes[numpy_name] == sizes["dmlgpu.dask.argmax(x, 0)"]
    print(f"  graph sizes equal: {same}")
    return 0 if same else 1


if __name__ == "__main__":
    raise SystemExit(main())
