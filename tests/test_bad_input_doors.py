"""Bad input through every door (issue 23): random bad calls of ``dmlgpu.onnx_backend``, of
``dmlgpu explain`` (call strings and descriptor JSON) and of the ``dmlgpu`` command's flags.

Each door gets hundreds of seeded random cases (thousands in CI), most of them broken on purpose. Every case
must either work or fail with one of the door's documented errors (an allowlist of exact
types), raised by dmlgpu's own code (so nothing escapes from inside protobuf, onnx, json or
NumPy), with a one-line message that names what is wrong; and the next valid call must still
give the right answer. ``DMLGPU_FUZZ_SEED`` changes the seed and ``DMLGPU_FUZZ_CASES`` the
number of cases per door (default 400; .ci/run asks 2000).
"""

from __future__ import annotations

import collections
import copy
import io
import json
import os
import re
import sys
import time
import traceback

import numpy as np
import pytest

if os.environ.get("CI", "").lower() == "true":
    import onnx  # CI must run these tests: a missing onnx is a failure, not a skip
else:
    onnx = pytest.importorskip("onnx")

from onnx import TensorProto, helper, numpy_helper

import dmlgpu
import dmlgpu.onnx_backend as backend
from dmlgpu import bench, cli
from dmlgpu.desc import (
    ActivationHardmax1OperatorDesc,
    ActivationHardmaxOperatorDesc,
    ArgMaxOperatorDesc,
    ArgMinOperatorDesc,
    ReduceOperatorDesc,
    TensorDesc,
    operator_from_json,
)
from dmlgpu.explainer import DEFAULT_CAPABILITIES, explain
from dmlgpu.plan import Capabilities

SEED = int(os.environ.get("DMLGPU_FUZZ_SEED", "23"))
CASES = int(os.environ.get("DMLGPU_FUZZ_CASES", "400"))
PACKAGE = os.path.dirname(os.path.abspath(dmlgpu.__file__))
#: No single case may take longer than this (a bad number must not make a call hang).
CASE_SECONDS = 30.0


class Door:
    """The outcomes of one door's cases, and what was wrong with any of them."""

    def __init__(self, name: str, allowed: tuple[type, ...]):
        self.name, self.allowed = name, allowed
        self.outcomes: collections.Counter = collections.Counter()
        self.problems: list[str] = []
        self.valid_calls = 0
        self.slowest = (0.0, "")

    def refused(self, err: BaseException, case: str, hint: str | None = None) -> None:
        """Hold an error raised by a bad case to the door's rules."""
        kind = type(err)
        self.outcomes[kind.__name__] += 1
        where = traceback.extract_tb(err.__traceback__)[-1].filename if err.__traceback__ else "?"
        message = str(err)
        if kind not in self.allowed:
            self.problem(case, f"{kind.__module__}.{kind.__name__} is not among the door's errors: {message[:300]}\n"
                               + "".join(traceback.format_exception(err)[-6:]))
        elif not os.path.abspath(where).startswith(PACKAGE):
            self.problem(case, f"{kind.__name__} raised in {where}, not by dmlgpu: {message[:300]}")
        elif not message.strip() or "\n" in message or len(message) > 1500:
            self.problem(case, f"{kind.__name__}'s message is not one line of text: {message[:300]!r}")
        elif hint is not None and not re.search(hint, message, re.I):
            self.problem(case, f"{kind.__name__}: {message[:300]!r} does not name /{hint}/")

    def worked(self) -> None:
        self.outcomes["worked"] += 1

    def problem(self, case: str, what: str) -> None:
        self.problems.append(f"{case[:400]}\n    -> {what}")

    def timed(self, started: float, case: str) -> None:
        took = time.perf_counter() - started
        if took > self.slowest[0]:
            self.slowest = (took, case[:200])

    def check(self) -> None:
        print(f"\n{self.name}: {sum(self.outcomes.values())} cases, {dict(self.outcomes.most_common())}; "
              f"{self.valid_calls} valid calls after them; slowest case {self.slowest[0]:.3f} s: {self.slowest[1]}")
        assert not self.problems, f"{len(self.problems)} problems, e.g.:\n" + "\n".join(self.problems[:8])
        assert self.slowest[0] < CASE_SECONDS, f"a case took {self.slowest[0]:.1f} s: {self.slowest[1]}"
        assert sum(self.outcomes.values()) >= CASES


def pick(rng: np.random.Generator, items):
    return items[int(rng.integers(len(items)))]


JUNK_TEXT = ["", " ", "\x00", "\n", "é", "∞", "😀", "\u202e", "\ud800", "ARGMAX", "-1", "1e999", "(", ")", "{", "}",
             "[", "]", "=", ",", "x", "None", "null", "9" * 30, "%s", "\\", "'", '"']

# ------------------------------------------------------------------------- onnx_backend

ONNX_ERRORS = (dmlgpu.ModelError, dmlgpu.DataError, dmlgpu.DescriptorError, ValueError, TypeError)
NEWEST = onnx.defs.onnx_opset_version()
FLOATS = [TensorProto.FLOAT, TensorProto.FLOAT16]
INTS = [TensorProto.INT8, TensorProto.UINT8, TensorProto.INT16, TensorProto.UINT16, TensorProto.INT32,
        TensorProto.UINT32, TensorProto.INT64, TensorProto.UINT64]


