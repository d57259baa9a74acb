"""Exported modules (``dmlgpu export``) run in a real browser, held to the oracle bit for bit.

One headless Chromium (Debian's package; WebGPU on its software adapter, SwiftShader) with one
page served from localhost runs every case: random descriptors of every operator (ARGMAX,
ARGMIN, HARDMAX1, HARDMAX, REDUCE), every input type, both directions, both NaN modes, every
index type, strided, permuted, padded and broadcast inputs, values drawn from small pools
(ties on purpose; NaN, infinities, signed zeros, subnormals, integer extremes), a GPU's
default tuning, a CPU adapter's (``export(software=True)``) and one shrunk so that small
inputs split and merge, and binding limits small enough
that tensors are cut into pieces and held in several buffers. Each case's module is imported
by the page, compiled on one device, run (on buffers of its own, or at offsets of one buffer
of the page's: the caller's binding model), and its output bytes compared with
``dmlgpu.oracle``'s here.

A browser compiles each distinct WGSL text in a few hundred milliseconds on SwiftShader, so
the cases come in families: a family's first case is drawn freely, and its further cases
(other sizes, strides, values, limits, bindings) are kept where their passes' WGSL is text the
run has already compiled. ``DMLGPU_BROWSER_SEED`` repeats a run (a failure names its seed);
by default every run draws anew.

In CI (``CI=true``) a browser that is missing or does not start fails these tests; elsewhere
they skip without one.
"""

from __future__ import annotations

import base64
import json
import math
import re
import os
import pathlib
import time

import numpy as np
import pytest

from dmlgpu import layout, oracle
from dmlgpu.desc import (
    ActivationHardmax1OperatorDesc,
    ActivationHardmaxOperatorDesc,
    ArgMaxOperatorDesc,
    ArgMinOperatorDesc,
    ReduceOperatorDesc,
    TensorDesc,
    lower,
)
from dmlgpu.errors import DescriptorError
from dmlgpu.explainer import planned
from dmlgpu.exporter import capabilities, export, limits_from
from dmlgpu.pieces import buffer_spans
from dmlgpu.plan import Tuning
from dmlgpu.tuning import SOFTWARE_TUNING
from dmlgpu.types import AxisDirection, DataType, NanMode
from dmlgpu.wgsl import shader_sources

from _browser import BrowserError, Chromium, Site, find_chromium

ROOT = pathlib.Path(__file__).resolve().parent.parent
#: Cases a run holds to the oracle: 512 (DMLGPU_BROWSER_CASES: fewer or more; the wheels' runs
#: in scripts/wheel_test.sh take 64).
CASES = int(os.environ.get("DMLGPU_BROWSER_CASES") or 512)
#: Cases a family keeps at most, and candidates it draws at most.
FAMILY_CASES, FAMILY_TRIES = 40, 80
#: What the WGSL a run compiles may cost, in units of (kilobytes of a text)^2: SwiftShader
#: compiles a text in about 6 ms a unit (a 22 KB text in 3.5 s, a 5 KB one in 0.1 s), and a
#: family whose first case would pass this is drawn again.
COMPILE_BUDGET = 1200
#: Thresholds shrunk so that small inputs split, merge with a workgroup, and take every kernel.
SMALL = Tuning(workgroup_size=32, loads_per_thread=1, target_workgroups=64, min_chunk_per_lane=1,
               min_chunk_per_lane_single=1, target_threads=512, min_chunk_thread=5, merge_workgroup_above=16,
               merge_workgroup_below=0)
INDEX_TYPES = (DataType.UINT32, DataType.INT32, DataType.UINT64, DataType.INT64)


@pytest.fixture(scope="module")
def site():
    served = Site()
    served.add("/", "<!doctype html><meta charset=utf-8><title>dmlgpu export tests</title>")
    yield served
    served.close()


