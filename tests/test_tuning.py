"""Families of shapes, the tunings an adapter gets, and the choice from measurements: pure
Python, no GPU (tuning.py, plan.family_of, plan.Tunings)."""

import dataclasses
import json

import pytest

from dmlgpu import ArgMaxOperatorDesc, TensorDesc
from dmlgpu.pieces import schedule
from dmlgpu.plan import Capabilities, Tuning, Tunings, family_of, plan
from dmlgpu.desc import operator_for
from dmlgpu.tuning import (GPU_CANDIDATES, MARGIN, SOFTWARE_TUNING, call_probe, candidates, choose, default_tuning,
                           families, from_choices, probe, probe_bytes, table_digest, texts, tuning_changes,
                           tuning_from_spec)
from dmlgpu.types import NanMode

GPU = Capabilities(max_storage_binding=2**31 - 4, max_buffer=2**32, subgroups=True, shader_int64=True,
                   int64_atomics=True)
CPU = Capabilities(max_storage_binding=2**27, max_buffer=2**31 - 1, subgroups=True, shader_int64=True, software=True)


def red(sizes, axes, data_type="FLOAT32"):
    return ArgMaxOperatorDesc(TensorDesc(data_type, list(sizes)), axes=list(axes)).lower()


@pytest.mark.parametrize("sizes, axes, data_type, family", [
    ((4096, 65536), [1], "FLOAT32", "rows/32@seg256"),
    ((4096, 2048), [1], "FLOAT32", "rows/32@seg64"),  # rows 32 times shorter: another bucket
    ((4096, 65536), [1], "INT8", "rows/8@seg256"),
    ((65536, 4096), [0], "FLOAT32", "columns/32@r256+"),
    ((16, 21, 512, 512), [1], "FLOAT32", "columns/32@r32"),
    ((8, 16777216), [0], "FLOAT32", "columns/32@r8"),
    ((4194304, 64), [1], "FLOAT32", "short_rows/32@256B"),
    ((1048576, 256), [1], "FLOAT32", "short_rows/32@1024B"),
    ((33554432, 3), [1], "FLOAT32", "narrow_rows/32@16B"),
    ((64, 256, 4096), [0, 2], "FLOAT32", "multi_axis/32@seg256"),
    ((16384, 16384), [0, 1], "FLOAT32", "single/32@x4096"),
    ((1, 151936), [1], "FLOAT32", "single/32@x512"),  # a small call: not the 1 GiB reduction's bucket
    ((64, 151936), [1], "FLOAT16", "few_rows/16@seg256"),
    ((1000, 3), [0], "FLOAT32", "thread/32"),
    ((1000, 8), [0], "INT64", "thread/64"),
])
def test_family_of_the_suites_shapes(sizes, axes, data_type, family):
    assert family_of(red(sizes, axes, data_type), GPU) == family


def test_a_family_is_decided_under_the_tuning_given():
    # 64 rows of 16384: several chunks a row on a CPU adapter's defaults, one on a GPU's
    assert family_of(red((64, 16384), [1]), GPU) == "rows/32@seg256"
    assert family_of(red((64, 16384), [1]), CPU, SOFTWARE_TUNING) == "few_rows/32@seg1"


def test_tunings_pick_the_familys_tuning_and_plan_as_that_tuning_would():
    rows64 = Tuning(loads_per_thread=2)
    tunings = Tunings(default=Tuning(), families=(("short_rows/32@256B", rows64),))
    short, long = red((4194304, 64), [1]), red((4096, 65536), [1])
    assert tunings.for_reduction(short, GPU) == rows64
    assert tunings.for_reduction(long, GPU) == Tuning()
    assert plan(short, GPU, NanMode.IGNORE, tunings) == plan(short, GPU, NanMode.IGNORE, rows64)
    assert plan(short, GPU, NanMode.IGNORE, tunings).segment == 8  # 16 quads, 2 a thread
    assert plan(long, GPU, NanMode.IGNORE, tunings) == plan(long, GPU, NanMode.IGNORE, Tuning())
    assert schedule(short, GPU, NanMode.IGNORE, tunings) == schedule(short, GPU, NanMode.IGNORE, rows64)


