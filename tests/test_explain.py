"""``dmlgpu explain``: the call grammar, the plan it prints and the WGSL, mostly without a GPU."""

from __future__ import annotations

import json
import re
import time

import pytest

import dmlgpu
from dmlgpu import cli
from dmlgpu.desc import ActivationHardmax1OperatorDesc, ArgMaxOperatorDesc, ArgMinOperatorDesc, TensorDesc, lower
from dmlgpu.explainer import DEFAULT_CAPABILITIES, MAX_PIECES, explain, parse_call, with_limits
from dmlgpu.pieces import TooManyPieces, schedule
from dmlgpu.plan import Capabilities, Tuning
from dmlgpu.types import AxisDirection, DataType, NanMode
from dmlgpu.wgsl import shader_sources


def test_call_grammar_defaults_are_numpys():
    desc, nan = parse_call("argmax float32 (4096, 65536)")
    assert desc == ArgMaxOperatorDesc(TensorDesc("FLOAT32", [4096, 65536]), TensorDesc("INT64", [1, 1]), (0, 1))
    assert nan is NanMode.PROPAGATE


@pytest.mark.parametrize("text, want", [
    ("argmax float32 (4096, 65536) axis=1",
     ArgMaxOperatorDesc(TensorDesc("FLOAT32", [4096, 65536]), TensorDesc("INT64", [4096, 1]), (1,))),
    ("ARGMIN int8 4x5x6 axis=(0, -1) direction=decreasing out=uint32",
     ArgMinOperatorDesc(TensorDesc("INT8", [4, 5, 6]), TensorDesc("UINT32", [1, 5, 1]), (0, 2), "DECREASING")),
    ("argmax bool (3, 4) axis=-1", ArgMaxOperatorDesc(TensorDesc("UINT8", [3, 4]), TensorDesc("INT64", [3, 1]), (1,))),
    ("argmin FLOAT16 (8, 2) strides=(1, 8) axis=0",
     ArgMinOperatorDesc(TensorDesc("FLOAT16", [8, 2], [1, 8]), TensorDesc("INT64", [1, 2]), (0,))),
    ("hardmax float16 (8, 1000)", ActivationHardmax1OperatorDesc(TensorDesc("FLOAT16", [8, 1000]), None, (1,))),
    ("hardmax float32 (2,3,4) axis=(0,2)", ActivationHardmax1OperatorDesc(TensorDesc("FLOAT32", [2, 3, 4]), None, (0, 2))),
])
def test_call_grammar(text, want):
    assert parse_call(text)[0] == want


def test_call_options():
    assert parse_call("argmax float32 (3,) nan=ignore")[1] is NanMode.IGNORE
    assert parse_call("argmax float32 3 direction=DECREASING")[0].axis_direction is AxisDirection.DECREASING


@pytest.mark.parametrize("text, message", [
    ("argmax", "must read like"),
    ("sum float32 (3,)", "must be argmax, argmin or hardmax"),
    ("argmax float128 (3,)", "must be one of"),
    ("argmax float32 (3, a)", "must be integers"),
    ("argmax float32 (3,) axis=4", "axes"),
    ("argmax float32 (3,) speed=9", "option 'speed' is unknown"),
    ("argmax float32 (3,) oops", "is not an option"),
    ("argmax float32 (3,) out=float32", "output"),
])
def test_call_errors(text, message):
    with pytest.raises(dmlgpu.DescriptorError, match=message):
        parse_call(text)


def test_single_pass_plan_and_wgsl():
    text = explain("argmax float32 (64, 1000) axis=1")
    desc, _ = parse_call("argmax float32 (64, 1000) axis=1")
    (piece,) = schedule(lower(desc), DEFAULT_CAPABILITIES, NanMode.PROPAGATE, Tuning()).pieces
    p = piece.plan
    assert f"kernel {p.kernel}, loader {p.loader}" in text
    assert f"grid {p.grid}" in text and f"split {p.split} chunk(s) of {p.chunk}" in text
    assert "WebGPU's default limits" in text and "nan_mode: propagate" in text
    for n, source in enumerate(shader_sources(p), 1):
        assert f"=== WGSL #{n} ===\n{source.rstrip()}\n" in text + "\n"


