"""The ``dmlgpu`` command: ``demo``, ``info``, ``bench``, ``explain``, ``export`` and ``tune``."""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import stat
import sys
import tempfile
import warnings

import numpy as np

from . import oracle
from .errors import AdapterError, DescriptorError, SoftwareAdapterWarning

GRID = np.array([[1, 2, 3], [3, 0, 4], [2, 5, 2]], np.float32)
CUBE = np.array([[[12, 0], [-101, 11]], [[3, 234], [0, -101]]], np.float32)

#: The worked examples of docs/semantics.md#worked-examples: (operator, input, axes, keyword arguments).
EXAMPLES = [
    ("argmax", GRID, (0,), {}),
    ("argmax", GRID, (1,), {}),
    ("argmax", GRID, (0, 1), {}),
    ("argmin", GRID, (0,), {}),
    ("argmin", GRID, (1,), {}),
    ("argmin", GRID, (0, 1), {}),
    ("hardmax", CUBE, (1,), {}),
    ("hardmax", CUBE, (0,), {}),
    ("hardmax", CUBE, (0, 2), {}),
    ("argmax", np.array([3, 2, 1, 2, 3], np.float32), (0,), {"axis_direction": "increasing"}),
    ("argmax", np.array([3, 2, 1, 2, 3], np.float32), (0,), {"axis_direction": "decreasing"}),
    ("argmin", np.array([1, 2, 3, 2, 1], np.float32), (0,), {"axis_direction": "increasing"}),
    ("argmin", np.array([1, 2, 3, 2, 1], np.float32), (0,), {"axis_direction": "decreasing"}),
]


def _compact(a: np.ndarray) -> str:
    return np.array2string(a, separator=",", max_line_width=200).replace("\n", "").replace(" ", "")


def demo(device) -> int:
    """Run the worked examples of docs/semantics.md; 0 when every one matches the oracle."""
    import dmlgpu

    print(f"adapter: {device.name} ({device.runner.backend})")
    failures = 0
    for op, x, axes, kwargs in EXAMPLES:
        got = getattr(dmlgpu, op)(x, axes, device=device, **kwargs)
        want = getattr(oracle, op)(x, axes, **kwargs)
        match = got.dtype == want.dtype and np.array_equal(got, want)
        failures += not match
        options = "".join(f" {v}" for v in kwargs.values())
        shown = got.astype(int) if op == "hardmax" else got
        print(f"{op.upper():8} axes={list(axes)}{options}: {_compact(x)} -> {_compact(shown)}  "
              f"{'matches the oracle' if match else 'MISMATCH, oracle: ' + _compact(want)}")
    print(f"{len(EXAMPLES) - failures} of {len(EXAMPLES)} examples match")
    return 1 if failures else 0


def feature_level_lines() -> list[str]:
    """Each modelled feature level with the operators it has and what they take, grouped."""
    from .types import (DEFAULT_FEATURE_LEVEL, EXTENSION_TYPES, MODELLED_LEVELS, OPERATOR_SUPPORT, FeatureLevel,
                        describe, support_at)

    lines = [f"feature levels (Device(feature_level=...); the default is {DEFAULT_FEATURE_LEVEL.value}):"]
    for level in MODELLED_LEVELS:
        alike = [other.value for other in FeatureLevel if other.modelled is level and other is not level]
        also = f" (also {', '.join(alike)}, which behave as {level.value})" if alike else ""
        lines.append(f"  {level.value}{also}")
        groups: dict = {}
        for operator in OPERATOR_SUPPORT:
            support = support_at(operator, level)
            if support is not None:
                groups.setdefault(support, []).append(operator)
        for support, operators in groups.items():
            inputs, outputs, dimensions = describe(support)
            lines.append(f"    {', '.join(operators)}: {inputs} -> {outputs}; {dimensions} dimensions")
    extension = ", ".join(t.name for t in EXTENSION_TYPES)
    lines.append(f"  beyond DirectML, at every level: {extension} input to every operator there (HARDMAX: "
                 f"{extension} out)")
    return lines


