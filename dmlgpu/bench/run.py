"""One run of ``dmlgpu bench``: ``main`` (the CLI's entry point: the suite, the warm-up, one
line per case, the JSON report and the plot) and ``Bench``, which measures each case on one
device beside its ceiling and the peers."""

from __future__ import annotations

import concurrent.futures
import math
import sys
import time

import numpy as np

from .. import oracle
from ..tensor import Tensor
from ..desc import lower
from ..errors import DescriptorError
from ..runtime.transfers import copy_in_parts
from .cases import Case, Suite, host_data, load_suite
from .ceilings import Ceiling, warm_up
from .peers import find_peers
from .report import header, line, plot, report_header, write_json
from .timing import FloorTimer, call_timer, interleaved, interleaved_walls, median, native_floor_timer, percentiles

#: End-to-end (NumPy in, NumPy out) timing only for inputs up to this size: above it the
#: figure measures the bus and host copies, not the library.
E2E_MAX_BYTES = 64 << 20
#: Wall-clock seconds spent on each end-to-end measurement (at least 3 calls, at most 100);
#: latency cases get more calls, so that their p99 means something.
E2E_BUDGET_S = 0.5
LATENCY_BUDGET_S = 1.0
LATENCY_MAX_CALLS = 2000
#: Timed rounds of each transfer case (whole NumPy calls of 256 MiB to 1 GiB), and the calls
#: of a back-to-back resident loop.
TRANSFER_ROUNDS = 5
LOOP_CALLS = 200
#: Without --repeats, fewer repetitions when one dispatch is slow: about this many GPU
#: seconds per variant and case (at least 3 repetitions).
VARIANT_BUDGET_S = 2.0


def _round16(n: int) -> int:
    return (n + 15) & ~15


def _plan_summary(plan) -> dict:
    """What the planner chose, as plain data (the fields it has; the planner is still growing)."""
    fields = ("kernel", "loader", "split", "chunk", "grid", "merge_grid")
    return {f: (list(v) if isinstance(v, tuple) else v) for f in fields if (v := getattr(plan, f, None)) is not None}


