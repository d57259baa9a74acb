"""What test modules share: for the NumPy-flavoured tests (``test_numpy``, ``test_nan_numpy``,
``test_dask_numpy``) an outcome to compare, views of every layout, and NumPy's answer for
dmlgpu's tuple ``axis``; for the kernel tests that rotate their calls over a fixture's params
(``test_gpu``, ``test_float64``), which param a test has (``fixture_index``). Not a test module
(pytest collects ``test_*.py`` only)."""

from __future__ import annotations

import math
import warnings

import numpy as np


def fixture_index(request, name: str) -> int:
    """Which of its params the fixture ``name`` has in this test (0, 1, ...)."""
    return request.node.callspec.indices[name]


def outcome(fn, *args, **kwargs):
    """What ``fn(*args, **kwargs)`` gives: ("value", result) or ("raises", exception), its
    warnings silenced (NumPy's and dmlgpu's are not what is compared)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return "value", fn(*args, **kwargs)
        except Exception as err:  # the class is what is compared
            return "raises", err


def view(x: np.ndarray, kind: str, rng: np.random.Generator) -> np.ndarray:
    """An array equal to ``x`` (or, for "broadcast", of its shape) laid out as ``kind``:
    packed, transposed, strided, broadcast (stride 0), reversed (negative strides) or fortran."""
    if x.ndim == 0 or kind == "packed":
        return x
    if kind == "transposed":
        perm = rng.permutation(x.ndim)
        return np.ascontiguousarray(x.transpose(perm)).transpose(np.argsort(perm))
    if kind == "strided":
        big = np.zeros([2 * n for n in x.shape], x.dtype)
        big[tuple(slice(None, None, 2) for _ in x.shape)] = x
        return big[tuple(slice(None, None, 2) for _ in x.shape)]
    if kind == "broadcast" and x.size:
        axis = int(np.argmax(x.shape))
        return np.broadcast_to(x.take([0], axis=axis), x.shape)
    if kind == "reversed":  # negative strides: copied before the upload
        return np.ascontiguousarray(x[::-1])[::-1]
    return np.asfortranarray(x)


def over_axes(fn, x: np.ndarray, axis: tuple, keepdims: bool):
    """``fn(y, axis=-1)``, ``y`` being ``x`` with the axes of ``axis`` moved last (ascending)
    and flattened into one: NumPy's answer for dmlgpu's tuple ``axis`` (the row-major flat
    index over those axes); size 1 on them with ``keepdims``."""
    axes = sorted(a % x.ndim for a in axis)
    kept = [i for i in range(x.ndim) if i not in axes]
    flat = x.transpose(kept + axes).reshape([x.shape[i] for i in kept] + [math.prod(x.shape[i] for i in axes)])
    answer = fn(flat, axis=-1)
    return np.reshape(answer, [1 if i in axes else n for i, n in enumerate(x.shape)]) if keepdims else answer


def random_chunks(rng, shape) -> tuple:
    """A random chunking of ``shape``: per axis one chunk, single elements, or random cuts."""
    chunks = []
    for n in shape:
        style = rng.integers(3)
        if style == 0 or n == 1:
            chunks.append((n,))
        elif style == 1:
            chunks.append((1,) * n)
        else:
            cuts = np.sort(rng.choice(np.arange(1, n), size=rng.integers(1, n), replace=False))
            chunks.append(tuple(np.diff(np.concatenate([[0], cuts, [n]])).tolist()))
    return tuple(chunks)


class Duck:
    """A chunk type that is not NumPy's (as CuPy's or sparse's)."""

    def __init__(self, a):
        self.a = np.asarray(a)
        self.shape, self.dtype, self.ndim = self.a.shape, self.a.dtype, self.a.ndim

    def __array_function__(self, func, types, args, kwargs):
        return NotImplemented

    def __getitem__(self, key):
        return Duck(self.a[key])

    def __array__(self, dtype=None, copy=None):
        return self.a


def run_all(threads: list, wrong: list, errors: list) -> None:
    """Start the threads, wait for them, and hold that they met no wrong answer and no error."""
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[:3]
    assert not wrong, wrong[:3]
