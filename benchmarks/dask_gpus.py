"""dmlgpu.dask on every GPU of a host: one worker process per GPU, against one GPU, against
merely uploading the same chunks, and against Dask's own NumPy argmax on the same cluster,
in rounds, with where the time went.

    python benchmarks/dask_gpus.py                    # 8 GiB of FLOAT32 in 256 MiB chunks, all GPUs
    python benchmarks/dask_gpus.py --json out.json    # the same, results also as JSON
    python benchmarks/dask_gpus.py --small            # 256 MiB in 32 MiB chunks (runs on lavapipe)
    python benchmarks/dask_gpus.py --small --adapters 0,0   # two workers on one adapter
    python benchmarks/dask_gpus.py --nap-us 0         # waits blocking in wgpu's poll (before issue 49)
    python benchmarks/dask_gpus.py --bisect           # also the chunk task's reduction alone, and without merges

The array, (rows, cols) FLOAT32 reduced over axis 0 (a time axis), is larger than one GPU's
storage binding (2 GiB on an H200), large enough that the fixed cost of a Dask compute (tens
of milliseconds) stays small beside the transfers, and chunked along both axes as a user would,
so chunks are split along the reduced axis and their partials are merged. It is generated
inside the workers (each block by NumPy's generator, seeded with ``--seed`` and the block's
index), the blocks dealt to the workers in turn so that each holds an equal share (a column of
blocks on one worker), before anything is timed: the client never ships it and generation is
not timed. For 1 GPU and then for all of them (a fresh cluster each, from
``dmlgpu.dask.local_cluster``), each measurement runs once untimed (device opened, pipelines
compiled, buffers allocated), then ``--rounds`` rounds of all of them, each round in a random
order, so that a drift of the machine touches each alike (issue 49: the upload-only figure of
two GPUs moved by 40% between runs taken one measurement after another):

- ``dmlgpu``: ``dmlgpu.dask.argmax(x, 0).compute()``;
- ``upload``: every chunk uploaded with ``device.upload`` on its worker and waited for (a
  4-byte read), nothing else: the rate the reduction can at most reach through these
  transfers;
- ``dask-numpy``: ``x.argmax(axis=0).compute()``, Dask's NumPy argmax on the same workers
  (``--threads`` threads each; ``--cpu-threads N`` adds a run on one worker of N threads).

**Where the time goes**, per measurement (medians over the rounds), from the workers' task
stream and from each worker's ``Transfers.flow`` (the runtime's account of its large
transfers, read before and after every run): Dask's own time before the first task (building,
optimising and scheduling the graph) and after the last (the result gathered), how busy the
workers' threads were in between; per chunk, the seconds in its upload (filling staging,
waiting for a staging buffer), waiting for its result (the last copies, the reduction, the
read-back) and the rest of its task's host work (checks, keys, merges); how many staging chunks
began beside another thread's pending result (the overlap of issue 49) and the most transfers
in flight at once on a device; the bytes workers sent (to each other and to the client: pairs
and results, never a chunk).

Per GPU: the bytes of the chunks its worker holds over the median wall time. The dmlgpu answer
is checked against Dask's NumPy one. The last lines give issue 49's targets: dmlgpu >= 90% of
the upload rate on 1 GPU and on all, 2 GPUs >= 1.9x one, the upload >= 24 GB/s per GPU.
``--nap-us`` sets the workers' ``DMLGPU_NAP_US`` (0: waits block in wgpu's poll, as before
issue 49), for an A/B of the overlap in one machine start; ``--no-numpy-timing`` runs Dask's
NumPy argmax once, for the answer, outside the rounds (such an A/B needs only the GPU's).

``--numpy-surface`` (issue 28: the NumPy-flavoured surface costs nothing more) adds
``dmlgpu.dask.numpy.argmax(x, 0).compute()`` (``dmlgpu-np``) and
``dmlgpu.dask.argmax(x, 0, nan_mode="propagate", output_data_type="int64")`` (``dmlgpu-i64``:
the operator ``dmlgpu-np``'s chunks run and its result type) to the rounds, and the ratios of
their walls, task seconds and graph sizes to ``dmlgpu``'s, and the GPU time (timestamp queries)
of the chunk's operator of ``dmlgpu`` (UINT32, NaN ignored) and of ``dmlgpu.dask.numpy``
(UINT32, NaN propagating) on the client's default device.
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

#: Counts of ``Transfers.flow`` that add up over a run (the others are levels).
FLOW_SUMS = ("uploads", "upload_bytes", "upload_s", "fill_s", "staging_wait_s", "staged", "reads", "read_wait_s",
             "beside")


def upload_only(block, block_info=None):
    """Upload a chunk to this worker's device and wait for it; a (1, 1) placeholder back."""
    import dmlgpu

    tensor = dmlgpu.default_device().upload(block)
    tensor.device.runner.transfers.read(tensor._buffers[-1], 4)  # returns once the queue has run the copies
    tensor.release()
    return np.zeros((1,) * block.ndim, np.float32)


