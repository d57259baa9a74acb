"""dmlgpu.onnx_backend: ONNX's own node tests for ArgMax, ArgMin and Hardmax, and ours.

ONNX's node tests (``onnx.backend.test``, generated from the onnx package itself, no
download) run through the backend on the default adapter. Only the tests of these three
ops are collected; the test below fails if none are, and in CI (``CI=true``) this module
fails rather than skips when onnx is missing.
"""

from __future__ import annotations

import importlib
import os
import re
import unittest

import numpy as np
import pytest

if os.environ.get("CI", "").lower() == "true":
    import onnx  # CI must run these tests: a missing onnx is a failure, not a skip
else:
    onnx = pytest.importorskip("onnx")

import onnx.backend.test
from onnx import TensorProto, helper

import dmlgpu
import dmlgpu.onnx_backend as backend

#: ONNX's node tests of the three ops: test_argmax_*, test_argmin_*, test_hardmax_* (not,
#: say, test_maxpool_with_argmax_*, a MaxPool test).
SELECTED = r"^test_(argmax|argmin|hardmax)_"

#: Tests of these ops that use a type DirectML's operators lack, by name, with the reason.
#: onnx 1.23 (what pip installs for Python 3.10-3.12 today) generates all of its 39 ArgMax,
#: ArgMin and Hardmax node tests in FLOAT, so none is excluded; an onnx that adds, say, a DOUBLE
#: or BFLOAT16 variant must have it listed here (prepare refuses it with a ModelError naming the
#: type, so the test would fail until it is).
EXCLUDED: dict[str, str] = {}

#: ONNX's runner names each test for the device it runs on; dmlgpu serves "CUDA" (a GPU)
#: and not "CPU", so only the _cuda variants are collected.
DEVICE_SUFFIX = "_cuda"


#: The modules of ``onnx.backend.test.case.node`` that generate the selected ops' cases. ONNX's
#: runner imports every op's module, which generates every op's cases (about 40 s of a 2-core
#: machine's time, pooling's among them); only these three are imported here. If onnx renames
#: them, test_node_tests_were_collected fails.
NODE_CASE_MODULES = ("argmax", "argmin", "hardmax")


def _import_selected_cases(package) -> None:
    for name in NODE_CASE_MODULES:
        importlib.import_module(f"{package.__name__}.{name}")


def _selected_node_tests() -> dict[str, type]:
    """The selected node tests, as one unittest class for pytest to collect."""
    import onnx.backend.test.loader as loader

    generate_all, loader.import_recursive = loader.import_recursive, _import_selected_cases
    try:
        runner = onnx.backend.test.BackendTest(backend, __name__)
    finally:
        loader.import_recursive = generate_all
    node_tests = runner.test_cases["OnnxBackendNodeModelTest"]
    chosen = {
        name: getattr(node_tests, name)
        for name in dir(node_tests)
        if re.match(SELECTED, name) and name.endswith(DEVICE_SUFFIX)
        and name[: -len(DEVICE_SUFFIX)] not in EXCLUDED
    }
    return {"OnnxBackendNodeModelTest": type("OnnxBackendNodeModelTest", (unittest.TestCase,), chosen)}


_NODE_TESTS = _selected_node_tests()
globals().update(_NODE_TESTS)


def test_node_tests_were_collected():
    names = [n for n in dir(_NODE_TESTS["OnnxBackendNodeModelTest"]) if n.startswith("test_")]
    for op in ("argmax", "argmin", "hardmax"):
        assert any(n.startswith(f"test_{op}_") for n in names), f"no ONNX node test of {op} was collected"
    assert len(names) >= 30, names


# --- our own: every opset, the refusals, NaN ------------------------------------------


def model(op_type: str, opset: int, shape, elem=TensorProto.FLOAT, **attrs) -> onnx.ModelProto:
    """A model of one node, its output of unknown sizes."""
    hardmax = op_type == "Hardmax"
    out_rank = len(shape) if hardmax or attrs.get("keepdims", 1) else len(shape) - 1
    out = helper.make_tensor_value_info("y", elem if hardmax else TensorProto.INT64, [None] * out_rank)
    graph = helper.make_graph([helper.make_node(op_type, ["x"], ["y"], name="n0", **attrs)], "g",
                              [helper.make_tensor_value_info("x", elem, shape)], [out])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def reference_arg(op: str, x, axis=0, keepdims=1, select_last_index=0):
    """ONNX's ArgMax / ArgMin on NumPy (as onnx.reference does it)."""
    f = getattr(np, op)
    if select_last_index:
        result = x.shape[axis] - f(np.flip(x, axis), axis=axis) - 1
    else:
        result = f(x, axis=axis)
    return (np.expand_dims(result, axis) if keepdims else result).astype(np.int64)