def random_model(rng) -> tuple[onnx.ModelProto, dict[str, np.ndarray]]:
    """A valid model of one to three ArgMax/ArgMin/Hardmax nodes, and inputs that fit it."""
    opset = pick(rng, [1, 11, 12, 13, 18, NEWEST])
    rank = int(rng.integers(1, 4))
    shape = [int(n) for n in rng.integers(1, 4, rank)]
    first_hardmax = rng.integers(3) == 0
    elem = pick(rng, FLOATS) if first_hardmax else pick(rng, FLOATS + INTS)
    nodes, name, cur_rank, cur_elem = [], "x", rank, elem
    for i in range(int(rng.integers(1, 4))):
        op = "Hardmax" if (i == 0 and first_hardmax) or (cur_elem in FLOATS and rng.integers(4) == 0) else \
            pick(rng, ["ArgMax", "ArgMin"])
        if op == "Hardmax" and cur_elem not in FLOATS:
            op = "ArgMax"
        attrs: dict = {}
        low = -cur_rank if opset >= 11 else 0
        if op == "Hardmax":
            if rng.integers(2):
                attrs["axis"] = int(rng.integers(low, cur_rank))
        else:
            if rng.integers(2):
                attrs["axis"] = int(rng.integers(low, cur_rank))
            keep = int(rng.integers(2)) if cur_rank > 1 else 1
            if rng.integers(2) or not keep:
                attrs["keepdims"] = keep
            if opset >= 12 and rng.integers(2):
                attrs["select_last_index"] = int(rng.integers(2))
        out = f"y{i}"
        nodes.append(helper.make_node(op, [name], [out], name=f"n{i}" if rng.integers(2) else "", **attrs))
        if op != "Hardmax":
            cur_elem = TensorProto.INT64
            cur_rank = cur_rank if attrs.get("keepdims", 1) else cur_rank - 1
        name = out
    outputs = [helper.make_tensor_value_info(name, cur_elem, [None] * cur_rank)]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", elem, shape)], outputs)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    x = rng.integers(-3, 4, shape).astype(helper.tensor_dtype_to_np_dtype(elem))
    return model, {"x": x}


def _attribute(node, name: str):
    return next((a for a in node.attribute if a.name == name), None)


def mutate_model(rng, model: onnx.ModelProto, tmp) -> tuple[object, str | None]:
    """One random breakage of a model: what to give ``prepare``, and a regex its error must match."""
    m = onnx.ModelProto()
    m.CopyFrom(model)
    g = m.graph
    node = g.node[int(rng.integers(len(g.node)))]
    kind = int(rng.integers(26))
    if kind == 0:  # random bytes
        return rng.bytes(int(rng.integers(0, 200))), r"model|protobuf|checker"
    if kind == 1:  # truncated
        data = m.SerializeToString()
        return data[: int(rng.integers(0, len(data)))], None
    if kind == 2:  # bytes flipped
        data = bytearray(m.SerializeToString())
        for _ in range(int(rng.integers(1, 4))):
            data[int(rng.integers(len(data)))] = int(rng.integers(256))
        return bytes(data), None
    if kind == 3:  # paths
        choice = int(rng.integers(4))
        if choice == 0:
            return str(tmp / f"missing-{rng.integers(1 << 30)}.onnx"), "does not exist"
        if choice == 1:
            return str(tmp), "directory"
        path = tmp / f"junk-{rng.integers(1 << 30)}.onnx"
        path.write_bytes(rng.bytes(int(rng.integers(1, 64))) if choice == 2 else m.SerializeToString())
        return (str(path) if rng.integers(2) else path), (r"model|protobuf|checker" if choice == 2 else None)
    if kind == 4:  # not a model at all
        return pick(rng, [None, 5, 2.5, [m], {"graph": 1}, object(), b"", "", bytearray(b"\x08\x07")]), None
    if kind == 5:  # op type
        node.op_type = pick(rng, ["", "Relu", "argmax", "ArgMaxx", "Hardmax2", "ArgMax\n", "ArgMínimo", "Add",
                                  "ReduceMax", "Identity", "\x00"])
        return m, r"op ?type|op_type|not one dmlgpu runs|No Op registered|checker"
    if kind == 6:  # domain
        node.domain = pick(rng, ["com.microsoft", "ai.onnx.ml", "x", "é", "ai.onnx.preview.training"])
        return m, r"op type|domain|checker|opset"
    if kind == 7:  # an unknown attribute
        node.attribute.append(helper.make_attribute(pick(rng, ["foo", "axes", "Axis", "é", "keep_dims"]), 1))
        return m, r"attribute|checker"
    if kind == 8:  # an attribute of another type
        name = pick(rng, ["axis", "keepdims", "select_last_index"])
        a = _attribute(node, name) or node.attribute.add()
        a.Clear()
        a.name = name
        value = pick(rng, [1.5, "one", [1, 2], [0.5], b"x"])
        a.CopyFrom(helper.make_attribute(name, value))
        return m, rf"{name}|attribute|checker"
    if kind == 9:  # an attribute of a bad value
        name = pick(rng, ["axis", "keepdims", "select_last_index"])
        a = _attribute(node, name) or node.attribute.add()
        a.CopyFrom(helper.make_attribute(name, int(pick(rng, [2, -1, 5, 9, -9, 2**40, -(2**62), 1 << 62]))))
        return m, rf"{name}|attribute|axis|checker"
    if kind == 10:  # an attribute twice, or one of undefined type
        if rng.integers(2) and node.attribute:
            node.attribute.append(node.attribute[0])
        else:
            a = node.attribute.add()
            a.name = "axis"
        return m, r"axis|attribute|checker"
    if kind == 11:  # opset version
        m.opset_import[0].version = int(pick(rng, [0, -1, 2, 5, 10, NEWEST + 1, 999, 2**40, -(2**40)]))
        return m, r"opset|domain_version|No Op|checker"
    if kind == 12:  # opsets: none, another domain, two
        choice = int(rng.integers(3))
        if choice == 0:
            del m.opset_import[:]
        elif choice == 1:
            m.opset_import[0].domain = pick(rng, ["ai.onnx.ml", "com.microsoft", "x"])
        else:
            m.opset_import.append(helper.make_opsetid("", int(rng.integers(1, NEWEST + 1))))
        return m, r"opset|domain|checker"
    if kind == 13:  # ir_version
        m.ir_version = int(pick(rng, [0, 1, 2, 99, 2**40, -1]))
        return m, r"ir_version|checker|opset"
    if kind == 14:  # graph inputs and outputs removed or renamed
        choice = int(rng.integers(4))
        if choice == 0:
            del g.input[:]
        elif choice == 1:
            del g.output[:]
        elif choice == 2:
            g.output[0].name = pick(rng, ["nope", "", "x"])
        else:
            g.input[0].name = pick(rng, ["nope", "", "y0"])
        return m, None
    if kind == 15:  # node inputs and outputs
        choice = int(rng.integers(4))
        if choice == 0:
            del node.input[:]
        elif choice == 1:
            node.input.append(pick(rng, ["x", "extra", ""]))
        elif choice == 2:
            del node.output[:]
        else:
            node.input[0] = pick(rng, ["nope", "", "y9"]) if node.input else "nope"
        return m, None
    if kind == 16:  # the input's element type
        g.input[0].type.tensor_type.elem_type = int(pick(rng, [0, -4, 11, 16, 8, 9, 14, 23, 100, 2**31 - 1]))
        return m, r"type|checker"
    if kind == 17:  # the input's dimensions
        dims = g.input[0].type.tensor_type.shape.dim
        choice = int(rng.integers(4))
        if choice == 0:
            dims[int(rng.integers(len(dims)))].dim_value = int(pick(rng, [-1, -7, 2**40, 0]))
        elif choice == 1:
            del dims[:]
        elif choice == 2:
            for _ in range(int(rng.integers(6, 10))):
                dims.add().dim_value = 1
        else:
            g.input[0].type.tensor_type.ClearField("shape")
        return m, None
    if kind == 18:  # a value of another kind than a tensor
        vi = g.input[0] if rng.integers(2) else g.output[0]
        vi.type.Clear()
        if rng.integers(2):
            vi.type.sequence_type.elem_type.tensor_type.elem_type = TensorProto.FLOAT
        return m, None
    if kind == 19:  # initializers: bad data, or one that is not a graph input
        t = numpy_helper.from_array(np.zeros((2, 2), np.float32), pick(rng, ["x", "w", ""]))
        if rng.integers(2):
            t.raw_data = rng.bytes(int(rng.integers(0, 20)))
        if rng.integers(3) == 0:
            t.dims[0] = -3
        g.initializer.append(t)
        return m, None
    if kind == 20:  # another node: of another op, or writing a name twice
        extra = helper.make_node(pick(rng, ["Relu", "ArgMax", "Hardmax"]), [pick(rng, ["x", "zz"])],
                                 [pick(rng, ["x", node.output[0] if node.output else "q", "w"])])
        g.node.insert(int(rng.integers(len(g.node) + 1)), extra)
        return m, None
    if kind == 21:  # names
        choice = int(rng.integers(3))
        if choice == 0:
            g.name = ""
        elif choice == 1:
            node.name = pick(rng, [t for t in JUNK_TEXT if t != "\ud800"])  # protobuf refuses a lone surrogate
        else:
            m.ClearField("graph")
        return m, None
    if kind == 22:  # fields cleared
        m.Clear() if rng.integers(4) == 0 else g.ClearField(pick(rng, ["node", "input", "output"]))
        return m, None
    if kind == 23:  # types DirectML lacks
        g.input[0].type.tensor_type.elem_type = pick(rng, [TensorProto.DOUBLE, TensorProto.BFLOAT16, TensorProto.BOOL,
                                                           TensorProto.STRING, TensorProto.COMPLEX64])
        return m, r"type|checker"
    if kind == 24:  # the output's type
        g.output[0].type.tensor_type.elem_type = int(pick(rng, [0, TensorProto.DOUBLE, 100]))
        return m, None
    return m, None  # valid: the inputs or the options are what is broken