class Bench:
    """One run: the device, the peers, the host data cache, and the results so far."""

    def __init__(self, device, suite: Suite, repeats: int | None, peers: list):
        self.device = device
        self.runner = device.runner
        self.suite = suite
        self.repeats = repeats
        self.peers = peers
        self.rng = np.random.default_rng(0)
        self._host_key = None
        self._host = None

    def host(self, case: Case) -> np.ndarray:
        """Random data for a case, generated once and reused by cases of the same type and size."""
        key = (case.dtype, math.prod(case.shape))
        if key != self._host_key:
            self._host = None  # free the last one first
            self._host = host_data(case, self.rng).reshape(-1)
            self._host_key = key
        return self._host.reshape(case.shape)

    def run_case(self, case: Case) -> dict:
        result = {**case.to_json(), "status": "ok"}
        red = lower(case.descriptor())
        caps = self.runner.capabilities
        need = max(red.input.total_tensor_size_in_bytes, red.output.total_tensor_size_in_bytes)
        if need > caps.max_storage_binding:
            return {**result, "status": "skipped",
                    "reason": f"{need} bytes exceed one binding ({caps.max_storage_binding}), which the bench "
                              f"and its ceiling read whole; see benchmarks/beyond_one_binding.py"}
        try:
            compiled = self.device.compile(case.descriptor())
        except DescriptorError as err:
            return {**result, "status": "skipped", "reason": str(err)}
        result["plan"] = _plan_summary(compiled.plan)
        nbytes = red.input.total_tensor_size_in_bytes + red.output.total_tensor_size_in_bytes
        result["bytes"] = nbytes

        x = self.host(case)
        buffers, variants, peer_data = [], {}, {}
        try:
            src = self.runner.memory.storage(_round16(red.input.total_tensor_size_in_bytes))
            buffers.append(src)
            self.runner.transfers.write(src, x)
            dst = self.runner.memory.storage(_round16(red.output.total_tensor_size_in_bytes))
            buffers.append(dst)
            inp, out = Tensor(self.device, red.input, [src]), Tensor(self.device, red.output, [dst])
            ceiling = Ceiling(self.runner, "copy" if case.op == "hardmax" else "read", src,
                              red.input.total_tensor_size_in_bytes)
            buffers += [ceiling.dst, ceiling.params]

            def ours(n):  # HARDMAX's clear of its output is timed with it
                return compiled.gpu_times(inp, out, n)
            variants.update(ours=ours, ceiling=ceiling.gpu_times)
            # Untimed: two of each variant (the first also compiles and allocates).
            first = {name: variant(2) for name, variant in variants.items()}
            peer_errors = {}
            for peer in self.peers:
                try:
                    data = peer.upload(x)
                    fn = peer.op(case, data)
                    variant = variants[peer.name] = lambda n, peer=peer, fn=fn: peer.gpu_times(fn, n)
                    first[peer.name] = variant(2)
                    peer_data[peer.name] = (data, fn)
                except Exception as err:  # a peer that cannot do a case must not lose ours
                    variants.pop(peer.name, None)
                    peer_errors[peer.name] = {"error": f"{type(err).__name__}: {err}"}
            live = [peer for peer in self.peers if peer.name in peer_data]

            # Our answer, checked once.
            compiled.run(inp, out)
            got = out.numpy()
            want = oracle.evaluate(case.descriptor(), x)
            result["correct"] = bool(got.shape == want.shape and np.array_equal(got, want.astype(got.dtype)))
            del got, want

            repeats = self.repeats
            if repeats is None:
                slowest = max(median(t) for t in first.values())
                repeats = max(3, min(self.suite.repeats, int(VARIANT_BUDGET_S / max(slowest, 1e-9))))
            result["repeats"] = repeats
            samples = interleaved(variants, repeats)

            ours_s = median(samples["ours"])
            result.update(gpu_s=ours_s, gpu_min_s=float(samples["ours"].min()), gbps=nbytes / ours_s / 1e9,
                          gpu_samples_s=samples["ours"].tolist())
            ceiling_s = median(samples["ceiling"])
            result["ceiling"] = {"kernel": f"{ceiling.kind}_ceiling", "bytes": ceiling.bytes, "gpu_s": ceiling_s,
                                 "gbps": ceiling.bytes / ceiling_s / 1e9, "gpu_samples_s": samples["ceiling"].tolist()}
            result["pct_of_ceiling"] = 100.0 * result["gbps"] / result["ceiling"]["gbps"]

            result["peers"] = dict(peer_errors)
            for peer in live:
                peer_s = median(samples[peer.name])
                result["peers"][peer.name] = {"gpu_s": peer_s, "gbps": nbytes / peer_s / 1e9, "speedup": peer_s / ours_s,
                                              "gpu_samples_s": samples[peer.name].tolist()}

            result["e2e_s"] = result["e2e_resident_s"] = None
            if case.latency or red.input.total_tensor_size_in_bytes <= E2E_MAX_BYTES:
                self._end_to_end(case, x, inp, result, live, peer_data)
        finally:
            variants.clear()  # the peers' closures hold their copies of the input
            peer_data.clear()
            for peer in self.peers:
                peer.release()
            for buffer in buffers:
                self.runner.memory.free(buffer)
        return result

    def _end_to_end(self, case: Case, x: np.ndarray, inp, result: dict, peers: list, peer_data: dict) -> None:
        """Wall times of whole calls: NumPy in and out, beside the peers'; for latency cases
        also a GPU-resident input with the result read back to NumPy, p50 and p99 of many
        calls, the bare floor of a dispatch and read-back through the same runner and
        straight through wgpu-native: all of them sampled in interleaved rounds
        (``interleaved_walls``)."""
        import dmlgpu

        op = getattr(dmlgpu, case.op)
        budget, most = (LATENCY_BUDGET_S, LATENCY_MAX_CALLS) if case.latency else (E2E_BUDGET_S, 100)
        timers = {"numpy": call_timer(lambda: op(x, case.axes, device=self.device))}
        floor = None
        if case.latency:
            def resident():
                r = op(inp, case.axes, device=self.device)
                r.numpy()
                r.release()

            timers["resident"] = call_timer(resident)
            floor = timers["floor"] = FloorTimer(self.runner)
            for name, upload in (("native_floor", None), ("native_floor_upload", x)):
                native = native_floor_timer(self.runner, None if upload is None else
                                            np.ascontiguousarray(upload).reshape(-1).view(np.uint8))
                if native is not None:
                    timers[name] = native
        for peer in peers:
            data, fn = peer_data[peer.name]
            timers[peer.name + " numpy"] = call_timer(lambda peer=peer: peer.to_numpy(peer.op(case, peer.upload(x))()))
            if case.latency:
                timers[peer.name + " resident"] = call_timer(lambda peer=peer, fn=fn: peer.to_numpy(fn()))
        try:
            walls = interleaved_walls(timers, budget, most)
        finally:
            if floor is not None:
                floor.release()
        result["e2e_s"] = median(walls["numpy"])
        if case.latency:
            result["e2e_resident_s"] = median(walls["resident"])
            result["latency_times"] = {name: percentiles(walls[name]) for name in
                                       ("numpy", "resident", "floor", "native_floor", "native_floor_upload")
                                       if name in walls}
        for peer in peers:
            entry = result["peers"][peer.name]
            entry["e2e_s"] = median(walls[peer.name + " numpy"])
            entry["e2e_resident_s"] = None
            if case.latency:
                entry["e2e_resident_s"] = median(walls[peer.name + " resident"])
                entry["latency_times"] = {"numpy": percentiles(walls[peer.name + " numpy"]),
                                          "resident": percentiles(walls[peer.name + " resident"])}

    # ------------------------------------------------------------------ transfers

    def run_transfer(self, case: Case) -> dict:
        """A whole NumPy-in, NumPy-out call on a large input, beside NumPy on the CPU and torch's
        pageable path (interleaved rounds of wall times), with the upload alone and the
        read-back alone; or a loop of back-to-back resident calls against their GPU time."""
        import dmlgpu

        result = {**case.to_json(), "status": "ok"}
        x = self.host(case)
        desc = case.descriptor()
        want = oracle.evaluate(desc, x)
        op = getattr(dmlgpu, case.op)
        result["bytes"] = x.nbytes
        if case.kind == "loop":
            return self._loop(case, x, want, result)
        got = op(x, case.axes, device=self.device)
        result["correct"] = bool(np.array_equal(got, want.astype(got.dtype)))
        del got
        calls = {"ours": lambda: op(x, case.axes, device=self.device), "numpy": lambda: _numpy_op(case, x)}
        torch = next((p for p in self.peers if p.name == "torch"), None)
        if torch is not None:
            calls["torch_pageable"] = torch.pageable(case, x)

        def upload():
            self.device.upload(x).release()

        calls["upload"] = upload
        resident = self.device.upload(x)
        out = op(resident, case.axes, device=self.device)
        calls["read_back"] = out.numpy
        fill, fill_threads = None, self.runner.transfers.copy_threads[False]  # as many threads as the runner's reads
        if case.op == "hardmax":  # the read-back's bound: a new array filled from host memory
            fill = concurrent.futures.ThreadPoolExecutor(fill_threads)
            source = x.reshape(-1).view(np.uint8)
            calls["host_fill"] = lambda: _fill_new(source, fill, fill_threads)
        try:
            for fn in calls.values():  # untimed once: compiles, allocates, warms the paths
                fn()
            samples = {name: [] for name in calls}
            for r in range(TRANSFER_ROUNDS):
                names = list(calls)
                for name in names[r % len(names):] + names[:r % len(names)]:
                    start = time.perf_counter()
                    calls[name]()
                    samples[name].append(time.perf_counter() - start)
        finally:
            if fill is not None:
                fill.shutdown()
            out.release()
            resident.release()
            if torch is not None:
                torch.release()
        medians = {name: median(t) for name, t in samples.items()}
        result.update(e2e_s=medians["ours"], numpy_s=medians["numpy"], samples_s=samples,
                      gbps=x.nbytes / medians["ours"] / 1e9,
                      upload_gbps=x.nbytes / medians["upload"] / 1e9,
                      read_back_gbps=want.nbytes / medians["read_back"] / 1e9,
                      **({"host_fill_gbps": x.nbytes / medians["host_fill"] / 1e9, "host_fill_threads": fill_threads}
                         if fill is not None else {}),
                      x_numpy=medians["numpy"] / medians["ours"])
        if "torch_pageable" in medians:
            result.update(torch_pageable_s=medians["torch_pageable"],
                          x_torch_pageable=medians["torch_pageable"] / medians["ours"])
        return result

    def _loop(self, case: Case, x: np.ndarray, want: np.ndarray, result: dict) -> dict:
        """LOOP_CALLS GPU-resident calls back to back (each result released), then one read:
        the wall time per call against the GPU time of one call."""
        import dmlgpu

        op = getattr(dmlgpu, case.op)
        inp = self.device.upload(x)
        try:
            first = op(inp, case.axes, device=self.device)
            result["correct"] = bool(np.array_equal(first.numpy(), want.astype(first.dtype)))
            gpu_s = median(self.device.compile(case.descriptor()).gpu_times(inp, first, 10))
            first.release()
            walls = []
            for _ in range(3):
                start = time.perf_counter()
                for i in range(LOOP_CALLS):
                    last = op(inp, case.axes, device=self.device)
                    if i < LOOP_CALLS - 1:
                        last.release()
                last.numpy()  # waits for every call before it
                last.release()
                walls.append((time.perf_counter() - start) / LOOP_CALLS)
        finally:
            inp.release()
        wall = median(walls)
        result.update(gpu_s=gpu_s, wall_per_call_s=wall, pct_of_gpu_rate=100.0 * gpu_s / wall, calls=LOOP_CALLS)
        return result