def test_a_cpu_adapter_gets_a_thread_a_row_and_no_barriers():
    assert default_tuning(CPU) == SOFTWARE_TUNING and default_tuning(GPU) == Tuning()
    rows = plan(red((4096, 16384), [1]), CPU, NanMode.IGNORE, SOFTWARE_TUNING)
    assert (rows.kernel, rows.segment, rows.workgroup_size, rows.subgroups) == ("reduce_segments", 1, 8, False)
    one = plan(red((1, 151936), [1]), CPU, NanMode.IGNORE, SOFTWARE_TUNING)
    assert one.segment == 1 and 16 <= one.split <= 512 and one.merge_kernel  # a few hundred chunks, merged
    assert not one.interleave  # a CPU thread reads its chunk's own run
    short = plan(red((100000, 3), [1]), CPU, NanMode.IGNORE, SOFTWARE_TUNING)
    assert short.kernel == "reduce_rows" and not short.row_stage  # each thread stores its own rows
    staged = plan(red((100000, 3), [1]), GPU, NanMode.IGNORE, Tuning())
    assert staged.row_stage


def test_candidates_start_with_the_default_and_a_cpu_adapter_also_tries_the_gpus():
    for family in families(GPU):
        found = candidates(GPU, family)
        assert found[0] == Tuning() and len(found) == len(set(found)) > 1
    for family in families(CPU):
        found = candidates(CPU, family)
        assert found[0] == SOFTWARE_TUNING and found[-1] == Tuning()
    assert candidates(GPU, "thread/32") == (Tuning(),)  # nothing to choose between


@pytest.mark.parametrize("caps", [GPU, CPU], ids=["gpu", "cpu"])
def test_every_measured_familys_probe_is_of_that_family(caps):
    measured = families(caps)
    names = {family.partition("@")[0] for family in measured}
    assert {"rows/32", "short_rows/32", "few_rows/16", "single/32", "columns/32"} <= names
    assert "columns/64" not in names and "short_rows/64" not in names  # 8-byte types never take them
    for family in measured:
        probed = probe(family, caps)
        assert family_of(probed, caps, default_tuning(caps)) == family, family
        nbytes = probed.input.total_tensor_size_in_bytes
        least = 1 << 16 if family.startswith("few_rows") else probe_bytes(caps) // 4  # a batch of rows, as an LLM's
        assert least <= nbytes <= probe_bytes(caps) * 2, (family, nbytes)
        assert nbytes <= caps.max_storage_binding


@pytest.mark.parametrize("caps", [GPU, CPU], ids=["gpu", "cpu"])
@pytest.mark.parametrize("sizes, axes, data_type, op, direction, out", [
    ((4096, 65536), [1], "FLOAT32", "argmax", "increasing", "UINT32"),
    ((4096, 65536), [1], "INT8", "argmin", "decreasing", "INT64"),
    ((65536, 4096), [0], "FLOAT32", "argmax", "increasing", "UINT32"),
    ((16, 21, 512, 512), [1], "FLOAT32", "argmax", "increasing", "UINT64"),
    ((4194304, 64), [1], "FLOAT32", "argmin", "increasing", "UINT32"),
    ((64, 256, 4096), [0, 2], "FLOAT32", "argmax", "decreasing", "UINT32"),
    ((16384, 16384), [0, 1], "FLOAT32", "argmax", "increasing", "UINT32"),
    ((64, 64), [1], "FLOAT32", "argmin", "increasing", "UINT32"),  # small: grown
    ((4096, 65536), [1], "FLOAT32", "hardmax", "increasing", None),
    ((4096, 65536), [1], "FLOAT16", "hardmax", "increasing", None),
])
@pytest.mark.parametrize("nan_mode", [NanMode.IGNORE, NanMode.PROPAGATE])
def test_a_probe_shaped_after_a_call_compiles_the_calls_own_texts(sizes, axes, data_type, op, direction, out, nan_mode,
                                                                  caps):
    base = default_tuning(caps)
    extra = () if op == "hardmax" else (direction, out)
    call = operator_for(op, TensorDesc(data_type, list(sizes)), axes, *extra).lower()
    family = family_of(call, caps, base)
    probed = call_probe(call, nan_mode, caps)
    if probed is None:  # every one of these calls has a probe of its shape on a GPU; on a CPU's
        assert caps is CPU  # 1 MiB, not all (the family's own probe is measured then)
        return
    assert (probed.op, probed.axes, probed.direction, probed.output.data_type) == \
        (call.op, call.axes, call.direction, call.output.data_type)
    assert family_of(probed, caps, base) == family
    target = probe_bytes(caps) // (2 if op == "hardmax" else 1)  # (HARDMAX's output as large again)
    assert target // 8 <= probed.input.total_tensor_size_in_bytes <= target
    if target // 8 <= call.input.total_tensor_size_in_bytes <= target:
        assert probed.input.sizes == call.input.sizes  # measured at its own size
    for tuning in candidates(caps, family):
        assert texts(probed, caps, nan_mode, tuning) == texts(call, caps, nan_mode, tuning)