def bad_inputs(rng, inputs: dict[str, np.ndarray]):
    """Inputs for ``run``: the right ones (a list, a dict or one array), or broken ones."""
    x = inputs["x"]
    kind = int(rng.integers(16))
    if kind == 0:
        return pick(rng, [None, 5, "x", b"x", 2.5, {1, 2}, object()]), None
    if kind == 1:
        return [x, x], "holds 2 arrays"
    if kind == 2:
        return [], "holds 0 arrays|missing"
    if kind == 3:
        return {pick(rng, ["y", "X", "", "x "]): x}, r"no input|missing"
    if kind == 4:
        return {1: x} if rng.integers(2) else {None: x}, "keys"
    if kind == 5:
        return [x.astype(pick(rng, [np.float64, np.int8, np.bool_, np.complex64, object, "U2"]))], r"dtype|objects"
    if kind == 6:
        return [np.zeros(tuple(int(n) + 1 for n in x.shape), x.dtype)], "shape"
    if kind == 7:
        return [x.reshape(-1)[:1].reshape(()) if x.size else x], None
    if kind == 8:
        return [[[1, 2], [3]]], r"array|shape|dtype"
    if kind == 9:
        return [pick(rng, [None, "abc", object(), {"a": 1}, [object()]])], r"array|objects|dtype"
    if kind == 10:
        return [x.tolist()], None
    if kind == 11:
        return [np.zeros((0,) + x.shape[1:], x.dtype)], None
    if kind == 12:
        return {"x": x}, None
    if kind == 13:
        return x, None
    if kind == 14:
        return (x,), None
    return [x], None


