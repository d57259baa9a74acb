"""What bounds issue 47's short cases on the H200: key work, the access pattern, or a setting?

Question: cols, wide_cols, tiny_rows3, axes02, rows_64, rows_256, rows_int8, rows_f16, all_1gib
and llm_batch stay below the read ceiling on an H200 (issue 47). For each: does it get there
with its key work removed, does its access pattern alone get there, and does any planner
setting (a ``Tuning`` field) get it there?

Method: one process, one ``Device`` with the built-in tuning (no calibration). Per case, one
input on the GPU; every variant is compiled on it with ``Device.compile_with``: the default
tuning, ``bound_no_keys=1`` (keys are the raw bits: answers wrong, a bound on key work) and
the settings of ``SURVEY``. Where the default plan is the columns, segments or rows kernel,
"loads" variants (``LOADS_WGSL`` below) make only that kernel's loads: its grid, its
workgroup size, its addresses, its loads in flight (``x4``/``x8``: more in flight, the same
addresses), folded with XOR into one word a thread. Steps back towards the kernel: columns
"+fold" (the no-keys fold of a best key and index a lane) and "+race" (its four pairs raced
into their outputs as the kernel does); short rows "+stores" (a word a row where the kernel
stores) and "+staged stores" (through workgroup memory first, as the kernel's ROW_STAGE).
``EXTRA`` adds axes02's work laid out as plain rows. ``PATCHES``: for llm_batch and all_1gib, the
default kernel with parts taken out of its WGSL (the subgroup's pooled best, the segment's merge,
the race into the output), each part's cost by its absence. ``--calibrated``: also each case as a
calibrating ``Device`` plans it after meeting the suite's cases in order on an empty tuning
cache (issue 47's finding 1). Each variant, the read ceiling (``bench/ceilings.py``), torch
and, for all_1gib, CuPy with CUB are timed in five interleaved rounds after a warm-up with
the bench's timers (timestamp queries, ``bench/gpu_timers.py``; CUDA events for the peers);
medians. % = the bench's measure: (input + output bytes) / time, over the ceiling's bytes /
time; a loads variant is charged the case's bytes, so its % is the one the case would have at
that time. Answers are checked against torch's (else ``dmlgpu.oracle``'s); "!": wrong,
expected of ``bound_no_keys`` and the loads variants.

Run (one GPU, under a minute on an H200; ``--scale 64`` shrinks the cases for lavapipe):

    python benchmarks/studies/h200_bounds.py [--cases cols,axes02] [--calibrated] [--scale N] [--json PATH]
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import math
import os
import tempfile
import time

import numpy as np

import dmlgpu
from dmlgpu import oracle
from dmlgpu.bench import Case, Ceiling, CupyPeer, TorchPeer, host_data, load_suite, warm_up
from dmlgpu.bench.gpu_timers import gpu_times, operator_gpu_times
from dmlgpu.plan import Tuning
from dmlgpu.tuning import tuning_changes, tuning_from_spec
from dmlgpu import wgsl
from dmlgpu.wgsl import passes, unroll

#: Per case: the settings surveyed besides the default and bound_no_keys=1.
SURVEY = {
    "cols": ["columns_unroll=1", "columns_unroll=4", "target_threads=65536", "target_threads=262144",
             "race_max_chunks=0", "columns_interleave=0"],
    "wide_cols": ["columns_unroll=1", "columns_unroll=4", "target_threads=65536", "target_threads=262144",
                  "race_max_chunks=0", "columns_interleave=0"],
    "tiny_rows3": ["rows_whole_quads=1", "rows_block_loads=1", "rows_block_loads=4",
                   "several_rows_workgroup_size=64", "several_rows_workgroup_size=256", "rows_groups=4096",
                   "rows_groups=0", "rows_block_loads=6", "row_stage=0"],
    "axes02": ["batch=1", "batch=4", "min_chunk_per_lane=64", "min_chunk_per_lane=512", "target_workgroups=8192",
               "target_workgroups=16384", "skip_min_quads=0", "min_chunk_per_lane=256", "min_chunk_per_lane=512,batch=4",
               "min_chunk_per_lane=256,batch=4"],
    "axes02_rows": ["skip_min_quads=0"],
    "rows_64": ["workgroup_size=128", "loads_per_thread=4", "loads_per_thread=16", "loads_per_thread=2",
                "loads_per_thread=1"],
    "rows_256": ["workgroup_size=128", "loads_per_thread=4", "loads_per_thread=16", "loads_per_thread=2"],
    "rows": ["workgroup_size=128"],
    "rows_int8": ["batch=1", "batch=4", "skip_min_quads=0", "skip_min_quads=16", "loads_per_thread=4",
                  "loads_per_thread=16", "workgroup_size=128", "workgroup_size=64"],
    "rows_f16": ["batch=1", "batch=4", "skip_min_quads=0", "skip_min_quads=16", "loads_per_thread=4",
                 "loads_per_thread=16", "workgroup_size=128"],
    "all_1gib": ["target_workgroups=2048", "target_workgroups=8192", "target_workgroups=16384",
                 "single_output_workgroup_size=256", "race_max_chunks=0", "batch=4"],
    "llm_batch": ["min_chunk_per_lane=32", "min_chunk_per_lane=64", "min_chunk_per_lane=256", "workgroup_size=128",
                  "race_max_chunks=0", "merge_workgroup_below=0", "skip_min_quads=0", "batch=1", "batch=4",
                  "workgroup_size=128,batch=4"],
}
#: Per case: parts of the default plan's kernel taken out, each a list of (old, new) edits of its
#: WGSL, timed as variants beside it: what each part costs by its absence (answers wrong where
#: the part mattered). A variant whose text is not in the plan on this adapter is left out, said.
_NO_RACE = ("store_result(item, work.base.y, winner);",
            "if (winner.key == 0xdeadbeefu) { store_winner(work.base.y, winner); }  // kept alive, no atomics")
PATCHES = {
    case: {
        "no pooling": [("return select(key, subgroupMax(key), pooled);", "return key;")],
        "no segment merge": [("winner = segment_best(inv, best, SEG);", "winner = best;")],
        "no race": [_NO_RACE],
        "no merge, no race": [("winner = segment_best(inv, best, SEG);", "winner = best;"), _NO_RACE],
        "no pooling, merge, race": [("return select(key, subgroupMax(key), pooled);", "return key;"),
                                    ("winner = segment_best(inv, best, SEG);", "winner = best;"), _NO_RACE],
    } for case in ("llm_batch", "all_1gib")
}
SURVEY["llm_batch"] += ["segments_interleave=1", "segments_interleave=1,batch=4"]
SURVEY["all_1gib"] += ["segments_interleave=1", "segments_interleave=1,batch=4"]
#: Cases beside the suite's, after their base: (base, shape, axes). axes02_rows is axes02's bytes,
#: outputs and chunks (2048 workgroups, 8 chunks of 32768 elements an output) with one reduced
#: dimension, contiguous: what axes02 costs for its second reduced dimension.
EXTRA = {"axes02_rows": ("axes02", (256, 262144), (1,))}
#: Settings whose plans' loads are timed too (the default plan's always are).
LOADS_OF = {"rows_64": ["loads_per_thread=4", "loads_per_thread=2", "loads_per_thread=1"],
            "rows_256": ["loads_per_thread=2"]}
#: Loads in flight a thread for the loads variants besides the kernel's own (1: the kernel's only).
MORE_IN_FLIGHT = {"cols": [4, 8], "wide_cols": [4], "axes02": [4, 8], "all_1gib": [4], "rows_int8": [4],
                  "rows_f16": [4]}

# The loads of the three kernels, nothing else. Bindings as the runner lays them out: 0 the
# parameters, 1 the input as 16-byte quads, 2 one word a thread (or a word a row: STORES).
HEAD = """
struct P { a: vec4<u32>, b: vec4<u32> }
@group(0) @binding(0) var<uniform> p: P;
@group(0) @binding(1) var<storage, read> src: array<vec4<u32>>;
@group(0) @binding(2) var<storage, read_write> dst: array<u32>;