def reduce_only(block, block_info=None):
    """``--bisect``: the chunk task's reduction alone (``dmlgpu.argmax`` from NumPy, as the
    chunk task calls it, its result dropped); a (1, 1) placeholder back."""
    import dmlgpu

    dmlgpu.argmax(block, 0, output_data_type="uint32")
    return np.zeros((1,) * block.ndim, np.float32)


def partials_only(block, block_info=None):
    """``--bisect``: the whole chunk task (``dmlgpu.dask``'s partials: the reduction, the
    winners gathered and keyed, their global indices), its pairs dropped, so no merge follows."""
    import dmlgpu.dask as dd
    from dmlgpu.types import AxisDirection, NanMode

    dd._chunk_partials(block, op="argmax", axes=(0,), direction=AxisDirection.INCREASING, nan_mode=NanMode.IGNORE,
                       device=None, x_dtype=block.dtype, block_info=block_info)
    return np.zeros((1,) * block.ndim, np.float32)


#: ``partials-timed``'s steps, in order (those of ``dmlgpu.dask._chunk_partials`` for a chunk
#: of at most 32 bits), and ``reduce-only``'s one call: timed on the worker (``Phases``).
PHASES = ("input", "pairs", "call", "split", "offset")


class Phases:
    """Wall seconds, thread CPU seconds and the thread's minor page faults of named steps of one
    task, added to its worker's sums (``worker_state``'s "phases": name -> [count, wall, cpu,
    faults]) when the task ends."""

    def __init__(self, prefix: str):
        self.prefix, self.done = prefix, []
        self.at = self.now()

    @staticmethod
    def now() -> tuple:
        import resource

        return time.perf_counter(), time.thread_time(), resource.getrusage(resource.RUSAGE_THREAD).ru_minflt

    def mark(self, name: str) -> None:
        now = self.now()
        self.done.append((name, *(b - a for a, b in zip(self.at, now))))
        self.at = now

    def add(self) -> None:
        import threading

        from distributed import get_worker

        worker = get_worker()
        with worker.__dict__.setdefault("h49_lock", threading.Lock()):
            sums = worker.__dict__.setdefault("h49_phases", {})
            for name, *values in self.done:
                entry = sums.setdefault(f"{self.prefix}:{name}", [0, 0.0, 0.0, 0])
                entry[0] += 1
                for i, v in enumerate(values):
                    entry[1 + i] += v


def reduce_timed(block, block_info=None):
    """``--bisect``: ``reduce_only`` with its call timed (``Phases``)."""
    import dmlgpu

    phases = Phases("reduce-timed")
    dmlgpu.argmax(block, 0, output_data_type="uint32")
    phases.mark("call")
    phases.add()
    return np.zeros((1,) * block.ndim, np.float32)