def bad_options(rng) -> tuple[dict, str, str | None]:
    """``prepare``'s device and keyword arguments: good ones, or broken ones, and the hint."""
    kind = int(rng.integers(10))
    if kind == 0:
        return {pick(rng, ["fast", "nan", "device_id", "dml"]): 1}, "GPU", "unexpected keyword"
    if kind == 1:
        return {"nan_mode": pick(rng, ["", "NAN", "propagates", 5, None, 1.5, "ignore "])}, "GPU", "nan_mode"
    if kind == 2:
        return {"dml_device": pick(rng, [5, "GPU", object(), "llvmpipe"])}, "GPU", "dml_device"
    if kind == 3:
        return {}, pick(rng, ["CPU", "", "gpu:x", None, 5, "TPU", "cpu"]), "device"
    if kind == 4:
        return {"nan_mode": pick(rng, ["ignore", "PROPAGATE", "DML_NAN_MODE_IGNORE"])}, pick(rng, ["GPU", "cuda", "CUDA:1"]), None
    return {}, "GPU", None


def test_onnx_backend_bad_models_inputs_and_options(tmp_path):
    door = Door("onnx_backend", ONNX_ERRORS)
    rng = np.random.default_rng(SEED)
    check_x = np.random.default_rng(1).standard_normal((3, 5)).astype(np.float32)
    valid_model = helper.make_model(
        helper.make_graph([helper.make_node("ArgMax", ["x"], ["y"], axis=1)], "valid",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 5])],
                          [helper.make_tensor_value_info("y", TensorProto.INT64, [3, 1])]),
        opset_imports=[helper.make_opsetid("", 13)])
    for i in range(CASES):
        model, inputs = random_model(rng)
        kind = int(rng.integers(10))
        started = time.perf_counter()
        if kind < 6:  # a broken model
            given, hint = mutate_model(rng, model, tmp_path)
            options, device, option_hint = {}, "GPU", None
            feed, _ = bad_inputs(rng, inputs) if rng.integers(3) == 0 else ([inputs["x"]], None)
            feed_hint = None  # the model's breakage may change what its inputs are
        elif kind < 8:  # broken inputs
            given, hint, options, device, option_hint = model, None, {}, "GPU", None
            feed, feed_hint = bad_inputs(rng, inputs)
        elif kind < 9:  # broken options
            given, hint = model, None
            options, device, option_hint = bad_options(rng)
            feed, feed_hint = [inputs["x"]], None
        else:  # run_node
            node = model.graph.node[0]
            mutated, _ = mutate_model(rng, model, tmp_path) if rng.integers(2) else (model, None)
            if isinstance(mutated, onnx.ModelProto) and mutated.graph.node:
                node = mutated.graph.node[0]
            node_given = node if rng.integers(6) else pick(rng, [None, "ArgMax", model, 5])
            feed, _ = bad_inputs(rng, inputs) if rng.integers(2) else ([inputs["x"]], None)
            opset = pick(rng, [None, None, 1, 13, NEWEST, 0, -1, NEWEST + 1, "13", True, 2.0])
            kwargs = {} if opset is None else {"opset_version": opset}
            case = f"#{i} run_node({str(node_given)[:200]!r}, {str(feed)[:100]}, {kwargs})"
            try:
                backend.run_node(node_given, feed, **kwargs)
                door.worked()
            except Exception as err:
                door.refused(err, case)
            door.timed(started, case)
            if i % 2 == 0:  # every other case (a read back is what a tiny call costs on lavapipe)
                _valid_onnx_call(door, valid_model, check_x, i)
            continue
        case = f"#{i} prepare({str(given)[:300]!r}, {device!r}, {options}).run({str(feed)[:100]})"
        stage, rep = "prepare", None
        try:
            rep = backend.prepare(given, device, **options)
            if not options:
                _is_compatible(door, given, device, case, want=True)
            stage = "run"
            outputs = rep.run(feed)
            assert isinstance(outputs, list) and all(isinstance(o, np.ndarray) for o in outputs), case
            door.worked()
        except AssertionError:
            raise
        except Exception as err:
            door.refused(err, case, (option_hint or hint) if stage == "prepare" else feed_hint)
            if stage == "prepare" and not options and isinstance(given, (onnx.ModelProto, bytes)):
                _is_compatible(door, given, device, case, want=False)
        door.timed(started, case)
        if i % 2 == 0:
            _valid_onnx_call(door, valid_model, check_x, i)
    door.check()
    assert door.valid_calls >= CASES // 10


def _is_compatible(door: Door, model, device, case: str, want: bool) -> None:
    """``is_compatible`` answers, without raising, what ``prepare`` did."""
    try:
        if backend.is_compatible(model, device) is not want:
            door.problem(case, f"is_compatible says {not want}, but prepare {'took' if want else 'refused'} the model")
    except Exception as err:
        door.problem(case, f"is_compatible raised {type(err).__name__}: {err}")


def _valid_onnx_call(door: Door, model, x, i: int) -> None:
    """After a bad case (every other one): a fresh prepare and run of a valid model gives NumPy's answer."""
    try:
        (got,) = backend.prepare(model).run([x])
        np.testing.assert_array_equal(got, np.argmax(x, axis=1, keepdims=True))
        door.valid_calls += 1
    except Exception as err:
        door.problem(f"valid call after case #{i}", f"{type(err).__name__}: {err}")


# ------------------------------------------------------------------------- explain

EXPLAIN_ERRORS = (dmlgpu.DescriptorError, TypeError, ValueError)
#: What an explain error's message names: a field, an option or the part of the text at fault.
FIELDS = (r"axis|axes|strides|direction|\bout\b|nan|shape|sizes|operator|type|call|option|output_tensor|input_tensor|"
          r"schedule|binding|buffer|capabilities|tuning|device|explain|JSON|Type|Desc|Tensor|Count|Flags|Function|"
          r"alignment|total_tensor_size|function|data_type|flags")
OPS = ["argmax", "argmin", "hardmax", "ARGMAX", "HardMax"]
BAD_OPS = ["sum", "argmax2", "árgmax", "arg", "argmin(", "max", "None", "0"]
TYPES = ["float32", "float16", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64", "bool",
         "FLOAT32", "DML_TENSOR_DATA_TYPE_INT8"]
