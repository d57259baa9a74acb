"""The benchmark: its suites, its ceiling kernels, and one quick case end to end through the CLI."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from dmlgpu import argmax, bench, cli, default_device
from dmlgpu.types import DataType


@pytest.mark.parametrize("name", ["quick", "full"])
def test_suites_load_and_describe_valid_operators(name):
    suite = bench.load_suite(name)
    names = [c.name for c in suite.cases]
    assert len(names) == len(set(names)), "case names must be unique: --case filters by them"
    assert suite.repeats >= 1 and suite.warmup_s > 0
    for case in suite.cases:
        case.descriptor()  # raises DescriptorError if a case is not a valid operator


def test_full_suite_inputs_are_above_the_l2_cache():
    """PERFORMANCE.md: bandwidth figures need inputs well above the 50-60 MB L2."""
    for case in bench.load_suite("full").cases:
        if not case.latency and case.kind != "throughput":
            assert math.prod(case.shape) * case.dtype.size >= 256 << 20, case.name


def test_quick_suite_runs_every_kind():
    assert {c.kind for c in bench.load_suite("quick").cases} == set(bench.cases.KINDS)


def test_quick_suite_is_small():
    for case in bench.load_suite("quick").cases:
        assert math.prod(case.shape) * case.dtype.size <= 8 << 20, case.name


def test_case_rejects_unknown_keys_and_ops():
    with pytest.raises(ValueError, match="unknown keys"):
        bench.Case.from_json({"name": "x", "op": "argmax", "dtype": "FLOAT32", "shape": [4], "axes": [0], "size": 4})
    with pytest.raises(ValueError, match="op is 'sum'"):
        bench.Case("x", "sum", "FLOAT32", (4,), (0,))


def test_host_data_rarely_ties_even_in_float16():
    case = bench.Case("x", "argmax", DataType.FLOAT16, (64, 4096), (1,))
    x = bench.host_data(case, np.random.default_rng(0))
    assert x.dtype == np.float16 and x.shape == (64, 4096) and np.isfinite(x).all()
    tied = ((x == x.max(axis=1, keepdims=True)).sum(axis=1) > 1).sum()
    assert tied <= 2


def _quads(device, words: np.ndarray):
    runner = device.runner
    buffer = runner.memory.storage(words.nbytes)
    runner.transfers.write(buffer, words)
    return runner, buffer


def test_read_ceiling_folds_its_stride_with_max(device):
    rng = np.random.default_rng(1)
    vec4s = 5000  # 5 workgroups of 256 threads: each thread folds about 4 quads
    words = rng.integers(0, 2**32, size=4 * vec4s + 3, dtype=np.uint32)  # 12 bytes past the last quad
    runner, src = _quads(device, words)
    ceiling = bench.Ceiling(runner, "read", src, words.nbytes)
    try:
        threads = ceiling.grid[0] * bench.CEILING_WG
        assert ceiling.grid == (5, 1, 1) and ceiling.bytes == 16 * vec4s + 4 * threads
        ceiling.run()
        got = np.frombuffer(runner.transfers.read(ceiling.dst, 4 * threads), np.uint32)
        quads = words[: 4 * vec4s].reshape(vec4s, 4)
        want = np.array([quads[t::threads].max() if t < vec4s else 0 for t in range(threads)], np.uint32)
        np.testing.assert_array_equal(got, want)
        assert ceiling.gpu_times(2).min() > 0
    finally:
        ceiling.release()
        src.destroy()


@pytest.mark.parametrize("groups", [None, 2])  # a step a thread; 2 workgroups: several, the last ragged
def test_copy_ceiling_copies_the_bytes(device, monkeypatch, groups):
    if groups:
        monkeypatch.setitem(bench.CEILING_MAX_GROUPS, "copy", groups)
    vec4s = 3000
    rng = np.random.default_rng(2)
    words = rng.integers(0, 2**32, size=4 * vec4s, dtype=np.uint32)
    runner, src = _quads(device, words)
    ceiling = bench.Ceiling(runner, "copy", src, words.nbytes)
    try:
        assert ceiling.bytes == 2 * words.nbytes
        ceiling.run()
        np.testing.assert_array_equal(np.frombuffer(runner.transfers.read(ceiling.dst, words.nbytes), np.uint32), words)
    finally:
        ceiling.release()
        src.destroy()


def test_a_case_too_big_for_one_binding_is_skipped_not_run(device):
    limit = device.runner.capabilities.max_storage_binding
    case = bench.Case("huge", "argmax", DataType.FLOAT32, (limit // 4 + 16,), (0,))
    result = bench.Bench(device, bench.load_suite("quick"), None, []).run_case(case)
    assert result["status"] == "skipped"
    assert result["reason"] == (f"{(limit // 4 + 16) * 4} bytes exceed one binding ({limit}), which the bench "
                                f"and its ceiling read whole; see benchmarks/beyond_one_binding.py")


def test_bench_quick_case_through_the_cli_writes_json_with_latencies(tmp_path, capsys, monkeypatch):
    """One run of the CLI checked for both: the report it writes, and the latency case's
    p50/p99 and floors. Each latency timer (about 10) gets 20 ms of calls, not the CLI's 1 s: at
    least 3 calls each still (``interleaved_walls``), and the test takes 1 s on lavapipe, not 8."""
    from dmlgpu.bench import gpu_cases

    monkeypatch.setattr(gpu_cases, "LATENCY_BUDGET_S", 0.02)
    path = tmp_path / "results" / "quick.json"
    rc = cli.main(["bench", "--quick", "--case", "llm_argmax", "--repeats", "3", "--json", str(path)])
    out = capsys.readouterr().out
    assert rc == 0, out
    assert "llm_argmax" in out
    report = json.loads(path.read_text())
    for key in ("dmlgpu_version", "date", "device", "backend", "suite", "peers", "results"):
        assert key in report
    assert report["suite"] == "quick" and report["device"]
    (result,) = report["results"]
    assert result["name"] == "llm_argmax" and result["status"] == "ok" and result["correct"] is True
    assert result["repeats"] == 3 and len(result["gpu_samples_s"]) == 3
    assert result["bytes"] == 151936 * 4 + 4
    for value in (result["gpu_s"], result["gbps"], result["ceiling"]["gpu_s"], result["ceiling"]["gbps"],
                  result["pct_of_ceiling"], result["e2e_s"], result["e2e_resident_s"]):
        assert value > 0
    assert result["ceiling"]["kernel"] == "read_ceiling"
    # The latency case: p50 <= p99 of each kind, the bound straight through wgpu-native on that path.
    kinds = ["numpy", "resident", "floor"]
    if default_device().runner.path.name == "native":
        kinds += ["native_floor", "native_floor_upload"]
    for kind in kinds:
        entry = result["latency_times"][kind]
        assert 0 < entry["p50_s"] <= entry["p99_s"] and entry["calls"] >= 3
    assert "p50/p99 NumPy in/out" in out
    assert ("straight through wgpu-native" in out) == ("native_floor" in kinds)
    # On a CPU adapter (lavapipe) the first line says so and a note under the table (kept in the
    # report's method too) says what the figures mean there; on a GPU neither is there.
    software = default_device().runner.capabilities.software
    assert ("a CPU adapter (see the note below the table)" in out) == software, out
    assert ("note: on a CPU adapter" in out) == ("cpu_adapter" in report["method"]) == software, out


def test_bare_round_trips_run_from_python_and_from_c_on_several_threads():
    """The bound of a small call both ways (``thread_scaling.py`` compares them from many
    threads): each round trip timed, the kernel's word written once a round trip, and the
    device usable afterwards."""
    import threading

    from dmlgpu.bench.gpu_timers import bare_round_trips

    runner = default_device().runner
    if runner.path.name != "native":
        assert bare_round_trips(runner, 3) is None and bare_round_trips(runner, 3, in_c=True) is None
        return
    times: list = []
    workers = [threading.Thread(target=lambda c=c: times.append(bare_round_trips(runner, 20, in_c=c)))
               for c in (False, True, True, True)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    assert len(times) == 4 and all(t.shape == (20,) and (t > 0).all() and (t < 10).all() for t in times)
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    assert np.array_equal(argmax(x, 1, device=default_device()), [[3], [3], [3]])


def test_a_c_call_that_waits_for_the_gpu_lets_other_python_threads_run():
    """cffi lets go of the interpreter's lock for every C call of ours: while one thread waits
    in C for the GPU (its round trips' polls, as ``dml_wait``'s), another thread's Python runs
    throughout, not only before and after."""
    import threading
    import time

    from dmlgpu.bench.gpu_timers import bare_round_trips

    runner = default_device().runner
    if runner.path.name != "native":
        return
    window: list = []

    def in_c() -> None:
        began = time.perf_counter()
        bare_round_trips(runner, 300, in_c=True)
        window.extend((began, time.perf_counter()))

    worker = threading.Thread(target=in_c)
    ticks = []
    worker.start()
    while worker.is_alive():
        ticks.append(time.perf_counter())
    worker.join()
    began, ended = window
    inside = [t for t in ticks if began + 0.25 * (ended - began) < t < ended - 0.25 * (ended - began)]
    assert ended - began > 0.01 and len(inside) > 100


def test_bench_transfer_cases_run_and_check_their_answers(tmp_path, capsys):
    path = tmp_path / "transfers.json"
    rc = cli.main(["bench", "--quick", "--case", "numpy_512k", "--case", "hardmax_np", "--case", "resident_loop",
                   "--json", str(path)])
    out = capsys.readouterr().out
    assert rc == 0, out
    numpy_case, hardmax_case, loop = json.loads(path.read_text())["results"]
    for result in (numpy_case, hardmax_case):
        assert result["kind"] == "numpy" and result["correct"] is True
        for key in ("e2e_s", "numpy_s", "upload_gbps", "read_back_gbps", "x_numpy"):
            assert result[key] > 0
    assert hardmax_case["host_fill_gbps"] > 0 and "host_fill_gbps" not in numpy_case  # the read-back's bound
    assert hardmax_case["host_fill_threads"] == default_device().runner.transfers.copies.threads[False]  # as the reads split
    assert loop["kind"] == "loop" and loop["correct"] is True and loop["calls"] == bench.LOOP_CALLS
    assert loop["gpu_s"] > 0 and loop["wall_per_call_s"] > 0
    assert "resident calls back to back" in out and "NumPy in/out" in out and "filled from host memory" in out


def test_bench_float64_case_runs_beside_its_ceiling_and_is_checked(tmp_path, capsys):
    """NumPy's default type through the bench: the ceiling reads the same bytes, the answer is
    checked against the oracle (the full suite's rows_f64 and numpy_1gib_f64 are its 1 GiB forms)."""
    path = tmp_path / "f64.json"
    assert cli.main(["bench", "--quick", "--case", "rows_f64", "--repeats", "3", "--json", str(path)]) == 0
    (result,) = json.loads(path.read_text())["results"]
    assert result["dtype"] == "FLOAT64" and result["status"] == "ok" and result["correct"] is True
    assert result["bytes"] >= 256 * 4096 * 8 and result["gbps"] > 0 and result["pct_of_ceiling"] > 0
    assert "f64 (256,4096) ax 1" in capsys.readouterr().out
    full = {c.name: c for c in bench.load_suite("full").cases}
    assert full["rows_f64"].dtype is full["numpy_1gib_f64"].dtype is DataType.FLOAT64
    assert full["numpy_1gib_f64"].kind == "numpy" and full["rows_f64"].kind == "gpu"


def test_full_suite_has_the_transfer_group():
    kinds = {c.name: c.kind for c in bench.load_suite("full").cases}
    assert kinds["numpy_1gib"] == "numpy" and kinds["resident_loop"] == "loop"
    assert kinds["llm_batch"] == "gpu"


def test_bench_rejects_a_filter_that_matches_nothing(capsys):
    assert cli.main(["bench", "--quick", "--case", "no-such-case"]) == 2
    assert "no case of the quick suite" in capsys.readouterr().err
