"""``dmlgpu export`` without a browser: what a module holds, its size, its limits and errors,
the command, and that its plan and WGSL are those the Python runner uses on a device with the
same limits and no optional feature. (tests/test_export_browser.py runs modules in Chromium.)"""

from __future__ import annotations

import dataclasses
import json
import re
import subprocess
import sys

import numpy as np
import pytest

import dmlgpu
from dmlgpu import wgsl
from dmlgpu.desc import ArgMaxOperatorDesc, TensorDesc, lower
from dmlgpu.errors import DescriptorError
from dmlgpu.exporter import PASS_LIMITS, PLANNED_LIMITS, browser_wgsl, capabilities, export, limits_from
from dmlgpu.explainer import DEFAULT_CAPABILITIES, parse_call
from dmlgpu.pieces import buffer_spans, schedule, tensor_needs
from dmlgpu.plan import Tuning, Writes
from dmlgpu.tuning import SOFTWARE_TUNING
from dmlgpu.types import NanMode

SMALL = Tuning(workgroup_size=32, loads_per_thread=1, target_workgroups=64, min_chunk_per_lane=1,
               min_chunk_per_lane_single=1, target_threads=512, min_chunk_thread=5, merge_workgroup_above=16)


def parsed(module: str) -> tuple[list[str], dict]:
    """(the WGSL text of each shader, the plan) of a module's text."""
    head, rest = module.split("const SHADERS = ", 1)
    parts = head.split("`")[1::2]
    shaders = json.loads(rest[: rest.index(".map(")])
    plan = json.loads(rest[rest.index("export const operator = ") + len("export const operator = "):].split(";\n", 1)[0])
    return ["".join(parts[i] for i in items) for items in shaders], plan


def tokens(wgsl_text: str) -> list[str]:
    """WGSL as tokens, comments left out: what a compiler reads."""
    return re.findall(r"\w+|[^\w\s]", re.sub(r"//[^\n]*", "", wgsl_text))


# --- size and shape of a module ---------------------------------------------------------------


@pytest.mark.parametrize("call", ["argmax float32 (1, 151936) axis=1", "argmax float32 (8, 50000) axis=1 out=uint32",
                                  "argmax float16 (64, 151936) axis=1", "argmax float32 (4096, 8192) axis=1",
                                  "argmin int8 (1000, 1000) axis=0"])
def test_an_argmax_module_is_under_30_kb(call):
    """Of one piece, as every tensor within WebGPU's default binding (128 MiB) is; a tensor
    cut into pieces adds about 0.7 KB a piece (its windows and parameters)."""
    module = export(call)
    assert len(module.encode()) < 30_000, f"{call}: {len(module.encode())} bytes"


def test_a_module_imports_nothing_and_exports_the_runners_api():
    module = export("hardmax float16 (8, 1000)")
    assert not re.search(r"^\s*import\b|\bimport\s*\(|\brequire\s*\(", module, re.MULTILINE)
    exported = re.findall(r"^export (?:async )?(?:const|class|function) (\w+)", module, re.MULTILINE)
    assert sorted(exported) == ["OperatorError", "bindingProperties", "compile", "operator", "requestDevice"]
    assert module.startswith("// dmlgpu ") and "HARDMAX FLOAT16 [8, 1000] axes (1)" in module.splitlines()[0]


def test_the_runners_comments_stay_in_its_file():
    module = export("argmax float32 (4, 4)")
    runner = module[module.index("export class OperatorError"):]
    assert "/**" not in runner and not re.search(r"^\s*//", runner, re.MULTILINE)


# --- one source of truth: the plan, its parameters and its WGSL ---------------------------------


@pytest.mark.parametrize("call, limits, tuning", [
    ("argmax float32 (1, 151936) axis=1", None, None),
    ("argmin int64 (30, 70, 9) axis=(0, 2) direction=decreasing out=uint32 nan=ignore", None, SMALL),
    ("hardmax float16 (40, 3, 32) axis=(0, 1)", None, SMALL),
    ("argmax uint8 (300, 301) axis=1 strides=(400, 1)", {"maxStorageBufferBindingSize": 4096}, None),
    ("hardmax float32 (50, 60) axis=0", {"max-storage-buffer-binding-size": 2048, "max-buffer-size": 4096}, None),
])
def test_the_module_holds_the_planners_schedule_and_wgsl(call, limits, tuning):
    desc, mode = parse_call(call)
    caps = capabilities(limits_from(limits))
    sched = schedule(lower(desc), caps, mode, tuning or Tuning())
    texts, plan = parsed(export(call, limits=limits, tuning=tuning))
    assert plan["descriptor"] == desc.to_json() and plan["nanMode"] == mode.value
    assert plan["temporaryBytes"] == sched.scratch_bytes
    assert len(plan["pieces"]) == len(sched.pieces)
    for piece, want in zip(plan["pieces"], sched.pieces):
        for got_window, window in ((piece["input"], want.input), (piece["output"], want.output)):
            assert got_window == (None if window is None else [window.buffer, window.offset, window.size])
        passes = wgsl.passes(want.plan)
        assert len(piece["passes"]) == len(passes)
        for got, p in zip(piece["passes"], passes):
            assert got["grid"] == list(p.grid) and got["params"] == p.params.tolist()
            assert got["reads"] == ("temporary" if p.merging else "input")
            assert got["writes"] == ("temporary" if p.writes is Writes.PAIRS else "output")
            assert tokens(texts[got["shader"]]) == tokens(p.source)


