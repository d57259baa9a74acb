"""Which layers of the resident small call as written cost what in Python (issue 34)?

The call ``dmlgpu.argmax(t, (1,)).numpy()`` on a (1, 64) FLOAT32 tensor, with the runner's C hot
calls (record, submit, map, read) replaced by Python stubs so that only the Python is timed.
Each variant takes one layer away by monkeypatching (checked first, with the real C calls, to
give the right answer); the variants take turns in one process, ``rounds`` rounds of 4,000
calls each, and the median per call is printed. Run on the H100 at db7f9a8, before 802a7a7 made
the submit under the lock the code's (the result:
``results/2026-11-26-nvidia-h100-802a7a7-small-call-spread.txt``):

    python benchmarks/studies/small_call_layers.py [rounds]
"""

from __future__ import annotations

import contextlib
import gc
import statistics
import sys
import time

import numpy as np

import dmlgpu
import dmlgpu.runtime.commits as commits
import dmlgpu.runtime.transfers as transfers

device = dmlgpu.Device()
x = np.random.default_rng(0).standard_normal((1, 64)).astype(np.float32)
t = device.upload(x)


def as_written():
    return dmlgpu.argmax(t, (1,)).numpy()


class Stubs:
    """The C hot calls as Python that returns at once (the rest are the real ones)."""

    def __init__(self, real):
        self.real = real

    def __getattr__(self, name):
        return getattr(self.real, name)

    def dml_record_calls(self, fns, handle, calls, n, buffers, n_pending):
        return n + n_pending

    def dml_submit_calls(self, *args):
        return 7

    def dml_read(self, *args):
        return 1

    def dml_map(self, *args):
        return None


def swap(owner, name, value):
    """(on, off): set ``owner.name`` to ``value``, and put the original back."""
    original = getattr(owner, name)
    return (lambda: setattr(owner, name, value)), (lambda: setattr(owner, name, original))


def submit_under_the_lock(self):
    """Commits.submit_alone without _lead's hand-over: the submit made under the runner's lock."""
    runner = self.runner
    if self.idle():
        pending, _, _ = runner.take_pending()
        runner.native.submit_calls(pending, ())


def without_the_api(x, axes, **kwargs):
    """dmlgpu.argmax without argmax and _run: the compiled operator run on the tensor."""
    (compiled,) = device.by_call.values()
    return compiled.run(x)


layers = {
    "no Ctrl-C hold": swap(transfers, "interrupts_held", contextlib.nullcontext),
    "submit under the lock": swap(commits.Commits, "submit_alone", submit_under_the_lock),
    "no API layer": swap(dmlgpu, "argmax", without_the_api),
}
variants = {"as written": (lambda: None, lambda: None), **layers,
            "all three": (lambda: [on() for on, _ in layers.values()], lambda: [off() for _, off in layers.values()])}

for _ in range(50):
    as_written()
expected = as_written()
for name, (on, off) in variants.items():
    on()
    assert (as_written() == expected).all(), name
    off()

native = device.runner.native
real, native.hot = native.hot, Stubs(native.hot)
times: dict[str, list] = {name: [] for name in variants}
for _ in range(int(sys.argv[1]) if len(sys.argv) > 1 else 15):
    for name, (on, off) in variants.items():
        on()
        gc.collect()
        start = time.perf_counter_ns()
        for _ in range(4000):
            as_written()
        times[name].append((time.perf_counter_ns() - start) / 4000 / 1000)
        off()
native.hot = real
base = statistics.median(times["as written"])
for name, values in times.items():
    median = statistics.median(values)
    print(f"{name:24} median {median:6.2f} us  min {min(values):6.2f}  against as written {median - base:+.2f}")
