"""Choosing adapters and the wgpu instance; opening and closing wgpu devices.

Owns the process's wgpu instances (our own, with the native backends alone unless OpenGL is
asked for), the adapters found through them (enumerated once per process and kept), and the
process-wide lock under which adapters are enumerated and devices opened and destroyed. May
touch wgpu-py's instance, adapter and device objects; nothing else of the runtime.
"""

from __future__ import annotations

import os
import threading

import wgpu

from ..errors import AdapterError
from .ffi_types import speed_up

speed_up()

NO_ADAPTER_HELP = (
    "no GPU adapter was found; on a machine without a GPU install Mesa's lavapipe "
    "(Debian: apt-get install mesa-vulkan-drivers libvulkan1)"
)


def wgpu_version() -> str:
    return wgpu.__version__


#: Adapter types in the order the default (high-performance) choice prefers them, as wgpu's
#: own ``power_preference="high-performance"`` does; any other type before CPU adapters.
_PREFERRED_TYPES = ("DiscreteGPU", "IntegratedGPU", "VirtualGPU")

#: One lock per process for everything that opens or lets go of an adapter or a device:
#: enumerating adapters, requesting a device, destroying one. wgpu's backends are not all safe
#: to probe from several threads at once (the OpenGL backend makes and drops EGL contexts, and
#: a second thread's EGL call then fails inside wgpu-native, which aborts the process).
_adapter_lock = threading.RLock()
#: The adapters found in this process, by backend set ("native", "opengl"), with the pid they
#: were found in (a forked child finds its own): enumerated once, then reused.
_found: dict[str, tuple[int, list]] = {}


def opengl_wanted() -> bool:
    """Whether OpenGL adapters are offered besides the native ones: ``DMLGPU_OPENGL=1``."""
    return os.environ.get("DMLGPU_OPENGL", "").strip().lower() in ("1", "true", "yes", "on")


def _instance(backends: str):
    """A wgpu-native instance of our own with only these backends (wgpu-py's flag names, e.g.
    "Primary": Vulkan, Metal, D3D12), so that no other backend is probed; never released."""
    from wgpu.backends.wgpu_native import _api
    from wgpu.backends.wgpu_native._mappings import native_flags

    ffi, lib = _api.ffi, _api.lib
    extras = ffi.new("WGPUInstanceExtras *")
    extras.chain.sType = lib.WGPUSType_InstanceExtras
    extras.backends = native_flags[f"InstanceBackend.{backends}"]
    extras.flags = native_flags["InstanceFlag.Default"]
    desc = ffi.new("WGPUInstanceDescriptor *")
    desc.nextInChain = ffi.cast("WGPUChainedStruct *", extras)
    return lib.wgpuCreateInstance(desc)


def _enumerate(kind: str) -> list:
    """The adapters of ``kind`` ("native" or "opengl"), enumerated once per process, under
    the process's adapter lock: wgpu-py's adapter objects, kept for the life of the process
    (an adapter let go of is an adapter torn down, which the OpenGL backend cannot do safely
    while another thread uses it)."""
    with _adapter_lock:
        pid, found = _found.get(kind, (None, []))
        if pid != os.getpid():
            from wgpu.backends.wgpu_native import _api

            ffi, lib = _api.ffi, _api.lib
            instance = _instance("Primary" if kind == "native" else "GL")
            count = lib.wgpuInstanceEnumerateAdapters(instance, ffi.NULL, ffi.NULL)
            handles = ffi.new("WGPUAdapter[]", count)
            lib.wgpuInstanceEnumerateAdapters(instance, ffi.NULL, handles)
            found = [wgpu.gpu._create_adapter(handle) for handle in handles]
            # GPUs before software adapters (type CPU, e.g. lavapipe), the order otherwise kept
            found.sort(key=lambda a: a.info["adapter_type"] == "CPU")
            _found[kind] = (os.getpid(), found)
        return found