BAD_TYPES = ["float64", "double", "int4", "bfloat16", "f32", "None", "float", "uint128", "FLOAT32x", "(4,"]
BAD_SHAPES = ["()", "(0, 3)", "(-3, 4)", "(3, 4", "3, 4)", "(3,,4)", "(3.5, 2)", "(a, b)", "9" * 5000,
              "(" + "1, " * 9 + "1)", "(4294967296)", "(65536, 65537)", "(1e3)", "x3", "(3 4)", "(" * 30, ")", "(,)",
              "(-0)", "(3,)x4", "0x5", "(0x10)", "(" + "9" * 60 + ")"]
BAD_OPTIONS = {
    "axis": ["5", "-9", "()", "(0, x)", "99999999999999999999", "(0", "(0, 0)", "1.5", "all", "(1)(2)", "(-4,)"],
    "strides": ["(-1, 1)", "(1,)", "(1, 2, 3, 4, 5)", "x", "(1, 2", "()", "(0.5, 1)"],
    "direction": ["up", "", "DML_AXIS_DIRECTION_SIDEWAYS", "0", "(1)"],
    "out": ["float32", "int8", "float64", "x", "uint16"],
    "nan": ["maybe", "0", "NaN", "(1)"],
}
BAD_WORDS = ["speed=9", "axis=", "=1", "axis==1", "oops", "(", ")", "axis=(1", "é=1", "nan", "x=1 y=2", "\x00"]


def good_call(rng) -> str:
    op = pick(rng, OPS)
    rank = int(rng.integers(1, 4))
    dims = [str(int(n)) for n in rng.integers(1, 9, rank)]
    shape = "x".join(dims) if rng.integers(3) == 0 else "(" + ", ".join(dims) + ("," if rank == 1 else "") + ")"
    type_name = pick(rng, ["float32", "float16", "FLOAT16"]) if op.lower() == "hardmax" else pick(rng, TYPES)
    options = []
    if rng.integers(2):
        axes = sorted({int(a) for a in rng.integers(-rank, rank, int(rng.integers(1, rank + 1)))}, key=lambda a: a % rank)
        axes = list({a % rank: a for a in axes}.values())
        options.append(f"axis={axes[0]}" if len(axes) == 1 and rng.integers(2) else f"axis=({', '.join(map(str, axes))})")
    if rng.integers(4) == 0:
        options.append(f"nan={pick(rng, ['ignore', 'propagate', 'IGNORE'])}")
    if op.lower() != "hardmax" and rng.integers(4) == 0:
        options.append(f"direction={pick(rng, ['increasing', 'decreasing'])}")
    if op.lower() != "hardmax" and rng.integers(4) == 0:
        options.append(f"out={pick(rng, ['int64', 'uint32', 'int32', 'uint64'])}")
    if rng.integers(6) == 0:
        options.append("strides=(" + ", ".join(str(int(s)) for s in rng.integers(0, 40, rank)) + ")")
    rng.shuffle(options)
    return " ".join([op, type_name, shape, *options])


def bad_call(rng) -> tuple[str, str | None]:
    """A call string with one part broken (and a regex its error must match), or scrambled text."""
    parts = good_call(rng).split(" ", 2)
    op, type_name, rest = parts[0], parts[1], parts[2] if len(parts) > 2 else ""
    kind = int(rng.integers(9))
    if kind == 0:
        return " ".join([pick(rng, BAD_OPS), type_name, rest]), r"operator|type|call|shape"
    if kind == 1:
        return " ".join([op, pick(rng, BAD_TYPES), rest]), r"type|shape|call"
    if kind == 2:
        return f"{op} {type_name} {pick(rng, BAD_SHAPES)}", r"shape|sizes|call|elements|is not an option"
    if kind == 3:
        name = pick(rng, list(BAD_OPTIONS))
        if op.lower() == "hardmax" and name in ("direction", "out"):
            return f"{op} {type_name} (3, 4) {name}=increasing", f"{name}.*hardmax"
        return f"{op} {type_name} (3, 4) {name}={pick(rng, BAD_OPTIONS[name])}", \
            rf"{name}|output_tensor|axes|the input type|strides|sizes"
    if kind == 4:
        return f"{op} {type_name} (3, 4) {pick(rng, BAD_WORDS)}", r"option|not an option|no value|\(|\)"
    if kind == 5:
        return f"{op} {type_name} (3, 4) axis=0 axis=1", "given twice"
    if kind == 6:
        return pick(rng, ["", " ", "argmax", "argmax float32", "\x00", "😀 😀 😀", "null", "5", "argmax\nfloat32\n(3,)",
                          "argmax float32 (3,) \u202e", "(3, 4) argmax float32"]), None
    text = list(good_call(rng))  # scrambled: characters deleted, inserted, repeated
    for _ in range(int(rng.integers(1, 5))):
        at = int(rng.integers(len(text) + 1))
        edit = int(rng.integers(3))
        if edit == 0 and text:
            del text[min(at, len(text) - 1)]
        elif edit == 1:
            text.insert(at, pick(rng, JUNK_TEXT))
        else:
            text[at:at] = text[at: at + int(rng.integers(1, 6))]
    return "".join(text), None


