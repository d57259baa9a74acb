"""dmlgpu.dask on every GPU of a host: one worker process per GPU, against one GPU, against
merely uploading the same chunks, and against Dask's own NumPy argmax on the same cluster.

    python benchmarks/dask_gpus.py                    # 32 GiB of FLOAT32 in 256 MiB chunks, all GPUs
    python benchmarks/dask_gpus.py --json out.json    # the same, results also as JSON
    python benchmarks/dask_gpus.py --small            # 64 MiB in 4 MiB chunks (runs on lavapipe)
    python benchmarks/dask_gpus.py --small --adapters 0,0   # two workers on one adapter

The array, (rows, cols) FLOAT32 reduced over axis 0 (a time axis), is larger than one GPU's
storage binding (2 GiB on an H200), large enough that the fixed cost of a Dask compute (tens
of milliseconds) stays small beside the transfers, and chunked along both axes as a user would, so chunks are
split along the reduced axis and their partials are merged. It is generated inside the
workers (each block by NumPy's generator, seeded with ``--seed`` and the block's index), the
blocks dealt to the workers in turn so that each holds an equal share, before anything is
timed: the client never ships it and generation is not timed. For 1 GPU and then for all of them (a fresh
cluster each, from ``dmlgpu.dask.local_cluster``), each measurement runs once untimed
(device opened, pipelines compiled, buffers allocated) and then ``--repeats`` times:

- ``dmlgpu``: ``dmlgpu.dask.argmax(x, 0).compute()``;
- ``upload``: every chunk uploaded with ``device.upload`` on its worker and waited for (a
  4-byte read), nothing else: the rate the reduction can at most reach through these
  transfers;
- ``dask-numpy``: ``x.argmax(axis=0).compute()``, Dask's NumPy argmax on the same workers
  (``--threads`` threads each; ``--cpu-threads N`` adds a run on one worker of N threads).

``--numpy-surface`` (issue 28: the NumPy-flavoured surface costs nothing more) adds
``dmlgpu.dask.numpy.argmax(x, 0).compute()`` (``dmlgpu-np``) and
``dmlgpu.dask.argmax(x, 0, nan_mode="propagate", output_data_type="int64")`` (``dmlgpu-i64``:
the operator ``dmlgpu-np``'s chunks run and its result type, so that the two differ only by
``dmlgpu.dask.numpy``'s Python), and times these two and ``dmlgpu`` interleaved, each round in
a random order, with the workers' task stream recorded throughout: each line then also gives
the median seconds the workers spent in that run's tasks (on lavapipe the GPU is the host's
CPU, so this is the GPU's time and the chunk functions' host work) and the graph's size, and
the last lines the ratios. Each surface dispatches one operator a chunk and merges with
NumPy, so their GPU time differs only by the chunk's operator: its GPU time (timestamp
queries, ``--repeats`` runs of each interleaved, on the client's default device) is printed
for ``dmlgpu``'s (UINT32, NaN ignored) and ``dmlgpu.dask.numpy``'s (UINT32, NaN propagating).

Per GPU: the bytes of the chunks its worker holds over the median wall time. Each line says
the median, the GB/s in total and per GPU, and how many transfers between workers one more
run made (the JSON adds the seconds each worker spent in tasks); the dmlgpu answer is checked
against Dask's NumPy one. The last lines give the targets of issue 11: 2 GPUs >= 1.8x one,
dmlgpu >= 80% of the upload rate. Two threads a worker (the default, as in ``local_cluster``)
let a worker upload one chunk while it finishes another; ``--threads 1`` shows the difference.
"""

from __future__ import annotations

import argparse
import bisect
import json
import os
import platform
import statistics
import sys
import time

import numpy as np


def upload_only(block, block_info=None):
    """Upload a chunk to this worker's device and wait for it; a (1, 1) placeholder back."""
    import dmlgpu

    tensor = dmlgpu.default_device().upload(block)
    tensor.device.runner.transfers.read(tensor._buffers[-1], 4)  # returns once the queue has run the copies
    tensor.release()
    return np.zeros((1,) * block.ndim, np.float32)


