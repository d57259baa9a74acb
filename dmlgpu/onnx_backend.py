"""An ONNX backend in the shape of ``onnxruntime.backend``: ArgMax, ArgMin and Hardmax on the GPU.

    import onnx, dmlgpu.onnx_backend as backend
    rep = backend.prepare(onnx.load("argmax.onnx"))       # device="GPU"
    (indices,) = rep.run([x])

``prepare(model, device="GPU", **kwargs)`` returns a rep whose ``run(inputs)`` takes the
graph's inputs (a list in graph order, a dict by name, or one array) and returns its
outputs as a list of NumPy arrays; ``run_model``, ``run_node``, ``supports_device`` and
``is_compatible`` complete the module, so ``onnx.backend.test.BackendTest(dmlgpu.onnx_backend)``
runs against it.

What runs: graphs made only of ``ArgMax``, ``ArgMin`` (every opset: ``axis``, ``keepdims``,
``select_last_index``, which is DECREASING) and ``Hardmax`` (opsets 1-12: the input coerced to
2-D at ``axis``, which is HARDMAX1 over the axes ``axis..rank-1``; 13 and later: one axis).
Values between nodes stay on the GPU. Types: FLOAT, FLOAT16, DOUBLE (exactly: FLOAT64, dmlgpu's
extension beyond DirectML's types) and the eight integer types for ArgMax and ArgMin; FLOAT,
FLOAT16 and DOUBLE for Hardmax. Any other node, a type the operators do not take (BFLOAT16,
BOOL, ...) or an attribute dmlgpu cannot honour is refused by ``prepare`` with a
``dmlgpu.ModelError`` that names the node and its op type; nothing falls back to the CPU.
A model that cannot be read (bytes protobuf cannot parse, a path that does not exist) or that
ONNX's checker refuses raises ``ModelError`` too, with protobuf's or the checker's reason on
one line. Inputs that do not fit the graph raise ``DataError`` (dtype, shape, not an array),
``ValueError`` (how many, which names) or ``TypeError`` (not arrays at all); bad options of
``prepare`` raise ``TypeError`` or ``DescriptorError``. The next valid call works.

NaN: ONNX leaves it open; its reference implementation is NumPy's, so the default here is
``nan_mode="propagate"`` (a NaN is the extreme: the first NaN, or the last with
``select_last_index``). ``prepare(..., nan_mode="ignore")`` gives DirectML's behaviour.
Other keyword arguments of ``prepare``: ``dml_device``, a ``dmlgpu.Device`` to run on
(default: the default device).

Devices: dmlgpu runs on a GPU through wgpu (or on Mesa's software GPU, lavapipe), so it
supports ONNX's ``"GPU"`` and ``"CUDA"`` (the name ONNX's test runner gives a GPU), not ``"CPU"``.

Needs the optional extra: ``pip install dmlgpu[onnx]``.
"""

from __future__ import annotations

import dataclasses
import math
import os
from typing import Any, Callable

import numpy as np

try:
    import onnx
    from google.protobuf.message import DecodeError
    from onnx import TensorProto, helper, numpy_helper
    from onnx.backend.base import Backend, BackendRep
except ImportError as err:  # pragma: no cover - the message is the point
    raise ImportError("dmlgpu.onnx_backend needs the onnx package: pip install 'dmlgpu[onnx]'") from err

from . import api
from .device import Device, default_device
from .tensor import Tensor
from .errors import DataError, ModelError
from .axes import result_shape
from .types import HARDMAX_TYPES, MAX_RANK, DataType, NanMode

__all__ = ["DmlBackend", "DmlBackendRep", "prepare", "run_model", "run_node", "supports_device", "is_compatible"]

#: ONNX element types and the DirectML types that hold them.
DATA_TYPES: dict[int, DataType] = {
    TensorProto.FLOAT: DataType.FLOAT32,
    TensorProto.FLOAT16: DataType.FLOAT16,
    TensorProto.DOUBLE: DataType.FLOAT64,
    TensorProto.UINT8: DataType.UINT8,
    TensorProto.INT8: DataType.INT8,
    TensorProto.UINT16: DataType.UINT16,
    TensorProto.INT16: DataType.INT16,
    TensorProto.UINT32: DataType.UINT32,
    TensorProto.INT32: DataType.INT32,
    TensorProto.UINT64: DataType.UINT64,
    TensorProto.INT64: DataType.INT64,
}

