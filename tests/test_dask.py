"""dmlgpu.dask against the NumPy-level functions: random chunkings, ties and NaN across chunk
boundaries, every type, several axes; the same on a two-process ``distributed`` cluster.

Under CI (``CI=true``) a missing Dask fails the suite rather than skipping it.
"""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

import dmlgpu
from dmlgpu.errors import DescriptorError

if os.environ.get("CI") == "true":
    import dask.array as da  # CI installs the dask extra: never skip there
else:
    da = pytest.importorskip("dask.array", reason="the dask extra is not installed: pip install dmlgpu[dask]")

import dmlgpu.dask as dd  # noqa: E402
from _support import random_chunks  # noqa: E402

INT_TYPES = ["int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64"]
ALL_TYPES = ["float32", "float16", *INT_TYPES]
OUT_TYPES = ["uint32", "int32", "uint64", "int64"]
NAN = np.nan


def tie_heavy(rng, dtype, shape) -> np.ndarray:
    """Values from a few levels so that ties happen, the type's ends included; floats also get
    NaN and both zeros."""
    if dtype in INT_TYPES:
        info = np.iinfo(dtype)
        levels = np.array([info.min, info.min + 1, 0, 1, info.max - 1, info.max], dtype)
    else:
        levels = np.array([-np.inf, -1.5, -0.0, 0.0, 2.0, np.inf, NAN], dtype)
    return rng.choice(levels, size=shape)


def check(dask_fn, numpy_fn, x, chunks, axes, **kwargs):
    got = dask_fn(da.from_array(x, chunks=chunks), axes, **kwargs)
    want = numpy_fn(x, axes, **kwargs)
    assert (got.shape, got.dtype) == (want.shape, want.dtype)
    value = got.compute()
    assert value.dtype == want.dtype
    np.testing.assert_array_equal(value, want, err_msg=f"chunks={chunks} axes={axes} {kwargs}")