@pytest.fixture(scope="module")
def page(site):
    """The browser, on the page of ``site``; fails in CI where it cannot start, else skips."""
    executable = find_chromium()
    in_ci = os.environ.get("CI") == "true"
    if executable is None:
        if in_ci:
            pytest.fail("no Chromium found (scripts/setup.sh installs Debian's chromium; DMLGPU_CHROMIUM names one)")
        pytest.skip("no Chromium here (apt-get install chromium, or DMLGPU_CHROMIUM)")
    try:
        browser = Chromium(executable)
    except BrowserError as err:
        if in_ci:
            pytest.fail(f"Chromium did not start: {err}")
        pytest.skip(f"Chromium did not start: {err}")
    try:
        browser.goto(site.url + "/")
        yield browser
    finally:
        browser.close()


# --- random cases ---------------------------------------------------------------------------


def value_pool(data_type: DataType, rng: np.random.Generator) -> np.ndarray:
    """A few values of the type, its special ones likely among them."""
    dtype = data_type.numpy
    if data_type.is_float:
        tiny = np.finfo(dtype).smallest_subnormal
        every = np.array([-2, -1, -0.0, 0.0, 1, 2, 3.5, np.inf, -np.inf, np.nan, tiny, -tiny], dtype)
    else:
        info = np.iinfo(dtype)
        values = [info.min, info.min + 1, 0, 1, 2, info.max - 1, info.max]
        if data_type.size == 8:  # equal as doubles, different as integers
            values += [2**60, 2**60 + 1] + ([-(2**60), -(2**60) - 1] if info.min < 0 else [])
        every = np.array(values, dtype)
    return rng.choice(every, size=int(rng.integers(2, 6)), replace=False)