#: The attributes each op type has (the checker refuses any other); all are honoured.
ATTRIBUTES = {"ArgMax": {"axis", "keepdims", "select_last_index"}, "ArgMin": {"axis", "keepdims", "select_last_index"},
              "Hardmax": {"axis"}}

DEVICES = ("GPU", "CUDA")


def _type_name(elem_type: int) -> str:
    if elem_type in TensorProto.DataType.values():
        return TensorProto.DataType.Name(elem_type)
    return f"{elem_type} (no ONNX type)"


def _short(text: object, limit: int = 300) -> str:
    """``text`` (a message from onnx or protobuf) on one line, at most ``limit`` characters."""
    line = " ".join(str(text).split())
    return line if len(line) <= limit else line[: limit - 3] + "..."


def _shown(value, limit: int = 60) -> str:
    """The repr of a value given by the caller, cut to ``limit`` characters."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


@dataclasses.dataclass
class _Value:
    """A value of the graph: on the GPU (``Tensor``) unless it is empty or the caller's own
    array, with its ONNX shape (a Tensor of a 0-d value has shape (1,))."""

    data: Any  # Tensor or np.ndarray
    shape: tuple[int, ...]

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    def on_gpu(self, device: Device) -> "_Value":
        if isinstance(self.data, Tensor) or self.size == 0:
            return self
        return _Value(device.upload(np.ascontiguousarray(self.data.reshape(self.shape or (1,)))), self.shape)

    def numpy(self) -> np.ndarray:
        return np.asarray(self.data).reshape(self.shape)


@dataclasses.dataclass(frozen=True)
class _Step:
    """One node, checked: what it reads and writes, and how it runs."""

    name: str
    op_type: str
    input: str
    output: str
    attrs: dict
    coerced_2d: bool  # Hardmax before opset 13


def _word(text: str) -> str:
    """A name from the model as the messages show it: as it is when it is a plain word, else quoted."""
    return text if text.replace("_", "a").replace(".", "a").isalnum() and text.isascii() else _shown(text)


def _node_name(node, i: int) -> str:
    op = _word(node.op_type)
    return f"node {i} ({_shown(node.name)}, {op})" if node.name else f"node {i} ({op})"


def _load(model) -> onnx.ModelProto:
    """The ModelProto of a model given as one, as its serialized bytes or as a path; a
    ModelError names what could not be read."""
    if isinstance(model, onnx.ModelProto):
        return model
    if isinstance(model, (bytes, bytearray, memoryview)):
        return _parse(bytes(model), f"the model's {len(model)} bytes")
    if isinstance(model, (str, os.PathLike)):
        path = os.fspath(model)
        if not isinstance(path, str):
            raise TypeError(f"model is a path of bytes ({_shown(path)}); give it as a str or a pathlib.Path")
        if not os.path.exists(path):
            raise ModelError(f"model path {_shown(path)} does not exist")
        if os.path.isdir(path):
            raise ModelError(f"model path {_shown(path)} is a directory, not an ONNX file")
        try:
            with open(path, "rb") as f:
                data = f.read()
        except OSError as err:
            raise ModelError(f"model path {_shown(path)} could not be read: {err.strerror or err}") from None
        return _parse(data, f"the file {_shown(path)}")
    raise TypeError(f"model must be an onnx.ModelProto, bytes or a path, not {type(model).__name__}")


def _parse(data: bytes, what: str) -> onnx.ModelProto:
    model = onnx.ModelProto()
    try:
        model.ParseFromString(data)
    except (DecodeError, ValueError, RuntimeError) as err:  # protobuf's C and Python parsers differ
        raise ModelError(f"{what} are not an ONNX model: protobuf cannot parse them as a ModelProto "
                         f"({_short(err, 120)})") from None
    return model


def _check(model: onnx.ModelProto) -> None:
    """ONNX's checker, its refusal as a ModelError; then the opset it must know."""
    try:
        onnx.checker.check_model(model)
    except (onnx.checker.ValidationError, ValueError, TypeError, RuntimeError) as err:
        raise ModelError(f"the ONNX checker refuses the model: {_short(err)}") from None
    newest = onnx.defs.onnx_opset_version()
    for entry in model.opset_import:
        if entry.domain in ("", "ai.onnx") and entry.version > newest:
            raise ModelError(f"the model imports opset {entry.version} of the default ONNX domain, but the onnx "
                             f"package here knows opsets up to {newest}, so what its ops mean is unknown")