@pytest.mark.parametrize("dtype", ALL_TYPES)
def test_random_chunkings_match_the_numpy_level_functions(dtype):
    rng = np.random.default_rng(ALL_TYPES.index(dtype))
    for case in range(4):
        shape = tuple(rng.integers(1, 6, size=rng.integers(1, 4)))
        x = tie_heavy(rng, dtype, shape)
        axes = tuple(sorted(rng.choice(len(shape), size=rng.integers(1, len(shape) + 1), replace=False).tolist()))
        if rng.integers(2):
            axes = tuple(a - len(shape) for a in reversed(axes))  # negative and unordered axes too
        op = ("argmax", "argmin")[case % 2]
        kwargs = dict(axis_direction=("increasing", "decreasing")[(case // 2) % 2],
                      nan_mode=("ignore", "propagate")[rng.integers(2)], output_data_type=OUT_TYPES[case % 4])
        check(getattr(dd, op), getattr(dmlgpu, op), x, random_chunks(rng, shape), axes, **kwargs)


@pytest.mark.parametrize("direction", ["increasing", "decreasing"])
def test_ties_straddling_chunk_boundaries(direction):
    x = np.zeros((4, 9), np.float32)
    x[:, 2] = x[:, 3] = x[:, 6] = 5.0  # maxima each side of the cuts after 3 and 6
    x[1, 4], x[2, 0], x[3, 8] = 5.0, -1.0, 5.0
    for chunks in [(4, 3), (1, (3, 3, 3)), (2, (1, 2, 1, 1, 2, 2))]:
        for axes in [1, (0, 1)]:
            for op in ("argmax", "argmin"):
                check(getattr(dd, op), getattr(dmlgpu, op), x, chunks, axes, axis_direction=direction)
    # DirectML's own example, one element per chunk
    for op, values, first, last in [("argmax", [3, 2, 1, 2, 3], 0, 4), ("argmin", [1, 2, 3, 2, 1], 0, 4)]:
        got = getattr(dd, op)(da.from_array(np.array(values, np.float32), chunks=1), 0, axis_direction=direction)
        assert got.compute().tolist() == [first if direction == "increasing" else last]


@pytest.mark.parametrize("mode", ["ignore", "propagate"])
@pytest.mark.parametrize("direction", ["increasing", "decreasing"])
def test_nan_across_chunks(mode, direction):
    """Each chunking along a row and over both axes, the operators in turn: each meets both
    axes and every type; the other NaN mode the other operator."""
    x = np.array([[NAN, NAN, NAN, NAN, NAN, NAN],  # all NaN: the tie rule, across chunks
                  [NAN, 1.0, NAN, 3.0, NAN, 3.0],  # NaN in every chunk, numbers in some
                  [2.0, 2.0, 2.0, NAN, 2.0, 2.0],  # one NaN in the middle chunk
                  [-0.0, 0.0, -0.0, 0.0, 0.0, -0.0]], np.float32)  # signed zeros tie
    turn = 0  # the operator in turn over the chunkings and axes (an operator a chunk shape, each a compile)
    for dtype, chunkings in [("float32", [(1, 1), (4, (1, 4, 1)), (2, 3)]), ("float16", [(2, 2)])]:
        for chunks in chunkings:
            for axes in [1, (0, 1)]:
                op = ("argmax", "argmin")[(turn + turn // 2 + (mode == "ignore")) % 2]
                check(getattr(dd, op), getattr(dmlgpu, op), x.astype(dtype), chunks, axes,
                      axis_direction=direction, nan_mode=mode)
                turn += 1


@pytest.mark.parametrize("dtype", ["int64", "uint64"])
def test_64_bit_values_beyond_float_precision_across_chunks(dtype):
    top = np.iinfo(dtype).max
    x = np.array([top - 3, top - 1, top - 2, top - 1, top, top - 4, top], dtype)
    low = np.array([np.iinfo(dtype).min + k for k in (3, 1, 2, 1, 0, 4, 0)], dtype)
    for values in (x, low):
        for direction in ("increasing", "decreasing"):
            for op in ("argmax", "argmin"):
                check(getattr(dd, op), getattr(dmlgpu, op), values, 2, 0, axis_direction=direction,
                      output_data_type="int64")


@pytest.mark.parametrize("dtype", ["float32", "float16"])
@pytest.mark.parametrize("mode", ["ignore", "propagate"])
def test_hardmax_keeps_the_chunking(dtype, mode):
    """Each chunking over one of the axes (a shader a chunk shape and axes, each a compile),
    in turn over the parameters: every chunking meets every axes, type and NaN mode."""
    rng = np.random.default_rng(5)
    x = tie_heavy(rng, dtype, (5, 4, 6))
    x[0] = NAN
    turn = ["float32", "float16"].index(dtype) * 2 + ["ignore", "propagate"].index(mode)
    for i, chunks in enumerate([(2, 3, 4), (5, 1, (2, 4)), (5, 4, 6)]):
        axes = [0, (0, 2), (0, 1, 2)][(i + turn) % 3]
        got = dd.hardmax(da.from_array(x, chunks=chunks), axes, nan_mode=mode)
        assert got.chunks == da.from_array(x, chunks=chunks).chunks and got.dtype == x.dtype
        np.testing.assert_array_equal(got.compute(), dmlgpu.hardmax(x, axes, nan_mode=mode))


def test_spec_examples_chunk_by_chunk():
    grid = np.array([[1, 2, 3], [3, 0, 4], [2, 5, 2]], np.float32)
    g = da.from_array(grid, chunks=1)
    assert dd.argmax(g, (0, 1)).compute().tolist() == [[7]]
    assert dd.argmin(g, 0).compute().tolist() == [[0, 1, 2]]
    cube = da.from_array(np.array([[[12, 0], [-101, 11]], [[3, 234], [0, -101]]], np.float32), chunks=1)
    assert dd.hardmax(cube, (0, 2)).compute().tolist() == [[[0, 0], [0, 1]], [[0, 1], [0, 0]]]


def test_empty_chunks_and_a_split_every_of_two():
    x = np.arange(40, dtype=np.int32).reshape(5, 8) % 7
    for chunks in [((2, 0, 3), (3, 0, 5)), ((0, 5), 8)]:
        for axes in [0, 1, (0, 1)]:
            for direction in ("increasing", "decreasing"):
                check(dd.argmax, dmlgpu.argmax, x, chunks, axes, axis_direction=direction)
    got = dd.argmin(da.from_array(x, chunks=1), (0, 1), split_every=2, axis_direction="decreasing")
    assert got.compute().tolist() == [[int(dmlgpu.argmin(x, (0, 1), axis_direction="decreasing")[0, 0])]]


KEYED_DEVICES = {  # (device, shape, axes): plans that store the winner directly (short rows),
    # race a split into 64-bit atomics, merge a split's pairs, and merge pieces' pairs (a
    # binding of 4 KiB)
    "rows": (lambda: dmlgpu.Device(tuning=dmlgpu.plan.Tuning()), (4000, 3), (1,)),
    "race": (lambda: dmlgpu.Device(tuning=dmlgpu.plan.Tuning()), (1, 50000), (1,)),
    "merge": (lambda: dmlgpu.Device(tuning=dmlgpu.plan.Tuning(workgroup_size=32, target_workgroups=8, min_chunk_per_lane=2,
                                                                min_chunk_per_lane_single=2, race_max_chunks=0)), (6, 7, 90), (0, 2)),
    "pieces": (lambda: dmlgpu.Device(smaller={"max_storage_binding": 4096, "max_buffer": 16384},
                                     tuning=dmlgpu.plan.Tuning(workgroup_size=32)), (9000,), (0,)),
}


@pytest.fixture(scope="module", params=list(KEYED_DEVICES))
def keyed_device(request):
    make, shape, axes = KEYED_DEVICES[request.param]
    return request.param, make(), shape, axes


@pytest.mark.parametrize("dtype", [t for t in ALL_TYPES if np.dtype(t).itemsize <= 4])
def test_keyed_words_hold_the_winners_and_keys_that_order_them(keyed_device, dtype):
    """A chunk's output words from the GPU (``KeyedIndexDesc``: each winner's index in the low
    half, its shader key in the high half) hold the oracle's indices, and the keys order the
    winners exactly as ``oracle.order_keys`` orders their values (the same ranks: NaN's place,
    the zeros' shared key, every tie), where the winner is stored directly, by a split's race,
    after a split's merge and after the merge of pieces; ARGMAX and ARGMIN, both NaN modes and
    directions in rotation over the types."""
    from dmlgpu.dask import _keyed_words

    name, device, shape, axes = keyed_device
    k = ALL_TYPES.index(dtype) + len(KEYED_DEVICES) * list(KEYED_DEVICES).index(name)
    op, mode, direction = ("argmax", "argmin")[k % 2], ("ignore", "propagate")[k // 2 % 2], ("increasing", "decreasing")[k // 4 % 2]
    x = tie_heavy(np.random.default_rng(k), dtype, shape)
    info = np.finfo(dtype) if np.dtype(dtype).kind == "f" else np.iinfo(dtype)
    special = [info.min, 0, 1, info.max] + ([-1, -0.0, -np.inf, np.inf, np.nan] if np.dtype(dtype).kind == "f" else [])
    keys, want_keys = [], []  # over x and arrays of one value each: keys compare across calls, as chunks' do
    for data in [x] + [np.full(shape, v, dtype) for v in special]:
        words = _keyed_words(data, op, axes, direction, mode, device)
        want = getattr(dmlgpu.oracle, op)(data, axes, axis_direction=direction, nan_mode=mode)
        np.testing.assert_array_equal(words & np.uint64(0xFFFFFFFF), want)
        winners = dd._winners(data, dict(zip(axes, np.unravel_index(want.astype(np.intp), [shape[a] for a in axes]))))
        keys.append((words >> np.uint64(32)).reshape(-1))
        want_keys.append(dmlgpu.oracle.order_keys(winners, want_max=op == "argmax", nan_mode=mode).reshape(-1))
    ranks = [np.unique(np.concatenate(k), return_inverse=True)[1] for k in (keys, want_keys)]
    np.testing.assert_array_equal(*ranks)
    plan_of = device.compile(dmlgpu.desc.KeyedIndexDesc(dmlgpu.desc.operator_for(
        op, dmlgpu.layout.upload_desc(x), axes, dmlgpu.types.AxisDirection.parse(direction, "axis_direction"), "uint64")))
    plan = plan_of.plan
    assert {"rows": plan.kernel == "reduce_rows" and plan.split == 1, "race": plan.race,
            "merge": plan.split > 1 and plan.merge_kernel is not None, "pieces": len(plan_of.schedule.pieces) > 1}[name]


def test_keyed_outputs_refuse_what_they_cannot_hold():
    """A keyed output must be UINT64 and its input at most 32 bits: named, before the GPU."""
    desc = dmlgpu.desc
    x = dmlgpu.TensorDesc("float64", (4, 5))
    with pytest.raises(DescriptorError, match="input_tensor.data_type is FLOAT64"):
        desc.KeyedIndexDesc(desc.operator_for("argmax", x, (0,), output_data_type="uint64"))
    with pytest.raises(DescriptorError, match="output_tensor.data_type is UINT32, but a keyed output must be UINT64"):
        desc.KeyedIndexDesc(desc.operator_for("argmin", dmlgpu.TensorDesc("int8", (4, 5)), (1,)))
    with pytest.raises(TypeError, match="ARGMAX or ARGMIN"):
        desc.KeyedIndexDesc(desc.operator_for("hardmax", x, (0,)))


@pytest.mark.parametrize("layout", ["packed", "transposed", "sliced", "size-1 axes"])
def test_winning_values_read_as_indexing_reads_them(layout):
    """A chunk's winners, read through one flat index where the chunk is packed and by
    indexing otherwise, are the elements at the winners' positions, for one and two reduced
    axes (the oracle's argmax is the position each time)."""
    from dmlgpu.dask import _winners

    rng = np.random.default_rng(3)
    base = rng.standard_normal((6, 7, 5)).astype(np.float32)
    block = {"packed": base, "transposed": base.transpose(2, 0, 1), "sliced": base[::2, 1:, ::-1],
             "size-1 axes": base[::5][1:]}[layout]  # an odd stride where the size is 1
    assert block.flags.c_contiguous == (layout in ("packed", "size-1 axes"))
    for axes in [(0,), (1,), (2,), (0, 2), (1, 2)]:
        local = dmlgpu.oracle.argmax(block, axes)
        coords = np.unravel_index(local.astype(np.intp), [block.shape[a] for a in axes])
        np.testing.assert_array_equal(_winners(block, dict(zip(axes, coords))), block.max(axis=axes, keepdims=True))


def test_merge_rule_is_independent_of_order():
    rng = np.random.default_rng(1)
    pairs = np.empty((12, 50), dd.PAIR)
    pairs["key"] = rng.integers(0, 3, pairs.shape)
    pairs["index"] = rng.permutation(12 * 50).reshape(pairs.shape)
    for increasing in (True, False):
        want = dd.merge_pairs(pairs, (0,), increasing=increasing)
        for _ in range(5):
            shuffled = pairs[rng.permutation(12)]
            halves = np.concatenate([dd.merge_pairs(shuffled[:5], (0,), increasing=increasing),
                                     dd.merge_pairs(shuffled[5:], (0,), increasing=increasing)])
            np.testing.assert_array_equal(dd.merge_pairs(halves, (0,), increasing=increasing), want)


def test_threaded_scheduler_shares_the_default_device():
    """Dask's default scheduler runs chunks on several threads at once, on one device."""
    import dask

    rng = np.random.default_rng(3)
    x = rng.integers(0, 50, (64, 48)).astype(np.float32)
    with dask.config.set(scheduler="threads", num_workers=4):
        for axes in [0, (0, 1)]:
            check(dd.argmax, dmlgpu.argmax, x, (8, 6), axes, axis_direction="decreasing")
        check(dd.hardmax, dmlgpu.hardmax, x, (8, 6), 0)


def test_a_given_device_runs_every_chunk(device):
    x = np.arange(24, dtype=np.float32).reshape(4, 6)
    before = device.runner.programs.count
    got = dd.argmax(da.from_array(x, chunks=2), 1, device=device).compute(scheduler="sync")
    assert got.ravel().tolist() == [5] * 4 and device.runner.programs.count >= before


def test_bad_arguments_are_refused_when_the_graph_is_built():
    x = da.zeros((4, 6), dtype=np.float32, chunks=2)
    with pytest.raises(TypeError, match="x must be a dask.array.Array, not ndarray"):
        dd.argmax(np.zeros(3, np.float32), 0)
    with pytest.raises(DescriptorError, match=r"axes"):
        dd.argmax(x, 2)
    with pytest.raises(DescriptorError, match=r"axes"):
        dd.argmin(x, (0, 0))
    with pytest.raises(DescriptorError, match="axis_direction is 'sideways'"):
        dd.argmax(x, 0, axis_direction="sideways")
    with pytest.raises(DescriptorError, match="nan_mode is 'loud'"):
        dd.argmax(x, 0, nan_mode="loud")
    with pytest.raises(TypeError, match="x.dtype is complex128"):
        dd.argmax(da.zeros(3, dtype=np.complex128, chunks=1), 0)
    with pytest.raises(DescriptorError, match="INT32"):
        dd.hardmax(x.astype(np.int32), 0)
    with pytest.raises(DescriptorError, match="output_tensor.data_type is FLOAT32"):
        dd.argmax(x, 0, output_data_type="float32")
    with pytest.raises(ValueError, match="unknown size"):
        dd.argmax(x[x[:, 0] > 0], 0)


def test_index_capacity_is_checked_over_the_whole_reduction():
    """A Dask array may reduce more elements than one DirectML tensor holds; the output type
    must still hold every index. Only the graph is built here."""
    big = da.zeros((2**31 + 1,), dtype=np.uint8, chunks=2**30)
    with pytest.raises(DescriptorError, match=r"INT32, but the 2147483649 reduced elements"):
        dd.argmax(big, 0, output_data_type="int32")
    assert dd.argmax(big, 0).dtype == np.uint32
    huge = da.zeros((3, 2**32 + 7), dtype=np.uint8, chunks=2**30)
    with pytest.raises(DescriptorError, match=r"UINT32, but the 4294967303 reduced elements"):
        dd.argmax(huge, 1)
    assert dd.argmin(huge, 1, output_data_type="uint64").shape == (3, 1)
    assert dd.argmax(huge, 0).shape == (1, 2**32 + 7)


def test_a_chunk_that_fails_surfaces_at_compute():
    """Bad data in one chunk (here a chunk of complex64, which no operator takes) raises when
    computed, naming the problem."""
    x = da.zeros((6, 4), dtype=np.float32, chunks=2)
    bad = x.map_blocks(lambda b, block_info=None: b.astype(np.complex64) if block_info[0]["chunk-location"] == (1, 0)
                       else b, dtype=np.float32)
    whole = da.zeros((6, 4), dtype=np.float32, chunks=(2, 4)).map_blocks(
        lambda b, block_info=None: b.astype(np.complex64) if block_info[0]["chunk-location"] == (1, 0) else b,
        dtype=np.float32)  # reduced axes whole in every chunk: the path without a merge
    for result in (dd.argmax(bad, 0), dd.hardmax(bad, 0), dd.argmin(bad, 1), dd.argmin(whole, 1),
                   dd.hardmax(whole, 1)):
        with pytest.raises(TypeError, match=r"^chunk \(\d, 0\) of x, on adapter '.+': x.dtype is complex64, but"):
            result.compute()


# --- chunks streamed beside each other (issue 49): large chunks, their transfers counted


def _streaming_device():
    """A device whose transfers take the paths of a GPU's 256 MiB chunks at lavapipe's sizes:
    chunks of 8 MiB stream through a ring of 4 MiB staging buffers (two a chunk, as 256 MiB
    through 128 MiB), above the 4 MiB of a small call's kit."""
    device = dmlgpu.Device(tuning=dmlgpu.plan.Tuning())
    transfers = device.runner.transfers
    transfers.ring_chunk, transfers.stream_above = 4 << 20, 1 << 20
    return device


def _live_bytes(device) -> int:
    """GPU memory held by the device outside its pools: tensors and the programs' own buffers."""
    memory = device.runner.memory
    memory.take_returned()
    return memory.held_bytes - memory.pool.bytes - memory.readable.bytes


def _settled(device) -> None:
    """No transfer under way or waited for, every staging ring given back."""
    transfers = device.runner.transfers
    flow = transfers.flow.snapshot()
    assert flow["in_flight"] == 0 and not transfers.flow.awaited, flow
    assert transfers.rings._out == {True: 0, False: 0}


def test_dask_threads_stream_chunks_beside_each_other():
    """Dask's threaded scheduler, two threads, one device, chunks of 8 MiB split along the
    reduced axis: the answers are the NumPy-level functions', every chunk's upload went through
    the device's staging rings with two under way at once, and nothing is left behind: no
    transfer in flight, every ring back, no GPU memory held but the pools' and the programs'."""
    from concurrent.futures import ThreadPoolExecutor

    import dask

    device = _streaming_device()
    try:
        x = np.random.default_rng(12).random((2048, 8192), dtype=np.float32)  # 64 MiB
        x[[5, 1500], [7, 7]] = 2.0  # a tie across two chunks of one column
        arr = da.from_array(x, chunks=(512, 4096))  # 8 chunks of 8 MiB, 4 along axis 0
        cases = (("argmax", 0), ("argmin", 0), ("argmax", (0, 1)), ("argmax", 1))
        with ThreadPoolExecutor(2) as pool, dask.config.set(scheduler="threads", pool=pool):
            for op, axes in cases:  # (compiled: each operator's program keeps buffers of its own)
                np.testing.assert_array_equal(getattr(dd, op)(arr, axes, device=device).compute(),
                                              getattr(dmlgpu, op)(x, axes), err_msg=f"{op} {axes}")
            live, before = _live_bytes(device), device.runner.transfers.flow.snapshot()
            for op, axes in cases[1:]:
                got = getattr(dd, op)(arr, axes, device=device).compute()
                np.testing.assert_array_equal(got, getattr(dmlgpu, op)(x, axes), err_msg=f"{op} {axes}")
        after = device.runner.transfers.flow.snapshot()
        assert after["uploads"] - before["uploads"] == 3 * 8, after  # (a chunk's span: its rows, gaps and all)
        assert after["upload_bytes"] - before["upload_bytes"] >= 3 * x.nbytes
        assert after["most_in_flight"] >= 2, after
        _settled(device)
        assert _live_bytes(device) == live
    finally:
        device.close()


def test_a_chunk_failing_mid_upload_surfaces_and_leaves_nothing_behind(monkeypatch):
    """A chunk whose upload fails half-way (its copy into staging raises), while the other
    thread streams its own chunk: ``compute`` raises the error, naming the chunk and the
    adapter; once the other thread's task is over nothing is left behind (its ring destroyed,
    as a buffer of it may be mid-map), and the device computes right answers after."""
    from concurrent.futures import ThreadPoolExecutor

    import dask

    from dmlgpu.runtime.transfers import HostCopies

    device = _streaming_device()
    try:
        x = np.random.default_rng(13).random((2048, 8192), dtype=np.float32)
        arr = da.from_array(x, chunks=(512, 4096))
        with ThreadPoolExecutor(2) as pool, dask.config.set(scheduler="threads", pool=pool):
            dd.argmax(arr, 0, device=device).compute()  # (compiled, buffers pooled)
        live = _live_bytes(device)
        copy, calls = HostCopies.copy, []

        def failing(self, dst, src, write):
            calls.append(write)
            if write and calls.count(True) == 5:  # the first staging chunk of the third chunk's upload
                raise RuntimeError("the copy into staging failed (a test's)")
            copy(self, dst, src, write)

        monkeypatch.setattr(HostCopies, "copy", failing)
        pool = ThreadPoolExecutor(2)
        with dask.config.set(scheduler="threads", pool=pool):
            with pytest.raises(RuntimeError, match=r"^chunk \(\d, \d\) of x, on adapter '.+': the copy into staging"):
                dd.argmax(arr, 0, device=device).compute()
        pool.shutdown(wait=True)  # (the other thread's chunk, still running when the error came)
        monkeypatch.undo()
        _settled(device)
        assert _live_bytes(device) == live
        with ThreadPoolExecutor(2) as pool, dask.config.set(scheduler="threads", pool=pool):
            np.testing.assert_array_equal(dd.argmax(arr, 0, device=device).compute(), dmlgpu.argmax(x, 0))
        _settled(device)
    finally:
        device.close()


def test_import_without_dask_says_how_to_install_it():
    code = ("import sys; sys.modules['dask'] = None; sys.modules['dask.array'] = None\n"
            "try:\n    import dmlgpu.dask\nexcept ImportError as e:\n    print(e)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert "pip install dmlgpu[dask]" in out


# --- dask.distributed: two worker processes, each with its own device on lavapipe


def test_local_cluster_refuses_adapters_that_do_not_exist():
    for adapters in ([], [99], [-1], ["#0"]):
        with pytest.raises(ValueError, match="adapters"):
            dd.local_cluster(adapters=adapters)


@pytest.fixture(scope="module")
def client():
    from distributed import Client

    with dd.local_cluster(adapters=[0, 0]) as cluster, Client(cluster) as client:
        yield client


def test_local_cluster_pins_each_worker_to_its_adapter(client, device):
    env = client.run(lambda: os.environ.get("DMLGPU_ADAPTER"))
    assert sorted(env.values()) == ["#0", "#0"]
    names = client.run(lambda: dmlgpu.default_device().name)
    assert set(names.values()) == {dmlgpu.runtime.adapters.adapters()[0].info["device"]}
    assert len({pid for pid in client.run(os.getpid).values()} | {os.getpid()}) == 3


def test_distributed_matches_the_numpy_level_functions(client):
    """Regular chunks (one chunk shape, so each worker compiles few operators)."""
    rng = np.random.default_rng(11)
    x = tie_heavy(rng, "float32", (8, 6, 4))
    arr = da.from_array(x, chunks=(2, 3, 2))
    for op, axes, kwargs in [("argmax", (0, 2), {}), ("argmin", 1, {"axis_direction": "decreasing",
                                                                     "nan_mode": "propagate",
                                                                     "output_data_type": "int64"})]:
        got = client.compute(getattr(dd, op)(arr, axes, **kwargs)).result()
        np.testing.assert_array_equal(got, getattr(dmlgpu, op)(x, axes, **kwargs))
    np.testing.assert_array_equal(client.compute(dd.hardmax(arr, (0, 2))).result(), dmlgpu.hardmax(x, (0, 2)))
    ints = da.random.default_rng(2).integers(-5, 5, (8, 6), chunks=(2, 3)).astype(np.int64)  # made on the workers
    np.testing.assert_array_equal(dd.argmin(ints, 0).compute(), dmlgpu.argmin(ints.compute(), 0))


def test_distributed_failure_surfaces_at_compute(client):
    x = da.zeros((6, 4), dtype=np.float32, chunks=2)
    bad = x.map_blocks(lambda b, block_info=None: b.astype(np.complex64) if block_info[0]["chunk-location"] == (2, 1)
                       else b, dtype=np.float32)
    with pytest.raises(TypeError, match=r"^chunk \(2, 1\) of x, on adapter '.+': x.dtype is complex64"):
        client.compute(dd.argmax(bad, (0, 1))).result()
    assert dd.argmax(x, (0, 1)).compute().tolist() == [[0]]  # the workers carry on


def _worker_sizes(sizes=None, dask_worker=None):
    """On a worker: its default device's staging chunk and streaming threshold, set to
    ``sizes`` if given; the ones before."""
    transfers = dmlgpu.default_device().runner.transfers
    before = (transfers.ring_chunk, transfers.stream_above)
    if sizes is not None:
        transfers.ring_chunk, transfers.stream_above = sizes
    return before


def _worker_flow(dask_worker=None):
    """On a worker: its default device's flow, and the bytes it has sent to other workers and clients."""
    return {**dmlgpu.default_device().runner.transfers.flow.snapshot(), "sent": dask_worker.transfer_outgoing_bytes_total}


def test_distributed_workers_stream_their_own_chunks_and_send_only_pairs(client):
    """Chunks made on the workers (never on the client), 8 MiB each, streamed through each
    worker's own device as a GPU's 256 MiB chunks are: the answer is the NumPy-level
    function's, every chunk was uploaded on the worker that made it, nothing is left in
    flight, and what the workers sent one another and the client (the chunks' (key, index)
    pairs, the result) is far less than one chunk."""
    kept = client.run(_worker_sizes, (4 << 20, 1 << 20))
    try:
        x = da.random.default_rng(21).random((2048, 8192), chunks=(512, 4096), dtype=np.float32)  # 8 chunks
        dd.argmax(x, 0).compute()  # (compiled on each worker)
        before = client.run(_worker_flow)
        got = dd.argmax(x, 0).compute()
        after = client.run(_worker_flow)
        np.testing.assert_array_equal(got, dmlgpu.argmax(x.compute(), 0))
        assert sum(after[w]["uploads"] - before[w]["uploads"] for w in after) == 8, (before, after)
        assert all(after[w]["in_flight"] == 0 for w in after), after
        sent = sum(after[w]["sent"] - before[w]["sent"] for w in after)
        assert sent < (512 * 4096 * 4) // 4, f"the workers sent {sent} bytes: a chunk crossed between them?"
    finally:
        for worker, sizes in kept.items():
            client.run(_worker_sizes, sizes, workers=[worker])


def test_a_cluster_started_with_dasks_own_commands():
    """docs/dask.md's recipe for several hosts, on this one: ``dask scheduler`` and one ``dask
    worker`` per GPU, each pinned by ``DMLGPU_ADAPTER`` (here one, on lavapipe's adapter #0; the
    fixture above runs two), on the loopback address; a client connects through the scheduler
    file and computes."""
    import subprocess
    import sys
    import tempfile
    import time

    from distributed import Client

    with tempfile.TemporaryDirectory() as folder:
        scheduler_file = os.path.join(folder, "scheduler.json")
        dask = [sys.executable, "-m", "dask"]
        quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
        procs = [subprocess.Popen(dask + ["scheduler", "--host", "127.0.0.1", "--port", "0", "--no-dashboard",
                                          "--scheduler-file", scheduler_file], **quiet)]
        try:
            while not os.path.exists(scheduler_file):
                assert procs[0].poll() is None, "dask scheduler exited"
                time.sleep(0.05)
            for i in range(1):
                procs.append(subprocess.Popen(
                    dask + ["worker", "--scheduler-file", scheduler_file, "--nthreads", "4", "--no-dashboard",
                            "--host", "127.0.0.1", "--name", f"gpu{i}"],
                    env={**os.environ, "DMLGPU_ADAPTER": "#0"}, **quiet))
            with Client(scheduler_file=scheduler_file, timeout=60) as client:
                client.wait_for_workers(1, timeout=60)
                assert list(client.run(lambda: os.environ.get("DMLGPU_ADAPTER")).values()) == ["#0"]
                x = tie_heavy(np.random.default_rng(5), "float32", (8, 6))
                got = client.compute(dd.argmax(da.from_array(x, chunks=(2, 3)), 0)).result()
                np.testing.assert_array_equal(got, dmlgpu.argmax(x, 0))
                client.shutdown()  # the scheduler and its workers, as a user ends such a cluster
            for p in procs:
                assert p.wait(timeout=60) is not None
        finally:
            for p in procs:
                if p.poll() is None:
                    p.kill()
                    p.wait()