def partials_timed(block, block_info=None):
    """``--bisect``: the steps of ``partials_only`` for a FLOAT32 chunk one by one, as
    ``dmlgpu.dask._chunk_partials`` takes them, each timed (``PHASES``)."""
    import dmlgpu.dask as dd
    from dmlgpu.types import AxisDirection, NanMode

    phases = Phases("partials-timed")
    block = dd._chunk_input(block, "argmax", block.dtype, block_info)
    phases.mark("input")
    pairs = np.empty([1, block.shape[1]], dd.PAIR)
    phases.mark("pairs")
    words = dd._keyed_words(block, "argmax", (0,), AxisDirection.INCREASING, NanMode.IGNORE, dd._device(None))
    phases.mark("call")
    np.right_shift(words, np.uint64(32), out=pairs["key"])
    np.bitwise_and(words, np.uint64(0xFFFFFFFF), out=pairs["index"])
    phases.mark("split")
    pairs["index"] += np.uint64(block_info[0]["array-location"][0][0])
    phases.mark("offset")
    phases.add()
    return np.zeros((1,) * block.ndim, np.float32)


def phases_line(name: str, where: list[dict]) -> str:
    """A run's steps (``Phases``) over its timed rounds: ms of wall and of CPU a task."""
    sums: dict = {}
    for a in where:
        for w in a["workers"].values():
            for k, values in w.get("phases", {}).items():
                entry = sums.setdefault(k.split(":", 1)[1], [0, 0.0, 0.0, 0])
                for i, v in enumerate(values):
                    entry[i] += v
    return f"    steps of {name} (a task: ms of wall / ms of CPU / minor page faults): " + ", ".join(
        f"{k} {wall / n * 1e3:.2f} / {cpu / n * 1e3:.2f} / {faults / n:.0f}"
        for k, (n, wall, cpu, faults) in sorted(sums.items(), key=lambda item: PHASES.index(item[0])) if n)


def worker_state(dask_worker=None) -> dict:
    """On a worker (``client.run``): its default device's ``Transfers.flow`` (the most in
    flight counted afresh from now) and the bytes it has sent to other workers and to clients."""
    import dmlgpu

    state = dmlgpu.default_device().runner.transfers.flow.snapshot(restart_most=True)
    state["sent_bytes"] = dask_worker.transfer_outgoing_bytes_total
    with dask_worker.__dict__.setdefault("h49_lock", __import__("threading").Lock()):
        state["phases"] = {k: list(v) for k, v in dask_worker.__dict__.get("h49_phases", {}).items()}
    return state


def numa_nodes() -> dict:
    """This host's NUMA nodes (node -> its CPUs, from sysfs; {} where it has none to show) and
    its NVIDIA devices (PCI address -> node), for ``--pin``."""
    import glob

    nodes = {}
    for path in sorted(glob.glob("/sys/devices/system/node/node[0-9]*/cpulist")):
        cpus = set()
        for part in open(path).read().strip().split(","):
            if part:
                a, _, b = part.partition("-")
                cpus.update(range(int(a), int(b or a) + 1))
        nodes[int(path.split("/node")[-1].split("/")[0])] = sorted(cpus)
    gpus = {}
    for dev in sorted(glob.glob("/sys/bus/pci/devices/*")):
        try:
            if open(f"{dev}/vendor").read().strip() == "0x10de" and open(f"{dev}/class").read().startswith("0x03"):
                gpus[os.path.basename(dev)] = int(open(f"{dev}/numa_node").read())
        except OSError:
            continue
    return {"nodes": nodes, "gpus": gpus}


def pin_threads(cpus: list) -> int:
    """On a worker (``client.run``): every thread of the process, and so the threads it starts
    later, on ``cpus`` (its pages are then first touched on their node); the threads pinned."""
    pinned = 0
    for tid in os.listdir("/proc/self/task"):
        try:
            os.sched_setaffinity(int(tid), cpus)
            pinned += 1
        except OSError:  # a thread that has just ended
            pass
    return pinned


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