def _opset(model: onnx.ModelProto) -> int:
    versions = {entry.version for entry in model.opset_import if entry.domain in ("", "ai.onnx")}
    if len(versions) > 1:
        raise ModelError(f"the model imports opsets {sorted(versions)} of the default ONNX domain; it must import one")
    if versions:
        return versions.pop()
    raise ModelError("the model imports no opset of the default ONNX domain, which ArgMax, ArgMin and Hardmax belong to")


def _check_device(device: str) -> None:
    if not supports_device(device):
        raise ValueError(f"device is {device!r}, but dmlgpu.onnx_backend runs on {' or '.join(DEVICES)} "
                         f"(a wgpu adapter: a GPU, or lavapipe where there is none)")


def _shape_of(value_info) -> tuple | None:
    """The declared shape (dimensions as ints, or None where symbolic), None if undeclared."""
    t = value_info.type.tensor_type
    if not t.HasField("shape"):
        return None
    shape = tuple(d.dim_value if d.HasField("dim_value") else None for d in t.shape.dim)
    for i, d in enumerate(shape):
        if d is not None and d < 0:
            raise ModelError(f"graph input {value_info.name!r} declares dimension {i} as {d}, but a "
                             f"dimension is at least 0")
    return shape


# Long: one pass over the graph that checks every node against what came before it (types and
# ranks flow from node to node), each check naming the node.
def _plan(model: onnx.ModelProto) -> tuple[list[_Step], dict, list[tuple[str, int, tuple | None]], list[str]]:
    """The checked steps, the initializers, the inputs to feed (name, type, shape) and the
    output names. Raises ModelError naming the node for anything dmlgpu cannot honour."""
    graph = model.graph
    opset = _opset(model)
    try:
        initializers = {t.name: numpy_helper.to_array(t) for t in graph.initializer}
    except Exception as err:  # numpy_helper raises whatever its data makes it raise
        raise ModelError(f"an initializer cannot be read as an array ({type(err).__name__}: {_short(err, 120)})") from None
    types: dict[str, int] = {t.name: t.data_type for t in graph.initializer}
    ranks: dict[str, int | None] = {t.name: len(t.dims) for t in graph.initializer}
    feeds = []
    for vi in graph.input:
        elem = vi.type.tensor_type.elem_type if vi.type.HasField("tensor_type") else 0
        if not elem:
            raise ModelError(f"graph input {vi.name!r} is not a tensor of a known element type")
        types[vi.name] = elem
        shape = _shape_of(vi)
        ranks[vi.name] = None if shape is None else len(shape)
        if vi.name not in initializers:
            feeds.append((vi.name, elem, shape))
    steps = []
    for i, node in enumerate(graph.node):
        where = _node_name(node, i)
        if node.domain not in ("", "ai.onnx") or node.op_type not in ATTRIBUTES:
            op = f"{_word(node.domain)}::{_word(node.op_type)}" if node.domain not in ("", "ai.onnx") else _word(node.op_type)
            raise ModelError(f"{where}: op type {op} is not one dmlgpu runs; dmlgpu.onnx_backend "
                             f"runs graphs made only of ArgMax, ArgMin and Hardmax")
        try:
            attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
        except ValueError as err:  # an attribute of no type the checker let through
            raise ModelError(f"{where}: an attribute cannot be read ({_short(err, 120)})") from None
        unknown = sorted(set(attrs) - ATTRIBUTES[node.op_type])
        if unknown:
            raise ModelError(f"{where}: attribute {unknown[0]!r} is not one of {node.op_type}'s "
                             f"({', '.join(sorted(ATTRIBUTES[node.op_type]))})")
        for flag in ("keepdims", "select_last_index"):
            if flag in attrs and attrs[flag] not in (0, 1):
                raise ModelError(f"{where}: attribute {flag!r} is {_shown(attrs[flag])}, but it must be 0 or 1")
        if "axis" in attrs and not isinstance(attrs["axis"], int):
            raise ModelError(f"{where}: attribute 'axis' is {_shown(attrs['axis'])}, but it must be an integer")
        if len(node.input) != 1 or len(node.output) != 1 or not node.input[0] or not node.output[0]:
            raise ModelError(f"{where}: it must have one input and one output")
        source = node.input[0]
        if source not in types:
            raise ModelError(f"{where}: input {source!r} is neither a graph input, an initializer nor "
                             f"an earlier node's output")
        elem = types[source]
        allowed = HARDMAX_TYPES if node.op_type == "Hardmax" else tuple(DATA_TYPES.values())
        if DATA_TYPES.get(elem) not in allowed:
            names = ", ".join(_type_name(k) for k, v in DATA_TYPES.items() if v in allowed)
            raise ModelError(f"{where}: input {source!r} has type {_type_name(elem)}, which dmlgpu's "
                             f"{'ACTIVATION_HARDMAX1' if node.op_type == 'Hardmax' else node.op_type.upper()} "
                             f"does not take; it takes {names}")
        rank = ranks.get(source)
        if rank is not None and not 1 <= rank <= MAX_RANK:
            raise ModelError(f"{where}: input {source!r} has {rank} dimensions, but DirectML's tensors have "
                             f"1 to {MAX_RANK}")
        since = onnx.defs.get_schema(node.op_type, opset, "").since_version
        coerced = node.op_type == "Hardmax" and since < 13
        if rank is not None:
            _axes_for(node.op_type, attrs, rank, coerced, where, ModelError)
        hardmax = node.op_type == "Hardmax"
        types[node.output[0]] = elem if hardmax else TensorProto.INT64
        keepdims = attrs.get("keepdims", 1)
        ranks[node.output[0]] = rank if hardmax or keepdims or rank is None else rank - 1
        steps.append(_Step(where, node.op_type, source, node.output[0], attrs, coerced))
    outputs = [o.name for o in graph.output]
    for name in outputs:
        if name not in types:
            raise ModelError(f"graph output {name!r} is produced by no node, input or initializer")
    return steps, initializers, feeds, outputs


