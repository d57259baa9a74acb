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
Values between nodes stay on the GPU. Any other node, a type DirectML's operators do not take
(DOUBLE, BFLOAT16, ...) or an attribute dmlgpu cannot honour is refused by ``prepare`` with a
``dmlgpu.ModelError`` that names the node and its op type; nothing falls back to the CPU.

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
from typing import Any, Callable

import numpy as np

try:
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    from onnx.backend.base import Backend, BackendRep
except ImportError as err:  # pragma: no cover - the message is the point
    raise ImportError("dmlgpu.onnx_backend needs the onnx package: pip install 'dmlgpu[onnx]'") from err

from . import api
from .device import Device, Tensor, default_device
from .errors import DataError, ModelError
from .numpy import result_shape, with_sizes
from .types import HARDMAX_TYPES, MAX_RANK, DataType, NanMode

__all__ = ["DmlBackend", "DmlBackendRep", "prepare", "run_model", "run_node", "supports_device", "is_compatible"]

#: ONNX element types and the DirectML types that hold them.
DATA_TYPES: dict[int, DataType] = {
    TensorProto.FLOAT: DataType.FLOAT32,
    TensorProto.FLOAT16: DataType.FLOAT16,
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
    return TensorProto.DataType.Name(elem_type)


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


def _node_name(node, i: int) -> str:
    return f"node {i} ({node.name!r}, {node.op_type})" if node.name else f"node {i} ({node.op_type})"


def _load(model) -> onnx.ModelProto:
    if isinstance(model, onnx.ModelProto):
        return model
    if isinstance(model, (bytes, bytearray)):
        return onnx.load_from_string(bytes(model))
    if isinstance(model, str):
        return onnx.load(model)
    raise TypeError(f"model must be an onnx.ModelProto, bytes or a path, not {type(model).__name__}")


def _opset(model: onnx.ModelProto) -> int:
    for entry in model.opset_import:
        if entry.domain in ("", "ai.onnx"):
            return entry.version
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
    return tuple(d.dim_value if d.HasField("dim_value") else None for d in t.shape.dim)


def _plan(model: onnx.ModelProto) -> tuple[list[_Step], dict, list[tuple[str, int, tuple | None]], list[str]]:
    """The checked steps, the initializers, the inputs to feed (name, type, shape) and the
    output names. Raises ModelError naming the node for anything dmlgpu cannot honour."""
    graph = model.graph
    opset = _opset(model)
    initializers = {t.name: numpy_helper.to_array(t) for t in graph.initializer}
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
            op = f"{node.domain}::{node.op_type}" if node.domain not in ("", "ai.onnx") else node.op_type
            raise ModelError(f"{where}: op type {op} is not one dmlgpu runs; dmlgpu.onnx_backend "
                             f"runs graphs made only of ArgMax, ArgMin and Hardmax")
        attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
        unknown = sorted(set(attrs) - ATTRIBUTES[node.op_type])
        if unknown:
            raise ModelError(f"{where}: attribute {unknown[0]!r} is not one of {node.op_type}'s "
                             f"({', '.join(sorted(ATTRIBUTES[node.op_type]))})")
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
            raise ModelError(f"{where}: input {source!r} has type {_type_name(elem)}, which DirectML's "
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
        self._steps, self._initializers, self._feeds, self._outputs = _plan(model)
        self._device = device
        self.nan_mode = NanMode.parse(nan_mode, "nan_mode")
        self.input_names = [name for name, _, _ in self._feeds]
        self.output_names = list(self._outputs)

    @property
    def device(self) -> Device:
        return self._device or default_device()

    def run(self, inputs, **kwargs) -> list[np.ndarray]:  # type: ignore[override]  # a list, as onnxruntime's
        """The graph's outputs, as NumPy arrays in the order of ``graph.output``."""
        values = {name: _Value(a, a.shape) for name, a in self._initializers.items()}
        values.update(self._fed(inputs))
        device = self.device
        for step in self._steps:
            values[step.output] = self._run_step(step, values[step.input].on_gpu(device))
        return [values[name].numpy() for name in self._outputs]

    def _fed(self, inputs) -> dict[str, _Value]:
        if isinstance(inputs, dict):
            unknown = sorted(set(inputs) - {name for name, _, _ in self._feeds} - set(self._initializers))
            if unknown:
                raise ValueError(f"inputs has {unknown[0]!r}, which is no input of the graph ({self.input_names})")
            given = inputs
        else:
            if isinstance(inputs, np.ndarray):
                inputs = [inputs]
            if len(inputs) != len(self._feeds):
                raise ValueError(f"inputs holds {len(inputs)} arrays, but the graph has {len(self._feeds)} "
                                 f"inputs ({self.input_names})")
            given = dict(zip(self.input_names, inputs))
        missing = [name for name in self.input_names if name not in given]
        if missing:
            raise ValueError(f"input {missing[0]!r} is missing")
        fed = {name: _Value(np.asarray(a), np.shape(a)) for name, a in given.items()}
        for name, elem, shape in self._feeds:
            a = fed[name].data
            if a.dtype != helper.tensor_dtype_to_np_dtype(elem):
                raise DataError(f"input {name!r} has dtype {a.dtype}, but the graph declares {_type_name(elem)}")
            if shape is not None and (len(shape) != a.ndim or any(d is not None and d != n for d, n in zip(shape, a.shape))):
                raise DataError(f"input {name!r} has shape {a.shape}, but the graph declares {shape}")
        return fed

    def _run_step(self, step: _Step, x: _Value) -> _Value:
        rank = len(x.shape)
        if not 1 <= rank <= MAX_RANK:
            raise DataError(f"{step.name}: its input has {rank} dimensions, but DirectML's tensors have 1 to {MAX_RANK}")
        axes = _axes_for(step.op_type, step.attrs, rank, step.coerced_2d, step.name)
        if step.op_type == "Hardmax":
            return _Value(self._hardmax(x, axes), x.shape)
        shape = result_shape(x.shape, axes, step.attrs.get("keepdims", 1))
        if x.size == 0:
            if any(x.shape[a] == 0 for a in axes):
                raise DataError(f"{step.name}: its input has shape {x.shape}; an arg-reduction over an axis "
                                f"of size 0 has no answer")
            return _Value(np.empty(shape, np.int64), shape)
        op: Callable = api.argmax if step.op_type == "ArgMax" else api.argmin
        direction = "decreasing" if step.attrs.get("select_last_index", 0) else "increasing"
        result = op(x.data, axes, axis_direction=direction, output_data_type="int64", nan_mode=self.nan_mode)
        return _Value(with_sizes(result, shape or (1,)), shape)

    def _hardmax(self, x: _Value, axes: tuple[int, ...]):
        if x.size == 0:
            return x.data
        if axes:
            return api.hardmax(x.data, axes, nan_mode=self.nan_mode)
        # opsets 1-12 with axis == rank: every element is its own row, so every one is 1
        t = x.data
        ones = api.hardmax(with_sizes(t, t.shape + (1,)), (len(t.shape),), nan_mode=self.nan_mode)
        return with_sizes(ones, t.shape)


class DmlBackend(Backend):
    """dmlgpu as an ONNX backend; the module-level functions are this class's methods."""

    @classmethod
    def is_compatible(cls, model, device: str = "GPU", **kwargs) -> bool:
        """Whether ``prepare`` would accept the model (nothing is opened)."""
        try:
            _check_device(device)
            _plan(_load(model))
        except (ModelError, ValueError):
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
        model = _load(model)
        onnx.checker.check_model(model)
        return DmlBackendRep(model, kwargs.get("dml_device"), kwargs.get("nan_mode", "propagate"))

    @classmethod
    def run_model(cls, model, inputs, device: str = "GPU", **kwargs) -> list[np.ndarray]:  # type: ignore[override]
        return cls.prepare(model, device, **kwargs).run(inputs)

    @classmethod
    def run_node(cls, node, inputs, device: str = "GPU", outputs_info=None,  # type: ignore[override]
                 **kwargs) -> list[np.ndarray]:
        """Run one node on ``inputs`` (a list of arrays, one per node input); ``opset_version``
        (default: the installed onnx's newest) picks the op's version."""
        opset = kwargs.pop("opset_version", onnx.defs.onnx_opset_version())
        arrays = [np.asarray(a) for a in (inputs.values() if isinstance(inputs, dict) else inputs)]
        elems = [helper.np_dtype_to_tensor_dtype(a.dtype) for a in arrays]
        if outputs_info is None:  # the checker wants a type and a rank: the node's own
            keepdims = next((a.i for a in node.attribute if a.name == "keepdims"), 1)
            hardmax = node.op_type == "Hardmax"
            rank = arrays[0].ndim if hardmax or keepdims else arrays[0].ndim - 1
            outputs_info = [(helper.tensor_dtype_to_np_dtype(elems[0]) if hardmax else np.int64,
                             tuple(f"d{i}" for i in range(rank)))] * len(node.output)
        graph = helper.make_graph(
            [node], "run_node",
            [helper.make_tensor_value_info(name, elem, a.shape) for name, elem, a in zip(node.input, elems, arrays)],
            [helper.make_tensor_value_info(name, helper.np_dtype_to_tensor_dtype(np.dtype(dtype)), shape)
             for name, (dtype, shape) in zip(node.output, outputs_info)],
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