def info(as_json: bool, levels: bool = True) -> int:
    """List every adapter with its limits and features, then (``levels``) the feature levels
    with the operators and types each has."""
    from .runtime import adapter_summary, all_adapters as adapters
    from .types import DEFAULT_FEATURE_LEVEL, EXTENSION_TYPES, level_table

    summaries = [{"index": i, **adapter_summary(a)} for i, a in enumerate(adapters())]
    if as_json:
        report: dict = {"adapters": summaries}
        if levels:
            report["feature_levels"] = {"default": DEFAULT_FEATURE_LEVEL.value, "levels": level_table(),
                                        "extension_types": [t.name for t in EXTENSION_TYPES]}
        print(json.dumps(report, indent=2))
        return 0
    if not summaries:
        print("no adapters found")
    keys = ("max-storage-buffer-binding-size", "max-buffer-size", "max-compute-workgroups-per-dimension",
            "max-compute-invocations-per-workgroup", "max-compute-workgroup-storage-size")
    for s in summaries:
        print(f"#{s['index']} {s['device']}  [{s['backend']}, {s['type']}]")
        for k in keys:
            print(f"  {k}: {s['limits'].get(k)}")
        print(f"  features: {', '.join(s['features'])}")
    if levels:
        print()
        print("\n".join(feature_level_lines()))
    return 0 if summaries else 1


class _Refused(Exception):
    """A request the command refuses: its message is printed on one line, and the status is 2."""


def _one_line(text: object) -> str:
    return " ".join(str(text).split())


def _read_what(what: str) -> str:
    """The text to explain: the words given, or what ``-`` (stdin) or a ``.json`` file holds."""
    if what == "-":
        if sys.stdin is None:
            raise _Refused("WHAT is '-', but this process has no standard input to read")
        return sys.stdin.read()
    if what.lower().endswith(".json"):
        if not os.path.exists(what):
            raise _Refused(f"{what!r} names no file (a .json argument is read as a descriptor file)")
        if os.path.isdir(what):
            raise _Refused(f"{what!r} is a directory, not a descriptor's .json file")
        with open(what, "rb") as f:
            data = f.read()
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError as err:
            raise _Refused(f"{what!r} is not UTF-8 text ({err.reason} at byte {err.start})") from None
    return what


def explain_command(args) -> int:
    """``dmlgpu explain``: planned for the adapter's limits where one opens, else WebGPU's defaults.
    An adapter that was named (``--adapter``, ``DMLGPU_ADAPTER``) and does not open is an error;
    with none named and none found, it plans for WebGPU's default limits."""
    from . import explainer

    try:
        what = _read_what(" ".join(args.what))
    except _Refused as err:
        print(f"dmlgpu explain: {err}", file=sys.stderr)
        return 2
    except (OSError, ValueError) as err:  # ValueError: standard input that is not text
        print(f"dmlgpu explain: cannot read {' '.join(args.what)!r}: {_one_line(getattr(err, 'strerror', None) or err)}",
              file=sys.stderr)
        return 2
    device = None
    if not args.no_gpu:
        named = args.adapter if args.adapter is not None else os.environ.get("DMLGPU_ADAPTER") or None
        try:
            from .device import Device

            device = Device(args.adapter)
        except AdapterError as err:
            if named is not None:
                print(f"dmlgpu explain: {_one_line(err)}; --no-gpu plans for WebGPU's default limits", file=sys.stderr)
                return 2
            print(f"dmlgpu: no adapter opened ({_one_line(err)}); planning for WebGPU's default limits", file=sys.stderr)
    caps = device.runner.capabilities if device is not None else explainer.DEFAULT_CAPABILITIES
    given = args.binding is not None or args.buffer is not None
    try:
        limits = explainer.with_limits(caps, args.binding, args.buffer, ("--binding", "--buffer")) if given else None
        text = explainer.explain(what, device=device, nan_mode=args.nan_mode, capabilities=limits)
    except (DescriptorError, TypeError, ValueError) as err:
        print(f"dmlgpu explain: {_one_line(err)}", file=sys.stderr)
        return 2
    print(text, end="")
    return 0