def in_rounds(runs: dict, rounds: int, client, seed: int, threads: int) -> dict:
    """``runs`` (name -> function) each once untimed, then ``rounds`` rounds of all of them,
    each round in a random order, under one task stream, each run between two reads of the
    workers' state (``worker_state``, outside the timed window): name -> {"walls": seconds of
    each run, "where": each run's account (``account``), "result": the last result}."""
    from distributed import get_task_stream

    for fn in runs.values():
        fn()
    rng = np.random.default_rng(seed)
    windows: list[tuple[str, float, float, dict, dict]] = []
    out: dict = {name: {"walls": [], "where": [], "result": None} for name in runs}
    with get_task_stream(client) as stream:
        for _ in range(rounds):
            for name in rng.permutation(list(runs)).tolist():
                before = client.run(worker_state)
                begin, start = time.time(), time.perf_counter()
                out[name]["result"] = runs[name]()
                out[name]["walls"].append(time.perf_counter() - start)
                end = time.time()
                windows.append((name, begin, end, before, client.run(worker_state)))
    begins = [w[1] for w in windows]
    computes: list[list] = [[] for _ in windows]  # each run's tasks ran inside its window: compute() waits for them
    for task in stream.data:
        for s in task["startstops"]:
            at = bisect.bisect_right(begins, s["start"]) - 1
            if s["action"] == "compute" and at >= 0:
                computes[at].append((s["start"], s["stop"], task["worker"]))
    for (name, begin, end, before, after), tasks in zip(windows, computes):
        out[name]["where"].append(account(tasks, begin, end, before, after, threads))
    return out


def account(tasks: list, begin: float, end: float, before: dict, after: dict, threads: int) -> dict:
    """Where one run's time went: Dask's before its first task and after its last, how busy the
    workers' threads were in between, and per worker the flow's sums over the run (``FLOW_SUMS``),
    the most transfers in flight at once, the seconds in tasks and the bytes sent."""
    first = min((t[0] for t in tasks), default=begin)
    last = max((t[1] for t in tasks), default=end)
    workers = {}
    for w in after:
        sums = {k: after[w][k] - before[w][k] for k in FLOW_SUMS}
        sums["phases"] = {k: [a - b for a, b in zip(v, before[w]["phases"].get(k, (0, 0.0, 0.0, 0)))]
                          for k, v in after[w]["phases"].items()}
        sums.update(most_in_flight=after[w]["most_in_flight"], sent_bytes=after[w]["sent_bytes"] - before[w]["sent_bytes"],
                    task_s=sum(t[1] - t[0] for t in tasks if t[2] == w), tasks=sum(t[2] == w for t in tasks))
        workers[w] = sums
    busy = sum(t[1] - t[0] for t in tasks)
    return {"before_first_task_s": first - begin, "after_last_task_s": end - last, "tasks": len(tasks), "task_s": busy,
            "threads_busy": busy / max(1e-9, (last - first) * threads * len(after)), "workers": workers}