def worker_adapters(client) -> dict:
    """Worker address -> "worker name: DMLGPU_ADAPTER adapter name", opening each worker's device."""
    import dmlgpu

    def which():
        return f"{os.environ.get('DMLGPU_ADAPTER', '')} {dmlgpu.default_device().name}"

    workers = client.scheduler_info()["workers"]
    futures = {w: client.submit(which, workers=[w], pure=False, allow_other_workers=False) for w in workers}
    named = {w: f"{workers[w]['name']}: {f.result()}" for w, f in futures.items()}
    return dict(sorted(named.items(), key=lambda item: item[1]))


def random_block(seed: int, index: tuple, shape: tuple) -> np.ndarray:
    """Uniform FLOAT32 in [0, 1), seeded by ``seed`` and the block's index; filled by a few
    threads (NumPy lets go of the GIL while it fills), as a worker has one thread of its own."""
    from concurrent.futures import ThreadPoolExecutor

    out = np.empty(shape, np.float32)
    parts = [p for p in np.array_split(np.arange(shape[0]), min(8, os.cpu_count() or 1)) if p.size]
    seeds = np.random.SeedSequence([seed, *index]).spawn(len(parts))

    def fill(i: int) -> None:
        np.random.default_rng(seeds[i]).random(dtype=np.float32, out=out[parts[i][0]:parts[i][-1] + 1])

    with ThreadPoolExecutor(len(parts)) as pool:
        list(pool.map(fill, range(len(parts))))
    return out


def generate(client, shape, chunks, seed: int):
    """The array, its blocks made on the workers in turn so that each holds an equal share
    (the scheduler does not promise that for a few dozen chunks), and the bytes each holds."""
    import dask
    import dask.array as da
    from distributed import wait

    workers = sorted(client.scheduler_info()["workers"])
    starts = [range(0, n, c) for n, c in zip(shape, chunks)]
    grid = np.empty([len(s) for s in starts], object)
    held = dict.fromkeys(workers, 0)
    futures = []
    for k, index in enumerate(np.ndindex(*grid.shape)):
        block_shape = tuple(min(c, n - s[i]) for c, n, s, i in zip(chunks, shape, starts, index))
        worker = workers[k % len(workers)]
        future = client.submit(random_block, seed, index, block_shape, workers=[worker],
                               allow_other_workers=False, pure=False)
        futures.append(future)
        grid[index] = da.from_delayed(dask.delayed(future), block_shape, np.float32)
        held[worker] += 4 * int(np.prod(block_shape))
    wait(futures)
    return da.block(grid.tolist()), held, futures


def timed(fn, repeats: int) -> tuple[list[float], object]:
    fn()  # untimed: devices opened, pipelines compiled, buffers allocated, GPU clocks up
    samples, result = [], None
    for _ in range(repeats):
        start = time.perf_counter()
        result = fn()
        samples.append(time.perf_counter() - start)
    return samples, result


def timed_together(runs: dict, repeats: int, client, seed: int) -> dict:
    """``runs`` (name -> function) each once untimed, then ``repeats`` rounds of all of them,
    each round in a random order, under one task stream: name -> (wall seconds, seconds the
    workers spent in its tasks, last result)."""
    from distributed import get_task_stream

    for fn in runs.values():
        fn()
    rng = np.random.default_rng(seed)
    windows: list[tuple[str, float, float]] = []
    walls: dict[str, list[float]] = {name: [] for name in runs}
    results = {}
    with get_task_stream(client) as stream:
        for _ in range(repeats):
            for name in rng.permutation(list(runs)).tolist():
                begin, start = time.time(), time.perf_counter()
                results[name] = runs[name]()
                walls[name].append(time.perf_counter() - start)
                windows.append((name, begin, time.time()))
    begins = [b for _, b, _ in windows]
    tasks = [0.0] * len(windows)  # each call's tasks ran inside its window: compute() waits for them
    for task in stream.data:
        for s in task["startstops"]:
            if s["action"] == "compute":
                tasks[bisect.bisect_right(begins, s["start"]) - 1] += s["stop"] - s["start"]
    return {name: (walls[name], [t for (n, _, _), t in zip(windows, tasks) if n == name], results[name])
            for name in runs}