fn fold(v: vec4<u32>) -> u32 { return v.x ^ v.y ^ v.z ^ v.w; }
fn group_index(w: vec3<u32>, n: vec3<u32>) -> u32 { return (w.z * n.y + w.y) * n.x + w.x; }
"""
LOADS_WGSL = {
    # reduce_columns, chunks interleaved: thread `item` owns quad o of a row (PER_QUAD outputs)
    # and walks rows chunk, chunk + split, ..., UNROLL rows loaded before any is folded, a step
    # past the end reloading the last row. p.a: quads a row, split, rows, the row's stride in quads.
    # FOLD: each row's quad folded as the kernel folds it with bound_no_keys (the raw bits as
    # keys, a best key and index a lane), in place of XOR; RACE: the four pairs then raced into
    # their outputs as the kernel's store_race.wgsl races them (binding 3), the last chunk
    # storing the index, in place of a word a thread.
    "reduce_columns": """
struct Race { best: atomic<u64>, count: atomic<u32> }
@group(0) @binding(3) var<storage, read_write> race: array<Race>;

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) w: vec3<u32>, @builtin(num_workgroups) n: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let item = group_index(w, n) * WG + lid;
    let groups = p.a.x; let split = p.a.y; let rows = p.a.z; let stride = p.a.w;
    if (item >= groups * split) { return; }
    let o = item % groups;
    let chunk = item / groups;
    var acc = src[chunk * stride + o];
    var index = vec4<u32>(chunk);
    for (var r0 = chunk + split; r0 < rows; r0 += split * UNROLL) {
        var words: array<vec4<u32>, UNROLL>;
        for (var u = 0u; u < UNROLL; u++) { // unroll
            words[u] = src[min(r0 + u * split, rows - 1u) * stride + o];
        }
        for (var u = 0u; u < UNROLL; u++) { // unroll
            if (FOLD) {
                let wins = words[u] > acc;
                acc = select(acc, words[u], wins);
                index = select(index, vec4<u32>(min(r0 + u * split, rows - 1u)), wins);
            } else {
                acc ^= words[u];
            }
        }
    }
    if (RACE) {
        for (var i = 0u; i < 4u; i++) { // unroll
            let out = o * 4u + i;
            let before = atomicMax(&race[out].best, (u64(acc[i]) << 32u) | u64(~index[i]));
            let arrived = atomicAdd(&race[out].count, 1u + (u32(before) & p.b.x));
            if (arrived + 1u == split) {
                let won = atomicMin(&race[out].best, u64(0u));
                atomicStore(&race[out].count, 0u);
                dst[out] = ~u32(won);
            }
        }
    } else {
        dst[item] = fold(acc ^ index);
    }
}
""",
    # reduce_segments with SEG = WG: workgroup `item` takes chunk item / outputs of output
    # item % outputs; its threads take quads lid, lid + WG, ... of the chunk, UNROLL at a time
    # (the kernel's BATCH), the offset of two reduced dimensions carried without a division.
    # p.a: outputs, quads a chunk, an output's stride in quads, work items;
    # p.b: quads of the inner reduced dimension, the outer one's stride in quads.
    "reduce_segments": """
