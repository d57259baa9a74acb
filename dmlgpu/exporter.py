"""``dmlgpu export``: a compiled operator as a standalone WebGPU program, an ES module for a web page.

    dmlgpu export 'argmax float32 (1, 151936) axis=1' -o argmax.js
    dmlgpu.export("hardmax float16 (8, 1000)", limits={"maxStorageBufferBindingSize": 1 << 30})
    device.compile(desc).export()     # a compiled operator's descriptor, NaN mode and tuning

What to export is what ``explain`` reads (a NumPy-style call, an operator's JSON, or a
descriptor); the target is a browser's WebGPU device, described by its limits (WebGPU's names,
``maxStorageBufferBindingSize`` as ``adapter.limits`` has it, or wgpu-py's
``max-storage-buffer-binding-size``; WebGPU's defaults for those not given). The plan is made
here, by the planner the Python runner uses, for ``Capabilities`` built from those limits and
no optional feature (``capabilities`` says why). No second planner runs in the page: the module
holds the plan as data.

The module is text with no import and no build step: the WGSL of each pass (``wgsl.passes``,
its comments and indentation taken out), the plan
(each piece's windows of the input, output and temporary, each pass's grid and uniform
parameter words), the tensors' sizes, and the runner (``export_runner.js``, the same in
every module): ``compile(device)`` makes its pipelines on the caller's ``GPUDevice``, and the
compiled operator ``record``s its passes into the caller's ``GPUCommandEncoder`` on the caller's
buffers (DirectML's binding model, as ``CompiledOperator.record``), or ``run``s them and
resolves to a typed array. docs/export.md is the runner's API; ``tests/test_export_browser.py``
runs modules in headless Chromium against the oracle.

Pure Python, like the planner: nothing here opens an adapter or imports wgpu. Bad input raises
``DescriptorError`` (``TypeError`` for an argument of the wrong kind) naming the limit or
the part of the descriptor at fault, before anything is written.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import re
from importlib import resources

from .desc import lower
from .errors import DescriptorError
from .explainer import DEFAULT_CAPABILITIES, planned
from .pieces import Schedule, Window, buffer_spans, tensor_needs
from .kernels.base import SLOTS, WORKGROUP_STORAGE
from .plan import Capabilities, Tuning, Tunings, Writes
from .tensor_desc import TensorDesc
from .tuning import default_tuning
from .types import DataType, NanMode
from .wgsl import passes, writable_input

#: The limits the planner reads, by WebGPU's name, with the ``Capabilities`` field each fills
#: (their defaults, WebGPU's, are ``DEFAULT_CAPABILITIES``'s).
PLANNED_LIMITS = {
    "maxStorageBufferBindingSize": "max_storage_binding",
    "maxBufferSize": "max_buffer",
    "maxComputeWorkgroupsPerDimension": "max_workgroups_per_dim",
    "minStorageBufferOffsetAlignment": "offset_alignment",
}
#: The limits the passes need of a device whatever the plan, with WebGPU's defaults: a
#: workgroup of the tuning's size, the workgroup memory a shader may declare.
PASS_LIMITS = {
    "maxComputeWorkgroupSizeX": 256,
    "maxComputeInvocationsPerWorkgroup": 256,
    "maxComputeWorkgroupStorageSize": WORKGROUP_STORAGE,
}
#: Every other limit WebGPU names: given (as a whole ``adapter.limits``), it is not used.
OTHER_LIMITS = frozenset("""
maxTextureDimension1D maxTextureDimension2D maxTextureDimension3D maxTextureArrayLayers maxBindGroups
maxBindGroupsPlusVertexBuffers maxBindingsPerBindGroup maxDynamicUniformBuffersPerPipelineLayout
maxDynamicStorageBuffersPerPipelineLayout maxSampledTexturesPerShaderStage maxSamplersPerShaderStage
maxStorageBuffersPerShaderStage maxStorageTexturesPerShaderStage maxUniformBuffersPerShaderStage
maxUniformBufferBindingSize minUniformBufferOffsetAlignment maxVertexBuffers maxVertexAttributes
maxVertexBufferArrayStride maxInterStageShaderVariables maxInterStageShaderComponents maxColorAttachments
maxColorAttachmentBytesPerSample maxComputeWorkgroupSizeY maxComputeWorkgroupSizeZ maxImmediateSize
maxStorageBuffersInFragmentStage maxStorageTexturesInFragmentStage maxStorageBuffersInVertexStage
maxStorageTexturesInVertexStage maxSubgroupSize minSubgroupSize maxPushConstantSize maxNonSamplerBindings
""".split())
#: What the WGSL of an exported pass must not name, as WebGPU's WGSL has no such types (a
#: guard: the planner is asked for none of them; a template change that used one would
#: otherwise reach the page and fail there).
_NOT_IN_BROWSERS = re.compile(r"\b(u64|i64|f64|f16)\b")
#: WGSL's subgroup builtins: its functions (``subgroupMax(``) and values (``subgroup_size``).
_SUBGROUP_BUILTIN = re.compile(r"\bsubgroup[A-Z]\w*(?=\s*\()|\bsubgroup_(?:size|invocation_id)\b")
#: A typed array of the output's elements, by type (FLOAT16: the bits, as ``Uint16Array``).
_TYPED_ARRAYS = {
    DataType.FLOAT32: "Float32Array", DataType.FLOAT16: "Uint16Array", DataType.UINT32: "Uint32Array",
    DataType.INT32: "Int32Array", DataType.UINT64: "BigUint64Array", DataType.INT64: "BigInt64Array",
    DataType.UINT16: "Uint16Array", DataType.INT16: "Int16Array", DataType.UINT8: "Uint8Array",
    DataType.INT8: "Int8Array", DataType.FLOAT64: "Float64Array",
}
#: The version of what a module holds (its first line says it): raised when the plan's data
#: changes shape, so that a page can tell which runner it has.
FORMAT = 2


def _camel(name: str) -> str:
    """``max-storage-buffer-binding-size`` (wgpu-py's) as ``maxStorageBufferBindingSize`` (WebGPU's)."""
    head, *rest = name.split("-")
    return head + "".join(word[:1].upper() + word[1:] for word in rest)


def limits_from(given) -> dict[str, int]:
    """The limits a module is planned for and needs, by WebGPU's name: those of ``given`` (a
    mapping of WebGPU's or wgpu-py's names; None: none) that planning reads or the passes need,
    WebGPU's defaults for the rest. Names WebGPU has that the passes do not read are taken and
    left out; any other name, or a value that is not a positive int, raises."""
    if given is None:
        given = {}
    if not hasattr(given, "items"):
        raise TypeError(f"limits must be a mapping of WebGPU limit names to ints (adapter.limits), "
                        f"not {type(given).__name__}")
    limits = {name: getattr(DEFAULT_CAPABILITIES, field) for name, field in PLANNED_LIMITS.items()} | PASS_LIMITS
    for key, value in given.items():
        if not isinstance(key, str):
            raise TypeError(f"limits has a key of type {type(key).__name__} ({key!r}); keys are limit names")
        name = _camel(key)
        if name in OTHER_LIMITS:
            continue
        if name not in limits:
            raise DescriptorError(f"limits[{key!r}] is not a WebGPU limit; the limits that matter here are "
                                  f"{', '.join(list(PLANNED_LIMITS) + list(PASS_LIMITS))}")
        if isinstance(value, bool) or not isinstance(value, int):
            raise TypeError(f"limits[{key!r}] must be an int, not {type(value).__name__} ({value!r})")
        if value < 1:
            raise DescriptorError(f"limits[{key!r}] is {value}, but it must be positive")
        limits[name] = value
    align = limits["minStorageBufferOffsetAlignment"]
    if align < 4 or align & (align - 1):
        raise DescriptorError(f"limits['minStorageBufferOffsetAlignment'] is {align}, but it must be a power of two "
                              f"of at least 4")
    for name, least, why in (("maxStorageBufferBindingSize", align + 16, f"the offset alignment ({align}) and one "
                              f"16-byte quad"), ("maxBufferSize", 16, "one 16-byte quad")):
        if limits[name] < least:
            raise DescriptorError(f"limits[{name!r}] is {limits[name]}, but it must be at least {least} bytes: {why}")
    return limits


def capabilities(limits: dict[str, int], software: bool = False) -> Capabilities:
    """What the planner may use on a browser's device with these limits (``limits_from``),
    ``software`` where its adapter runs shaders on the CPU (then the planner's defaults are a
    CPU adapter's, ``tuning.default_tuning``): no optional feature. WGSL in a browser has no 64-bit integers and no 64-bit atomics; and the
    kernels' subgroup merges branch on the subgroup's size and take keys from the subgroup in
    control flow that WebGPU's uniformity analysis does not take as uniform, so subgroups are
    left out even where an adapter has them."""
    return dataclasses.replace(DEFAULT_CAPABILITIES, **{field: limits[name] for name, field in PLANNED_LIMITS.items()},
                               shader_int64=False, int64_atomics=False, subgroups=False, software=software)


@functools.lru_cache(maxsize=64)  # the passes of a schedule's pieces share their texts
def browser_wgsl(source: str) -> tuple[str, ...]:
    """A pass's WGSL as a browser compiles it, cut into its top-level items (a declaration and
    its body each; joined, they are the text), with comments, indentation and blank lines
    taken out (the module's size). Raises ``ValueError`` where it names what WebGPU's WGSL
    lacks (64-bit integers, f16 without its extension, subgroups): a guard, as the planner is
    asked for none of them."""
    items: list[list[str]] = []
    for line in source.splitlines():
        if line[:1].strip() and not line.startswith("}") or not items:
            items.append([])
        line = line.split("//", 1)[0].strip()
        if line:
            items[-1].append(line + "\n")
    parts = tuple("".join(item) for item in items if item)
    text = "".join(parts)
    bad = _NOT_IN_BROWSERS.search(text) or _SUBGROUP_BUILTIN.search(text)
    if bad:
        raise ValueError(f"a pass's WGSL uses {bad.group()}, which the export does not ask of a browser")
    if any(c in text for c in "`\\") or "${" in text:
        raise ValueError("a pass's WGSL holds a backtick, a backslash or '${', which the module's template "
                         "literals would read")
    return parts


def _tensor(desc: TensorDesc, caps: Capabilities) -> dict:
    """A tensor as the runner binds it: its type, sizes, strides, bytes, and its buffers'
    (first byte, bytes) with the bytes of the tensor each holds, in whole words (``tensor_needs``)."""
    spans = buffer_spans(desc, caps)
    total = desc.total_tensor_size_in_bytes
    return {
        "dataType": desc.data_type.name,
        "sizes": list(desc.sizes),
        "strides": None if desc.strides is None else list(desc.strides),
        "bytes": total,
        "typedArray": _TYPED_ARRAYS[desc.data_type],
        "buffers": [[first, nbytes, need] for (first, nbytes), need in zip(spans, tensor_needs(desc, spans))],
    }


def _window(w: Window | None) -> list[int] | None:
    return None if w is None else [w.buffer, w.offset, w.size]


def needs(sched: Schedule, red, caps: Capabilities) -> dict[str, int]:
    """The limits a device must reach to run this schedule, by WebGPU's name: its largest
    window and buffer, its largest grid side, workgroup and workgroup memory, and the offset
    alignment its windows were cut to (a device's must be no larger)."""
    windows = [w.size for piece in sched.pieces for w in (piece.input, piece.output) if w is not None]
    spans = [nbytes for desc in (red.input, red.output) for _, nbytes in buffer_spans(desc, caps)]
    plans = [piece.plan for piece in sched.pieces]
    grids = [side for p in plans for grid in (p.grid, p.merge_grid) if grid for side in grid]
    workgroup = max(p.workgroup_size for p in plans)
    return {
        "maxStorageBufferBindingSize": max(windows + [sched.scratch_bytes]),
        "maxBufferSize": max(spans + [sched.scratch_bytes]),
        "maxComputeWorkgroupsPerDimension": max(grids),
        "minStorageBufferOffsetAlignment": caps.offset_alignment,
        "maxComputeWorkgroupSizeX": workgroup,
        "maxComputeInvocationsPerWorkgroup": workgroup,
        "maxComputeWorkgroupStorageSize": WORKGROUP_STORAGE,
    }


def module_data(desc, mode: NanMode, sched: Schedule, caps: Capabilities,
                limits: dict[str, int]) -> tuple[list[str], list[list[int]], dict]:
    """(the items of WGSL, each once; each pass's text as items; the plan as data) of an
    operator's schedule, planned on ``caps`` for a device of ``limits``."""
    red = lower(desc)
    needed = needs(sched, red, caps)
    for name in PASS_LIMITS:
        if limits[name] < needed[name]:
            hint = (f"; export with tuning=Tuning(workgroup_size={limits[name]})"
                    if name != "maxComputeWorkgroupStorageSize" else "")
            raise DescriptorError(f"limits[{name!r}] is {limits[name]}, but the passes need {needed[name]}{hint}")
    parts: dict[str, int] = {}  # each item of WGSL once
    shaders: dict[tuple[int, ...], int] = {}  # each pass's text once, as its items
    pieces = []
    for piece in sched.pieces:
        if piece.plan.race:  # never on these capabilities (no 64-bit atomics): a guard
            raise ValueError("a racing plan binds 64-bit atomic words, which WebGPU does not have")
        steps = []
        for p in passes(piece.plan):
            text, shared = (tuple(parts.setdefault(item, len(parts)) for item in browser_wgsl(source))
                            for source in (p.source, writable_input(p.source)))
            steps.append({"shader": shaders.setdefault(text, len(shaders)),
                          "sharedShader": shaders.setdefault(shared, len(shaders)), "grid": list(p.grid),
                          "params": [int(w) for w in p.params],
                          "reads": "temporary" if p.merging else "input",
                          "writes": "temporary" if p.writes is Writes.PAIRS else "output"})
        pieces.append({"input": _window(piece.input), "output": _window(piece.output), "passes": steps})
    from . import __version__

    data = {
        "format": FORMAT,
        "dmlgpu": __version__,
        "descriptor": desc.to_json(),
        "nanMode": mode.value,
        "plannedFor": {"limits": limits, "software": caps.software},
        "limits": needed,
        "features": [],
        # Every pass's bindings: [binding, slot, WebGPU's type], the race words left out (no plan
        # here races: the guard above).
        "bindings": [[s.binding, s.name, s.kind] for s in SLOTS if s.name != "race"],
        "input": _tensor(red.input, caps),
        "output": _tensor(red.output, caps),
        "clearsOutput": sched.pieces[0].plan.clears_output,
        "temporaryBytes": sched.scratch_bytes,
        "pieces": pieces,
    }
    return list(parts), [list(text) for text in shaders], data


def _title(red, mode: NanMode) -> str:
    """What a module's first line says it is: the operator, its input and axes."""
    axes = ",".join(map(str, red.axes))
    return f"{red.op.upper()} {red.input.data_type.name} {list(red.input.sizes)} axes ({axes}), nan_mode {mode.value}"


@functools.cache
def runner_code() -> str:
    """The runner (``export_runner.js``) as a module holds it: its comment lines, doc comments
    and blank lines left out (the file itself is the commented source)."""
    lines, in_doc = [], False
    for line in resources.files("dmlgpu").joinpath("export_runner.js").read_text().splitlines():
        stripped = line.strip()
        if in_doc or stripped.startswith("/*"):
            in_doc = not stripped.endswith("*/")
        elif stripped and not stripped.startswith("//"):
            lines.append(line + "\n")
    return "".join(lines)


def render(parts: list[str], shaders: list[list[int]], data: dict, title: str) -> str:
    """The module's text: a header, the WGSL (its items, and each text as items), the plan,
    then the runner."""
    runner = runner_code()
    head = (f"// dmlgpu {data['dmlgpu']} export (format {FORMAT}): {title}\n"
            f"// A standalone ES module: no import, no build step. Its API: docs/export.md of dmlgpu.\n")
    wgsl = ",\n".join(f"`{text}`" for text in parts)
    texts = json.dumps(shaders, separators=(",", ":"))
    plan = json.dumps(data, separators=(",", ":"))
    return (f"{head}const PARTS = [\n{wgsl}];\nconst SHADERS = {texts}.map((items) => items.map((i) => PARTS[i]).join(\"\"));\n"
            f"export const operator = {plan};\n{runner}")


def export(what, *, limits=None, nan_mode=None, tuning: Tuning | Tunings | None = None, software: bool = False) -> str:
    """The ES module (text) that runs ``what`` (a call, an operator's JSON or a descriptor, as
    ``explain`` takes it) on a browser's WebGPU device with these ``limits`` (WebGPU's names;
    WebGPU's defaults where not given), using no optional feature. ``nan_mode`` overrides the
    one the call implies (a descriptor's default is "ignore"); ``tuning`` is the planner's,
    by default a GPU's, or with ``software`` a CPU adapter's (WebGPU's
    ``adapter.info.isFallbackAdapter``: SwiftShader, WARP), as the Python runner takes on
    lavapipe."""
    if tuning is not None and not isinstance(tuning, (Tuning, Tunings)):
        raise TypeError(f"tuning must be a dmlgpu.plan.Tuning or Tunings, not {type(tuning).__name__}")
    if not isinstance(software, bool):
        raise TypeError(f"software must be a bool, not {type(software).__name__}")
    wanted = limits_from(limits)
    caps = capabilities(wanted, software)
    desc, mode, sched = planned(what, caps, nan_mode, tuning or default_tuning(caps), command="export")
    return render(*module_data(desc, mode, sched, caps, wanted), _title(lower(desc), mode))


__all__ = ["export", "limits_from", "capabilities", "browser_wgsl", "PLANNED_LIMITS", "PASS_LIMITS"]
