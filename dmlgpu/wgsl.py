"""WGSL text for a plan: constants from the plan, then the template files in shaders/.

A shader is a list of ``const`` declarations followed by readable .wgsl files:
``common`` (parameters, addressing, the tie rule), a key module (how an element's bits
become an order-preserving key), a loader (how elements are read), a store module
(what is written) and the kernel. Templates receive finished values only; every decision was made by the planner.
Also packs the uniform parameters whose layout ``common.wgsl`` declares, and says what each
pass of a plan binds (``passes``): what the runner and ``exporter.py`` dispatch.
"""

from __future__ import annotations

import dataclasses
import functools
import re
from importlib import resources

import numpy as np

from . import kernels
from .kernels.base import SLOT
from .plan import MAX_DIMS, Plan, Writes
from .types import DataType, NanMode

_FLOAT_BITS = {  # sign bit, magnitude mask, +inf
    DataType.FLOAT32: (0x80000000, 0x7FFFFFFF, 0x7F800000),
    DataType.FLOAT16: (0x8000, 0x7FFF, 0x7C00),
}
_SIGNED = (DataType.INT8, DataType.INT16, DataType.INT32, DataType.INT64)


@functools.cache
def template(name: str) -> str:
    """The text of ``shaders/<name>.wgsl``."""
    return resources.files("dmlgpu.shaders").joinpath(f"{name}.wgsl").read_text()


_COMMENT = re.compile(r"//[^\n]*")
#: A top-level declaration: a function, struct, alias, constant or module variable (bindings included).
_DECLARATION = re.compile(r"^(?:@\w+(?:\([^)]*\))?\s+)*(?:fn|struct|alias|const|override|var(?:<[^>]*>)?)\s+(\w+)",
                          re.MULTILINE)


@functools.cache
def _code(name: str) -> str:
    return _COMMENT.sub("", template(name))


@functools.cache
def provides(name: str) -> frozenset[str]:
    """The names ``shaders/<name>.wgsl`` declares at its top level: what it provides a pass."""
    return frozenset(_DECLARATION.findall(_code(name)))


@functools.cache
def _library() -> dict[str, frozenset[str]]:
    """Every template of the package, with the names it provides."""
    names = [f.name[:-len(".wgsl")] for f in resources.files("dmlgpu.shaders").iterdir() if f.name.endswith(".wgsl")]
    return {n: provides(n) for n in sorted(names)}


@functools.cache
def needs(name: str) -> frozenset[str]:
    """The names ``shaders/<name>.wgsl`` uses that another template provides: what the pass
    it is part of must hold a part for."""
    elsewhere = frozenset().union(*(p for n, p in _library().items() if n != name))
    return frozenset(re.findall(r"\b[A-Za-z_]\w*\b", _code(name))) & elsewhere - provides(name)


def check_parts(parts: list[str], header: frozenset[str] = frozenset()) -> None:
    """Refuses a pass whose parts provide a name twice, or need a name that none provides
    (``header``: the constants declared before them), naming the part and the name: what the
    GPU's compiler would otherwise refuse, with a message about the joined text."""
    providers = dict.fromkeys(header, "the plan's constants")
    for part in parts:
        for name in sorted(provides(part)):
            if name in providers:
                raise ValueError(f"{name} is provided twice in a pass: by {providers[name]} and by {part}.wgsl")
            providers[name] = f"{part}.wgsl"
    for part in parts:
        missing = sorted(needs(part) - providers.keys())
        if missing:
            where = {n: [t for t, p in _library().items() if n in p] for n in missing}
            raise ValueError(f"{part}.wgsl needs {', '.join(missing)}, which no part of the pass provides "
                             f"(parts: {', '.join(parts)}; provided by: {where})")