def _numpy_op(case: Case, x: np.ndarray) -> np.ndarray:
    """The case on the CPU with NumPy, as a NumPy user writes it."""
    (axis,) = case.axes
    if case.op == "hardmax":
        out = np.zeros_like(x)
        np.put_along_axis(out, np.expand_dims(np.argmax(x, axis), axis), 1, axis)
        return out
    return (np.argmax if case.op == "argmax" else np.argmin)(x, axis)


def _fill_new(source: np.ndarray, pool, parts: int) -> np.ndarray:
    """A new array filled from ``source`` in host memory, in ``parts`` on ``pool``'s threads
    (split as the runner's reads are): its page faults and copy, which bound a read-back into
    a new array on this host."""
    out = np.empty_like(source)
    copy_in_parts(pool, out, source, parts)
    return out


def main(device, args) -> int:
    """``dmlgpu bench``: 0 when every case ran (or was skipped) and answered right, 1 if any
    was wrong or failed, 2 for a bad request (no such case, --plot without matplotlib)."""
    if args.plot:
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            print("dmlgpu bench: --plot needs matplotlib, which is not importable here "
                  "(pip install matplotlib); nothing was run", file=sys.stderr)
            return 2
    suite = load_suite("quick" if args.quick else "full")
    cases = [c for c in suite.cases if not args.case or any(s in c.name for s in args.case)]
    if not cases:
        print(f"dmlgpu bench: no case of the {suite.name} suite matches {args.case}; cases: "
              f"{', '.join(c.name for c in suite.cases)}", file=sys.stderr)
        return 2
    if args.repeats is not None and args.repeats < 1:
        print(f"dmlgpu bench: --repeats is {args.repeats}, but it must be at least 1", file=sys.stderr)
        return 2

    peers = find_peers()
    report = report_header(device, suite, peers)
    print(f"dmlgpu {report['dmlgpu_version']} bench, {suite.name} suite, on {device.name} ({device.runner.backend}); "
          f"peers: {', '.join(f'{p.name} {p.version} on {p.device_name}' for p in peers) or 'none importable'}", flush=True)
    warm_bytes = max(math.prod(c.shape) * c.dtype.size for c in cases)
    print(f"warm-up: {warm_up(device.runner, min(warm_bytes, 256 << 20), suite.warmup_s)} reads in {suite.warmup_s} s",
          file=sys.stderr)
    torch = next((p for p in peers if p.name == "torch"), None)
    if torch is not None:  # the physical references the ceilings should match, on this GPU
        report["references"] = torch.references(min(warm_bytes, 1 << 30))
        print("torch references (GB/s): " + ", ".join(f"{k} {v:.0f}" for k, v in report["references"].items()),
              flush=True)
    print(header(peers), flush=True)
    bench = Bench(device, suite, args.repeats, peers)
    failed = 0
    for i, case in enumerate(cases, 1):
        print(f"[{i}/{len(cases)}] {case.name} ...", file=sys.stderr, flush=True)
        try:
            result = bench.run_case(case) if case.kind == "gpu" else bench.run_transfer(case)
        except Exception as err:  # report and go on: one broken case must not hide the others
            result = {**case.to_json(), "status": "error", "reason": f"{type(err).__name__}: {err}"}
        failed += result["status"] == "error" or result.get("correct") is False
        report["results"].append(result)
        print(line(result, peers), flush=True)
        if args.json:
            write_json(report, args.json)  # after every case, so a crash keeps what ran
    counts = {s: sum(r["status"] == s for r in report["results"]) for s in ("ok", "skipped", "error")}
    wrong = sum(r.get("correct") is False for r in report["results"])
    print(f"{counts['ok']} ran ({wrong} wrong), {counts['skipped']} skipped, {counts['error']} failed"
          + (f"; results in {args.json}" if args.json else ""))
    if args.plot:
        plot(report, args.plot)
        print(f"plot in {args.plot}")
    return 1 if failed else 0