def reference_hardmax(x, axis, opset: int):
    """Hardmax: one axis from opset 13; before, the input coerced to 2-D at ``axis``."""
    if opset < 13:
        axis = axis + x.ndim if axis < 0 else axis
        rows = x.reshape(int(np.prod(x.shape[:axis])), -1)
        y = np.zeros_like(rows)
        y[np.arange(rows.shape[0]), np.argmax(rows, axis=1)] = 1
        return y.reshape(x.shape)
    y = np.zeros_like(x)
    np.put_along_axis(y, np.expand_dims(np.argmax(x, axis=axis), axis), 1, axis=axis)
    return y


def ties(shape, dtype, seed=0):
    x = np.random.default_rng(seed).integers(0, 3, shape).astype(dtype)
    if np.dtype(dtype).kind == "f":
        x.flat[::7] = np.nan
    return x


#: (opset, axis, keepdims, select_last_index): negative axes came in opset 11, select_last_index in 12.
ARG_CASES = [(opset, axis, keepdims, last) for opset in (1, 11, 12, 13, 18)
             for axis, keepdims, last in [(0, 1, 0), (2, 0, 0), (-1, 1, 1), (1, 0, 1), (-2, 0, 0)]
             if not (opset < 11 and axis < 0 or opset < 12 and last)]


@pytest.mark.parametrize("op_type", ["ArgMax", "ArgMin"])
@pytest.mark.parametrize("opset, axis, keepdims, last", ARG_CASES)
def test_arg_ops_every_opset(op_type, opset, axis, keepdims, last):
    attrs = {"axis": axis, "keepdims": keepdims} | ({"select_last_index": last} if opset >= 12 else {})
    x = ties((3, 4, 5), np.float32)
    (got,) = backend.prepare(model(op_type, opset, x.shape, **attrs)).run([x])
    want = reference_arg(op_type.lower(), x, axis, keepdims, last)
    assert got.dtype == np.int64 and got.shape == want.shape
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("dtype", [np.float16, np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32,
                                   np.int64, np.uint64])
def test_arg_ops_every_type(dtype):
    x = ties((4, 6), dtype)
    elem = helper.np_dtype_to_tensor_dtype(np.dtype(dtype))
    for op_type in ("ArgMax", "ArgMin"):
        (got,) = backend.run_model(model(op_type, 13, x.shape, elem, axis=1), [x])
        np.testing.assert_array_equal(got, reference_arg(op_type.lower(), x, 1))


#: (opset, axis) on a rank-3 input: before 11 the axis is 0..rank (rank: every element its
#: own row), from 11 it is -rank..rank-1.
HARDMAX_CASES = [(1, a) for a in (0, 1, 2, 3)] + [(o, a) for o in (11, 13) for a in (0, 1, 2, -1, -3)]


@pytest.mark.parametrize("opset, axis", HARDMAX_CASES)
@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_hardmax_every_opset(opset, axis, dtype):
    x = ties((2, 3, 4), dtype, seed=axis + 5)
    attrs = {"axis": axis}
    elem = helper.np_dtype_to_tensor_dtype(np.dtype(dtype))
    (got,) = backend.prepare(model("Hardmax", opset, x.shape, elem, **attrs)).run([x])
    want = reference_hardmax(x, axis, opset)
    assert got.dtype == dtype
    np.testing.assert_array_equal(got, want)


def test_hardmax_default_axis_before_13_is_1():
    x = ties((2, 3, 4), np.float32, seed=3)
    (got,) = backend.prepare(model("Hardmax", 11, x.shape)).run([x])
    np.testing.assert_array_equal(got, reference_hardmax(x, 1, 11))