def _axes_for(op_type: str, attrs: dict, rank: int, coerced: bool, where: str, error=DataError) -> tuple[int, ...]:
    """The reduced axes of a node on an input of ``rank`` dimensions."""
    if op_type == "Hardmax" and coerced:  # opsets 1-12: 2-D at axis; axis may equal the rank
        axis = attrs.get("axis", 1)
        if not -rank <= axis <= rank:
            raise error(f"{where}: axis is {axis}, but it must be in [{-rank}, {rank}] for a rank-{rank} input")
        return tuple(range(axis + rank if axis < 0 else axis, rank))
    axis = attrs.get("axis", -1 if op_type == "Hardmax" else 0)
    if not -rank <= axis < rank:
        raise error(f"{where}: axis is {axis}, but it must be in [{-rank}, {rank - 1}] for a rank-{rank} input")
    return (axis % rank,)


class DmlBackendRep(BackendRep):
    """A prepared model: run it with ``run(inputs)``."""

    def __init__(self, model: onnx.ModelProto, device: Device | None, nan_mode):
        self.nan_mode = NanMode.parse(nan_mode, "nan_mode")
        if device is not None and not isinstance(device, Device):
            raise TypeError(f"dml_device must be a dmlgpu.Device, not {type(device).__name__} ({_shown(device)})")
        self._steps, self._initializers, self._feeds, self._outputs = _plan(model)
        self._device = device
        self.input_names = [name for name, _, _ in self._feeds]
        self.output_names = list(self._outputs)
        # an initializer that is also a graph input may be fed in its place, with the input's type and shape
        self._overridable = {vi.name: (vi.type.tensor_type.elem_type, _shape_of(vi))
                             for vi in model.graph.input if vi.name in self._initializers}
        # What each run needs, found once: the declared NumPy type and shape of every input that
        # may be fed; the steps whose output no later step reads (they may run NumPy in, NumPy
        # out, with no tensor uploaded); each step's axes and result shape by input shape.
        self._declared = {name: (helper.tensor_dtype_to_np_dtype(elem), shape) for name, (elem, shape) in
                          ({name: (elem, shape) for name, elem, shape in self._feeds} | self._overridable).items()}
        read = {step.input for step in self._steps}
        self._to_host = [step.output not in read for step in self._steps]
        self._shapes: dict = {}

    @property
    def device(self) -> Device:
        return self._device or default_device()

    def run(self, inputs, **kwargs) -> list[np.ndarray]:  # type: ignore[override]  # a list, as onnxruntime's
        """The graph's outputs, as NumPy arrays in the order of ``graph.output``."""
        values = {name: _Value(a, a.shape) for name, a in self._initializers.items()}
        values.update(self._fed(inputs))
        device = self.device
        for step, to_host in zip(self._steps, self._to_host):
            x = values[step.input]
            if not (to_host and isinstance(x.data, np.ndarray)):  # (a value later steps read stays on the GPU)
                x = values[step.input] = x.on_gpu(device)
            values[step.output] = self._run_step(step, x, device)
        return [values[name].numpy() for name in self._outputs]

    def _fed(self, inputs) -> dict[str, _Value]:
        """The inputs given, checked against the graph: names, count, dtypes, shapes."""
        if isinstance(inputs, dict):
            for key in inputs:
                if not isinstance(key, str):
                    raise TypeError(f"inputs is a dict, so its keys must be input names (str), not "
                                    f"{type(key).__name__} ({_shown(key)})")
            unknown = [key for key in inputs if key not in self.input_names and key not in self._overridable]
            if unknown:
                raise ValueError(f"inputs has {_shown(unknown[0])}, which is no input of the graph ({self.input_names})")
            given = dict(inputs)
        else:
            if isinstance(inputs, np.ndarray):
                inputs = [inputs]
            if not isinstance(inputs, (list, tuple)):
                raise TypeError(f"inputs must be a list or tuple of arrays (in graph input order), a dict of arrays "
                                f"by name, or one array; not {type(inputs).__name__} ({_shown(inputs)})")
            if len(inputs) != len(self._feeds):
                raise ValueError(f"inputs holds {len(inputs)} arrays, but the graph has {len(self._feeds)} "
                                 f"inputs ({self.input_names})")
            given = dict(zip(self.input_names, inputs))
        missing = [name for name in self.input_names if name not in given]
        if missing:
            raise ValueError(f"input {missing[0]!r} is missing; the graph's inputs are {self.input_names}")
        fed = {}
        for name, a in given.items():
            dtype, shape = self._declared[name]
            array = _as_array(a, f"input {name!r}")
            if array.dtype != dtype:
                elem = next((e for n, e, _ in self._feeds if n == name), None) or self._overridable[name][0]
                raise DataError(f"input {name!r} has dtype {array.dtype}, but the graph declares {_type_name(elem)}")
            if shape is not None and (len(shape) != array.ndim
                                      or any(d is not None and d != n for d, n in zip(shape, array.shape))):
                raise DataError(f"input {name!r} has shape {array.shape}, but the graph declares {shape}")
            fed[name] = _Value(array, array.shape)
        return fed

    def _axes_and_shape(self, step: _Step, x: _Value) -> tuple[tuple[int, ...], tuple[int, ...]]:
        """The step's reduced axes and result shape on an input of ``x``'s shape, found once."""
        key = (step.name, x.shape)
        found = self._shapes.get(key)
        if found is None:
            rank = len(x.shape)
            if not 1 <= rank <= MAX_RANK:
                raise DataError(f"{step.name}: its input has {rank} dimensions, but DirectML's tensors have 1 to "
                                f"{MAX_RANK}")
            axes = _axes_for(step.op_type, step.attrs, rank, step.coerced_2d, step.name)
            shape = x.shape if step.op_type == "Hardmax" else result_shape(x.shape, axes, step.attrs.get("keepdims", 1))
            found = self._shapes[key] = (axes, shape)
        return found

    def _run_step(self, step: _Step, x: _Value, device: Device) -> _Value:
        """The step on ``x``: a NumPy array (then NumPy comes back) or a tensor (a tensor)."""
        axes, shape = self._axes_and_shape(step, x)
        if step.op_type == "Hardmax":
            if not axes and isinstance(x.data, np.ndarray):
                x = x.on_gpu(device)
            return _Value(self._hardmax(x, axes), x.shape)
        if x.size == 0:
            if any(x.shape[a] == 0 for a in axes):
                raise DataError(f"{step.name}: its input has shape {x.shape}; an arg-reduction over an axis "
                                f"of size 0 has no answer")
            return _Value(np.empty(shape, np.int64), shape)
        op: Callable = api.argmax if step.op_type == "ArgMax" else api.argmin
        direction = "decreasing" if step.attrs.get("select_last_index", 0) else "increasing"
        result = op(x.data, axes, axis_direction=direction, output_data_type="int64", nan_mode=self.nan_mode,
                    device=device)
        if isinstance(result, np.ndarray):
            return _Value(result.reshape(shape), shape)
        return _Value(result.with_sizes(shape or (1,)), shape)

    def _hardmax(self, x: _Value, axes: tuple[int, ...]):
        if x.size == 0:
            return x.data
        if axes:
            return api.hardmax(x.data, axes, nan_mode=self.nan_mode, device=self.device)
        # opsets 1-12 with axis == rank: every element is its own row, so every one is 1
        t = x.data
        ones = api.hardmax(t.with_sizes(t.shape + (1,)), (len(t.shape),), nan_mode=self.nan_mode)
        return ones.with_sizes(t.shape)