def _read_limits(text: str | None):
    """``--limits``: a JSON object, inline or in a ``.json`` file; None where not given."""
    if text is None:
        return None
    if text.lower().endswith(".json"):
        if not os.path.isfile(text):
            raise _Refused(f"--limits is {text!r}, which names no file (a .json value is read as a file of limits)")
        with open(text, "rb") as f:
            text = f.read().decode("utf-8", errors="replace")
    try:
        limits = json.loads(text)
    except ValueError as err:
        raise _Refused(f"--limits is not JSON ({_one_line(err)}); it must be an object like "
                       f"'{{\"maxStorageBufferBindingSize\": 1073741824}}', or a .json file of one") from None
    if not isinstance(limits, dict):
        raise _Refused(f"--limits is JSON {type(limits).__name__}, but it must be an object of limit names")
    return limits


def export_command(args) -> int:
    """``dmlgpu export``: the module for WebGPU's default limits, or ``--limits``; no adapter opens."""
    from . import exporter

    try:
        what = _read_what(" ".join(args.what))
        limits = _read_limits(args.limits)
        _check_output_path("--output", args.output)
        text = exporter.export(what, limits=limits, nan_mode=args.nan_mode, software=args.software)
    except _Refused as err:
        print(f"dmlgpu export: {err}", file=sys.stderr)
        return 2
    except (DescriptorError, TypeError, ValueError, OSError) as err:
        print(f"dmlgpu export: {_one_line(err)}", file=sys.stderr)
        return 2
    if args.output is None:
        print(text, end="")
        return 0
    os.makedirs(os.path.dirname(os.path.abspath(args.output)), exist_ok=True)
    with open(args.output, "w", encoding="utf-8") as f:
        f.write(text)
    print(f"dmlgpu export: {len(text.encode())} bytes written to {args.output}", file=sys.stderr)
    return 0


def _check_adapter(adapter: str | None) -> None:
    """``--adapter``: a substring of an adapter's name, or ``#`` and digits."""
    if adapter is None:
        return
    name = adapter.strip()
    if not name:
        raise _Refused(f"--adapter is {adapter!r}, but it must name an adapter: a substring of its name, or '#N'")
    if name.startswith("#") and not (name[1:].isascii() and name[1:].isdigit()):
        raise _Refused(f"--adapter is {adapter!r}, but an index is '#' and digits, e.g. '#1' ('dmlgpu info' lists them)")


def _check_output_path(flag: str, path: str | None) -> None:
    """A path ``bench`` writes to after running: refused now if it can never be written."""
    if path is None:
        return
    if not path.strip():
        raise _Refused(f"{flag} is {path!r}, but it must be a file path")
    if os.path.isdir(path):
        raise _Refused(f"{flag} is {path!r}, which is a directory; it must be a file path")
    parent = os.path.dirname(os.path.abspath(path))
    while not os.path.exists(parent):  # bench makes the missing folders
        parent = os.path.dirname(parent)
    if not os.path.isdir(parent):
        raise _Refused(f"{flag} is {path!r}, but {parent!r} is a file, so no folder can be made there")
    if not os.access(parent, os.W_OK):
        raise _Refused(f"{flag} is {path!r}, but {parent!r} is not writable")


#: The most timed repetitions ``--repeats`` asks for (each case keeps every sample).
MAX_REPEATS = 1_000_000


def _check_bench(args) -> None:
    """``bench``'s flags, checked before any adapter opens or any case runs."""
    if args.repeats is not None and not 1 <= args.repeats <= MAX_REPEATS:
        raise _Refused(f"--repeats is {args.repeats}, but it must be in [1, {MAX_REPEATS}]")
    if args.case is not None:
        from . import bench

        empty = [c for c in args.case if not c.strip()]
        if empty:
            raise _Refused(f"--case is {empty[0]!r}, but it must be (part of) a case's name")
        suite = bench.load_suite("quick" if args.quick else "full")
        unmatched = [s for s in args.case if not any(s in c.name for c in suite.cases)]
        if unmatched:
            raise _Refused(f"no case of the {suite.name} suite matches --case {unmatched[0]!r}; cases: "
                           f"{', '.join(c.name for c in suite.cases)}")
    _check_output_path("--json", args.json)
    _check_output_path("--plot", args.plot)
    if args.plot is not None:
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            raise _Refused("--plot needs matplotlib, which is not importable here (pip install matplotlib); "
                           "nothing was run") from None