def test_pieces_and_merges_beyond_one_binding():
    caps = Capabilities(max_storage_binding=1 << 16, max_buffer=1 << 18, offset_alignment=256)
    text = explain("argmin float32 (4, 65536) axis=1", capabilities=caps)
    sched = schedule(lower(parse_call("argmin float32 (4, 65536) axis=1")[0]), caps, NanMode.PROPAGATE, Tuning())
    assert f"schedule: {len(sched.pieces)} piece(s), {sched.merges} merge(s)" in text
    assert sched.merges and "scratch pairs" in text and "capabilities (given)" in text
    for i in range(len(sched.pieces)):
        assert f"\npiece {i}: plan " in text
    sources = {s for piece in sched.pieces for s in shader_sources(piece.plan)}
    assert text.count("=== WGSL #") == len(sources)


def test_descriptor_json_means_the_descriptor():
    desc = ArgMaxOperatorDesc(TensorDesc("INT32", [6, 7]), TensorDesc("UINT32", [6, 1]), (1,))
    as_text = explain(json.dumps(desc.to_json()))
    assert as_text == explain(desc.to_json()) == explain(desc)
    assert "nan_mode: ignore" in as_text  # a descriptor's default, DirectML's
    assert "nan_mode: propagate" in explain(desc, nan_mode="propagate")


def test_explain_with_a_device_uses_its_capabilities(device):
    text = dmlgpu.explain("argmax uint16 (5, 9) axis=0", device=device)
    assert f"capabilities ({device.name})" in text
    desc, nan = parse_call("argmax uint16 (5, 9) axis=0")
    compiled = device.compile(desc, nan_mode=nan)
    for source in compiled.sources:  # what explain prints is what runs
        assert source.rstrip() in text