def surface_runs(x) -> tuple[dict, dict]:
    """``--numpy-surface``'s runs: name -> compute function, and name -> the graph's size."""
    import dmlgpu.dask as dd
    import dmlgpu.dask.numpy as ddn

    graphs = {"dmlgpu": lambda: dd.argmax(x, 0),
              "dmlgpu-i64": lambda: dd.argmax(x, 0, nan_mode="propagate", output_data_type="int64"),
              "dmlgpu-np": lambda: ddn.argmax(x, 0)}
    return ({name: (lambda g=g: g().compute()) for name, g in graphs.items()},
            {name: len(g().__dask_graph__()) for name, g in graphs.items()})


def chunk_gpu_times(chunks, repeats: int, seed: int) -> dict:
    """GPU seconds (median of ``repeats``, interleaved) of the operator each surface runs on a
    chunk of ``chunks``: name -> seconds, on the default device."""
    import dmlgpu
    from dmlgpu import ArgMaxOperatorDesc, TensorDesc
    from dmlgpu.bench.gpu_timers import operator_gpu_times

    device = dmlgpu.default_device()
    source = device.upload(random_block(seed, (0, 0), chunks))
    out_shape = (1,) + tuple(chunks[1:])
    ops = {}
    for name, out_type, nan_mode in (("dmlgpu", "UINT32", "ignore"), ("dmlgpu-np", "UINT32", "propagate")):
        desc = ArgMaxOperatorDesc(TensorDesc("FLOAT32", chunks), TensorDesc(out_type, out_shape), axes=[0])
        compiled = device.compile(desc, nan_mode=nan_mode)
        ops[name] = (compiled, device.empty(compiled.output_desc))
        operator_gpu_times(compiled, source, ops[name][1], 2)  # warm
    times: dict[str, list[float]] = {name: [] for name in ops}
    for r in range(repeats):
        for name in list(ops)[r % 2:] + list(ops)[:r % 2]:
            times[name] += operator_gpu_times(ops[name][0], source, ops[name][1], 1).tolist()
    return {name: statistics.median(t) for name, t in times.items()}


def measure(adapters: list[int], args, shape, chunks) -> list[dict]:
    from distributed import Client, get_task_stream

    import dmlgpu.dask as dd

    rows = []
    with dd.local_cluster(adapters, threads_per_worker=args.threads) as cluster, Client(cluster) as client:
        pinned = worker_adapters(client)
        x, held, futures = generate(client, shape, chunks, args.seed)  # the futures hold the blocks
        print("workers: " + "; ".join(pinned.values()), flush=True)
        gpus = {w: label.split(":")[0] for w, label in pinned.items()}
        runs = {
            "dmlgpu": lambda: dd.argmax(x, 0).compute(),
            "upload": lambda: x.map_blocks(upload_only, chunks=tuple((1,) * len(c) for c in x.chunks),
                                           dtype=np.float32).compute(),
            "dask-numpy": lambda: x.argmax(axis=0).compute(),
        }
        answers, together, sizes = {}, {}, {}
        if args.numpy_surface:
            surface, sizes = surface_runs(x)
            together = timed_together(surface, args.repeats, client, args.seed)
            runs = surface | {name: fn for name, fn in runs.items() if name not in surface}
        for name, fn in runs.items():
            if name in together:
                samples, task_s, answers[name] = together[name]
            else:
                (samples, answers[name]), task_s = timed(fn, args.repeats), None
            median = statistics.median(samples)
            with get_task_stream(client) as stream:  # one more run, to see where its time went
                fn()
            busy = {w: 0.0 for w in pinned}
            for task in stream.data:
                busy[task["worker"]] = busy.get(task["worker"], 0.0) + sum(
                    s["stop"] - s["start"] for s in task["startstops"] if s["action"] == "compute")
            rows.append({"measure": name, "gpus": len(adapters), "workers": len(pinned),
                         "threads_per_worker": args.threads, "seconds": median, "samples_s": samples,
                         "gbps_total": x.nbytes / median / 1e9,
                         "gbps_per_gpu": {gpus[w]: held.get(w, 0) / median / 1e9 for w in pinned},
                         "bytes_per_worker": {gpus[w]: held.get(w, 0) for w in pinned},
                         # seconds each worker spent in tasks, and transfers between workers
                         "busy_s_per_worker": {gpus[w]: busy[w] for w in pinned},
                         "transfers": sum(s["action"] == "transfer" for t in stream.data for s in t["startstops"])})
            if task_s is not None:
                rows[-1].update(task_s=task_s, task_s_median=statistics.median(task_s), graph_tasks=sizes[name])
        for row in rows:
            if row["measure"].startswith("dmlgpu"):
                row["correct"] = bool(np.array_equal(answers[row["measure"]].ravel(), answers["dask-numpy"].ravel()))
    if args.cpu_threads and len(adapters) == 1:
        rows.append(cpu_baseline(args, shape, chunks))
    return rows


