"""Every plan and every WGSL text of a fixed set of calls, held to digests recorded before the
kernels moved into their own modules (dmlgpu/kernels/): a move must change no byte of either.

For each call the digest covers ``explain``'s text (the schedule, each plan, every pass's
WGSL), each pass's grid, uniform words and bindings, and the family the call is tuned as; the
``tuning:`` line alone is left out, since it names settings, not what runs. A change that is
meant to change plans writes new digests with ``DMLGPU_GOLDEN_WRITE=1`` and says so in its
commit. Pure Python: no GPU.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import pathlib
import re

import pytest

from dmlgpu.desc import lower
from dmlgpu.explainer import DEFAULT_CAPABILITIES, explain_schedule, planned
from dmlgpu.plan import Capabilities, Tuning, Tunings, Writes, family_of
from dmlgpu.tuning import SOFTWARE_TUNING
from dmlgpu.types import NanMode
from dmlgpu.wgsl import passes

GOLDEN = pathlib.Path(__file__).with_name("plans_golden.json")

CAPS = {
    "web": DEFAULT_CAPABILITIES,
    "gpu": Capabilities(max_storage_binding=2147483644, max_buffer=4292870144, shader_int64=True, subgroups=True,
                        int64_atomics=True),
    "cpu": Capabilities(max_storage_binding=128 << 20, max_buffer=2147483647, shader_int64=True, subgroups=True,
                        int64_atomics=True, software=True),
    "pieces": Capabilities(max_storage_binding=4096, max_buffer=16384, shader_int64=True, subgroups=True,
                           int64_atomics=True),
}

#: The tunings the tests and the calibration use, by name: each adapter's default, and the small
#: thresholds of tests/test_gpu.py's fixtures (so small inputs reach every kernel and option).
TUNINGS = {
    "default": None,  # the adapter's built-in default
    "small": Tuning(workgroup_size=32, loads_per_thread=1, target_workgroups=64, min_chunk_per_lane=1,
                    min_chunk_per_lane_single=1, target_threads=512, min_chunk_thread=5, merge_workgroup_above=16,
                    rows_max_bytes=0, race_max_chunks=0, merge_workgroup_below=0),
    "walk": Tuning(workgroup_size=32, loads_per_thread=8, batch=3, skip_min_quads=2, target_workgroups=4,
                   min_chunk_per_lane=4, min_chunk_per_lane_single=4),
    "rows": Tuning(workgroup_size=32, rows_groups=2, rows_whole_quads=False, rows_block_loads=4, loads_per_thread=4),
    "columns": Tuning(workgroup_size=32, target_threads=64, min_chunk_thread=40, columns_interleave=False,
                      columns_unroll=1),
    "options": Tuning(wide_loads=True, unroll=False, bound_no_keys=True, row_stage=False, subgroups=False,
                      columns_unroll=4),
    "families": Tunings(default=Tuning(), families=(("rows/32@seg32", Tuning(workgroup_size=128)),
                                                     ("short_rows/8@256B", Tuning(loads_per_thread=4)),
                                                     ("columns/32@r512", Tuning(columns_unroll=4)))),
}

SHAPES = [
    "(64, 1000) axis=1", "(4096, 65536) axis=1", "(1048576, 256) axis=1", "(4194304, 64) axis=1",
    "(16777216, 8) axis=1", "(1048576, 3) axis=1", "(100, 23) axis=1", "(1, 151936) axis=1", "(64, 151936) axis=1",
    "(65536, 4096) axis=0", "(4096, 65536) axis=0", "(64, 256, 4096) axis=(0,2)", "(16, 21, 512, 512) axis=1",
    "(8, 16777216) axis=0", "(268435456,) axis=0", "(3, 997) axis=1", "(5, 77) axis=1", "(2, 3, 4) axis=(0,2)",
    "(7, 5, 9) axis=1", "(1000, 3) axis=0", "(8, 2) strides=(1, 8) axis=0", "(6000, 3) axis=(0,1)",
    "(70, 130) axis=0", "(10000,) axis=0", "(290, 64) axis=0", "(12, 16, 20) axis=(1,2)", "(40, 50, 6) axis=(0,1)",
    "(9, 40, 30) axis=(0,2)", "(40, 50) strides=(1, 40) axis=(0,1)",
]
#: Shapes small enough for the "pieces" adapter (4 KiB bindings) to plan in a few hundred pieces.
SMALL_ELEMENTS = 20000
TYPES = ["float32", "float16", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64", "float64"]
OPS = [("argmax", ""), ("argmin", " direction=decreasing"), ("hardmax", ""), ("argmax", " out=uint32")]
NANS = [NanMode.IGNORE, NanMode.PROPAGATE]


def _cases():
    """(id, call, caps name, tuning name, NaN mode): every shape on every adapter and tuning, the
    types, operators and NaN modes in rotation (each shape meets each type within a few cases)."""
    n = 0
    for s, shape in enumerate(SHAPES):
        for c, caps in enumerate(CAPS):
            for t, tuning in enumerate(TUNINGS):
                for k in range(2):
                    data_type = TYPES[(s + 3 * c + 5 * t + 7 * k) % len(TYPES)]
                    op, extra = OPS[(s + c + t + k) % len(OPS)]
                    if caps == "pieces" and math.prod(map(int, re.findall(r"\d+", shape.split(")")[0]))) > SMALL_ELEMENTS:
                        continue
                    if op == "hardmax":  # HARDMAX takes float types alone
                        extra, data_type = "", ("float32", "float16", "float64")[(s + k) % 3]
                    call = f"{op} {data_type} {shape}{extra}"
                    nan = NANS[(s + t + k) % 2]
                    yield f"{n:04d} {call} | {caps} | {tuning} | {nan.value}", call, caps, tuning, nan
                    n += 1


def digest(call: str, caps_name: str, tuning_name: str, nan: NanMode) -> str:
    """The digest of what a call plans and compiles to (module docstring)."""
    caps = CAPS[caps_name]
    tuning = TUNINGS[tuning_name] or (SOFTWARE_TUNING if caps.software else Tuning())
    desc, mode, sched = planned(call, caps, nan, tuning)
    parts = [explain_schedule(desc, sched, caps, mode, caps_name)]
    for piece in sched.pieces:
        for p in passes(piece.plan):
            pairs, race = p.writes is Writes.PAIRS, p.writes is Writes.RACE
            parts.append(f"{p.grid} {p.merging} {pairs} {race} {p.params.tobytes().hex()}")
    parts.append(family_of(lower(desc), caps, tuning.default if isinstance(tuning, Tunings) else tuning))
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:20]


def test_plans_and_wgsl_unchanged():
    found = {}
    for case_id, call, caps, tuning, nan in _cases():
        try:
            found[case_id] = digest(call, caps, tuning, nan)
        except Exception as e:  # a refusal is part of the record: it must stay a refusal
            found[case_id] = f"{type(e).__name__}: {e}"
    if os.environ.get("DMLGPU_GOLDEN_WRITE"):
        GOLDEN.write_text(json.dumps(found, indent=0, sort_keys=True) + "\n")
    want = json.loads(GOLDEN.read_text())
    changed = [k for k in want if found.get(k) != want[k]] + [k for k in found if k not in want]
    assert not changed, f"{len(changed)} of {len(want)} calls plan or compile otherwise, e.g. {changed[:5]}"


def test_the_set_reaches_every_kernel_and_option():
    """The fixed set is worth holding to: it reaches every first-pass kernel, loader, merge,
    and the options that change a text."""
    seen: set = set()
    for _id, call, caps_name, tuning_name, nan in _cases():
        caps = CAPS[caps_name]
        tuning = TUNINGS[tuning_name] or (SOFTWARE_TUNING if caps.software else Tuning())
        try:
            _desc, _mode, sched = planned(call, caps, nan, tuning)
        except Exception:
            continue
        for piece in sched.pieces:
            p = piece.plan
            seen |= {p.kernel, p.loader, p.merge_kernel}
            seen |= {name for name, on in (("race", p.race), ("partials", p.partials_only), ("skip", p.skip_test),
                                           ("batch", p.batch), ("stage", p.row_stage), ("wide", p.wide_loads),
                                           ("no_keys", p.no_keys), ("remap", p.remaps_index),
                                           ("interleave", p.interleave)) if on}
    want = {"reduce_segments", "reduce_rows", "reduce_columns", "reduce_thread", "load_packed", "load_quads",
            "load_pairs", "load_pair_quads", "merge_partials", "merge_partials_workgroup", "race", "partials",
            "skip", "batch", "stage", "wide", "no_keys", "remap", "interleave", ""}
    assert want <= seen, want - seen


if __name__ == "__main__":
    pytest.main([__file__, "-q"])