def _parser() -> argparse.ArgumentParser:
    from . import __version__

    # The module's docstring, without its reStructuredText marks: a terminal shows them as typed.
    parser = argparse.ArgumentParser(prog="dmlgpu", description=(__doc__ or "").replace("``", ""))
    parser.add_argument("--version", action="version", version=f"dmlgpu {__version__}")
    parser.add_argument("--adapter", help="a substring of the adapter's name, or '#N' for the Nth adapter "
                                          "'dmlgpu info' lists (default: DMLGPU_ADAPTER, else the "
                                          "high-performance adapter)")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("demo", help="run the worked examples of docs/semantics.md against the oracle")
    p_info = sub.add_parser("info", help="list the adapters with their limits and features, and the feature "
                                         "levels with the operators and types each has")
    p_info.add_argument("--json", action="store_true", help="print JSON")
    p_explain = sub.add_parser("explain", help="the plan and the final WGSL of each pass, for a descriptor or a call",
                               description="Print the plan the planner chooses (pieces, kernel, grid, split, "
                                           "merge) and the WGSL of each pass. WHAT is an operator descriptor as "
                                           "JSON (inline, a .json file, or - for stdin) or a NumPy-style call such "
                                           "as: argmax float32 (4096, 65536) axis=1 (grammar: dmlgpu/explainer.py).")
    p_explain.add_argument("what", nargs="+", help="JSON, a .json file, -, or a call (its words may be unquoted)")
    p_explain.add_argument("--no-gpu", action="store_true",
                           help="open no adapter: plan for WebGPU's default limits, no optional features")
    p_explain.add_argument("--binding", type=int, metavar="BYTES", help="the storage binding limit to plan for")
    p_explain.add_argument("--buffer", type=int, metavar="BYTES", help="the buffer size limit to plan for")
    p_explain.add_argument("--nan-mode", choices=["ignore", "propagate"],
                           help="default: propagate for a call, ignore for a descriptor")
    p_export = sub.add_parser("export", help="the operator as a standalone WebGPU program: an ES module for a web page",
                              description="Write an ES module that runs the operator in a web page on WebGPU: the "
                                          "WGSL of each pass, the plan as data and a small runner that records the "
                                          "passes into the page's command encoder (docs/export.md). WHAT is as for "
                                          "explain. Planned for WebGPU's default limits unless --limits says others; "
                                          "no adapter is opened.")
    p_export.add_argument("what", nargs="+", help="JSON, a .json file, -, or a call (its words may be unquoted)")
    p_export.add_argument("--limits", metavar="JSON", help="the target's limits: a JSON object of WebGPU limit names "
                                                           "(as adapter.limits has them), inline or a .json file")
    p_export.add_argument("--nan-mode", choices=["ignore", "propagate"],
                          help="default: propagate for a call, ignore for a descriptor")
    p_export.add_argument("--software", action="store_true",
                          help="plan for an adapter that runs shaders on the CPU (isFallbackAdapter: SwiftShader, WARP)")
    p_export.add_argument("-o", "--output", metavar="PATH", help="write the module here (default: standard output)")
    p_tune = sub.add_parser("tune", help="choose the planner's tunings for this adapter now, by measuring them, "
                                         "keep them in the cache and say why",
                            description="Time each family of shapes under its candidate tunings on the adapter "
                                        "(a probe each, interleaved rounds), keep the fastest in the tuning cache "
                                        "(DMLGPU_CACHE_DIR), and print every time and choice. Devices otherwise "
                                        "measure a family the first time they compile one (GPUs; DMLGPU_TUNE=0: never).")
    p_tune.add_argument("--family", action="append", help="only families whose name contains this (repeatable), "
                                                         "e.g. rows/32 or columns")
    p_bench = sub.add_parser("bench", help="time the operators beside the read ceiling (and torch, if present)")
    p_bench.add_argument("--quick", action="store_true", help="the short suite (small inputs; for lavapipe)")
    p_bench.add_argument("--case", action="append", help="run only cases whose name contains this (repeatable)")
    p_bench.add_argument("--repeats", type=int, default=None, help="timed repetitions per case")
    p_bench.add_argument("--json", metavar="PATH", help="write the results as JSON")
    p_bench.add_argument("--plot", metavar="PATH", help="draw GB/s per case as a PNG (needs matplotlib)")
    p_bench.add_argument("--list-adapters", action="store_true", help="list adapters and exit")
    return parser