def random_sizes(rng: np.random.Generator, rank: int, budget: int) -> list[int]:
    sizes = [int(rng.integers(1, max(2, 2 * round(budget ** (1 / rank))))) for _ in range(rank)]
    while math.prod(sizes) > budget:
        longest = int(np.argmax(sizes))
        sizes[longest] = max(1, sizes[longest] // 2)
    return sizes


def random_strides(rng: np.random.Generator, sizes: list[int], kind: str) -> list[int] | None:
    """Element strides of a layout ``kind``: packed (None), permuted, padded or broadcast."""
    if kind == "packed":
        return None
    rank = len(sizes)
    order = list(rng.permutation(rank)) if kind == "permuted" else list(range(rank))
    strides, step = [0] * rank, 1
    for axis in reversed(order):
        strides[axis] = step
        step *= sizes[axis] + (int(rng.integers(0, 3)) if kind == "padded" else 0)
    if kind == "broadcast":
        strides[int(rng.integers(rank))] = 0
    return strides


def family(rng: np.random.Generator, op: str, data_type: DataType) -> dict:
    """What a family's cases share: the operator, types, direction, NaN mode, rank and axes,
    layouts, tuning, the size of its inputs, whether limits cut them into pieces."""
    rank = int(rng.choice([1, 2, 2, 3, 3, 4, 5]))
    budget = int(rng.choice([64, 512, 4096, 20000]))
    return {
        "op": op, "data_type": data_type, "rank": rank, "budget": budget, "sizes": random_sizes(rng, rank, budget),
        "axes": sorted(int(a) for a in rng.choice(rank, size=int(rng.integers(1, rank + 1)), replace=False)),
        "index_type": INDEX_TYPES[int(rng.integers(4))],
        "direction": AxisDirection.DECREASING if rng.random() < 0.5 else AxisDirection.INCREASING,
        "nan_mode": NanMode.PROPAGATE if rng.random() < 0.5 else NanMode.IGNORE,
        "tuning": [Tuning(), SMALL, SOFTWARE_TUNING][int(rng.choice(3, p=[0.4, 0.35, 0.25]))],
        "layout": str(rng.choice(["packed", "packed", "permuted", "padded", "broadcast"])),
        "out_layout": str(rng.choice(["packed", "packed", "packed", "permuted", "padded"])),
        "pieces": bool(rng.random() < 0.15),
    }


def descriptor(f: dict, rng: np.random.Generator):
    """A descriptor of the family ``f``: its sizes within a factor of two of the family's
    (fresh ones now and then), its strides drawn anew."""
    if rng.random() < 0.2:
        sizes = random_sizes(rng, f["rank"], f["budget"])
    else:
        sizes = [max(1, round(n * 2 ** rng.uniform(-1, 1))) for n in f["sizes"]]
        while math.prod(sizes) > 2 * f["budget"]:
            sizes[int(np.argmax(sizes))] //= 2
    axes, op = f["axes"], f["op"]
    inp = TensorDesc(f["data_type"], sizes, random_strides(rng, sizes, f["layout"]))
    if op == "hardmax_last":
        return ActivationHardmaxOperatorDesc(inp)
    out_sizes = sizes if op == "hardmax" else [1 if a in axes else n for a, n in enumerate(sizes)]
    out_type = f["data_type"] if op == "hardmax" else f["index_type"]
    out = TensorDesc(out_type, out_sizes, random_strides(rng, out_sizes, f["out_layout"]))
    if op == "hardmax":
        return ActivationHardmax1OperatorDesc(inp, out, axes)
    if op == "reduce":
        return ReduceOperatorDesc("ARGMAX" if f["direction"] is AxisDirection.INCREASING else "ARGMIN", inp, out, axes)
    cls = ArgMaxOperatorDesc if op == "argmax" else ArgMinOperatorDesc
    return cls(inp, out, axes, f["direction"])


def candidate(f: dict, rng: np.random.Generator):
    """(descriptor, limits, the WGSL texts of its passes) of a case of ``f``, or None where the
    limits drawn cut it into more pieces than an export plans."""
    desc = descriptor(f, rng)
    limits = ({"maxStorageBufferBindingSize": int(rng.choice([1024, 2048, 4096])),
               "maxBufferSize": int(rng.choice([4096, 1 << 20]))} if f["pieces"] else {})
    try:
        _, _, sched = planned(desc, capabilities(limits_from(limits)), f["nan_mode"], f["tuning"], "export")
    except DescriptorError:
        return None
    return desc, limits, {text for piece in sched.pieces for text in shader_sources(piece.plan)}


def draw_cases(seed: int, count: int) -> list[dict]:
    """``count`` cases in families (the module's docstring), each with its module, its input's
    bytes and the oracle's output bytes. Families take the input types in turn (every type
    leads one before any leads two); a family is drawn again where its first case's new WGSL
    would leave too little of ``COMPILE_BUDGET`` to the families still to come."""
    rng = np.random.default_rng(seed)
    ops = ["argmax", "argmin", "hardmax", "reduce", "argmax", "argmin", "hardmax", "hardmax_last"]
    compiled: set[str] = set()
    budget = COMPILE_BUDGET
    cases: list[dict] = []
    k = 0
    while len(cases) < count:
        op, k = ops[k % len(ops)], k + 1
        data_type = (DataType.FLOAT32, DataType.FLOAT16)[k % 2] if "hardmax" in op else list(DataType)[k % len(DataType)]
        to_come = math.ceil((count - len(cases)) / FAMILY_CASES) - 1
        first = None
        for _ in range(8):  # a family whose first case fits what is left, else the cheapest of 8
            f = family(rng, op, data_type)
            c = candidate(f, rng)
            if c is not None:
                cost = sum((len(text) / 1000) ** 2 for text in c[2] - compiled)
                if first is None or cost < first[0]:
                    first = (cost, f, c)
                if cost <= budget - 30 * to_come:
                    break
        if first is None:
            continue
        cost, f, (desc, limits, texts) = first
        budget -= cost
        compiled |= texts
        cases.append(_case(len(cases), desc, f, limits, rng))
        kept = 1
        for _ in range(FAMILY_TRIES):
            if kept == FAMILY_CASES or len(cases) == count:
                break
            c = candidate(f, rng)
            if c is not None and c[2] <= compiled:
                cases.append(_case(len(cases), c[0], f, c[1], rng))
                kept += 1
    return cases


def _case(i: int, desc, f: dict, limits: dict, rng: np.random.Generator) -> dict:
    red = lower(desc)
    inp = red.input
    elements = rng.choice(value_pool(inp.data_type, rng), size=inp.total_tensor_size_in_bytes // inp.data_type.size)
    raw = np.zeros(inp.total_tensor_size_in_bytes, np.uint8)
    raw[: elements.nbytes] = elements.view(np.uint8)
    x = np.array(layout.view(inp, raw))
    want = oracle.evaluate(desc, x, nan_mode=f["nan_mode"])
    return {
        "id": i, "desc": desc, "family": f, "limits": limits,
        "module": export(desc, limits=limits, nan_mode=f["nan_mode"], tuning=f["tuning"]),
        "input": raw.tobytes(), "want": layout.lay_out(red.output, want).tobytes(),
        "bindings": "offsets" if rng.random() < 0.3 else "own",
    }


# --- the page's side --------------------------------------------------------------------------

#: Runs a batch of cases: every module imported and compiled at once (the browser compiles
#: the pipelines in parallel, each WGSL text once), then each run, its output's bytes returned
#: (base64) or its error. "offsets": input, output and temporary at aligned offsets of one
#: buffer of the page's (the variant of a pass whose input shares its buffer with its output).
RUN_CASES = """(async (cases) => {
  if (!globalThis.testDevice) {
    const adapter = await navigator.gpu.requestAdapter();
    globalThis.testDevice = await adapter.requestDevice();
  }
  const device = globalThis.testDevice;
  const base64 = (bytes) => {
    let text = "";
    for (let i = 0; i < bytes.length; i += 0x8000) text += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
    return btoa(text);
  };
  const inOneBuffer = async (m, op, data) => {
    const align = device.limits.minStorageBufferOffsetAlignment;
    let end = align;
    const place = (buffers) => buffers.map(([, size]) => {
      const offset = end;
      end = Math.ceil((end + Math.ceil(size / 16) * 16) / align) * align;
      return { offset, size };
    });
    const input = place(m.operator.input.buffers);
    const output = place(m.operator.output.buffers);
    const temporary = m.operator.temporaryBytes ? place([[0, m.operator.temporaryBytes]])[0] : null;
    const buffer = device.createBuffer({ size: end + align,
      usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST | GPUBufferUsage.COPY_SRC });
    m.operator.input.buffers.forEach(([first, size], k) => {
      const part = new Uint8Array(Math.ceil(size / 4) * 4);
      part.set(data.subarray(first, first + size));
      device.queue.writeBuffer(buffer, input[k].offset, part);
    });
    const bind = (list) => list.length === 1 ? { buffer, ...list[0] } : list.map((b) => ({ buffer, ...b }));
    try {
      return await op.run({ input: bind(input), output: bind(output),
                            temporary: temporary && { buffer, offset: temporary.offset } });
    } finally {
      buffer.destroy();
    }
  };
  const ready = await Promise.all(cases.map(async (c) => {
    const m = await import(`${location.origin}/case/${c.id}.js`);
    const data = new Uint8Array(await (await fetch(`/case/${c.id}.bin`)).arrayBuffer());
    return [c, m, await m.compile(device).catch((e) => e), data];
  }));
  return Promise.all(ready.map(async ([c, m, op, data]) => {
    try {
      if (op instanceof Error) throw op;
      const out = c.bindings === "offsets" ? await inOneBuffer(m, op, data) : await op.compute(data);
      op.destroy();
      return { bytes: base64(new Uint8Array(out.buffer, out.byteOffset, out.byteLength)) };
    } catch (e) {
      return { error: String(e?.stack ?? e) };
    }
  }));
})"""


def run_in_page(page, site, cases: list[dict], batch: int = 128) -> list[dict]:
    for c in cases:
        site.add(f"/case/{c['id']}.js", c["module"])
        site.add(f"/case/{c['id']}.bin", c["input"])
    results = []
    for start in range(0, len(cases), batch):
        chunk = [{"id": c["id"], "bindings": c["bindings"]} for c in cases[start:start + batch]]
        results += page.evaluate(f"{RUN_CASES}({json.dumps(chunk)})", timeout=600)
    return results


def _described(c: dict) -> str:
    f = c["family"]
    return (f"case {c['id']} ({c['bindings']}): {c['desc'].to_json()}, nan_mode {f['nan_mode'].value}, "
            f"tuning {f['tuning']}, limits {c['limits']}")


def test_random_exported_cases_equal_the_oracle(page, site):
    seed = int(os.environ.get("DMLGPU_BROWSER_SEED") or time.time_ns() % 2**31)
    started = time.monotonic()
    cases = draw_cases(seed, CASES)
    drawn = time.monotonic()
    results = run_in_page(page, site, cases)
    ran = time.monotonic()
    wrong = []
    for c, result in zip(cases, results):
        if "error" in result:
            wrong.append(f"{_described(c)}: {result['error']}")
            continue
        got = base64.b64decode(result["bytes"])
        want = c["want"][: len(got)]
        if got != want or len(got) < len(c["want"]) - 7:
            wrong.append(f"{_described(c)}: got {got[:64].hex()}..., want {want[:64].hex()}...")
    texts = {text for c in cases for text in c["module"].split("const SHADERS")[0].split("`")[1::2]}
    print(f"[browser] seed {seed}: {len(cases)} cases, {len(texts)} distinct WGSL items; drawn in "
          f"{drawn - started:.1f} s, run in the page in {ran - drawn:.1f} s")
    assert len(results) == len(cases) == CASES
    assert not wrong, f"seed {seed} (DMLGPU_BROWSER_SEED={seed} repeats it): {len(wrong)} of {len(cases)} " \
                      f"differ from the oracle:\n" + "\n".join(wrong[:10])


def test_a_16_bit_output_whose_buffers_start_inside_a_word_reads_back_whole(page, site):
    """A FLOAT16 HARDMAX1 output laid out column-major and held in three 4 KB buffers: the
    second and third start inside a 32-bit word of the tensor's bytes (an odd element), which
    no copy may target, so run() stages each buffer at a place of its own (found by the
    random test, seed 1050512946: every element read back as 0)."""
    limits = {"maxStorageBufferBindingSize": 4096, "maxBufferSize": 4096}
    desc = ActivationHardmax1OperatorDesc(TensorDesc(DataType.FLOAT16, (49, 110), (0, 1)),
                                          TensorDesc(DataType.FLOAT16, (49, 110), (1, 49)), (0,))
    firsts = [first for first, _ in buffer_spans(lower(desc).output, capabilities(limits_from(limits), False))]
    assert len(firsts) == 3 and any(first % 4 for first in firsts)  # what the test is about
    family = {"nan_mode": NanMode.IGNORE, "tuning": None}
    case = _case(0, desc, family, limits, np.random.default_rng(5))
    results = run_in_page(page, site, [dict(case, id=f"cut16-{how}", bindings=how) for how in ("own", "offsets")])
    for result in results:
        assert "error" not in result, result
        assert base64.b64decode(result["bytes"]) == case["want"]


# --- the page's side of the binding model, its errors, the example --------------------------------

#: Each refusal of the runner, then a valid run on the same operator; and last, a page whose
#: navigator has no WebGPU. Returns what each attempt threw ("ok: ..." where nothing threw).
REFUSALS = """(async () => {
  const m = await import(location.origin + "/refusals/argmax.js");      // FLOAT32 (4, 1000) axis 1, UINT32 ids
  const split = await import(location.origin + "/refusals/split.js");   // FLOAT32 (4, 4) over both: a temporary
  const quads = await import(location.origin + "/refusals/quads.js");   // FLOAT32 (3, 5): 60 bytes
  const short = await import(location.origin + "/refusals/short.js");   // planned for a binding of 160 MB
  const device = await m.requestDevice();
  const U = GPUBufferUsage;
  const buffer = (size, usage = U.STORAGE | U.COPY_SRC | U.COPY_DST) => device.createBuffer({ size, usage });
  const attempt = async (f) => { try { return `ok: ${await f()}`; } catch (e) { return `${e.name}: ${e.message}`; } };
  const op = await m.compile(device);
  const input = buffer(16000), output = buffer(16), big = buffer(32768);
  return {
    offset: await attempt(() => op.run({ input: { buffer: buffer(16512), offset: 128 }, output })),
    usage: await attempt(() => op.run({ input: buffer(16000, U.COPY_DST), output })),
    size: await attempt(() => op.run({ input: { buffer: input, size: 15996 }, output })),
    past: await attempt(() => op.run({ input: { buffer: input, offset: 256, size: 16000 }, output })),
    overlap: await attempt(() => op.run({ input: { buffer: big, size: 16000 }, output: { buffer: big, offset: 15872 } })),
    adjacent: await attempt(() => op.run({ input: { buffer: big, size: 16000 }, output: { buffer: big, offset: 16128 } })),
    missing: await attempt(() => op.run({ input })),
    encoder: await attempt(() => op.record({}, { input, output })),
    copy: await attempt(() => op.run({ input, output: buffer(16, U.STORAGE) })),
    data: await attempt(() => op.compute(new Uint8Array(15992))),
    valid: await attempt(async () => [...await op.run({ input, output })].join(",")),
    temporary: await attempt(async () => (await split.compile(device)).run({ input: buffer(64), output })),
    quads: await attempt(async () => {  // a buffer of exactly the tensor's 60 bytes: its last quad is cut
      const exact = buffer(60);
      device.queue.writeBuffer(exact, 0, new Float32Array([1, 5, 2, 5, 0, 7, 1, 1, 1, 7, 0, 0, 0, 0, 9]));
      return [...await (await quads.compile(device)).run({ input: exact, output })].join(",");
    }),
    device: await attempt(() => m.compile({})),
    limits: await attempt(() => short.compile(device)),
    noWebGPU: await attempt(() => {
      Object.defineProperty(navigator, "gpu", { value: undefined, configurable: true });
      return m.requestDevice();
    }),
  };
})()"""


def test_the_runner_refuses_bad_bindings_by_name_and_the_next_run_works(page, site):
    # a CPU adapter's plans (SwiftShader is one): small texts, compiled fast
    site.add("/refusals/argmax.js", export("argmax float32 (4, 1000) axis=1 out=uint32", software=True))
    site.add("/refusals/split.js", export("argmax float32 (4, 4) axis=(0, 1) out=uint32"))
    site.add("/refusals/quads.js", export("argmax float32 (3, 5) axis=1 out=uint32", software=True))
    site.add("/refusals/short.js", export("argmax float32 (1, 40000000) axis=1 out=uint32",
                                          limits={"maxStorageBufferBindingSize": 1 << 30, "maxBufferSize": 1 << 30}))
    page.goto(site.url + "/")
    got = page.evaluate(REFUSALS, timeout=120)
    wanted = {
        "offset": r"OperatorError: input.offset is 128, but it must be a multiple of the device's "
                  r"minStorageBufferOffsetAlignment \(256\)",
        "usage": r"OperatorError: input.buffer has usage 8, but it needs STORAGE",
        "size": r"OperatorError: input.size is 15996, but it must be at least 16000 \(the tensor's bytes\)",
        "past": r"OperatorError: input.size is 16000, but its buffer holds 15744 bytes from offset 256",
        "overlap": r"OperatorError: input \(bytes \[0, 16000\) of its buffer\) and output \(bytes \[15872, 15888\)\) "
                   r"overlap, but an operator's input, output and temporary must not",
        "adjacent": r"ok: \d+,\d+,\d+,\d+",
        "missing": r"OperatorError: the bindings have no output, but a dispatch needs one",
        "encoder": r"OperatorError: encoder must be a GPUCommandEncoder, not Object",
        "copy": r"OperatorError: output.buffer has usage 128, but run\(\) needs COPY_SRC",
        "data": r"OperatorError: data holds 15992 bytes, but the input tensor's total_tensor_size_in_bytes is 16000",
        "valid": r"ok: 0,0,0,0",
        "temporary": r"OperatorError: temporary is undefined, but this operator needs a temporary buffer of \d+ bytes "
                     r"\(bindingProperties.temporaryResourceSize\)",
        "quads": r"ok: 1,0,4$",
        "device": r"OperatorError: device must be a GPUDevice, not Object",
        "limits": r"OperatorError: the device cannot run this operator: its maxStorageBufferBindingSize is 134217728, "
                  r"but this operator needs at least 160000000",
        "noWebGPU": r"OperatorError: WebGPU is not available here: navigator.gpu is undefined",
    }
    for key, pattern in wanted.items():
        assert re.match(pattern, got[key]), f"{key}: {got[key]}"


def test_the_example_page_records_an_exported_argmax_between_its_own_passes(page, site):
    """examples/browser/index.html, served as its header says, with a module of fewer rows."""
    site.add("/example/", (ROOT / "examples" / "browser" / "index.html").read_text())
    site.add("/example/argmax.js", export("argmax float32 (4, 30000) axis=1 out=uint32"))
    page.goto(site.url + "/example/")
    result = page.evaluate("window.exampleResult", timeout=120)
    assert result["ok"] and result["ids"] == result["want"], result
    assert "matches JavaScript" in page.evaluate("document.getElementById('log').textContent")


def test_timestamps_bracket_the_recorded_passes(page, site):
    """record()'s timestampWrites: the first pass writes the first index, the last the second."""
    site.add("/timed/argmax.js", export("argmax float32 (1, 151936) axis=1 out=uint32"))
    page.goto(site.url + "/")
    got = page.evaluate("""(async () => {
      const m = await import(location.origin + "/timed/argmax.js");
      const adapter = await navigator.gpu.requestAdapter();
      if (!adapter.features.has("timestamp-query")) return "no timestamp-query";
      const device = await adapter.requestDevice({ requiredFeatures: ["timestamp-query"] });
      const op = await m.compile(device);
      const U = GPUBufferUsage;
      const input = device.createBuffer({ size: 607744, usage: U.STORAGE | U.COPY_DST });
      const output = device.createBuffer({ size: 16, usage: U.STORAGE | U.COPY_SRC });
      const temporary = device.createBuffer({ size: m.bindingProperties.temporaryResourceSize, usage: U.STORAGE });
      const querySet = device.createQuerySet({ type: "timestamp", count: 2 });
      const resolved = device.createBuffer({ size: 16, usage: U.QUERY_RESOLVE | U.COPY_SRC });
      const read = device.createBuffer({ size: 16, usage: U.MAP_READ | U.COPY_DST });
      const encoder = device.createCommandEncoder();
      op.record(encoder, { input, output, temporary }, { querySet, beginningOfPassWriteIndex: 0, endOfPassWriteIndex: 1 });
      encoder.resolveQuerySet(querySet, 0, 2, resolved, 0);
      encoder.copyBufferToBuffer(resolved, 0, read, 0, 16);
      device.queue.submit([encoder.finish()]);
      await read.mapAsync(GPUMapMode.READ);
      const [begin, end] = new BigUint64Array(read.getMappedRange());
      return [String(begin), String(end), m.operator.pieces[0].passes.length];
    })()""", timeout=120)
    assert got != "no timestamp-query", "SwiftShader offers timestamp-query; this test relies on it"
    begin, end, passes = int(got[0]), int(got[1]), got[2]
    assert passes == 2 and 0 < begin < end