def test_a_graph_of_several_nodes_stays_on_the_gpu(monkeypatch):
    nodes = [helper.make_node("Hardmax", ["x"], ["h"], axis=1), helper.make_node("ArgMax", ["h"], ["a"], axis=1),
             helper.make_node("ArgMin", ["x"], ["b"], axis=0, keepdims=0)]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 5])],
                              [helper.make_tensor_value_info("a", TensorProto.INT64, [3, 1]),
                               helper.make_tensor_value_info("b", TensorProto.INT64, [5]),
                               helper.make_tensor_value_info("h", TensorProto.FLOAT, [3, 5])])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    x = ties((3, 5), np.float32, seed=4)
    reads = []
    original = dmlgpu.Tensor.numpy
    monkeypatch.setattr(dmlgpu.Tensor, "numpy", lambda self: reads.append(self.shape) or original(self))
    a, b, h = backend.prepare(m).run({"x": x})
    assert sorted(reads) == sorted([(3, 1), (5,), (3, 5)])  # the outputs only
    np.testing.assert_array_equal(h, reference_hardmax(x, 1, 13))
    np.testing.assert_array_equal(a, reference_arg("argmax", h, 1))
    np.testing.assert_array_equal(b, reference_arg("argmin", x, 0, 0))


def test_nan_propagates_by_default_and_ignore_is_directml():
    x = np.array([[1.0, np.nan, 3.0, np.nan]], np.float32)
    m = model("ArgMax", 13, x.shape, axis=1, keepdims=0)
    assert backend.run_model(m, [x])[0].tolist() == [1]
    assert backend.run_model(m, [x], nan_mode="ignore")[0].tolist() == [2]
    last = model("ArgMin", 13, x.shape, axis=1, keepdims=0, select_last_index=1)
    assert backend.run_model(last, [x])[0].tolist() == [3]


def test_scalar_and_empty_outputs():
    x = np.array([3, 9, 1], np.int32)
    (got,) = backend.run_model(model("ArgMax", 13, [3], TensorProto.INT32, keepdims=0), [x])
    assert got.shape == () and got.dtype == np.int64 and got == 1
    e = np.zeros((0, 4), np.float32)
    (got,) = backend.run_model(model("ArgMax", 13, [0, 4], axis=1), [e])
    assert got.shape == (0, 1)
    with pytest.raises(dmlgpu.DataError, match="axis of size 0"):
        backend.run_model(model("ArgMax", 13, [0, 4], axis=0), [e])


def test_run_node():
    node = helper.make_node("ArgMin", ["x"], ["y"], axis=1, keepdims=0)
    x = ties((3, 4), np.float32, seed=8)
    (got,) = backend.run_node(node, [x])
    np.testing.assert_array_equal(got, reference_arg("argmin", x, 1, 0))
    hard = helper.make_node("Hardmax", ["x"], ["y"])
    (got,) = backend.run_node(hard, [x.reshape(3, 2, 2)], opset_version=11)
    np.testing.assert_array_equal(got, reference_hardmax(x.reshape(3, 2, 2), 1, 11))


def test_other_nodes_are_refused_naming_the_node():
    graph = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["r"], name="act"), helper.make_node("ArgMax", ["r"], ["y"])], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 2])],
        [helper.make_tensor_value_info("y", TensorProto.INT64, [2, 1])])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    with pytest.raises(dmlgpu.ModelError, match=r"node 0 \('act', Relu\): op type Relu is not one dmlgpu runs"):
        backend.prepare(m)
    assert not backend.is_compatible(m)


@pytest.mark.parametrize("op_type, elem", [("ArgMax", TensorProto.BOOL), ("ArgMin", TensorProto.BFLOAT16),
                                           ("Hardmax", TensorProto.BFLOAT16), ("Hardmax", TensorProto.INT32)])
def test_types_the_operators_lack_are_refused(op_type, elem):
    m = model(op_type, 13, [2, 3], elem)
    with pytest.raises(dmlgpu.ModelError, match=rf"node 0 \('n0', {op_type}\): input 'x' has type "
                                                 rf"{TensorProto.DataType.Name(elem)}, which dmlgpu's .* takes FLOAT, "
                                                 rf"FLOAT16, DOUBLE"):
        backend.prepare(m)


@pytest.mark.parametrize("op_type", ["ArgMax", "ArgMin", "Hardmax"])
def test_double_is_taken(op_type):
    """DOUBLE, which ONNX's ArgMax, ArgMin and Hardmax allow, runs as FLOAT64 (test_float64 holds
    the answers to NumPy's on adversarial doubles)."""
    x = np.array([[1.0, 1 + 2**-40, np.nan], [-0.0, 0.0, -5e-324]])
    (y,) = backend.prepare(model(op_type, 13, [2, 3], TensorProto.DOUBLE, axis=1)).run([x])
    if op_type == "Hardmax":
        assert y.dtype == np.float64 and y.tolist() == [[0, 0, 1], [1, 0, 0]]
    else:
        assert y.tolist() == ([[2], [0]] if op_type == "ArgMax" else [[2], [2]])