def adapters(opengl: bool | None = None) -> list:
    """Every adapter dmlgpu offers, in the order adapter indices count (``"#0"``, ``"#1"``, ...).

    Those of the native backends (Vulkan, Metal, D3D12), GPUs before software adapters (type
    CPU, e.g. lavapipe), the driver's order otherwise kept; so on a host with two GPUs they are
    ``#0`` and ``#1`` whatever else is installed. OpenGL adapters follow them only where asked
    for (``opengl``, default ``DMLGPU_OPENGL=1``): probing OpenGL costs time and is not safe
    across threads. Enumerated once per process and reused; safe to call from any thread.
    """
    found = _enumerate("native")
    if opengl if opengl is not None else opengl_wanted():
        found = found + _enumerate("opengl")
    return found


def adapter_summary(adapter) -> dict:
    """Name, backend, type, limits and features of an adapter, as plain data."""
    info = adapter.info
    return {
        "device": info["device"],
        "backend": info["backend_type"],
        "type": info["adapter_type"],
        "limits": dict(adapter.limits),
        "features": sorted(adapter.features),
    }


def _matches(adapter, name: str) -> bool:
    """A name picks an adapter whose name contains it, or whose backend it names ("vulkan",
    "opengl"), case-insensitive."""
    name = name.strip().lower()
    return name in adapter.info["device"].lower() or name == adapter.info["backend_type"].lower()


def choose_adapter(name: str | None = None):
    """The adapter ``name`` picks, else the high-performance one.

    ``name`` is a substring of the adapter's name or the name of its backend (case-insensitive),
    or ``"#N"``: the adapter at index N of ``adapters()`` (identical GPUs have identical names,
    so only an index tells them apart; no adapter name holds ``#``). It defaults to the
    environment variable ``DMLGPU_ADAPTER``. The default is the first discrete GPU, else an
    integrated one, else any other, software adapters last. A name that no native adapter
    matches is looked for among OpenGL adapters too (the one way, with ``DMLGPU_OPENGL=1``,
    that OpenGL is probed).
    """
    name = name if name is not None else os.environ.get("DMLGPU_ADAPTER") or None
    if name is not None and not isinstance(name, str):
        raise TypeError(f"adapter must be a str (a part of an adapter's name, or '#N'), not {type(name).__name__}")
    if name is not None and not name.strip():
        raise AdapterError(f"adapter is {name!r}, but a name must hold a part of an adapter's name, or '#N'")
    try:
        found = adapters()
        if name is not None and not name.strip().startswith("#") and not any(_matches(a, name) for a in found):
            found = adapters(opengl=True)
    except Exception as err:  # wgpu could not load any backend
        raise AdapterError(f"{NO_ADAPTER_HELP} ({err})") from None
    listed = ", ".join(f"#{i} {a.info['device']} ({a.info['backend_type']})" for i, a in enumerate(found)) or "none"
    if name is None:
        if not found:
            raise AdapterError(f"{NO_ADAPTER_HELP}; OpenGL adapters are offered with DMLGPU_OPENGL=1")
        rank = {kind: i for i, kind in enumerate(_PREFERRED_TYPES)}
        return min(found, key=lambda a: rank.get(a.info["adapter_type"], len(rank) + (a.info["adapter_type"] == "CPU")))
    if name.strip().startswith("#"):
        digits = name.strip()[1:]
        if not (digits.isascii() and digits.isdigit()):
            raise AdapterError(f"adapter is {name!r}, but an index is '#' and digits, e.g. '#1'")
        if int(digits) >= len(found):
            raise AdapterError(f"adapter is {name!r}, but there is no adapter at that index; adapters: {listed}")
        return found[int(digits)]
    matches = [a for a in found if _matches(a, name)]
    if not matches:
        raise AdapterError(f"adapter is {name!r}, but no adapter's name contains it; adapters: {listed}")
    return matches[0]


def request_device(adapter, **options):
    """``adapter.request_device_sync(**options)`` under the process's adapter lock."""
    with _adapter_lock:
        return adapter.request_device_sync(**options)


def release_device(device) -> None:
    """Destroy a device and let go of wgpu-native's (its poll thread too), under the process's
    adapter lock. wgpu-py's device sits in a reference cycle of its own, so it would otherwise
    wait for the garbage collector."""
    with _adapter_lock:
        device.destroy()
        device._release()