def _as_array(value, what: str) -> np.ndarray:
    """``value`` as a NumPy array, or a DataError (TypeError for what is no array at all)."""
    if isinstance(value, np.ndarray):
        return value
    if value is None or isinstance(value, (str, bytes, dict, set)):
        raise TypeError(f"{what} must be an array, not {type(value).__name__} ({_shown(value)})")
    try:
        array = np.asarray(value)
    except (ValueError, TypeError, OverflowError) as err:  # ragged nesting, objects NumPy cannot hold
        raise DataError(f"{what} is not an array NumPy can make ({_short(err, 120)})") from None
    if array.dtype == object:
        raise DataError(f"{what} holds Python objects ({_shown(value)}), not numbers of one type")
    return array


class DmlBackend(Backend):
    """dmlgpu as an ONNX backend; the module-level functions are this class's methods."""

    @classmethod
    def is_compatible(cls, model, device: str = "GPU", **kwargs) -> bool:
        """Whether ``prepare`` would accept the model (nothing is opened)."""
        try:
            _check_device(device)
            loaded = _load(model)
            _check(loaded)
            _plan(loaded)
        except (ModelError, ValueError, TypeError):
            return False
        return True

    @classmethod
    def prepare(cls, model, device: str = "GPU", **kwargs) -> DmlBackendRep:
        """Check the model and return a rep that runs it; ``nan_mode`` ("propagate", the
        default, or "ignore") and ``dml_device`` (a ``dmlgpu.Device``) are the options."""
        _check_device(device)
        unknown = sorted(set(kwargs) - {"nan_mode", "dml_device"})
        if unknown:
            raise TypeError(f"prepare() got an unexpected keyword argument {unknown[0]!r}; it takes "
                            f"nan_mode, dml_device")
        nan_mode = NanMode.parse(kwargs.get("nan_mode", "propagate"), "nan_mode")
        dml_device = kwargs.get("dml_device")
        if dml_device is not None and not isinstance(dml_device, Device):
            raise TypeError(f"dml_device must be a dmlgpu.Device, not {type(dml_device).__name__} "
                            f"({_shown(dml_device)})")
        model = _load(model)
        _check(model)
        return DmlBackendRep(model, dml_device, nan_mode)

    @classmethod
    def run_model(cls, model, inputs, device: str = "GPU", **kwargs) -> list[np.ndarray]:  # type: ignore[override]
        return cls.prepare(model, device, **kwargs).run(inputs)

    @classmethod
    def run_node(cls, node, inputs, device: str = "GPU", outputs_info=None,  # type: ignore[override]
                 **kwargs) -> list[np.ndarray]:
        """Run one node on ``inputs`` (a list of arrays, one per node input); ``opset_version``
        (default: the installed onnx's newest) picks the op's version."""
        newest = onnx.defs.onnx_opset_version()
        opset = kwargs.pop("opset_version", newest)
        if not isinstance(node, onnx.NodeProto):
            raise TypeError(f"node must be an onnx.NodeProto, not {type(node).__name__} ({_shown(node)})")
        if isinstance(opset, bool) or not isinstance(opset, int):
            raise TypeError(f"opset_version must be an int, not {type(opset).__name__} ({_shown(opset)})")
        if not 1 <= opset <= newest:
            raise ValueError(f"opset_version is {opset}, but the onnx package here knows opsets 1 to {newest}")
        if isinstance(inputs, np.ndarray):
            inputs = [inputs]
        if isinstance(inputs, dict):
            inputs = list(inputs.values())
        if not isinstance(inputs, (list, tuple)):
            raise TypeError(f"inputs must be a list of arrays, one per node input, not {type(inputs).__name__} "
                            f"({_shown(inputs)})")
        if len(inputs) != len(node.input):
            raise ValueError(f"inputs holds {len(inputs)} arrays, but the node has {len(node.input)} inputs "
                             f"({list(node.input)})")
        arrays = [_as_array(a, f"input {name!r}") for name, a in zip(node.input, inputs)]
        elems = []
        for name, a in zip(node.input, arrays):
            try:
                elems.append(helper.np_dtype_to_tensor_dtype(a.dtype))
            except (KeyError, ValueError, TypeError):
                raise DataError(f"input {name!r} has dtype {a.dtype}, which no ONNX element type holds") from None
        if outputs_info is None:  # the checker wants a type and a rank: the node's own
            keepdims = next((a.i for a in node.attribute if a.name == "keepdims"), 1)
            hardmax = node.op_type == "Hardmax"
            rank = 0 if not arrays else arrays[0].ndim if hardmax or keepdims else max(arrays[0].ndim - 1, 0)
            dtype = helper.tensor_dtype_to_np_dtype(elems[0]) if hardmax and elems else np.int64
            outputs_info = [(dtype, tuple(f"d{i}" for i in range(rank)))] * len(node.output)
        try:
            outputs = [helper.make_tensor_value_info(name, helper.np_dtype_to_tensor_dtype(np.dtype(dtype)), shape)
                       for name, (dtype, shape) in zip(node.output, outputs_info)]
        except (KeyError, ValueError, TypeError) as err:
            raise TypeError(f"outputs_info must hold a (dtype, shape) pair per node output ({_short(err, 120)})") from None
        graph = helper.make_graph(
            [node], "run_node",
            [helper.make_tensor_value_info(name, elem, a.shape) for name, elem, a in zip(node.input, elems, arrays)],
            outputs,
        )
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
        return cls.prepare(model, device, **kwargs).run(arrays)

    @classmethod
    def supports_device(cls, device: str) -> bool:
        """GPU (and CUDA, the name ONNX's test runner gives a GPU); CPU is not dmlgpu's job."""
        return isinstance(device, str) and device.split(":")[0].upper() in DEVICES


is_compatible = DmlBackend.is_compatible
prepare = DmlBackend.prepare
run_model = DmlBackend.run_model
run_node = DmlBackend.run_node
supports_device = DmlBackend.supports_device