def good_descriptor(rng):
    rank = int(rng.integers(1, 4))
    sizes = [int(n) for n in rng.integers(1, 6, rank)]
    axes = sorted({int(a) for a in rng.integers(0, rank, int(rng.integers(1, rank + 1)))})
    kind = int(rng.integers(5))
    if kind >= 3:
        inp = TensorDesc(pick(rng, ["FLOAT32", "FLOAT16"]), sizes)
        if kind == 3:
            return ActivationHardmax1OperatorDesc(inp, None, axes)
        return ActivationHardmaxOperatorDesc(inp)
    inp = TensorDesc(pick(rng, TYPES[:10]), sizes, [int(s) for s in rng.integers(1, 30, rank)] if rng.integers(4) == 0 else None)
    if kind == 2:
        return ReduceOperatorDesc(pick(rng, ["ARGMAX", "ARGMIN"]), inp, None, axes)
    cls = ArgMaxOperatorDesc if kind == 0 else ArgMinOperatorDesc
    return cls(inp, None, axes, pick(rng, ["INCREASING", "DECREASING"]))


def _deep(depth: int):
    value: list = []
    for _ in range(depth):
        value = [value]
    return value


JSON_JUNK = [None, True, False, 0, -1, 1.5, float("nan"), float("inf"), 10**30, -(10**30), "", "x", "FLOAT32",
             [], [[]], {}, {"a": 1}, [1] * 20, list(range(9)), [-1], [0], [2**64], ["1"], [None], [1.0], "é" * 10]


def _paths(obj, path=()):
    yield path
    if isinstance(obj, dict):
        for key, value in obj.items():
            yield from _paths(value, path + (key,))
    elif isinstance(obj, list):
        for i, value in enumerate(obj):
            yield from _paths(value, path + (i,))


def bad_json(rng):
    """A descriptor's JSON with one or more parts broken: as a dict, as text, or scrambled text."""
    obj = good_descriptor(rng).to_json()
    for _ in range(int(rng.integers(1, 3))):
        paths = [p for p in _paths(obj) if p]
        path = paths[int(rng.integers(len(paths)))]
        parent = obj
        for key in path[:-1]:
            parent = parent[key]
        key = path[-1]
        kind = int(rng.integers(6))
        if kind <= 2:
            parent[key] = copy.deepcopy(pick(rng, JSON_JUNK)) if kind < 2 else _deep(int(rng.integers(5, 400)))
        elif kind == 3 and isinstance(parent, dict):
            del parent[key]
        elif kind == 4 and isinstance(parent, dict):
            parent[pick(rng, ["Extra", "sizes", "", "Axis", "TYPE"])] = copy.deepcopy(pick(rng, JSON_JUNK))
        else:
            parent[key] = [parent[key]] if rng.integers(2) else {"v": parent[key]}
    delivery = int(rng.integers(10))
    if delivery < 5:
        return obj
    text = json.dumps(obj)
    if delivery < 8:
        return text
    if delivery == 8:
        return text[: int(rng.integers(len(text)))]
    return pick(rng, ['{"a":' * 3000, "[" * 3000, "{" * 50, "null", "[]", '"x"', "1e999", "{}", "[1, 2]",
                      '{"Type": ' + "9" * 5000 + "}", '{"Type": "ARGMAX", "Desc": ' + "[" * 2000 + "]" * 2000 + "}",
                      '{"Type": "ARGMAX", "Desc": {"InputTensor": {"DataType": "FLOAT32", "Sizes": [1e400]}, "Axes": [0]}}',
                      text.encode(), text.encode("utf-16"), b"\xff\xfe{"])


#: Tensors of up to 2^32 - 1 elements: a schedule for tiny limits would have millions of pieces.
BIG_CALLS = ["float32 (4096, 65536) axis=1", "float32 (65535, 65535) axis=0", "int64 (4294967295)",
             "int8 (2, 2147483647) axis=0", "float16 (16, 16, 16, 16, 16, 16, 16, 15) axis=(0, 2, 4, 6)",
             "float32 (1000, 1000) strides=(1000000, 1) axis=0"]


def bad_explain_options(rng) -> tuple[dict, str]:
    kind = int(rng.integers(5))
    if kind == 0:
        return {"device": pick(rng, [5, "GPU", object(), DEFAULT_CAPABILITIES])}, "device"
    if kind == 1:
        return {"tuning": pick(rng, [5, "fast", {}])}, "tuning"
    if kind == 2:
        return {"nan_mode": pick(rng, [5, "", "sometimes", ["ignore"]])}, "nan_mode"
    if kind == 3:
        return {"capabilities": pick(rng, [5, {"max_storage_binding": 1}, "caps"])}, "capabilities"
    fields = {"max_storage_binding": pick(rng, [272, 1000, 4096, 1 << 16, 1 << 27, 0, -5, 16, 2**70, 1.5, "x", True]),
              "max_buffer": pick(rng, [16, 4096, 1 << 16, 1 << 28, 0, -1, 15, 2**70, None]),
              "offset_alignment": pick(rng, [256, 4, 64, 3, 0, 1 << 40, -256]),
              "max_workgroups_per_dim": pick(rng, [65535, 1, 0, -1])}
    return {"capabilities": Capabilities(**fields)}, r"capabilities|schedule|piece|binds"


def test_explain_bad_calls_and_json():
    door = Door("explain", EXPLAIN_ERRORS)
    rng = np.random.default_rng(SEED + 1)
    valid_call = "argmax float32 (4, 5) axis=1"
    valid_text = explain(valid_call)
    valid_desc = ArgMinOperatorDesc(TensorDesc("INT8", [3, 7]), None, [1])
    for i in range(CASES):
        kind = int(rng.integers(10))
        options: dict = {}
        if kind < 4:
            what, hint = bad_call(rng)
        elif kind < 8:
            what, hint = bad_json(rng), None
        elif kind < 9:  # bad arguments, or limits far too small for a large tensor
            what = good_call(rng) if rng.integers(3) else f"{pick(rng, ['argmax', 'argmin'])} {pick(rng, BIG_CALLS)}"
            options, hint = bad_explain_options(rng)
        else:
            what, hint = pick(rng, [None, 5, 2.5, b"argmax float32 (3,)", ["argmax"], object(), {1: 2}]), None
        entry = "operator_from_json" if kind in (5, 7) and isinstance(what, (str, bytes, dict)) else "explain"
        case = f"#{i} {entry}({_short(what)}, {options})"
        started = time.perf_counter()
        try:
            if entry == "explain":
                text = explain(what, **options)
                assert text.startswith("operator: ") and "=== WGSL #1 ===" in text, case
            else:
                desc = operator_from_json(what)
                assert operator_from_json(desc.to_json()) == desc, case
            door.worked()
        except AssertionError:
            raise
        except Exception as err:
            door.refused(err, case, hint or FIELDS)
        door.timed(started, case)
        if i % 4 == 0:
            try:
                assert explain(valid_call) == valid_text
                assert operator_from_json(json.dumps(valid_desc.to_json())) == valid_desc
                door.valid_calls += 1
            except Exception as err:
                door.problem(f"valid call after case #{i}", f"{type(err).__name__}: {err}")
    door.check()
    assert door.valid_calls >= CASES // 10