def where_line(where: list[dict], chunks_per_worker: dict, gpu: bool = True) -> tuple[str, dict]:
    """The medians of a measurement's accounts as a line, and as a dict (``gpu``: its tasks
    use the GPU, and the runtime's flow is theirs)."""
    def med(values):
        return statistics.median(values) if values else 0.0

    totals = {k: med([sum(w[k] for w in a["workers"].values()) for a in where]) for k in (*FLOW_SUMS, "sent_bytes", "task_s")}
    chunks = max(1, sum(chunks_per_worker.values()))
    summary = {"before_first_task_s": med([a["before_first_task_s"] for a in where]),
               "after_last_task_s": med([a["after_last_task_s"] for a in where]),
               "threads_busy": med([a["threads_busy"] for a in where]),
               "most_in_flight": max((w["most_in_flight"] for a in where for w in a["workers"].values()), default=0),
               "per_chunk_s": {"upload": totals["upload_s"] / chunks, "fill": totals["fill_s"] / chunks,
                               "staging_wait": totals["staging_wait_s"] / chunks,
                               "submit": (totals["upload_s"] - totals["fill_s"] - totals["staging_wait_s"]) / chunks,
                               "result_wait": totals["read_wait_s"] / chunks,
                               "rest_of_tasks": (totals["task_s"] - totals["upload_s"] - totals["read_wait_s"]) / chunks},
               "beside": totals["beside"], "staged": totals["staged"], "sent_bytes": totals["sent_bytes"],
               "uploads": totals["uploads"]}
    pc = summary["per_chunk_s"]
    text = (f"    where: Dask {summary['before_first_task_s'] * 1e3:.0f} ms before the first task, "
            f"{summary['after_last_task_s'] * 1e3:.0f} after the last; threads busy {summary['threads_busy']:.0%}; ")
    if gpu and totals["uploads"]:
        text += (f"a chunk: upload {pc['upload'] * 1e3:.1f} ms (filling staging {pc['fill'] * 1e3:.1f}, waiting for it "
                 f"{pc['staging_wait'] * 1e3:.1f}, submitting {pc['submit'] * 1e3:.1f}), waiting for its result "
                 f"{pc['result_wait'] * 1e3:.1f}, other task time {pc['rest_of_tasks'] * 1e3:.1f}; "
                 f"{totals['beside']:.0f} of {totals['staged']:.0f} staging chunks began beside another thread's "
                 f"pending result, {summary['most_in_flight']} transfers at once at most; ")
    elif gpu:
        text += "no streamed transfer counted (chunks of 4 MiB or less run as small calls); "
    else:
        text += f"a chunk's task {totals['task_s'] / chunks * 1e3:.1f} ms; "
    text += f"workers sent {totals['sent_bytes'] / 2**20:.1f} MiB"
    return text, summary


