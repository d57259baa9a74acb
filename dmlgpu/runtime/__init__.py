"""The runtime: the only package that touches wgpu, one room per job, and its front door.

- ``adapters``: the wgpu instance, choosing adapters, opening and closing devices.
- ``interrupts``: Ctrl-C held back while GPU work is in flight.
- ``public`` / ``native`` (with ``hot``, the C hot path): the two backends that record,
  submit and map.
- ``memory``: buffer usages and sizes, the pools of kept buffers.
- ``transfers``: the paths bytes take between the host and the GPU; ``flow``: the account of
  what its large transfers did.
- ``runner``: orders work on the queue and owns the device's lifetime; ``commits``: small
  calls from many threads in one submission.
- ``timestamps``: GPU times of recorded passes, for the bench and the calibration.

**The front door.** What the rest of dmlgpu (the bench included) may use is named here, in
``__all__``, and imported from ``dmlgpu.runtime``, never from a room: a room's other names are
its own. Each name loads its room on first use, so that importing this package costs nothing
(``dmlgpu --version`` and the pure rooms never load wgpu). ``tests/test_docs.py`` holds the
library to it.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

#: Each name of the front door, and the room it lives in (``all_adapters`` is ``adapters.adapters``:
#: a name of the package that a room is called by would be the room once it is imported).
_ROOMS = {
    "adapter_summary": "adapters", "all_adapters": "adapters", "choose_adapter": "adapters", "wgpu_version": "adapters",
    "interrupts_held": "interrupts",
    "IN_PLACE_OUTPUT_MAX": "kits", "Kit": "kits",
    "Steps": "native", "NativePath": "native",
    "MAP_READ": "memory", "READABLE": "memory",
    "required_limits": "programs",
    "STORAGE_USAGE": "recorder", "check_encoder": "recorder", "clear_now": "recorder", "device_of": "recorder",
    "is_buffer": "recorder", "record": "recorder", "usage_names": "recorder",
    "Runner": "runner",
    "configured": "hot",
    "copy_in_parts": "transfers",
    "gpu_times": "timestamps", "interleaved_gpu_times": "timestamps",
}
#: Names of the front door that are another name in their room.
_RENAMED = {"all_adapters": "adapters"}
__all__ = ["IN_PLACE_OUTPUT_MAX", "Kit", "MAP_READ", "NativePath", "READABLE", "Runner", "STORAGE_USAGE", "Steps",
           "adapter_summary", "all_adapters", "check_encoder", "choose_adapter", "clear_now", "configured",
           "copy_in_parts", "device_of", "gpu_times", "interleaved_gpu_times", "interrupts_held", "is_buffer",
           "record", "required_limits", "usage_names", "wgpu_version"]

if TYPE_CHECKING:
    from .adapters import adapter_summary, choose_adapter, wgpu_version
    from .adapters import adapters as all_adapters
    from .hot import configured
    from .interrupts import interrupts_held
    from .kits import IN_PLACE_OUTPUT_MAX, Kit
    from .memory import MAP_READ, READABLE
    from .native import NativePath, Steps
    from .programs import required_limits
    from .recorder import STORAGE_USAGE, check_encoder, clear_now, device_of, is_buffer, record, usage_names
    from .runner import Runner
    from .timestamps import gpu_times, interleaved_gpu_times
    from .transfers import copy_in_parts


def __getattr__(name: str) -> Any:
    room = _ROOMS.get(name)
    if room is None:
        raise AttributeError(f"module 'dmlgpu.runtime' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{room}"), _RENAMED.get(name, name))
    globals()[name] = value
    return value