def test_each_buffer_of_a_tensor_asks_its_bytes_in_whole_words_as_the_python_runner_does():
    """A FLOAT16 HARDMAX1 output column-major in 4 KB buffers, the last starting inside a word:
    and each asks a binding of its bytes rounded up to a whole word (``pieces.tensor_needs``,
    which the Python runner's bindings check), never a size a storage binding cannot have."""
    limits = {"maxStorageBufferBindingSize": 4096, "maxBufferSize": 4096}
    desc = dmlgpu.ActivationHardmax1OperatorDesc(TensorDesc("FLOAT16", [55, 112], strides=[0, 1]),
                                                 TensorDesc("FLOAT16", [55, 112], strides=[1, 55]), axes=[0])
    _, plan = parsed(export(desc, limits=limits))
    spans = buffer_spans(lower(desc).output, capabilities(limits_from(limits)))
    assert plan["output"]["buffers"] == [[first, nbytes, need] for (first, nbytes), need
                                         in zip(spans, tensor_needs(lower(desc).output, spans))]
    firsts = [first for first, _, _ in plan["output"]["buffers"]]
    assert any(first % 4 for first in firsts) and all(need % 4 == 0 for _, _, need in plan["output"]["buffers"])
    first, _, need = plan["output"]["buffers"][-1]
    assert first % 4 and need == 55 * 112 * 2 - first + 2  # the last starts inside a word: 110 bytes, asked as 112


def test_the_python_runner_on_a_device_of_webgpus_defaults_runs_the_same_passes():
    """A wgpu device requested with no feature and WebGPU's default limits, as a browser's:
    the operator dmlgpu compiles on it has the module's schedule and WGSL, and gives the
    oracle's answer."""
    import wgpu

    adapter = wgpu.gpu.request_adapter_sync(power_preference="high-performance")
    gpu = adapter.request_device_sync(required_limits={  # wgpu-native's defaults are the adapter's
        "max-storage-buffer-binding-size": 128 << 20, "max-buffer-size": 256 << 20,
        "min-storage-buffer-offset-alignment": 256})
    device = dmlgpu.Device.from_wgpu(gpu)
    try:
        caps = device.runner.capabilities  # software on lavapipe: its plans take a CPU adapter's tuning
        assert dataclasses.replace(caps, software=False) == DEFAULT_CAPABILITIES
        for call in ("argmax float32 (3, 50000) axis=1", "argmin int64 (70, 9) axis=0 direction=decreasing",
                     "hardmax float16 (5, 7, 9) axis=(0, 2)"):
            desc, mode = parse_call(call)
            op = device.compile(desc, nan_mode=mode)
            texts, plan = parsed(op.export())
            want_texts, want = parsed(export(call, software=caps.software))  # the runner's tuning for it
            assert texts == want_texts and plan["pieces"] == want["pieces"]
            assert plan["temporaryBytes"] == op.binding_properties.temporary_resource_size
            assert [[p["grid"] for p in piece["passes"]] for piece in plan["pieces"]] == \
                [[list(p.grid) for p in wgsl.passes(piece.plan)] for piece in op.schedule.pieces]
            assert [tokens(texts[p["shader"]]) for piece in plan["pieces"] for p in piece["passes"]] == \
                [tokens(source) for source in op.sources]
        x = np.random.default_rng(1).standard_normal((3, 50000)).astype(np.float32)
        assert dmlgpu.argmax(x, 1, device=device).tolist() == np.argmax(x, 1, keepdims=True).tolist()
    finally:
        device.close()
        gpu.destroy()