def _short(value, limit: int = 300) -> str:
    try:
        text = repr(value)
    except RecursionError:
        text = f"<{type(value).__name__} nested deep>"
    return text if len(text) <= limit else text[:limit] + "..."


# ------------------------------------------------------------------------- the dmlgpu command

BAD_ADAPTERS = ["#x", "#99", "#-1", "#²", "", " ", "no-such-adapter-\u00e9", "#1.5", "# 1", "#", "#0x1"]
SOUP = ["explain", "info", "--json", "--no-gpu", "--binding", "--buffer", "--nan-mode", "--adapter", "--quick",
        "--case", "--repeats", "--plot", "--list-adapters", "--x", "-", "1", "-1", "0", "x", "", "#x", "#99", "#0",
        "llvmpipe", "argmax float32 (4, 5) axis=1", "argmax", "float32", "(4,", "5)", "ignore", "propagate", "é",
        "x.json", "--", "--no-gpu=1", "-1e3"]


def bad_argv(rng, tmp) -> tuple[list[str], bool, str]:
    """(argv, whether it must fail, what stdin holds)."""
    stdin = pick(rng, ["", "{", "argmax float32 (4, 5)", "\x00\xff", json.dumps(good_descriptor(rng).to_json())])
    kind = int(rng.integers(9))
    if kind == 0:  # soup
        return [pick(rng, SOUP) for _ in range(int(rng.integers(0, 7)))], False, stdin
    if kind == 1:  # explain with a bad call or JSON
        what = bad_call(rng)[0] if rng.integers(2) else _json_text(bad_json(rng))
        bad = not (what.strip() and _explains(what))
        return ["explain", "--no-gpu", what], bad, stdin
    if kind == 2:  # explain with bad flags
        flag = pick(rng, ["--binding", "--buffer", "--nan-mode", "--bogus"])
        value = pick(rng, ["x", "", "1.5", "-5", "0", "1e3", "0x10", "--no-gpu", "ignorE", "é"]
                     + {"--binding": ["16", "271"], "--buffer": ["15", "1"]}.get(flag, []))
        if rng.integers(4) == 0:  # a limit that is a number, but far too small for the tensor
            return ["explain", "--no-gpu", "--binding", pick(rng, ["272", "4096", "65536"]),
                    f"argmin {pick(rng, BIG_CALLS)}"], True, stdin
        return ["explain", "--no-gpu", flag, value, "argmax float32 (4, 5) axis=1"], True, stdin
    if kind == 3:  # explain with a .json that cannot be read or holds no descriptor
        choice = int(rng.integers(5))
        path = tmp / f"what-{rng.integers(1 << 30)}.json"
        if choice == 0:
            path.write_bytes(rng.bytes(int(rng.integers(1, 40))) + b"\xff")
        elif choice == 1:
            path.write_text(_json_text(bad_json(rng)))
        elif choice == 2:
            path.mkdir()
        elif choice == 3:
            path.write_text("[" * 5000)
        bad = choice != 1 or not _explains(path.read_text())
        return ["explain", "--no-gpu", str(path)], bad, stdin
    if kind == 4:  # explain on a bad --adapter
        return ["--adapter", pick(rng, BAD_ADAPTERS), "explain", "argmax float32 (4, 5) axis=1"], True, stdin
    if kind == 5:  # demo on a bad --adapter, or with a flag it lacks
        if rng.integers(2):
            return ["--adapter", pick(rng, BAD_ADAPTERS), "demo"], True, stdin
        return ["demo", pick(rng, ["--quick", "x", "--json"])], True, stdin
    if kind == 6:  # bench with at least one bad flag
        argv = ["bench"]
        if rng.integers(2):
            argv.append("--quick")
        if rng.integers(2):
            argv += ["--case", pick(rng, ["rows", "llm"])]
        bad = [lambda: ["--repeats", pick(rng, ["0", "-3", "x", "", "1.5", str(10**7), "1e3"])],
               lambda: ["--case", pick(rng, ["", " ", "no-such-case"])],
               lambda: ["--json", pick(rng, [str(tmp), str(_a_file(tmp) / "out.json"), "", "."])],
               lambda: ["--plot", pick(rng, [str(tmp), str(_a_file(tmp) / "out.png"), str(tmp / "p.png")])],
               lambda: [pick(rng, ["--fast", "--repeats", "--case", "-x"])]]
        for _ in range(int(rng.integers(1, 3))):
            argv += pick(rng, bad)()
        if rng.integers(3) == 0:
            argv.insert(1, "--list-adapters")
        if rng.integers(4) == 0:
            argv = ["--adapter", pick(rng, BAD_ADAPTERS)] + argv
        return argv, True, stdin
    if kind == 7:  # info with a flag it lacks
        return ["info", pick(rng, ["--quick", "x", "--json=1", "--no-gpu", "-"])], True, stdin
    return pick(rng, [[], ["--adapter"], ["explain"], ["explain", "--no-gpu"], ["bench", "--repeats"], ["--x"],
                      ["explain", "--binding"], ["EXPLAIN", "argmax float32 (3,)"]]), True, stdin