def cpu_baseline(args, shape, chunks) -> dict:
    """Dask's NumPy argmax on one worker process with ``--cpu-threads`` threads."""
    import dask.array as da
    from distributed import Client, LocalCluster, wait

    with LocalCluster(n_workers=1, threads_per_worker=args.cpu_threads, processes=True, dashboard_address=":0",
                      silence_logs=40) as cluster, Client(cluster):
        x = da.random.default_rng(args.seed).random(shape, dtype=np.float32, chunks=chunks).persist()
        wait(x)
        samples, _ = timed(lambda: x.argmax(axis=0).compute(), args.repeats)
    median = statistics.median(samples)
    return {"measure": "dask-numpy", "gpus": 0, "workers": 1, "threads_per_worker": args.cpu_threads,
            "seconds": median, "samples_s": samples, "gbps_total": x.nbytes / median / 1e9}


def line(row: dict) -> str:
    who = f"gpus={row['gpus']}" if row["gpus"] else "cpu   "
    text = (f"{who} {row['measure']:<10} {row['workers']} worker(s) x {row['threads_per_worker']} thread(s)  "
            f"{row['seconds'] * 1e3:9.1f} ms  {row['gbps_total']:8.2f} GB/s total")
    if "gbps_per_gpu" in row:
        label = "per worker" if row["measure"] == "dask-numpy" else "per GPU"
        text += f"  {label}: " + ", ".join(f"{k} {v:.2f}" for k, v in row["gbps_per_gpu"].items())
    if "transfers" in row:
        text += f"  ({row['transfers']} transfers)"
    if "task_s" in row:
        text += f"  tasks {row['task_s_median'] * 1e3:.1f} ms, graph {row['graph_tasks']} tasks"
    if "correct" in row:
        text += "  answer " + ("matches Dask's NumPy argmax" if row["correct"] else "DIFFERS from Dask's NumPy argmax")
    return text


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--small", action="store_true", help="64 MiB in 4 MiB chunks: a smoke run for lavapipe")
    parser.add_argument("--gib", type=float, help="size of the array in GiB (default 32; 1/16 with --small)")
    parser.add_argument("--chunk-mib", type=float, help="bytes per chunk in MiB (default 256; 4 with --small)")
    parser.add_argument("--cols", type=int, help="columns (outputs) of the array (default 262144; 16384 with --small)")
    parser.add_argument("--adapters", help="comma-separated adapter indices (default: every GPU, see dmlgpu info)")
    parser.add_argument("--threads", type=int, default=2, help="threads per worker (default 2, as local_cluster)")
    parser.add_argument("--cpu-threads", type=int, default=0,
                        help="also time Dask's NumPy argmax on one worker of this many threads (default: skip)")
    parser.add_argument("--repeats", type=int, default=3, help="timed runs per measurement (median reported)")
    parser.add_argument("--numpy-surface", action="store_true",
                        help="also dmlgpu.dask.numpy.argmax and dmlgpu.dask.argmax with its operator, interleaved "
                             "with dmlgpu (see the docstring)")
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--json", metavar="PATH", help="write the results as JSON")
    args = parser.parse_args()

    import dmlgpu
    import dmlgpu.dask as dd
    from dmlgpu.runtime.adapters import adapters as all_adapters

    gib = args.gib or (1 / 16 if args.small else 32)
    chunk_bytes = int((args.chunk_mib or (4 if args.small else 256)) * 2**20)
    cols = args.cols or (16384 if args.small else 262144)
    rows = int(gib * 2**30) // (4 * cols)
    chunk_cols = min(cols, 4096 if args.small else 65536)
    chunk_rows = max(1, min(rows, chunk_bytes // (4 * chunk_cols)))
    shape, chunks = (rows, cols), (chunk_rows, chunk_cols)
    adapters = [int(a) for a in args.adapters.split(",")] if args.adapters else dd.gpu_adapters()
    listed = all_adapters()
    nbytes = rows * cols * 4
    nchunks = -(-rows // chunk_rows) * -(-cols // chunk_cols)
    print(f"argmax over axis 0 of FLOAT32 {shape} ({nbytes / 2**30:.2f} GiB), chunks {chunks} "
          f"({chunk_rows * chunk_cols * 4 / 2**20:.0f} MiB, {nchunks} of them); adapters: "
          + ", ".join(f"#{a} {listed[a].info['device']}" for a in adapters), flush=True)
    counts = [1, len(adapters)] if len(adapters) > 1 else [1]
    results = []
    for n in counts:
        for row in measure(adapters[:n], args, shape, chunks):
            results.append(row)
            print(line(row), flush=True)
    dml = {r["gpus"]: r for r in results if r["measure"] == "dmlgpu"}
    up = {r["gpus"]: r for r in results if r["measure"] == "upload"}
    summary = {}
    if len(counts) > 1:
        n = counts[-1]
        summary["scaling"] = dml[n]["gbps_total"] / dml[1]["gbps_total"]
        print(f"{n} GPUs: {summary['scaling']:.2f}x one GPU (target >= 1.8x)")
    for n in counts:
        summary[f"of_upload_{n}"] = dml[n]["gbps_total"] / up[n]["gbps_total"]
        print(f"gpus={n}: dmlgpu at {summary[f'of_upload_{n}']:.0%} of merely uploading the chunks (target >= 80%)")
    for n in counts if args.numpy_surface else []:
        row = {r["measure"]: r for r in results if r["gpus"] == n}
        for base in ("dmlgpu", "dmlgpu-i64"):
            summary[f"numpy_over_{base}_{n}"] = {
                "wall": row["dmlgpu-np"]["seconds"] / row[base]["seconds"],
                "tasks": row["dmlgpu-np"]["task_s_median"] / row[base]["task_s_median"],
                "graph_equal": row["dmlgpu-np"]["graph_tasks"] == row[base]["graph_tasks"]}
            print(f"gpus={n}: dmlgpu.dask.numpy over {base}: wall x{summary[f'numpy_over_{base}_{n}']['wall']:.3f}, "
                  f"task time x{summary[f'numpy_over_{base}_{n}']['tasks']:.3f}, graph sizes "
                  + ("equal" if summary[f"numpy_over_{base}_{n}"]["graph_equal"] else "DIFFER") + " (target: equal, within 2%)")
    if args.numpy_surface:
        gpu = summary["chunk_gpu_s"] = chunk_gpu_times(chunks, max(args.repeats, 21), args.seed)
        print(f"GPU time of a chunk's operator: dmlgpu {gpu['dmlgpu'] * 1e3:.3f} ms, dmlgpu.dask.numpy "
              f"{gpu['dmlgpu-np'] * 1e3:.3f} ms (x{gpu['dmlgpu-np'] / gpu['dmlgpu']:.3f}; target within 2%)")
    ok = all(r["correct"] for r in results if "correct" in r)
    if args.json:
        report = {"config": {"shape": shape, "chunks": chunks, "dtype": "float32", "axes": [0], "bytes": nbytes,
                             "adapters": adapters, "adapter_names": [listed[a].info["device"] for a in adapters],
                             "threads_per_worker": args.threads, "repeats": args.repeats, "seed": args.seed},
                  "environment": {"python": platform.python_version(), "host": platform.node(),
                                  "dmlgpu": dmlgpu.__version__, "commit": os.environ.get("DMLGPU_COMMIT")},
                  "results": results, "summary": summary, "correct": ok}
        with open(args.json, "w") as f:
            json.dump(report, f, indent=2)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
