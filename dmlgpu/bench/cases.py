"""The suites as data: a ``Case`` (an operator over a packed tensor of one type and shape), a
``Suite`` of them (``benchmarks/suites/<name>.json``, shipped as the package ``dmlgpu.suites``),
and the random input a case runs on (``host_data``)."""

from __future__ import annotations

import dataclasses
import json
import math
from importlib import resources

import numpy as np

from ..desc import ActivationHardmax1OperatorDesc, ArgMaxOperatorDesc, ArgMinOperatorDesc, TensorDesc
from ..types import DataType

OPS = ("argmax", "argmin", "hardmax")


#: The kinds of case (``Case.kind``).
KINDS = ("gpu", "numpy", "loop", "throughput")


@dataclasses.dataclass(frozen=True)
class Case:
    """One benchmark case: an operator over a packed tensor of one type and shape."""

    name: str
    op: str  # "argmax", "argmin" or "hardmax"
    dtype: DataType
    shape: tuple[int, ...]
    axes: tuple[int, ...]
    latency: bool = False  # report as a latency (one small call), not a bandwidth
    note: str = ""
    #: "gpu": GPU time beside the ceiling and the peers; "numpy": whole NumPy-in, NumPy-out
    #: calls beside NumPy on the CPU and torch's pageable path, with the upload (and read-back)
    #: rate alone; "loop": back-to-back GPU-resident calls against what their GPU time allows;
    #: "throughput": calls per second from several threads at once (``threads``).
    kind: str = "gpu"
    #: The shape of an array the input is a view of (its leading part along every axis), so
    #: that the input has gaps between its rows, as a Dask chunk of a larger array has.
    within: tuple[int, ...] | None = None
    #: A "throughput" case's numbers of threads.
    threads: tuple[int, ...] = ()

    _KEYS = ("name", "op", "dtype", "shape", "axes", "latency", "note", "kind", "within", "threads")

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"case {self.name!r}: kind is {self.kind!r}, but it must be one of {', '.join(KINDS)}")
        if self.op not in OPS:
            raise ValueError(f"case {self.name!r}: op is {self.op!r}, but it must be one of {', '.join(OPS)}")
        object.__setattr__(self, "dtype", DataType.parse(self.dtype, f"case {self.name!r}: dtype"))
        object.__setattr__(self, "shape", tuple(int(n) for n in self.shape))
        object.__setattr__(self, "axes", tuple(sorted(int(a) for a in self.axes)))
        object.__setattr__(self, "threads", tuple(int(n) for n in self.threads))
        if self.within is not None:
            object.__setattr__(self, "within", tuple(int(n) for n in self.within))
            if len(self.within) != len(self.shape) or any(w < n for w, n in zip(self.within, self.shape)):
                raise ValueError(f"case {self.name!r}: within is {list(self.within)}, but it must hold shape "
                                 f"{list(self.shape)} along every axis")
        if (self.kind == "throughput") != bool(self.threads) or any(n < 1 for n in self.threads):
            raise ValueError(f"case {self.name!r}: threads is {list(self.threads)}, but a throughput case (and only "
                             f"one) names its numbers of threads, each at least 1")

    @classmethod
    def from_json(cls, d: dict) -> "Case":
        unknown = set(d) - set(cls._KEYS)
        if unknown:
            raise ValueError(f"case {d.get('name')!r} has unknown keys {sorted(unknown)}; known: {', '.join(cls._KEYS)}")
        return cls(**d)

    def descriptor(self) -> ArgMaxOperatorDesc | ArgMinOperatorDesc | ActivationHardmax1OperatorDesc:
        """The operator descriptor (packed input, output inferred)."""
        inp = TensorDesc(self.dtype, self.shape)
        if self.op == "hardmax":
            return ActivationHardmax1OperatorDesc(inp, axes=self.axes)
        cls = ArgMaxOperatorDesc if self.op == "argmax" else ArgMinOperatorDesc
        return cls(inp, axes=self.axes)

    @property
    def kept(self) -> list[int]:
        return [d for d in range(len(self.shape)) if d not in self.axes]

    @property
    def label(self) -> str:
        short = {"FLOAT32": "f32", "FLOAT16": "f16", "FLOAT64": "f64"}.get(self.dtype.name, self.dtype.name.lower())
        axes = "all" if len(self.axes) == len(self.shape) and len(self.shape) > 1 else ",".join(map(str, self.axes))
        op = "" if self.op == "argmax" else f"{self.op} "
        within = f" of ({','.join(map(str, self.within))})" if self.within else ""
        return f"{op}{short} ({','.join(map(str, self.shape))}){within} ax {axes}"

    def to_json(self) -> dict:
        d = {"name": self.name, "op": self.op, "dtype": self.dtype.name, "shape": list(self.shape),
             "axes": list(self.axes), "latency": self.latency, "note": self.note, "kind": self.kind}
        if self.within is not None:
            d["within"] = list(self.within)
        if self.threads:
            d["threads"] = list(self.threads)
        return d


@dataclasses.dataclass(frozen=True)
class Suite:
    name: str
    description: str
    repeats: int
    warmup_s: float
    cases: tuple[Case, ...]


def load_suite(name: str) -> Suite:
    """``benchmarks/suites/<name>.json``, through the package ``dmlgpu.suites``."""
    data = json.loads(resources.files("dmlgpu.suites").joinpath(f"{name}.json").read_text())
    transfers = [Case.from_json({"kind": "numpy", **c}) for c in data.get("transfers", [])]
    return Suite(name, data.get("description", ""), int(data["repeats"]), float(data["warmup_s"]),
                 tuple(Case.from_json(c) for c in data["cases"]) + tuple(transfers))


def host_data(case: Case, rng: np.random.Generator, shape: tuple[int, ...] | None = None) -> np.ndarray:
    """Random input for a case, drawn so that ties at the extremes are rare.

    Floats come from Student's t with 3 degrees of freedom: its heavy tails keep the
    largest (and smallest) values of a slice far apart, so even FLOAT16, with 1024 steps
    per octave, seldom ties. Integers are uniform over the type's range: for 8- and
    16-bit types, ties are then certain in long slices (they are broken by the first index).
    """
    shape = shape or case.shape
    n = math.prod(shape)
    dtype = case.dtype.numpy
    if case.dtype.is_float:
        values = rng.standard_t(3, size=n).astype(dtype)
    else:
        info = np.iinfo(dtype)
        values = rng.integers(info.min, info.max, size=n, dtype=dtype, endpoint=True)
    return values.reshape(shape)