def surface_runs(x) -> tuple[dict, dict]:
    """``--numpy-surface``'s runs: name -> compute function, and name -> the graph's size."""
    import dmlgpu.dask as dd
    import dmlgpu.dask.numpy as ddn

    graphs = {"dmlgpu-i64": lambda: dd.argmax(x, 0, nan_mode="propagate", output_data_type="int64"),
              "dmlgpu-np": lambda: ddn.argmax(x, 0)}
    return ({name: (lambda g=g: g().compute()) for name, g in graphs.items()},
            {name: len(g().__dask_graph__()) for name, g in graphs.items()} | {"dmlgpu": len(dd.argmax(x, 0).__dask_graph__())})


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
    from distributed import Client

    import dmlgpu.dask as dd

    rows = []
    env = {} if args.nap_us is None else {"DMLGPU_NAP_US": str(args.nap_us)}
    with dd.local_cluster(adapters, threads_per_worker=args.threads, worker_options={"env": env}) as cluster, \
            Client(cluster) as client:
        pinned = worker_adapters(client)
        if args.pin:  # before the workers' chunks are made
            topology = numa_nodes()
            nodes, gpu_nodes = topology["nodes"], list(topology["gpus"].values())
            for k, (w, a) in enumerate(zip(pinned, adapters)):
                if args.pin == "gpu" and a < len(gpu_nodes) and gpu_nodes[a] in nodes:
                    cpus = nodes[gpu_nodes[a]]  # the node of the a-th NVIDIA device in PCI order
                else:
                    cpus = nodes[sorted(nodes)[k % len(nodes)]] if nodes else sorted(os.sched_getaffinity(0))
                client.run(pin_threads, cpus, workers=[w])
        if args.switch_interval is not None:  # the workers' interpreters hand their lock over sooner
            client.run(sys.setswitchinterval, args.switch_interval)
        x, held, futures = generate(client, shape, chunks, args.seed)  # the futures hold the blocks
        print("workers: " + "; ".join(pinned.values()), flush=True)
        gpus = {w: label.split(":")[0] for w, label in pinned.items()}
        who = client.who_has(futures)
        per_worker = {w: sum(w in who[f.key] for f in futures) for w in pinned}  # chunks each holds
        ones = tuple((1,) * len(c) for c in x.chunks)  # a placeholder a chunk
        runs = {
            "dmlgpu": lambda: dd.argmax(x, 0).compute(),
            "upload": lambda: x.map_blocks(upload_only, chunks=ones, dtype=np.float32).compute(),
            "dask-numpy": lambda: x.argmax(axis=0).compute(),
        }
        if args.bisect:
            runs["reduce-only"] = lambda: x.map_blocks(reduce_only, chunks=ones, dtype=np.float32).compute()
            runs["partials"] = lambda: x.map_blocks(partials_only, chunks=ones, dtype=np.float32).compute()
            runs["reduce-timed"] = lambda: x.map_blocks(reduce_timed, chunks=ones, dtype=np.float32).compute()
            runs["partials-timed"] = lambda: x.map_blocks(partials_timed, chunks=ones, dtype=np.float32).compute()
        sizes = {}
        if args.numpy_surface:
            surface, sizes = surface_runs(x)
            runs.update(surface)
        checked = None
        if args.no_numpy_timing:  # once, for the answer
            checked = runs.pop("dask-numpy")()
        timed = in_rounds(runs, args.rounds, client, args.seed, args.threads)
        for name, got in timed.items():
            median = statistics.median(got["walls"])
            text, where = where_line(got["where"], per_worker, gpu=name != "dask-numpy")
            rows.append({"measure": name, "gpus": len(adapters), "workers": len(pinned),
                         "threads_per_worker": args.threads, "seconds": median, "samples_s": got["walls"],
                         "gbps_total": x.nbytes / median / 1e9,
                         "gbps_per_gpu": {gpus[w]: held.get(w, 0) / median / 1e9 for w in pinned},
                         "bytes_per_worker": {gpus[w]: held.get(w, 0) for w in pinned},
                         "chunks_per_worker": {gpus[w]: per_worker[w] for w in pinned},
                         "where": where, "where_text": text + ("\n" + phases_line(name, got["where"])
                                                                 if name.endswith("-timed") else ""),
                         "where_rounds": [{**a, "workers": {gpus[w]: v for w, v in a["workers"].items()}}
                                          for a in got["where"]]})
            if name in sizes:
                rows[-1]["graph_tasks"] = sizes[name]
        answers = {name: got["result"] for name, got in timed.items()}
        want = answers["dask-numpy"] if checked is None else checked
        for row in rows:
            if row["measure"].startswith("dmlgpu"):
                row["correct"] = bool(np.array_equal(answers[row["measure"]].ravel(), want.ravel()))
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
        x.argmax(axis=0).compute()
        samples = []
        for _ in range(args.rounds):
            start = time.perf_counter()
            x.argmax(axis=0).compute()
            samples.append(time.perf_counter() - start)
    median = statistics.median(samples)
    return {"measure": "dask-numpy", "gpus": 0, "workers": 1, "threads_per_worker": args.cpu_threads,
            "seconds": median, "samples_s": samples, "gbps_total": x.nbytes / median / 1e9}


def line(row: dict) -> str:
    who = f"gpus={row['gpus']}" if row["gpus"] else "cpu   "
    samples = row["samples_s"]
    text = (f"{who} {row['measure']:<10} {row['workers']} worker(s) x {row['threads_per_worker']} thread(s)  "
            f"{row['seconds'] * 1e3:9.1f} ms ({min(samples) * 1e3:.0f}-{max(samples) * 1e3:.0f} in {len(samples)} "
            f"rounds)  {row['gbps_total']:8.2f} GB/s total")
    if "gbps_per_gpu" in row:
        label = "per worker" if row["measure"] == "dask-numpy" else "per GPU"
        text += f"  {label}: " + ", ".join(f"{k} {v:.2f}" for k, v in row["gbps_per_gpu"].items())
    if "correct" in row:
        text += "  answer " + ("matches Dask's NumPy argmax" if row["correct"] else "DIFFERS from Dask's NumPy argmax")
    if "where_text" in row:
        text += "\n" + row["where_text"]
    if row.get("workers", 1) > 1 and "where_rounds" in row:  # (two GPUs' rounds were bimodal: which worker lost)
        text += "\n    rounds: " + "; ".join(
            f"{wall * 1e3:.0f} ms (" + ", ".join(f"{w.split('-')[0]} tasks {v['task_s']:.2f} s, fill {v['fill_s']:.2f}"
                                               for w, v in sorted(a["workers"].items())) + ")"
            for wall, a in zip(row["samples_s"], row["where_rounds"]))
    return text