def test_a_compiled_operators_export_is_its_descriptors_with_its_nan_mode_and_tuning(device):
    desc = ArgMaxOperatorDesc(TensorDesc("FLOAT32", [6, 1000]), axes=[1])
    op = device.compile(desc, nan_mode="propagate")
    assert op.export() == export(desc, nan_mode="propagate", tuning=op.tuning)
    assert op.export(limits={"maxStorageBufferBindingSize": 4096}) == \
        export(desc, nan_mode="propagate", tuning=op.tuning, limits={"maxStorageBufferBindingSize": 4096})


def test_software_takes_a_cpu_adapters_tuning():
    call = "argmax float32 (1, 151936) axis=1"
    assert export(call, software=True) == export(call, tuning=SOFTWARE_TUNING, software=True)
    assert parsed(export(call, software=True))[1]["plannedFor"]["software"] is True
    gpu_grid = parsed(export(call))[1]["pieces"][0]["passes"][0]["grid"]
    cpu_grid = parsed(export(call, software=True))[1]["pieces"][0]["passes"][0]["grid"]
    assert cpu_grid[0] < gpu_grid[0]  # fewer, longer work items
    with pytest.raises(TypeError, match="software must be a bool, not str"):
        export(call, software="yes")


def test_no_type_or_builtin_a_browser_lacks_reaches_a_module():
    for call in ("argmax int64 (5, 7) axis=1", "argmin uint64 (300, 4) axis=0", "hardmax float16 (9, 33)"):
        texts, _ = parsed(export(call))
        for text in texts:
            assert not re.search(r"\b(u64|i64|f16|f64)\b|\bsubgroup[A-Z]\w*\(|\bsubgroup_(size|invocation_id)\b", text)
    with pytest.raises(ValueError, match="uses u64"):
        browser_wgsl("alias Key = u64;\n")
    with pytest.raises(ValueError, match="uses subgroupMax"):
        browser_wgsl("fn f(k: u32) -> u32 {\n    return subgroupMax(k);  // pooled\n}\n")


def test_browser_wgsl_keeps_every_token_and_cuts_items_at_top_level_declarations():
    source = "// a comment\nconst A = 1u;\n\nfn f() -> u32 {\n    // inside\n    return A;  // trailing\n}\n"
    parts = browser_wgsl(source)
    assert parts == ("const A = 1u;\n", "fn f() -> u32 {\nreturn A;\n}\n")
    assert tokens("".join(parts)) == tokens(source)


# --- limits ---------------------------------------------------------------------------------------


def test_limits_default_to_webgpus_and_take_both_spellings():
    assert capabilities(limits_from(None)) == DEFAULT_CAPABILITIES
    given = limits_from({"max-storage-buffer-binding-size": 1 << 30, "maxBufferSize": 1 << 31,
                         "maxTextureDimension2D": 8192, "minUniformBufferOffsetAlignment": 256})
    assert given["maxStorageBufferBindingSize"] == 1 << 30 and given["maxBufferSize"] == 1 << 31
    assert set(given) == set(PLANNED_LIMITS) | set(PASS_LIMITS)
    caps = capabilities(given)
    assert (caps.max_storage_binding, caps.max_buffer, caps.shader_int64, caps.subgroups, caps.int64_atomics) == \
        (1 << 30, 1 << 31, False, False, False)


@pytest.mark.parametrize("limits, error, message", [
    ({"maxStorageBufferBindingSizes": 5}, DescriptorError, "'maxStorageBufferBindingSizes'] is not a WebGPU limit"),
    ({"maxBufferSize": "big"}, TypeError, r"limits\['maxBufferSize'\] must be an int, not str"),
    ({"maxBufferSize": True}, TypeError, "must be an int, not bool"),
    ({"maxBufferSize": 0}, DescriptorError, "is 0, but it must be positive"),
    ({"maxBufferSize": 15}, DescriptorError, "is 15, but it must be at least 16 bytes"),
    ({"minStorageBufferOffsetAlignment": 48}, DescriptorError, "48, but it must be a power of two"),
    ({"minStorageBufferOffsetAlignment": 2}, DescriptorError, "2, but it must be a power of two of at least 4"),
    ({"maxStorageBufferBindingSize": 271}, DescriptorError, "271, but it must be at least 272 bytes"),
    ({"maxStorageBufferBindingSize": 272}, None, None),
    ({1: 2}, TypeError, "key of type int"),
    ([("maxBufferSize", 16)], TypeError, "limits must be a mapping"),
])
def test_limits_are_checked_at_their_boundaries(limits, error, message):
    if error is None:
        assert limits_from(limits)["maxStorageBufferBindingSize"] == 272
        return
    with pytest.raises(error, match=message):
        limits_from(limits)


