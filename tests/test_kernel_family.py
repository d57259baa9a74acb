"""Adding a kernel family as docs/contributing.md says: one module like those of dmlgpu/kernels/
(here ``ToyFamily``), its WGSL template (``TOY_WGSL``) and its tests, with nothing else of the
library changed. The toy covers reductions of at most 4 elements with a thread an output;
asked first, it takes them from every other family, plans, compiles and runs them on the
default adapter, and answers as the oracle does."""

from __future__ import annotations

import math

import numpy as np
import pytest

import dmlgpu
from dmlgpu import kernels, oracle, wgsl
from dmlgpu.kernels.base import Cover, Shape
from dmlgpu.plan import Capabilities, Tuning, family_of, plan

#: The family's template (shaders/reduce_toy.wgsl, were it shipped): a thread an output, as the
#: thread kernel's own text walks them.
TOY_WGSL = "// reduce_toy: a thread an output, walking its few elements one by one.\n" + wgsl.template("reduce_thread")


class ToyFamily:
    """What a module of dmlgpu/kernels/ holds (kernels/base.py says each part's role)."""

    NAME = "reduce_toy"
    READS_QUADS = False
    RACES = False
    SOFTWARE: dict = {}
    CANDIDATES: dict = {}
    SOFTWARE_CANDIDATES: dict = {}

    @staticmethod
    def cover(shape: Shape, tuning: Tuning) -> Cover | None:
        if shape.count > 4:
            return None
        return Cover(tuning.workgroup_size, 1, shape.count, math.ceil(shape.outputs / tuning.workgroup_size))

    @staticmethod
    def family(shape: Shape, cover: Cover) -> str:
        return "toy"

    @staticmethod
    def bucket(shape: Shape, cover: Cover) -> str:
        return ""  # nothing to choose between

    @staticmethod
    def probe_shape(family, nbytes, size, rows_max_bytes):
        raise KeyError(family)  # nothing to choose between

    @staticmethod
    def plan_fields(shape, cover, tuning, loader) -> dict:
        return {}

    @staticmethod
    def parts(plan) -> list[str]:
        return [ToyFamily.NAME]


@pytest.fixture
def toy(monkeypatch):
    """The toy family asked first, its template served as if it were in shaders/."""
    monkeypatch.setattr(kernels, "FIRST_PASS", (ToyFamily, *kernels.FIRST_PASS))
    monkeypatch.setattr(kernels, "BY_NAME", {**kernels.BY_NAME, ToyFamily.NAME: ToyFamily})
    shipped = wgsl.template
    monkeypatch.setattr(wgsl, "template", lambda name: TOY_WGSL if name == ToyFamily.NAME else shipped(name))
    return ToyFamily


def test_the_toy_family_plans_what_it_covers(toy):
    caps = Capabilities(max_storage_binding=1 << 27, max_buffer=1 << 28)
    red = dmlgpu.ArgMaxOperatorDesc(dmlgpu.TensorDesc("FLOAT32", (37, 3)), axes=[1]).lower()
    p = plan(red, caps)
    assert (p.kernel, p.split, family_of(red, caps)) == ("reduce_toy", 1, "toy/32")
    (source,) = wgsl.shader_sources(p)
    assert "reduce_toy: a thread an output" in source
    wider = dmlgpu.ArgMaxOperatorDesc(dmlgpu.TensorDesc("FLOAT32", (37, 5)), axes=[1]).lower()
    assert plan(wider, caps).kernel != "reduce_toy"  # beyond its cover, the families as before


@pytest.mark.parametrize("op", ["argmax", "argmin", "hardmax"])
def test_the_toy_family_runs_as_the_oracle(toy, op):
    device = dmlgpu.Device(tuning=Tuning())
    try:
        x = np.random.default_rng(7).integers(-3, 3, (41, 3)).astype(np.float32)  # ties, so the rule shows
        compiled = device.compile(getattr(dmlgpu, {"argmax": "ArgMaxOperatorDesc", "argmin": "ArgMinOperatorDesc",
                                                   "hardmax": "ActivationHardmax1OperatorDesc"}[op])(
            dmlgpu.TensorDesc("FLOAT32", x.shape), axes=[1]))
        assert any("reduce_toy: a thread an output" in s for s in compiled.sources)
        np.testing.assert_array_equal(compiled(x), getattr(oracle, op)(x, (1,)))
    finally:
        device.close()


def test_every_family_holds_what_a_family_holds():
    """What kernels/base.py says a family's module holds, each of the library's and the toy."""
    holds = ("NAME", "READS_QUADS", "RACES", "SOFTWARE", "CANDIDATES", "SOFTWARE_CANDIDATES", "cover", "family",
             "bucket", "probe_shape", "plan_fields", "parts")
    for family in (*kernels.FIRST_PASS, ToyFamily):
        assert all(hasattr(family, name) for name in holds), [n for n in holds if not hasattr(family, n)]
    assert all(family.CANDIDATES.keys() == family.SOFTWARE_CANDIDATES.keys() for family in kernels.FIRST_PASS)