def test_ranks_and_axes_dmlgpu_cannot_honour_are_refused():
    with pytest.raises(dmlgpu.ModelError, match="has 9 dimensions"):
        backend.prepare(model("ArgMax", 13, [1] * 9))
    with pytest.raises(dmlgpu.ModelError, match="axis is 2, but it must be in"):
        backend.prepare(model("ArgMax", 13, [2, 2], axis=2))


def test_devices_and_options():
    assert backend.supports_device("GPU") and backend.supports_device("CUDA") and backend.supports_device("cuda:0")
    assert not backend.supports_device("CPU")
    m = model("ArgMax", 13, [2])
    with pytest.raises(ValueError, match="runs on GPU or CUDA"):
        backend.prepare(m, "CPU")
    with pytest.raises(TypeError, match="unexpected keyword argument 'fast'"):
        backend.prepare(m, fast=True)


def test_inputs_are_checked():
    rep = backend.prepare(model("ArgMax", 13, [2, 3]))
    with pytest.raises(dmlgpu.DataError, match="has dtype float64, but the graph declares FLOAT"):
        rep.run([np.zeros((2, 3))])
    with pytest.raises(dmlgpu.DataError, match=r"has shape \(3, 2\)"):
        rep.run([np.zeros((3, 2), np.float32)])
    with pytest.raises(ValueError, match="holds 2 arrays"):
        rep.run([np.zeros((2, 3), np.float32)] * 2)


def test_unreadable_and_refused_models_are_model_errors(tmp_path):
    """Whatever protobuf, the filesystem or ONNX's checker says reaches the caller as a ModelError."""
    m = model("ArgMax", 13, [2, 3])
    data = m.SerializeToString()
    with pytest.raises(dmlgpu.ModelError, match="not an ONNX model: protobuf cannot parse"):
        backend.prepare(b"\x01\x02junk")
    with pytest.raises(dmlgpu.ModelError, match="does not exist"):
        backend.prepare(str(tmp_path / "missing.onnx"))
    with pytest.raises(dmlgpu.ModelError, match="is a directory"):
        backend.prepare(tmp_path)
    (tmp_path / "m.onnx").write_bytes(data)
    assert backend.prepare(tmp_path / "m.onnx").run([np.zeros((2, 3), np.float32)])[0].shape == (1, 3)
    bad = onnx.ModelProto()
    bad.CopyFrom(m)
    bad.graph.node[0].attribute.append(helper.make_attribute("axis", 1.5))
    with pytest.raises(dmlgpu.ModelError, match="the ONNX checker refuses the model: .*axis"):
        backend.prepare(bad)
    assert not backend.is_compatible(bad) and not backend.is_compatible(b"\x01\x02junk")
    newer = model("ArgMax", 13, [2, 3])
    newer.opset_import[0].version = onnx.defs.onnx_opset_version() + 1
    with pytest.raises(dmlgpu.ModelError, match="knows opsets up to"):
        backend.prepare(newer)
    flags = model("ArgMax", 13, [2, 3], keepdims=2)
    with pytest.raises(dmlgpu.ModelError, match="attribute 'keepdims' is 2, but it must be 0 or 1"):
        backend.prepare(flags)


def test_bad_inputs_and_options_are_named():
    rep = backend.prepare(model("ArgMax", 13, [2, 3]))
    with pytest.raises(TypeError, match="inputs must be a list or tuple of arrays"):
        rep.run(None)
    with pytest.raises(TypeError, match="keys must be input names"):
        rep.run({1: np.zeros((2, 3), np.float32)})
    with pytest.raises(ValueError, match="inputs has 'y', which is no input"):
        rep.run({"y": np.zeros((2, 3), np.float32)})
    with pytest.raises(dmlgpu.DataError, match="is not an array NumPy can make"):
        rep.run([[[1.0, 2.0, 3.0], [4.0]]])
    with pytest.raises(TypeError, match="dml_device must be a dmlgpu.Device"):
        backend.prepare(model("ArgMax", 13, [2]), dml_device="GPU")
    node = helper.make_node("ArgMax", ["x"], ["y"])
    with pytest.raises(ValueError, match="inputs holds 0 arrays, but the node has 1"):
        backend.run_node(node, [])
    with pytest.raises(ValueError, match="opset_version is 0"):
        backend.run_node(node, [np.zeros(3, np.float32)], opset_version=0)
    np.testing.assert_array_equal(rep.run([np.eye(2, 3, dtype=np.float32)])[0], [[0, 1, 0]])  # still works
