"""A fresh process's first call, kept short: wgpu-py's C types parsed against the typedefs they
name, not against all of wgpu-native's.

wgpu-py declares wgpu-native's API to cffi once (at import) and creates its structs from type
strings ("WGPUBindGroupEntry[]", ...); cffi parses each new string once per process, and before
it does, it declares every typedef it knows to pycparser ("typedef int X;" for each of
wgpu-native's ~500), so that names parse as types. That costs 12-25 ms a string, about 50 of
them on the way to a first call: 0.6-1.0 s of a 1-2 s first call on lavapipe's host. Only the
typedefs a string names can change how it parses, so ``speed_up`` makes wgpu-py's parser
declare those alone: the same types, about 40x faster. Where the parse still fails, or cffi's
parser no longer looks as expected, the full declarations are used, as cffi would.

Owns ``speed_up``; touches only the parser of wgpu-py's ``ffi``.
"""

from __future__ import annotations

import re
from typing import Any

_NAME = re.compile(r"[A-Za-z_]\w*")
_done: list = []


def speed_up() -> None:
    """Make wgpu-py's ``ffi`` parse new type strings against the typedefs they name (once per
    process; a no-op where cffi's parser is not as this module knows it)."""
    if _done:
        return
    _done.append(True)
    from wgpu.backends.wgpu_native import _ffi

    parser: Any = getattr(getattr(_ffi, "ffi", None), "_parser", None)
    original = getattr(parser, "_parse", None)
    if original is None or not isinstance(getattr(parser, "_declarations", None), dict):
        return

    def parse(csource):
        declared = parser._declarations
        names = set(_NAME.findall(csource))
        parser._declarations = {k: v for k, v in declared.items()
                                if not k.startswith("typedef ") or k[8:] in names}
        try:
            return original(csource)
        except Exception:  # (a name the filter left out after all: parse as cffi would)
            parser._declarations = declared
            return original(csource)
        finally:
            parser._declarations = declared

    parser._parse = parse