def test_a_cpu_adapters_probe_is_shaped_after_the_call_where_it_can_be():
    for sizes in [(4096, 256), (64, 64), (4194304, 64)]:
        probed = call_probe(red(sizes, [1]), NanMode.IGNORE, CPU)
        assert probed is not None and probed.input.total_tensor_size_in_bytes <= 2 * probe_bytes(CPU)


def test_a_strided_call_gets_a_packed_probe_of_its_texts_or_none():
    rows = ArgMaxOperatorDesc(TensorDesc("FLOAT32", [4096, 4096], strides=[8192, 1]), axes=[1]).lower()
    probed = call_probe(rows, NanMode.IGNORE, GPU)
    assert probed is not None and probed.input.strides is None
    for tuning in candidates(GPU, "rows/32"):
        assert texts(probed, GPU, NanMode.IGNORE, tuning) == texts(rows, GPU, NanMode.IGNORE, tuning)
    by_columns = ArgMaxOperatorDesc(TensorDesc("FLOAT32", [4096, 4096], strides=[1, 4096]), axes=[1]).lower()
    assert call_probe(by_columns, NanMode.IGNORE, GPU) is None  # its packed shape plans otherwise


def test_a_call_no_probe_can_be_shaped_after_gets_none():  # (the family's own probe is measured)
    assert call_probe(red((1, 151936), [1]), NanMode.IGNORE, GPU) is None  # a split of its own: grown, it splits otherwise
    # rows of 8: every short_rows candidate plans them alike, so they would choose by noise
    assert len({texts(red((16777216, 8), [1]), GPU, NanMode.IGNORE, t) for t in candidates(GPU, "short_rows/32")}) == 1
    assert call_probe(red((16777216, 8), [1]), NanMode.IGNORE, GPU) is None


def test_choose_keeps_the_default_unless_a_candidate_beats_it_by_the_margin():
    assert choose([1.0, 0.9, 0.95]) == 1
    assert choose([1.0, 1.0 / (1 + MARGIN) + 1e-9]) == 0  # within the margin
    assert choose([1.0, 1.0 / (1 + MARGIN) - 1e-3]) == 1
    assert choose([0.5, 0.9]) == 0


def test_choices_round_trip_as_changes_and_unknown_fields_are_ignored():
    chosen = {"rows/32": tuning_changes(Tuning(workgroup_size=128), Tuning()), "columns/32": {}}
    assert chosen["rows/32"] == {"workgroup_size": 128}
    tunings = from_choices(GPU, json.loads(json.dumps({**chosen, "single/32": {"no_such_field": 3}})))
    assert tunings.for_family("rows/32") == Tuning(workgroup_size=128)
    assert tunings.for_family("columns/32") == Tuning() == tunings.for_family("single/32")
    assert tunings.for_family("never/8") == tunings.default == Tuning()
    assert from_choices(CPU, {"rows/32": {"workgroup_size": 64}}).for_family("rows/32") == dataclasses.replace(
        SOFTWARE_TUNING, workgroup_size=64)


def test_the_table_digest_changes_with_the_table():
    before = table_digest(GPU)
    assert before == table_digest(GPU) and before != table_digest(CPU)
    GPU_CANDIDATES["rows"] = (*GPU_CANDIDATES["rows"], {"batch": 4})
    try:
        assert table_digest(GPU) != before
    finally:
        GPU_CANDIDATES["rows"] = GPU_CANDIDATES["rows"][:-1]


# --- a tuner that never loses, on a planner fed with fake measurements -----------------------------