def _literal(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return f"{value:#x}u" if value > 9 else f"{value}u"


def _key_parts(plan: Plan) -> tuple[list[str], dict]:
    """The key modules for the input type, and the constants they and the loader read."""
    t = plan.input_type
    consts: dict[str, int | bool] = {"MINIMIZE": plan.op == "argmin"}
    nan_propagate = plan.nan_mode is NanMode.PROPAGATE
    if t.size == 8:
        if t.is_float:
            consts["NAN_PROPAGATE"] = nan_propagate
        else:
            consts["SIGN_FLIP"] = 0x80000000 if t in _SIGNED else 0
        return ["key_u64" if plan.int64 else "key_u64_words", "key_float64" if t.is_float else "key_int64"], consts
    consts["BITS"] = t.size * 8
    consts["NO_KEYS"] = plan.no_keys
    if t.is_float:
        sign, magnitude, inf = _FLOAT_BITS[t]
        consts.update(F_SIGN=sign, F_ABS=magnitude, F_INF=inf, NAN_PROPAGATE=nan_propagate)
        return ["key_u32", "key_float"], consts
    consts["SIGN_FLIP"] = 1 << (t.size * 8 - 1) if t in _SIGNED else 0
    return ["key_u32", "key_int"], consts


def _store_part(plan: Plan) -> str:
    """The module that writes the operator's result."""
    if plan.op == "hardmax":
        return {DataType.FLOAT16: "store_one_f16", DataType.FLOAT64: "store_one_f64"}.get(plan.output_type, "store_one_f32")
    if plan.keyed:
        return "store_index_key"
    return "store_index64" if plan.output_type.size == 8 else "store_index32"


def shader_sources(plan: Plan) -> list[str]:
    """The WGSL of each pass of a plan. Plans that differ only in sizes give equal text,
    except reduce_rows's, whose rows' width is a constant."""
    keys, consts = _key_parts(plan)
    consts = {
        "WG": plan.workgroup_size,
        "KEPT_RANK": len(plan.kept),
        "RED_RANK": len(plan.reduced),
        "INCREASING": plan.increasing,
        "SEG": plan.segment,
        "ROW": plan.row_width,
        "ROWS": plan.block_rows,
        "ROW_STAGE": plan.row_stage,
        "PREFETCH": plan.prefetch,
        "REMAP": plan.remaps_index,
        "ONE_CHUNK": plan.split == 1,
        "BATCH": plan.batch,
        "SKIP_TEST": plan.skip_test,
        "INTERLEAVE": plan.interleave,
        "COL_UNROLL": plan.column_unroll,
        **consts,
    }
    header = "\n".join(f"const {name} = {_literal(value)};" for name, value in consts.items())
    passes = []
    if plan.kernel:
        stores = {Writes.RACE: [_store_part(plan), "store_race"], Writes.PAIRS: ["store_partial"],
                  Writes.RESULT: [_store_part(plan), "store_direct"]}[plan.writes]
        quads = plan.loader in ("load_quads", "load_pair_quads")
        source = ["src_quads_wide" if plan.wide_loads else "src_quads"] if quads else []
        kernel = kernels.BY_NAME[plan.kernel]
        passes.append(["common", *keys, *source, plan.loader, "fold", *stores, *kernel.parts(plan)])
    if plan.merge_kernel:
        passes.append(["common", *keys, "load_partials", _store_part(plan), *kernels.merge.parts(plan)])
    for parts in passes:
        check_parts(parts, frozenset(consts))
    texts = [header + "\n\n" + "\n".join(template(p) for p in parts) for parts in passes]
    return [unroll(text) for text in texts] if plan.unroll else texts


_READ_INPUT = f"@group(0) @binding({SLOT['input'].binding}) var<storage, read> "
#: The modules that bind the input as quads, and again as words (binding 4).
QUAD_SOURCES = ("src_quads", "src_quads_wide")


def writable_input(source: str) -> str:
    """A pass's WGSL for the shared layout (``kernels.base.layout``: its input in a buffer the
    pass writes), its input declared ``read_write`` and bound once: a pass that reads quads
    takes ``src_words.wgsl`` in place of ``src_quads*.wgsl``, whose second binding of the
    input (the slot ``input_words``) would overlap the first, which WebGPU refuses of writable
    bindings."""
    for name in QUAD_SOURCES:
        if template(name) in source:
            return source.replace(template(name), template("src_words"))
    if source.count(_READ_INPUT) != 1:
        raise ValueError("a pass's WGSL declares its input once, as " + repr(_READ_INPUT.strip()))
    return source.replace(_READ_INPUT, _READ_INPUT.replace(", read>", ", read_write>"))


_CONST = re.compile(r"^const (\w+)(?:: u32)? = ([^;]+);", re.MULTILINE)
_INT = re.compile(r"\b(0x[0-9a-fA-F]+|\d+)u\b")


def integer_constants(text: str) -> dict:
    """The values of the shader's ``const`` declarations that are integer arithmetic (+ - * / %
    and parentheses over literals and earlier such constants), in declaration order; others
    (booleans, ``select``, shifts) are left out."""
    values: dict = {}
    for name, expr in _CONST.findall(text):
        expr = _INT.sub(r"\1", expr).replace("/", "//")
        if not re.fullmatch(r"[\w\s()+\-*/%]+", expr):
            continue
        try:
            values[name] = int(eval(expr, {"__builtins__": {}}, dict(values)))  # noqa: S307 (checked above)
        except (NameError, SyntaxError, ZeroDivisionError):
            continue
    return values


_UNROLL = re.compile(r"for \(var (\w+) = 0u; \1 < (\w+); \1\+\+\) \{ // unroll\n")
#: Loops with more trips than this stay loops.
UNROLL_MAX = 16


@functools.lru_cache(maxsize=64)  # the pieces of a schedule, and the plans that differ only in sizes, share texts
def unroll(text: str) -> str:
    """Loops marked ``// unroll`` (``for (var k = 0u; k < N; k++) { // unroll``, N a constant
    the text declares), written out as N blocks each with its own ``const k``: indices into a
    thread's arrays are then constants, and the arrays can live in registers (a compiler that
    keeps a dynamically indexed array in memory makes every access a load). Their bodies hold
    no break or continue."""
    known = integer_constants(text)
    start = 0
    while (m := _UNROLL.search(text, start)) is not None:
        var, bound = m.groups()
        trips = known.get(bound, UNROLL_MAX + 1)
        if trips > UNROLL_MAX:
            start = m.end()
            continue
        opening = m.start() + m.group(0).rindex("{")
        depth, close = 0, opening
        for close in range(opening, len(text)):
            depth += {"{": 1, "}": -1}.get(text[close], 0)
            if depth == 0:
                break
        body = "\n" + text[m.end():close]  # without the marker
        if re.search(r"\b(break|continue)\b", body):
            raise ValueError(f"a loop over {var} marked // unroll breaks or continues")
        copies = "".join(f"{{ const {var} = {k}u;{body}}}" for k in range(trips))
        text = text[:m.start()] + copies + text[close + 1:]
        start = m.start()
    return text


def params_words(plan: Plan, grid: tuple[int, int, int], merge_pass: bool = False) -> np.ndarray:
    """The uniform ``Params`` of ``common.wgsl`` as 32-bit words, for a pass run on ``grid``.

    A merge pass reads every pair from slot 0 and its pairs' indices are final, so only
    the output's base offset and limit carry over from a piece.
    """
    gx, gy, _ = grid
    words = np.zeros(12 + 7 * MAX_DIMS, dtype=np.uint32)
    piece = (0, plan.out_base, 0, 0) if merge_pass else (plan.in_base, plan.out_base, plan.index_offset, plan.slot_base)
    words[:12] = (plan.output_count, plan.reduced_count, gx, gx * gy,
                  plan.split, plan.chunk, plan.output_count * plan.split, plan.out_limit, *piece)

    def put(slot: int, values) -> None:
        start = 12 + slot * MAX_DIMS
        words[start:start + len(values)] = values

    put(0, [d.size for d in plan.kept])
    put(1, [d.in_stride for d in plan.kept])
    put(2, [d.out_stride for d in plan.kept])
    put(3, [d.size for d in plan.reduced])
    put(4, [d.in_stride for d in plan.reduced])
    put(5, [d.out_stride for d in plan.reduced])
    put(6, [d.index_stride for d in plan.reduced])
    return words


@dataclasses.dataclass(frozen=True, eq=False)
class Pass:
    """One compute pass of a plan: its WGSL, its grid, its parameters, and what it binds."""

    source: str
    grid: tuple[int, int, int]
    params: np.ndarray  # the uniform Params words (params_words)
    merging: bool  # reads the partial pairs (the scratch) in place of the input
    writes: Writes  # partial pairs go to the scratch in place of the output; a race binds the race words


def passes(plan: Plan) -> list[Pass]:
    """The passes of a plan in order: the first pass (if the plan has one) and its merge (if any)."""
    grids = ([plan.grid] if plan.kernel else []) + ([plan.merge_grid] if plan.merge_kernel and plan.merge_grid else [])
    out = []
    for i, (source, grid) in enumerate(zip(shader_sources(plan), grids)):
        merging = not plan.kernel or i == 1
        out.append(Pass(source, grid, params_words(plan, grid, merging), merging,
                        Writes.RESULT if merging else plan.writes))
    return out