def give_mesa_a_runtime_dir() -> str | None:
    """Set ``XDG_RUNTIME_DIR`` to a private folder of this user's where it is unset or empty
    (containers, CI, ssh without a login session), on Linux; the folder set, or None.

    Mesa's Vulkan device-select layer (``VK_LAYER_MESA_device_select``, which ships with
    lavapipe) asks libwayland for a display each time the adapters are enumerated, and libwayland
    prints ``error: XDG_RUNTIME_DIR is invalid or not set in the environment.`` when the variable
    is missing: four lines a process, though nothing failed. With a private folder there, the
    display is looked for in it, not found, and nothing is printed; which adapters are found
    does not change. The folder is ``$TMPDIR/dmlgpu-runtime-<uid>`` (mode 0700, made once and
    kept); where it exists but is not a private folder of this user's, the variable is left
    unset. The command calls this before any adapter opens; the library never does, since it
    would change its caller's environment (docs/adapters.md says how a program quiets it)."""
    if not sys.platform.startswith("linux") or os.environ.get("XDG_RUNTIME_DIR"):
        return None
    path = os.path.join(tempfile.gettempdir(), f"dmlgpu-runtime-{os.getuid()}")
    try:
        os.mkdir(path, 0o700)
    except FileExistsError:
        pass
    except OSError:
        return None
    info = os.lstat(path)
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid() or info.st_mode & 0o077:
        return None
    os.environ["XDG_RUNTIME_DIR"] = path
    return path


@contextlib.contextmanager
def _notices_as_lines():
    """``SoftwareAdapterWarning`` shown as one plain line, ``dmlgpu: note: ...``: a command has no
    line of the user's to point at (the warning would name the console script's), and the notice
    is no error. Other warnings are shown as Python shows them."""
    shown = warnings.showwarning

    def show(message, category, filename, lineno, file=None, line=None):
        if not issubclass(category, SoftwareAdapterWarning):
            return shown(message, category, filename, lineno, file, line)
        text = str(message)
        text = "dmlgpu: note: " + text.removeprefix("dmlgpu: ")
        print(text, file=sys.stderr if file is None else file)

    warnings.showwarning = show
    try:
        yield
    finally:
        warnings.showwarning = shown


def main(argv=None) -> int:
    give_mesa_a_runtime_dir()  # before any adapter is enumerated
    try:
        with _notices_as_lines():
            status = _main(argv)
        sys.stdout.flush()  # (a closed pipe shows here, not at exit)
        return status
    except BrokenPipeError:
        # The reader of the output went away (``dmlgpu info | head``): stop quietly, as a command
        # that SIGPIPE ends does, and keep Python's flush at exit from reporting it again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 128 + 13  # 128 + SIGPIPE, the status a shell reports for a command SIGPIPE ended


def _main(argv) -> int:
    args = _parser().parse_args(argv)
    try:
        _check_adapter(args.adapter)
        if args.command == "bench":
            _check_bench(args)
        if args.command == "info" or getattr(args, "list_adapters", False):
            return info(getattr(args, "json", False) is True, levels=args.command == "info")
        if args.command == "explain":
            return explain_command(args)
        if args.command == "export":
            return export_command(args)
        from .device import Device

        device = Device(args.adapter)
        if args.command == "demo":
            return demo(device)
        if args.command == "tune":
            from .calibration import tune_lines

            print("\n".join(tune_lines(device, args.family)))
            return 0
        from . import bench

        return bench.main(device, args)
    except _Refused as err:
        print(f"dmlgpu {args.command}: {err}", file=sys.stderr)
        return 2
    except AdapterError as err:
        print(f"dmlgpu: {_one_line(err)}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
