"""A pass's WGSL parts, checked when a shader is assembled: each name one part provides, and every
name a part needs provided by a part of the same pass. Pure Python: no GPU."""

from __future__ import annotations

import re

import pytest

from dmlgpu import kernels, wgsl
from dmlgpu.desc import ArgMaxOperatorDesc, TensorDesc
from dmlgpu.plan import Capabilities, plan

CAPS = Capabilities(max_storage_binding=1 << 27, max_buffer=1 << 28)
PLAN = plan(ArgMaxOperatorDesc(TensorDesc("FLOAT32", (5, 3)), axes=[0]).lower(), CAPS)  # reduce_thread, load_packed
#: The constants a plan declares before the parts.
HEADER = frozenset(re.findall(r"^const (\w+) =", wgsl.shader_sources(PLAN)[0].split("\n\n")[0], re.MULTILINE))
PASS = ["common", "key_u32", "key_float", "load_packed", "fold", "store_index32", "store_direct", "reduce_thread"]


def test_the_plans_own_pass_passes():
    assert PLAN.kernel == kernels.thread.NAME and PLAN.loader == "load_packed"
    wgsl.check_parts(PASS, HEADER)


def test_a_missing_part_is_named():
    with pytest.raises(ValueError, match=r"load_packed.wgsl needs fold_strided, which no part of the pass provides "
                                         r".*'fold_strided': \['fold'\]"):
        wgsl.check_parts([p for p in PASS if p != "fold"], HEADER)
    with pytest.raises(ValueError, match="needs .*WG"):  # the plan's constants count
        wgsl.check_parts(PASS, HEADER - {"WG"})


def test_a_doubled_part_is_named():
    with pytest.raises(ValueError, match="store_result is provided twice in a pass: by store_direct.wgsl and by "
                                         "store_partial.wgsl"):
        wgsl.check_parts(["common", "key_u32", "key_float", "load_packed", "fold", "store_direct", "store_partial",
                          "reduce_thread"], HEADER)


def test_a_kernel_whose_parts_are_wrong_fails_at_assembly(monkeypatch):
    monkeypatch.setattr(kernels.thread, "parts", lambda plan: ["walk_batched", kernels.thread.NAME])
    with pytest.raises(ValueError, match="walk_batched.wgsl needs .*PER_QUAD"):  # a walk over quads, without quads
        wgsl.shader_sources(PLAN)


def test_what_a_part_provides_and_needs():
    assert "store_result" in wgsl.provides("store_direct") and "store_result" in wgsl.needs("reduce_thread")
    assert "quad" in wgsl.needs("load_quads") and "quad" in wgsl.provides("src_quads")
    assert "quad" not in wgsl.provides("load_quads")  # called there, declared in src_quads.wgsl


def test_one_table_of_bindings():
    """The runtime's layouts, the read-write variant of a pass and an exported module's layout
    are all made from ``kernels.base.SLOTS``."""
    from dmlgpu.exporter import export
    from dmlgpu.kernels.base import SLOT, SLOTS, layout
    from dmlgpu.runtime.programs import LAYOUT_ENTRIES, SHARED_LAYOUT_ENTRIES

    assert [(e["binding"], e["buffer"]["type"]) for e in LAYOUT_ENTRIES] == list(layout())
    assert [(e["binding"], e["buffer"]["type"]) for e in SHARED_LAYOUT_ENTRIES] == list(layout(shared=True))
    assert dict(layout(shared=True))[SLOT["input"].binding] == "storage" != dict(layout())[SLOT["input"].binding]
    source = wgsl.shader_sources(PLAN)[0]
    assert f"@binding({SLOT['input'].binding}) var<storage, read_write> src" in wgsl.writable_input(source)
    module = export("argmax float32 (6, 1000) axis=1")
    bindings = [f'[{s.binding},"{s.name}","{s.kind}"]' for s in SLOTS if s.name != "race"]
    assert f'"bindings":[{",".join(bindings)}]' in module
