"""The peers: torch and CuPy on CUDA, run on the same data as ours and timed with CUDA events;
``find_peers`` returns those that can run here (none on a machine without CUDA). ``Peer`` says
what the bench asks of one: another peer is a class that fills it in, added to ``find_peers``."""

from __future__ import annotations

import math
import os
from typing import Any, Callable, Protocol

import numpy as np

from .cases import Case
from .timing import median

class Peer(Protocol):
    """What the bench asks of a peer: its name, version and device for the report, and the
    case's operator on the peer's own copy of the input, timed on its device."""

    name: str
    version: str
    device_name: str

    def upload(self, x: np.ndarray) -> Any:
        """``x`` on the peer's device."""

    def op(self, case: Case, x: Any) -> Callable[[], Any]:
        """The case's operator on the uploaded ``x``, as a call."""

    def gpu_times(self, fn: Callable[[], Any], repeats: int) -> np.ndarray:
        """Seconds of GPU time of each of ``repeats`` calls of ``fn``."""

    def to_numpy(self, result: Any) -> np.ndarray:
        """A result of ``op``'s call, read back to NumPy."""

    def release(self) -> None:
        """Wait for the device and give back the memory the peer's pool keeps."""


class TorchPeer:
    """torch on CUDA: the same data, timed with CUDA events."""

    name = "torch"

    def __init__(self) -> None:
        import torch

        if not torch.cuda.is_available():
            raise ImportError("torch has no CUDA device")
        self.torch = torch
        self.version = torch.__version__
        self.device_name = torch.cuda.get_device_name()

    def upload(self, x: np.ndarray):
        return self.torch.from_numpy(np.ascontiguousarray(x)).cuda()

    def op(self, case: Case, x) -> Callable:
        """The case's operator on GPU-resident ``x``; torch has no multi-axis argmax, so
        several axes are permuted to the end and flattened first (a copy unless they already are)."""
        t, axes, kept = self.torch, list(case.axes), case.kept
        rows = math.prod(case.shape[d] for d in kept)
        perm = kept + axes
        if case.op in ("argmax", "argmin"):
            f = t.argmax if case.op == "argmax" else t.argmin
            if len(axes) == 1:
                return lambda: f(x, dim=axes[0])
            if not kept:
                return lambda: f(x.reshape(-1))
            return lambda: f(x.permute(perm).reshape(rows, -1), dim=1)
        if len(axes) == 1:
            a = axes[0]
            return lambda: t.zeros_like(x).scatter_(a, x.argmax(dim=a, keepdim=True), 1)
        inverse = [int(i) for i in np.argsort(perm)]

        def hardmax():
            flat = x.permute(perm).reshape(rows, -1)
            out = t.zeros_like(flat).scatter_(1, flat.argmax(dim=1, keepdim=True), 1)
            return out.reshape([case.shape[d] for d in perm]).permute(inverse).contiguous()

        return hardmax

    def gpu_times(self, fn: Callable, repeats: int) -> np.ndarray:
        events = [(self.torch.cuda.Event(enable_timing=True), self.torch.cuda.Event(enable_timing=True))
                  for _ in range(repeats)]
        for start, end in events:
            start.record()
            fn()
            end.record()
        events[-1][1].synchronize()
        return np.array([start.elapsed_time(end) for start, end in events]) * 1e-3

    def to_numpy(self, result) -> np.ndarray:
        return result.cpu().numpy()

    def pageable(self, case: Case, x: np.ndarray) -> Callable:
        """The case from a NumPy array in pageable host memory to a NumPy result, as a torch
        user writes it: ``torch.from_numpy(x).cuda()``, the operator, ``.cpu()``."""
        return lambda: self.to_numpy(self.op(case, self.torch.from_numpy(x).cuda())())

    def references(self, nbytes: int) -> dict:
        """GB/s of the physical references on ``nbytes`` of FLOAT32, timed like the cases:
        ``copy_`` (read + write counted), ``amax`` over rows of 65536 and ``sum``."""
        t = self.torch
        n = nbytes // 4 // 65536 * 65536
        x = t.randn(n // 65536, 65536, device="cuda")
        y = t.empty_like(x)
        refs = {"copy_": (lambda: y.copy_(x), 2 * 4 * n), "amax_rows": (lambda: x.amax(dim=1), 4 * n),  # noqa: F821
                "sum": (lambda: x.sum(), 4 * n)}  # noqa: F821  (called before the `del x, y` below)
        out = {}
        for name, (fn, moved) in refs.items():
            self.gpu_times(fn, 3)
            out[name] = moved / median(self.gpu_times(fn, 20)) / 1e9
        del x, y
        self.release()
        return out

    def release(self) -> None:
        self.torch.cuda.synchronize()
        self.torch.cuda.empty_cache()


class CupyPeer:
    """CuPy: the same data, timed with CUDA events. CUPY_ACCELERATORS (e.g. "cub") decides
    which reduction kernels it uses, and so its speed; it is recorded with the results."""

    name = "cupy"

    def __init__(self) -> None:
        # As a CuPy user who cares about speed runs it: with CUB's reductions, unless the
        # environment says otherwise (read when CuPy is imported).
        os.environ.setdefault("CUPY_ACCELERATORS", "cub")
        import cupy

        if cupy.cuda.runtime.getDeviceCount() < 1:
            raise ImportError("CuPy sees no CUDA device")
        self.cupy = cupy
        self.version = f"{cupy.__version__} (CUPY_ACCELERATORS={os.environ.get('CUPY_ACCELERATORS', '')!r})"
        props = cupy.cuda.runtime.getDeviceProperties(cupy.cuda.Device().id)
        name = props.get("name", b"?")
        self.device_name = name.decode() if isinstance(name, bytes) else str(name)

    def upload(self, x: np.ndarray):
        return self.cupy.asarray(x)

    def op(self, case: Case, x) -> Callable:
        cp, axes, kept = self.cupy, list(case.axes), case.kept
        rows = math.prod(case.shape[d] for d in kept)
        perm = kept + axes
        if case.op in ("argmax", "argmin"):
            f = cp.argmax if case.op == "argmax" else cp.argmin
            if len(axes) == 1:
                return lambda: f(x, axis=axes[0])
            if not kept:
                return lambda: f(x)
            return lambda: f(x.transpose(perm).reshape(rows, -1), axis=1)
        inverse = [int(i) for i in np.argsort(perm)]

        def hardmax():
            flat = x.transpose(perm).reshape(rows, -1)
            out = cp.zeros_like(flat)
            out[cp.arange(rows), flat.argmax(axis=1)] = 1
            return cp.ascontiguousarray(out.reshape([case.shape[d] for d in perm]).transpose(inverse))

        return hardmax

    def gpu_times(self, fn: Callable, repeats: int) -> np.ndarray:
        cuda = self.cupy.cuda
        events = [(cuda.Event(), cuda.Event()) for _ in range(repeats)]
        for start, end in events:
            start.record()
            fn()
            end.record()
        events[-1][1].synchronize()
        return np.array([cuda.get_elapsed_time(start, end) for start, end in events]) * 1e-3

    def to_numpy(self, result) -> np.ndarray:
        return self.cupy.asnumpy(result)

    def release(self) -> None:
        self.cupy.cuda.Device().synchronize()
        self.cupy.get_default_memory_pool().free_all_blocks()


def find_peers() -> list[Peer]:
    """The peers that can run here: torch with CUDA, CuPy with a device."""
    peers: list[Peer] = []
    for cls in (TorchPeer, CupyPeer):
        try:
            peers.append(cls())
        except Exception:  # not installed, no CUDA, or a broken install: no peer
            pass
    return peers