@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) w: vec3<u32>, @builtin(num_workgroups) n: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let wanted = group_index(w, n);
    let item = min(wanted, p.a.w - 1u);
    let quads = p.a.y; let inner = p.b.x;
    let base = (item % p.a.x) * p.a.z;
    let first = (item / p.a.x) * quads + lid;
    var outer = first / inner;
    var at = first % inner;
    var acc = vec4<u32>(0u);
    for (var q = lid; q < quads; q += WG * UNROLL) {
        var words: array<vec4<u32>, UNROLL>;
        for (var k = 0u; k < UNROLL; k++) { // unroll
            if (q + k * WG < quads) {
                words[k] = src[base + outer * p.b.y + at];
            }
            at += WG;  // WG <= inner: one carry at most
            if (at >= inner) { at -= inner; outer += 1u; }
        }
        for (var k = 0u; k < UNROLL; k++) { // unroll
            if (q + k * WG < quads) {
                acc ^= words[k];
            }
        }
    }
    dst[wanted * WG + lid] = fold(acc);
}
""",
    # reduce_rows: workgroups stride over tiles of WG / SEG blocks, a block being ROWS rows in
    # BLOCK_QUADS quads; SEG threads a block, each loading its quads lane + i * SEG all at once.
    # STORES (SEG = 1): a word a row where the kernel stores its results (consecutive threads,
    # consecutive rows) in place of the word a thread; STAGE: through workgroup memory first,
    # eight bytes a row (the kernel's Pair), as the kernel's ROW_STAGE does. p.a: whole tiles.
    "reduce_rows": """