def fake_seconds(red, tuning) -> float:
    """A GPU whose best setting moves within a kernel family, as the H200's did: workgroups of 128
    gain 5% on rows a workgroup of threads reads (a segment of 128 or more threads) and cost 10%
    on shorter rows; 4 loads a thread gain 5% on rows of 1 KiB and cost 12% on shorter ones."""
    p = plan(red, GPU, NanMode.IGNORE, tuning)
    factor = 1.0
    if p.kernel == "reduce_segments" and p.output_count > 1 and tuning.workgroup_size == 128:
        factor = 0.95 if p.segment >= 128 else 1.10
    if p.kernel == "reduce_rows" and tuning.loads_per_thread == 4:
        factor = 0.95 if p.row_width * red.input.data_type.size >= 1024 else 1.12
    return red.input.total_tensor_size_in_bytes / 3e12 * factor


class _FakeDevice:
    """What a Calibration reads of a device, for an adapter with the GPU's capabilities."""

    name = "a fake GPU"

    def __init__(self):
        adapter = type("Adapter", (), {"info": {"device": self.name}})()
        self.runner = type("Runner", (), {"capabilities": GPU, "adapter": adapter, "features": set()})()


def calibrated_tunings(monkeypatch, tmp_path, calls):
    """The tuning each call gets from a Calibration that measures with ``fake_seconds``, the calls
    compiled in this order (as a process would, each family measured by its first call)."""
    from dmlgpu.calibration import Calibration, FamilyReport

    monkeypatch.setenv("DMLGPU_CACHE_DIR", str(tmp_path))

    def measure(self, family, probed, nan_mode):
        tunings = candidates(GPU, family)
        seconds = [fake_seconds(probed, t) for t in tunings]
        return FamilyReport(family, str(probed.input.sizes), probed.input.total_tensor_size_in_bytes,
                            [tuning_changes(t, self.default) for t in tunings], seconds, choose(seconds), 0.0, {})

    monkeypatch.setattr(Calibration, "_measure", measure)
    device = _FakeDevice()  # (the calibration holds it weakly)
    calibration = Calibration(device, mode="on")
    for call in calls:
        calibration.tuning_for(call)
    return [calibration.tunings.for_reduction(call, GPU) for call in calls]


SUITE_ROWS = [red((4096, 65536), [1]), red((1048576, 256), [1]), red((4194304, 64), [1]), red((16777216, 8), [1]),
              red((65536, 2048), [1]), red((262144, 512), [1])]


def test_a_calibrated_call_is_never_slower_than_the_default(monkeypatch, tmp_path):
    """Each call, with the choice its family (bucket included) was measured to, is no slower than
    with the built-in default, and the long rows still gain their 5%."""
    tunings = calibrated_tunings(monkeypatch, tmp_path, SUITE_ROWS)
    for call, tuning in zip(SUITE_ROWS, tunings):
        assert fake_seconds(call, tuning) <= fake_seconds(call, Tuning()), (call.input.sizes, tuning_changes(tuning,
                                                                                                            Tuning()))
    assert fake_seconds(SUITE_ROWS[0], tunings[0]) < fake_seconds(SUITE_ROWS[0], Tuning())
    assert fake_seconds(SUITE_ROWS[1], tunings[1]) < fake_seconds(SUITE_ROWS[1], Tuning())


def test_a_choice_kept_by_family_alone_would_lose(monkeypatch, tmp_path):
    """What the buckets prevent: with every family's bucket left out, the choice made on the first
    call of a family serves calls whose best setting differs, and one of them is slower."""
    from dmlgpu import kernels

    for kernel in kernels.FIRST_PASS:
        monkeypatch.setattr(kernel, "bucket", lambda shape, cover: "")
    tunings = calibrated_tunings(monkeypatch, tmp_path, SUITE_ROWS)
    assert any(fake_seconds(c, t) > fake_seconds(c, Tuning()) * 1.05 for c, t in zip(SUITE_ROWS, tunings))


def test_a_tuning_written_as_text_is_the_tuning_its_fields_name():
    assert tuning_from_spec("") == Tuning()
    spec = tuning_from_spec("columns_lanes=4,unroll=0,min_chunk_per_lane=512")
    assert spec == Tuning(columns_lanes=4, unroll=False, min_chunk_per_lane=512)
    assert tuning_changes(spec, Tuning()) == {"columns_lanes": 4, "unroll": False, "min_chunk_per_lane": 512}
    with pytest.raises(KeyError):
        tuning_from_spec("no_such_field=1")