def main() -> int:
    began = time.perf_counter()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--small", action="store_true",
                        help="256 MiB in 32 MiB chunks, streamed through the staging ring as the GPU's are: for lavapipe")
    parser.add_argument("--gib", type=float, help="size of the array in GiB (default 8; 1/4 with --small)")
    parser.add_argument("--chunk-mib", type=float, help="bytes per chunk in MiB (default 256; 32 with --small)")
    parser.add_argument("--cols", type=int, help="columns (outputs) of the array (default 262144; 16384 with --small)")
    parser.add_argument("--adapters", help="comma-separated adapter indices (default: every GPU, see dmlgpu info)")
    parser.add_argument("--threads", type=int, default=4, help="threads per worker (default 4, as local_cluster)")
    parser.add_argument("--cpu-threads", type=int, default=0,
                        help="also time Dask's NumPy argmax on one worker of this many threads (default: skip)")
    parser.add_argument("--rounds", type=int, default=5, help="timed rounds of every measurement (median reported)")
    parser.add_argument("--nap-us", type=int, help="the workers' DMLGPU_NAP_US (0: waits block in wgpu's poll)")
    parser.add_argument("--no-numpy-timing", action="store_true",
                        help="run Dask's NumPy argmax once, for the answer, and leave it out of the rounds")
    parser.add_argument("--numpy-surface", action="store_true",
                        help="also dmlgpu.dask.numpy.argmax and dmlgpu.dask.argmax with its operator, in the rounds "
                             "(see the docstring)")
    parser.add_argument("--bisect", action="store_true",
                        help="add the chunk task's reduction alone (reduce-only) and the whole chunk task with no "
                             "merge after it (partials) to the rounds: where a dmlgpu chunk's time beyond its upload goes")
    parser.add_argument("--switch-interval", type=float,
                        help="the workers' sys.setswitchinterval in seconds (Python's default 0.005)")
    parser.add_argument("--pin", choices=["node", "gpu"],
                        help="pin each worker's threads to a NUMA node before its chunks are made: node: worker k "
                             "to node k (mod the host's nodes); gpu: adapter a's worker to the node of the a-th "
                             "NVIDIA device in PCI order (a guess at which device the adapter is)")
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--json", metavar="PATH", help="write the results as JSON")
    args = parser.parse_args()

    import dmlgpu
    import dmlgpu.dask as dd
    from dmlgpu.runtime import all_adapters

    gib = args.gib or (1 / 4 if args.small else 8)
    chunk_bytes = int((args.chunk_mib or (32 if args.small else 256)) * 2**20)
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
          f"({chunk_rows * chunk_cols * 4 / 2**20:.0f} MiB, {nchunks} of them); {args.rounds} rounds; adapters: "
          + ", ".join(f"#{a} {listed[a].info['device']}" for a in adapters)
          + ("" if args.nap_us is None else f"; workers' DMLGPU_NAP_US={args.nap_us}"), flush=True)
    topology = numa_nodes()
    print("NUMA nodes: " + (", ".join(f"{n}: {len(c)} CPUs ({c[0]}-{c[-1]})" for n, c in topology["nodes"].items())
                            or "none shown") + "; NVIDIA devices: "
          + (", ".join(f"{a} on node {n}" for a, n in topology["gpus"].items()) or "none shown")
          + (f"; workers pinned ({args.pin})" if args.pin else ""), flush=True)
    counts = [1, len(adapters)] if len(adapters) > 1 else [1]
    results = []
    for n in counts:
        for row in measure(adapters[:n], args, shape, chunks):
            results.append(row)
            print(line(row), flush=True)
    dml = {r["gpus"]: r for r in results if r["measure"] == "dmlgpu"}
    up = {r["gpus"]: r for r in results if r["measure"] == "upload"}
    summary: dict = {}
    if len(counts) > 1:
        n = counts[-1]
        summary["scaling"] = dml[n]["gbps_total"] / dml[1]["gbps_total"]
        summary["upload_scaling"] = up[n]["gbps_total"] / up[1]["gbps_total"]
        print(f"{n} GPUs: dmlgpu {summary['scaling']:.2f}x one GPU (issue 49's target >= 1.9x with 2), "
              f"the upload alone {summary['upload_scaling']:.2f}x")
    for n in counts:
        summary[f"of_upload_{n}"] = dml[n]["gbps_total"] / up[n]["gbps_total"]
        summary[f"upload_per_gpu_{n}"] = up[n]["gbps_total"] / n
        print(f"gpus={n}: dmlgpu at {summary[f'of_upload_{n}']:.0%} of merely uploading the chunks (target >= 90%); "
              f"the upload alone {summary[f'upload_per_gpu_{n}']:.1f} GB/s per GPU (target >= 24)")
    for n in counts if args.numpy_surface else []:
        row = {r["measure"]: r for r in results if r["gpus"] == n}
        for base in ("dmlgpu", "dmlgpu-i64"):
            ratio = summary[f"numpy_over_{base}_{n}"] = {
                "wall": row["dmlgpu-np"]["seconds"] / row[base]["seconds"],
                "tasks": (statistics.median(a["task_s"] for a in row["dmlgpu-np"]["where_rounds"])
                          / statistics.median(a["task_s"] for a in row[base]["where_rounds"])),
                "graph_equal": row["dmlgpu-np"]["graph_tasks"] == row[base]["graph_tasks"]}
            print(f"gpus={n}: dmlgpu.dask.numpy over {base}: wall x{ratio['wall']:.3f}, task time x{ratio['tasks']:.3f}, "
                  f"graph sizes " + ("equal" if ratio["graph_equal"] else "DIFFER") + " (target: equal, within 2%)")
    if args.numpy_surface:
        gpu = summary["chunk_gpu_s"] = chunk_gpu_times(chunks, max(args.rounds, 21), args.seed)
        print(f"GPU time of a chunk's operator: dmlgpu {gpu['dmlgpu'] * 1e3:.3f} ms, dmlgpu.dask.numpy "
              f"{gpu['dmlgpu-np'] * 1e3:.3f} ms (x{gpu['dmlgpu-np'] / gpu['dmlgpu']:.3f}; target within 2%)")
    ok = all(r["correct"] for r in results if "correct" in r)
    summary["wall_s"] = time.perf_counter() - began
    print(f"{summary['wall_s']:.0f} s in all")
    if args.json:
        report = {"config": {"shape": shape, "chunks": chunks, "dtype": "float32", "axes": [0], "bytes": nbytes,
                             "adapters": adapters, "adapter_names": [listed[a].info["device"] for a in adapters],
                             "threads_per_worker": args.threads, "rounds": args.rounds, "seed": args.seed,
                             "nap_us": args.nap_us, "numpy_timed": not args.no_numpy_timing, "pin": args.pin,
                             "topology": topology},
                  "environment": {"python": platform.python_version(), "host": platform.node(),
                                  "cores": os.cpu_count(), "dmlgpu": dmlgpu.__version__,
                                  "commit": os.environ.get("DMLGPU_COMMIT")},
                  "results": results, "summary": summary, "correct": ok}
        with open(args.json, "w") as f:
            json.dump(report, f, indent=2)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