var<workgroup> staged: array<vec2<u32>, select(1u, WG * ROWS, STAGE)>;

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) w: vec3<u32>, @builtin(num_workgroups) n: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let stride = n.x * n.y * n.z;
    let lane = lid % SEG;
    var acc = vec4<u32>(0u);
    for (var tile = group_index(w, n); tile < p.a.x; tile += stride) {
        let block = tile * (WG / SEG) + lid / SEG;
        var words: array<vec4<u32>, LANE_QUADS>;
        for (var i = 0u; i < LANE_QUADS; i++) { // unroll
            words[i] = src[block * BLOCK_QUADS + i * SEG + lane];
        }
        var x = vec4<u32>(0u);
        for (var i = 0u; i < LANE_QUADS; i++) { // unroll
            x ^= words[i];
        }
        if (STAGE) {
            for (var u = 0u; u < ROWS; u++) { // unroll
                staged[lid * ROWS + u] = vec2<u32>(x[u % 4u], u);
            }
            workgroupBarrier();
            for (var u = 0u; u < ROWS; u++) { // unroll
                let pair = staged[u * WG + lid];
                dst[(tile * ROWS + u) * WG + lid] = pair.x ^ pair.y;
            }
            workgroupBarrier();
        } else if (STORES) {
            for (var u = 0u; u < ROWS; u++) { // unroll
                dst[(tile * ROWS + u) * WG + lid] = x[u % 4u];
            }
        } else {
            acc ^= x;
        }
    }
    if (!STORES) {
        dst[group_index(w, n) * WG + lid] = fold(acc);
    }
}
""",
}


def loads_kernels(plan, in_flight: list[int]):
    """(name, WGSL, parameter words, grid, dst words, race bytes) of the loads variants of a
    plan, or [] where its kernel has none here (a form this study does not copy)."""
    per_quad = 16 // plan.input_type.size
    wg, grid = plan.workgroup_size, plan.grid
    threads = math.prod(grid) * wg
    out = []  # (name, constants, parameter words, dst words, race bytes)
    if plan.kernel == "reduce_columns" and plan.interleave and len(plan.kept) == 1 \
            and len(plan.reduced) == 1 and plan.kept[0].in_stride == 1:
        words = [plan.output_count // per_quad, plan.split, plan.reduced[0].size, plan.reduced[0].in_stride // per_quad]
        u = plan.column_unroll
        for name, more, fold, race in [("loads", u, False, False), *((f"loads x{k}", k, False, False) for k in in_flight),
                                       ("loads+fold", u, True, False), ("loads+fold+race", u, True, True)]:
            out.append((name, {"UNROLL": more, "FOLD": fold, "RACE": race}, words, threads,
                        16 * plan.output_count if race else 0))
    elif plan.kernel == "reduce_segments" and plan.segment == wg and len(plan.kept) <= 1 and len(plan.reduced) <= 2 \
            and plan.chunk % per_quad == 0 and plan.reduced[-1].in_stride == 1:
        inner = plan.reduced[-1].size // per_quad
        outer = plan.reduced[0].in_stride // per_quad if len(plan.reduced) == 2 else 0
        kept = plan.kept[0].in_stride // per_quad if plan.kept else 0
        if wg <= inner and plan.reduced[-1].size % per_quad == 0:
            words = [plan.output_count, plan.chunk // per_quad, kept, plan.output_count * plan.split, inner, outer]
            for u in [max(plan.batch, 1)] + in_flight:
                out.append((f"loads x{u}" if u != max(plan.batch, 1) else "loads", {"UNROLL": u}, words, threads, 0))
    elif plan.kernel == "reduce_rows" and plan.block_rows * plan.row_width % (per_quad * plan.segment) == 0:
        seg, rows = plan.segment, plan.block_rows
        block_quads = rows * plan.row_width // per_quad
        tiles = plan.output_count // rows // (wg // seg)  # whole tiles (the kernel's hot loop)
        consts = {"SEG": seg, "BLOCK_QUADS": block_quads, "LANE_QUADS": block_quads // seg, "ROWS": rows}
        out.append(("loads", {**consts, "STORES": False, "STAGE": False}, [tiles], threads, 0))
        if seg == 1:
            for name, stage in (("loads+stores", False), ("loads+staged stores", True)):
                out.append((name, {**consts, "STORES": True, "STAGE": stage}, [tiles],
                            max(threads, tiles * wg * rows), 0))
    text = LOADS_WGSL.get(plan.kernel, "")
    made = []
    for name, consts, words, dst_words, race_bytes in out:
        head = "".join(f"const {k}: {'bool' if isinstance(v, bool) else 'u32'} = "
                       f"{str(v).lower() if isinstance(v, bool) else f'{v}u'};\n" for k, v in {"WG": wg, **consts}.items())
        made.append((name, unroll(head + HEAD + text), np.array((words + [0] * 8)[:8], np.uint32), grid, dst_words,
                     race_bytes))
    return made


@contextlib.contextmanager
def edited_wgsl(edits: list[tuple[str, str]]):
    """Plans compiled meanwhile run their WGSL with ``edits`` made (each must match a pass's)."""
    original = wgsl.shader_sources

    def edited(plan):
        texts = original(plan)
        for old, new in edits:
            if not any(old in t for t in texts):
                raise LookupError(f"{old!r} is not in the plan's WGSL")
            texts = [t.replace(old, new) for t in texts]
        return texts

    wgsl.shader_sources = edited
    try:
        yield
    finally:
        wgsl.shader_sources = original


def suite_cases(scale: int) -> list[Case]:
    """The full suite's cases and EXTRA's, each after its base; the first dimension / ``scale``."""
    out = []
    for case in load_suite("full").cases:
        out.append(case)
        out += [dataclasses.replace(case, name=name, shape=shape, axes=axes, note="")
                for name, (base, shape, axes) in EXTRA.items() if base == case.name]
    return [dataclasses.replace(c, shape=(max(1, c.shape[0] // scale), *c.shape[1:])) if scale > 1 and not c.latency
            else c for c in out]


def signature(op) -> list:
    """What a compiled operator dispatches: each pass's WGSL and grid."""
    return [(ps.source, ps.grid) for piece in op.schedule.pieces for ps in passes(piece.plan)]


def operator_variant(op, src, want: np.ndarray, default_sig) -> tuple:
    """(timer, info, output) of a compiled operator on ``src``, its answer checked against ``want``."""
    out = op.device.empty(op.output_desc)
    op.run(src, out)
    got = out.numpy().ravel()
    changes = tuning_changes(op.tuning, Tuning())
    info = {"plan": f"{op.plan.kernel}/{op.plan.segment} wg {op.plan.workgroup_size} grid {op.plan.grid} "
                    f"split {op.plan.split}" + (" race" if op.plan.race else ""),
            "tuning": changes, "correct": bool(np.array_equal(got, want.astype(got.dtype))),
            "same_plan_as_default": default_sig is not None and signature(op) == default_sig}
    return (lambda: operator_gpu_times(op, src, out, 3)), info, out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", default=",".join([*SURVEY, *EXTRA]), help="comma-separated cases (SURVEY, EXTRA)")
    ap.add_argument("--scale", type=int, default=1, help="divide each case's first dimension by this (lavapipe)")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--calibrated", action="store_true",
                    help="also time each case as a calibrating Device plans it (empty tuning cache, the suite's order)")
    ap.add_argument("--json", help="write every sample here")
    args = ap.parse_args()
    started = time.perf_counter()
    wanted = args.cases.split(",")
    cases = suite_cases(args.scale)

    device = dmlgpu.Device(tuning=Tuning())  # a tuning given: no calibration; variants use compile_with
    runner = device.runner
    print(f"{device.name}; dmlgpu from {dmlgpu.__file__}; {time.strftime('%Y-%m-%d %H:%M:%S UTC', time.gmtime())}")
    calibrating = None
    if args.calibrated:  # as `dmlgpu bench` meets the suite on a fresh machine: each family chosen at its first case
        os.environ["DMLGPU_CACHE_DIR"] = tempfile.mkdtemp(prefix="h200-bounds-tunings-")
        os.environ.pop("DMLGPU_TUNE", None)
        calibrating, t = dmlgpu.Device(), time.perf_counter()
        for case in cases:
            if case.kind == "gpu" and case.name not in EXTRA:
                calibrating.compile(case.descriptor())
        print(f"calibrated in {time.perf_counter() - t:.2f} s (compiling the suite's cases in order)")
    peers = {}
    for cls in (TorchPeer, CupyPeer):
        try:
            peers[cls.name] = cls()
        except Exception as err:  # noqa: BLE001  (a missing peer is recorded, not fatal)
            print(f"no {cls.name}: {type(err).__name__}: {err}")
    warm_up(runner, 256 << 20, 1.5)
    rng = np.random.default_rng(0)
    pool = None  # one FLOAT32 draw (host_data's), shared by the float cases: their elements are i.i.d. either way
    report = {"device": device.name, "dmlgpu": dmlgpu.__file__, "rounds": args.rounds, "cases": []}
    for case in cases:
        if case.name not in wanted:
            continue
        n = math.prod(case.shape)
        if case.dtype.name in ("FLOAT32", "FLOAT16"):
            if pool is None or pool.size < n:
                pool = rng.standard_t(3, size=max(n, 2**28 // args.scale)).astype(np.float32)  # as host_data draws
            x = pool[:n].reshape(case.shape).astype(case.dtype.numpy, copy=False)
        else:
            x = host_data(case, rng)
        desc = case.descriptor()
        src = device.upload(x)
        calls = {}  # the peers' calls on their own copies of x
        for peer in [peers.get("torch")] + ([peers.get("cupy")] if case.name == "all_1gib" else []):
            if peer is not None:
                calls[peer.name] = (peer, peer.op(case, peer.upload(x)))
        # The answer: torch's where it runs (its ties go to the first index too; the oracle
        # takes tens of seconds a GiB on the host), else the oracle's.
        want = (calls["torch"][0].to_numpy(calls["torch"][1]()) if "torch" in calls else oracle.evaluate(desc, x)).ravel()
        nbytes = x.nbytes + want.size * 4  # the bench's bytes: input read once, UINT32 output written once

        variants, info, tensors, default_sig = {}, {}, [src], None
        for spec in ["", "bound_no_keys=1"] + SURVEY.get(case.name, []):
            op = device.compile_with(desc, tuning_from_spec(spec))
            variants[spec or "default"], info[spec or "default"], out = operator_variant(op, src, want, default_sig)
            tensors.append(out)
            if spec == "":
                default_sig, plans = signature(op), {"": op.plan}
            elif spec in LOADS_OF.get(case.name, []):
                plans[f" ({spec})"] = op.plan
        for name, edits in PATCHES.get(case.name, {}).items():
            try:
                with edited_wgsl(edits):
                    op = device.compile_with(desc, Tuning())
            except LookupError as err:
                print(f"{case.name}: {name} left out: {err}")
                continue
            variants[name], info[name], out = operator_variant(op, src, want, default_sig)
            info[name].update(plan=info[name]["plan"] + " (edited)", same_plan_as_default=False)
            tensors.append(out)
        if calibrating is not None:
            cal_src = calibrating.upload(x)
            op = calibrating.compile(desc)
            variants["calibrated"], info["calibrated"], out = operator_variant(op, cal_src, want, default_sig)
            tensors += [cal_src, out]
        scratch = []
        kernels = [(name + label, *rest) for label, plan in plans.items()
                   for name, *rest in loads_kernels(plan, [] if label else MORE_IN_FLIGHT.get(case.name, []))]
        for name, text, words, grid, dst_words, race_bytes in kernels:
            params, dst = runner.programs.uniform(words), runner.memory.storage(4 * dst_words)
            race = runner.memory.storage(race_bytes) if race_bytes else None  # zeroed when made
            scratch += [dst] + ([race] if race else [])
            steps = [(runner.programs.pipeline(text), runner.programs.bind(params, src._buffer, dst, race), grid)]
            info[name] = {"plan": f"loads only, grid {grid}", "correct": False,
                          "same_plan_as_default": False}
            variants[name] = (lambda steps=steps: gpu_times(runner, steps, repeats=3))
        ceiling = Ceiling(runner, "read", src._buffer, x.nbytes)
        variants["ceiling"] = (lambda ceiling=ceiling: ceiling.gpu_times(3))
        for name, (peer, fn) in calls.items():
            variants[name] = (lambda peer=peer, fn=fn: peer.gpu_times(fn, 3))

        for run in variants.values():  # untimed: compiles, allocates
            run()
        warm_up(runner, 256 << 20, 0.3)
        samples = {name: [] for name in variants}
        for r in range(args.rounds):  # interleaved, the order rotating each round
            names = list(variants)
            for name in names[r % len(names):] + names[:r % len(names)]:
                samples[name].extend(float(s) for s in variants[name]())
        report["cases"].append(print_case(case, nbytes, ceiling.bytes, samples, info))
        ceiling.release()
        for buffer in scratch:
            runner.memory.free(buffer)
        for t in tensors:
            t.release()
        del calls, variants
        for peer in peers.values():
            peer.release()
    summary(report["cases"])
    print(f"\n{time.perf_counter() - started:.0f} s in all")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=1)


def print_case(case: Case, nbytes: int, ceiling_bytes: int, samples: dict, info: dict) -> dict:
    """The case's table (medians; % of the ceiling in the bench's measure), and its record."""
    med = {name: float(np.median(s)) for name, s in samples.items()}
    ceiling_gbps = ceiling_bytes / med["ceiling"] / 1e9
    print(f"\n{case.name} {case.dtype.name} {tuple(case.shape)} axes {tuple(case.axes)}: {nbytes} bytes, "
          f"ceiling {ceiling_gbps:.0f} GB/s ({med['ceiling'] * 1e6:.1f} us)")
    print(f"  {'variant':34} {'us':>8} {'GB/s':>6} {'%ceil':>6} {'x def':>6}  plan")
    rows = []
    for name, s in med.items():
        gbps = (ceiling_bytes if name == "ceiling" else nbytes) / s / 1e9
        i = info.get(name, {"plan": "", "correct": True, "same_plan_as_default": False})
        mark = ("" if i["correct"] else " !") + (" (=default plan)" if i["same_plan_as_default"] else "")
        chosen = f" chose {i['tuning'] or 'the default'}" if name == "calibrated" else ""
        print(f"  {name:34} {s * 1e6:8.1f} {gbps:6.0f} {100 * gbps / ceiling_gbps:6.1f} {med['default'] / s:6.3f}"
              f"  {i['plan']}{mark}{chosen}")
        rows.append({"variant": name, "gpu_us": s * 1e6, "gbps": gbps, "pct_of_ceiling": 100 * gbps / ceiling_gbps,
                     "samples_s": samples[name], **i})
    return {"case": case.name, "dtype": case.dtype.name, "shape": list(case.shape), "axes": list(case.axes),
            "bytes": nbytes, "ceiling_bytes": ceiling_bytes, "ceiling_gbps": ceiling_gbps, "variants": rows}


def summary(cases: list[dict]) -> None:
    """One line a case: % of the ceiling (us for llm_batch) of the default, no keys, the
    kernel's loads alone, the calibrated plan, and the best setting surveyed that answers right."""
    print(f"\n{'case':11} {'default':>8} {'no keys':>8} {'loads':>8} {'calib.':>8} {'best setting':>40} {'torch':>6} "
          f"{'cupy':>6}")
    for c in cases:
        v = {row["variant"]: row for row in c["variants"]}
        key = "gpu_us" if c["case"] == "llm_batch" else "pct_of_ceiling"
        survey = [r for r in c["variants"] if r["correct"] and "=" in r["variant"]]  # settings, not variants of ours
        best = (min if key == "gpu_us" else max)(survey, key=lambda r: r[key]) if survey else None
        cells = [f"{v[name][key]:.1f}" if name in v else "-"
                 for name in ("default", "bound_no_keys=1", "loads", "calibrated", "torch", "cupy")]
        best_cell = f"{best['variant']} {best[key]:.1f}" if best else "-"
        print(f"{c['case']:11} " + " ".join(f"{x:>8}" for x in cells[:4]) + f" {best_cell:>40} "
              + " ".join(f"{x:>6}" for x in cells[4:]))


if __name__ == "__main__":
    main()