def test_cli_no_gpu(capsys):
    assert cli.main(["explain", "--no-gpu", "argmax", "float32", "(16, 256)", "axis=1"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("operator: ") and "=== WGSL #1 ===" in out and "@compute" in out


def test_cli_limits_and_json_file(capsys, tmp_path):
    desc = ArgMinOperatorDesc(TensorDesc("FLOAT16", [2, 4096]), None, (1,))
    path = tmp_path / "desc.json"
    path.write_text(json.dumps(desc.to_json()))
    assert cli.main(["explain", "--no-gpu", "--binding", "4096", "--buffer", "8192", str(path)]) == 0
    out = capsys.readouterr().out
    assert "storage binding 4096 B, buffer 8192 B" in out and "piece 1:" in out


def test_cli_errors(capsys):
    assert cli.main(["explain", "--no-gpu", "argmax", "complex64", "(3,)"]) == 2
    assert "must be one of" in capsys.readouterr().err


def test_cli_opens_the_adapter(capsys):
    assert cli.main(["explain", "hardmax float32 (3, 3)"]) == 0
    assert "capabilities (" in capsys.readouterr().out


def test_input_type_mention():
    text = explain("argmax int64 (4, 4)", capabilities=DEFAULT_CAPABILITIES)
    assert "keys: INT64 u32 words" in text  # no shader-int64 among the default capabilities
    assert DataType.INT64.name in text


@pytest.mark.parametrize("text, message", [
    ("argmax float32 (3,,4)", r"the shape is '\(3,,4\)', but '' in it is not an integer"),
    ("argmax float32 (3, 4", r"has a '\(' but no '\)'"),
    ("argmax float32 (3, 4) axis=0 axis=1", "option 'axis' is given twice"),
    ("hardmax float32 (3, 4) direction=decreasing", "option 'direction' is not one of hardmax's"),
    ("argmax float32 (3, 4) axis=-3", r"axis is '-3', but -3 is not an axis of a rank-2 shape; axes are in \[-2, 1\]"),
    ("argmax float32 (3, 4) axis=(0", r"option axis= is '\(0': its '\(' has no '\)'"),
    ("argmax float32 (" + "9" * 5000 + ")", "far too large"),
    ('{"Type": "ARGMAX", "Desc": ', "not valid JSON: Expecting value at line 1 column 28"),
    ('{"a":' * 5000, "nests arrays or objects deeper"),
])
def test_bad_calls_and_json_name_the_part_at_fault(text, message):
    with pytest.raises(dmlgpu.DescriptorError, match=message):
        explain(text)


def test_json_fields_of_the_wrong_kind_are_named():
    obj = ArgMaxOperatorDesc(TensorDesc("INT32", [6, 7]), None, (1,)).to_json()
    with pytest.raises(TypeError, match=r"InputTensor.Sizes must be an array of integers, not int \(5\)"):
        dmlgpu.operator_from_json({**obj, "Desc": {**obj["Desc"], "InputTensor": {"DataType": "INT32", "Sizes": 5,
                                                                                    "DimensionCount": 1}}})
    with pytest.raises(TypeError, match="AxisCount must be an integer, not str"):
        dmlgpu.operator_from_json({**obj, "Desc": {**obj["Desc"], "AxisCount": "1"}})
    with pytest.raises(TypeError, match=r"OutputTensor must be an object \(a TensorDesc's fields\), not list"):
        dmlgpu.operator_from_json({**obj, "Desc": {**obj["Desc"], "OutputTensor": [1]}})
    with pytest.raises(TypeError, match="Type must be a string such as 'ARGMAX', not float"):
        dmlgpu.operator_from_json('{"Type": 1e999, "Desc": {}}')


def test_bad_arguments_and_limits_are_named():
    with pytest.raises(TypeError, match="capabilities must be a dmlgpu.plan.Capabilities"):
        explain("argmax float32 (3,)", capabilities={"max_storage_binding": 1})
    with pytest.raises(TypeError, match="device must be a dmlgpu.Device"):
        explain("argmax float32 (3,)", device="GPU")
    with pytest.raises(dmlgpu.DescriptorError, match="capabilities.offset_alignment is 3, but it must be a power of two"):
        explain("argmax float32 (3,)", capabilities=Capabilities(1 << 20, 1 << 20, offset_alignment=3))
    with pytest.raises(dmlgpu.DescriptorError, match="binding is 16, but it must be at least 272 bytes"):
        with_limits(DEFAULT_CAPABILITIES, 16, None)


def test_a_schedule_of_too_many_pieces_is_refused_at_once():
    """A tiny binding on a large tensor made explain plan for minutes; it is refused before planning."""
    caps = with_limits(DEFAULT_CAPABILITIES, 4096, 4096)
    started = time.perf_counter()
    with pytest.raises(dmlgpu.DescriptorError, match=f"pieces or more, but explain plans at most {MAX_PIECES}"):
        explain("argmax float32 (4096, 65536) axis=1", capabilities=caps)
    assert time.perf_counter() - started < 1


@pytest.mark.parametrize("call, binding, buffer", [
    ("argmin float32 (4, 65536) axis=1", 1 << 16, 1 << 18), ("hardmax float32 (290, 177) axis=1", 1024, 256),
    ("argmax int8 (142, 286) axis=0", 16384, 4096), ("argmin int64 (9, 40, 30) axis=(0, 2)", 2048, 256),
    ("argmax float16 (1000, 3) strides=(64, 1) axis=0", 4096, 1 << 20),
])
def test_a_schedule_refuses_more_pieces_than_asked(call, binding, buffer):
    """The count explain refuses by is the scheduler's own: a schedule of n pieces is made with
    most=n and refused with most=n-1, naming a count above it."""
    caps = with_limits(DEFAULT_CAPABILITIES, binding, buffer)
    red = lower(parse_call(call)[0])
    n = len(schedule(red, caps, NanMode.IGNORE, Tuning()).pieces)
    assert len(schedule(red, caps, NanMode.IGNORE, Tuning(), most=n).pieces) == n
    with pytest.raises(TooManyPieces) as refused:
        schedule(red, caps, NanMode.IGNORE, Tuning(), most=n - 1)
    assert n - 1 < refused.value.count <= n


def test_cli_bad_files_flags_and_adapters(capsys, tmp_path):
    (tmp_path / "bad.json").write_bytes(b"\xff\xfe{")
    (tmp_path / "dir.json").mkdir()
    for argv, message in [
        (["explain", "--no-gpu", str(tmp_path / "bad.json")], "is not UTF-8 text"),
        (["explain", "--no-gpu", str(tmp_path / "dir.json")], "is a directory"),
        (["explain", "--no-gpu", str(tmp_path / "none.json")], "names no file"),
        (["explain", "--no-gpu", "--binding", "-5", "argmax float32 (3,)"], "--binding is -5, but it must be at least"),
        (["--adapter", "#x", "explain", "argmax float32 (3,)"], "an index is '#' and digits"),
        (["--adapter", "#\u00b2", "demo"], "an index is '#' and digits"),
        (["--adapter", "no-such-adapter", "explain", "argmax float32 (3,)"], "no adapter's name contains it"),
        (["bench", "--repeats", "0"], r"--repeats is 0, but it must be in \[1, "),
        (["bench", "--quick", "--case", "rows", "--case", "no-such-case"], "matches --case 'no-such-case'"),
        (["bench", "--json", str(tmp_path)], "which is a directory"),
    ]:
        assert cli.main(argv) == 2, argv
        captured = capsys.readouterr()
        assert re.search(message, captured.err) and captured.err.count("\n") == 1 and not captured.out, (argv, captured)
    assert cli.main(["explain", "--no-gpu", "argmax float32 (4, 5) axis=1"]) == 0