def _json_text(what) -> str:
    """What ``bad_json`` made, as the text a command line or a file would hold."""
    if isinstance(what, bytes):
        return what.decode("utf-8", "replace")
    if isinstance(what, str):
        return what
    try:
        return json.dumps(what)
    except (ValueError, RecursionError):
        return "{"


def _a_file(tmp):
    path = tmp / "a-file"
    path.write_text("not a folder")
    return path


def _explains(what: str) -> bool:
    try:
        explain(what)
        return True
    except Exception:
        return False


def test_cli_bad_flags(tmp_path, capsys, monkeypatch):
    door = Door("dmlgpu command", (SystemExit,))

    def no_benchmark(*args, **kwargs):
        raise AssertionError("a bad bench command reached the benchmark")

    monkeypatch.setattr(bench, "main", no_benchmark)  # every bench command here is bad: none may get that far
    rng = np.random.default_rng(SEED + 2)
    valid = ["explain", "--no-gpu", "argmax float32 (4, 5) axis=1"]
    capsys.readouterr()
    for i in range(CASES):
        argv, must_fail, stdin = bad_argv(rng, tmp_path)
        monkeypatch.setattr(sys, "stdin", io.StringIO(stdin))
        case = f"#{i} dmlgpu {argv!r}"[:500]
        started = time.perf_counter()
        argparse_exit = False
        try:
            status = cli.main(argv)
        except SystemExit as err:
            status, argparse_exit = err.code, True
        except BaseException as err:  # anything else escaping main is a traceback
            door.problem(case, f"{type(err).__name__} escaped main: {err}\n" + "".join(traceback.format_exception(err)[-4:]))
            status = None
        door.timed(started, case)
        out, err_text = capsys.readouterr()
        if status is None:
            continue
        door.outcomes[f"exit {status}" + (" (argparse)" if argparse_exit else "")] += 1
        if "Traceback" in err_text or "Traceback" in out:
            door.problem(case, f"a traceback was printed: {err_text[-500:]}")
        elif must_fail and not status:
            door.problem(case, f"exit status {status!r} for a bad command; stderr {err_text[-300:]!r}")
        elif status and not argparse_exit and (not err_text.strip() or "\n" in err_text.strip()):
            door.problem(case, f"exit status {status} with stderr {err_text[-500:]!r}, not one line")
        elif status and argparse_exit and status != 0 and "error:" not in err_text.strip().splitlines()[-1]:
            door.problem(case, f"argparse's exit {status} with stderr {err_text[-300:]!r}")
        elif status and not argparse_exit and out:
            door.problem(case, f"exit status {status}, but stdout holds {out[:200]!r}")
        if i % 4 == 0 or i % 100 == 1:
            opens = i % 100 == 1  # now and then a valid call that opens the adapter
            try:
                code = cli.main(valid[:1] + valid[2:] if opens else valid)
                out, err_text = capsys.readouterr()
                assert code == 0 and out.startswith("operator: ") and "=== WGSL #1 ===" in out, (code, err_text)
                door.valid_calls += 1
            except BaseException as err:
                door.problem(f"valid call after case #{i}", f"{type(err).__name__}: {err}")
    door.check()
    assert door.valid_calls >= CASES // 10


# --- the rare refusals, each once -------------------------------------------------------


def test_the_rare_refusals_each_once():
    """What the randomized cases above reach only now and then (at thousands of cases, not at
    hundreds): each such refusal and path, once, so that the default depth covers it too."""
    from dmlgpu.explainer import with_limits

    with pytest.raises(dmlgpu.DescriptorError, match="nests arrays or objects deeper"):
        operator_from_json('{"Type": "ARGMAX", "Desc": ' + "[" * 100_000 + "]" * 100_000 + "}")
    with pytest.raises(dmlgpu.DescriptorError, match="is not UTF-8 text"):
        operator_from_json(b'{"Type": "\xff"}')
    with pytest.raises(dmlgpu.DescriptorError, match="holds a value Python cannot read"):
        operator_from_json('{"Type": ' + "9" * 5000 + "}")
    assert explain("argmax float32 (3,) axis=0").startswith("operator: ")  # a trailing comma
    with pytest.raises(dmlgpu.DescriptorError, match="sizes has 0 entries"):
        explain("argmax float32 () axis=0")
    cut = with_limits(DEFAULT_CAPABILITIES, 1024, None)  # bindings of 1 KiB
    assert "=== WGSL #1 ===" in explain("argmax float32 (4, 4096) axis=1", capabilities=cut)  # rows cut
    assert "=== WGSL #1 ===" in explain("argmax float32 (64, 16) axis=1", capabilities=cut)  # only kept axes cut
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    node = helper.make_node("ArgMax", ["x"], ["y"], axis=1)
    with pytest.raises(ValueError, match=r"opset_version is 999, but the onnx package here knows opsets 1 to"):
        backend.run_node(node, [x], opset_version=999)
    broken = numpy_helper.from_array(np.zeros((2, 2), np.float32), "w")
    broken.raw_data = b"\0" * 17  # not a whole number of floats (too few bytes, and the checker refuses it)
    graph = helper.make_graph([helper.make_node("ArgMax", ["x"], ["y"], axis=1)], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
                              [helper.make_tensor_value_info("y", TensorProto.INT64, [2, 1])], initializer=[broken])
    with pytest.raises(dmlgpu.ModelError, match="an initializer cannot be read as an array"):
        backend.prepare(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]))
    assert backend.run_node(node, x)[0].ravel().tolist() == [2, 2]  # a bare array; and the next call works