def test_a_workgroup_limit_below_the_plans_names_the_tuning_that_fits():
    with pytest.raises(DescriptorError, match=r"maxComputeInvocationsPerWorkgroup'\] is 64, but the passes need "
                                             r"256; export with tuning=Tuning\(workgroup_size=64\)"):
        export("argmax float32 (64, 1000) axis=1", limits={"maxComputeInvocationsPerWorkgroup": 64})
    module = export("argmax float32 (64, 1000) axis=1", limits={"maxComputeInvocationsPerWorkgroup": 64,
                                                                 "maxComputeWorkgroupSizeX": 64},
                    tuning=Tuning(workgroup_size=64))
    assert parsed(module)[1]["limits"]["maxComputeInvocationsPerWorkgroup"] == 64


def test_the_module_asks_a_device_for_what_its_plan_uses():
    _, plan = parsed(export("argmax float32 (2, 3000) axis=1", limits={"maxStorageBufferBindingSize": 1 << 30}))
    assert plan["plannedFor"]["limits"]["maxStorageBufferBindingSize"] == 1 << 30
    assert plan["limits"]["maxStorageBufferBindingSize"] == 24000  # its largest window, not the limit planned for
    assert plan["limits"]["minStorageBufferOffsetAlignment"] == 256 and plan["features"] == []


def test_bad_input_names_what_is_wrong():
    with pytest.raises(DescriptorError, match="the operator is 'argmix'"):
        export("argmix float32 (4, 4)")
    with pytest.raises(TypeError, match="tuning must be a dmlgpu.plan.Tuning or Tunings"):
        export("argmax float32 (4, 4)", tuning={"workgroup_size": 64})
    with pytest.raises(DescriptorError, match="but export plans at most 1024"):
        export("argmax float32 (4096, 4096) axis=0", limits={"maxStorageBufferBindingSize": 512, "maxBufferSize": 512,
                                                             "minStorageBufferOffsetAlignment": 256})
    assert export("argmax float32 (4, 4)").startswith("// dmlgpu")  # and the next call works


def test_a_descriptor_exports_with_its_nan_mode():
    desc = ArgMaxOperatorDesc(TensorDesc("FLOAT16", [3, 5]), axes=[0])
    assert parsed(export(desc))[1]["nanMode"] == "ignore"
    assert parsed(export(desc.to_json(), nan_mode=NanMode.PROPAGATE))[1]["nanMode"] == "propagate"
    assert parsed(export(json.dumps(desc.to_json())))[1]["descriptor"] == desc.to_json()


# --- the command -------------------------------------------------------------------------------------


def _command(*args, stdin=None):
    return subprocess.run([sys.executable, "-m", "dmlgpu.cli", "export", *args], capture_output=True, text=True,
                          input=stdin, timeout=120)


def test_the_command_writes_the_module(tmp_path):
    out = tmp_path / "deep" / "argmax.js"
    done = _command("argmax", "float32", "(1, 151936)", "axis=1", "-o", str(out))
    assert done.returncode == 0, done.stderr
    assert out.read_text() == export("argmax float32 (1, 151936) axis=1")
    assert f"bytes written to {out}" in done.stderr
    limits = tmp_path / "limits.json"
    limits.write_text(json.dumps({"maxStorageBufferBindingSize": 4096}))
    done = _command("argmax float32 (300, 301) axis=1", "--limits", str(limits), "--nan-mode", "ignore")
    assert done.returncode == 0 and done.stdout == export("argmax float32 (300, 301) axis=1",
                                                         limits={"maxStorageBufferBindingSize": 4096}, nan_mode="ignore")


@pytest.mark.parametrize("args, message", [
    (["argmax float32 (4, 4)", "--limits", "{nope"], "--limits is not JSON"),
    (["argmax float32 (4, 4)", "--limits", "[1]"], "--limits is JSON list, but it must be an object"),
    (["argmax float32 (4, 4)", "--limits", "missing.json"], "--limits is 'missing.json', which names no file"),
    (["argmax float32 (4, 4)", "--limits", '{"maxBufferSize": 3}'], "is 3, but it must be at least 16 bytes"),
    (["argmax float32 (4, 4)", "-o", "/"], "--output is '/', which is a directory"),
    (["argmax floaty (4, 4)"], "the input type"),
])
def test_the_command_refuses_with_one_line_and_status_2(args, message):
    done = _command(*args)
    assert done.returncode == 2 and message in done.stderr and done.stdout == ""
    assert len(done.stderr.strip().splitlines()) == 1
