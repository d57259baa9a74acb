"""The native backend's hot path in C (``_hot.c``): loading it, its copy helpers, and the
settings of the host threads and spinning.

Owns the C declarations of ``_hot.c``, the loading of the library ``setup.py`` compiled into
the installed package (``library_path``: nothing is compiled at run time), the process's copy
helper threads (``hot_copier``) and ``configure`` / ``settings``. Touches wgpu-py only to
check that ``_hot.c``'s structs match wgpu-native's.
"""

from __future__ import annotations

import contextlib
import os
import threading

#: A wait on the native path polls without blocking for this long before it blocks (small
#: calls end within it; see ``NativePath.wait``), by default (``configure``'s ``spin_us``).
#: Not on software adapters (lavapipe), whose "GPU" is the CPU's cores: a spinning caller
#: would take one from the work it waits for.
SPIN_S = 0.5e-3

#: After its spin, a large transfer's wait (a staging buffer of its ring, a chunk's result)
#: polls without blocking every this many seconds, asleep between polls (``configure``'s
#: ``nap_us``; 0: it blocks in wgpu-native's poll, as before issue 49). A blocking poll holds
#: wgpu's fence lock until the GPU is done, and every other thread's submit waits for it (wgpu
#: 29): a worker's thread waiting for one chunk's result kept the next chunk's copies off the
#: queue (benchmarks/LOG.md, 2026-11-28, issue 49). A small call's wait still blocks after its
#: spin: it is over in tens of microseconds, which a nap (and the timer's slack) would outlast.
#: On every adapter, software ones too (the lock is wgpu's, whatever runs the shaders).
NAP_S = 50e-6

#: Copies of at least this many bytes into mapped staging on the native path run on
#: ``FILL_HELPERS`` threads besides the caller's (``hot_copier``; not on software adapters,
#: as ``SPIN_S``). Upload staging is write-combined memory that one core writes at about
#: 15 GB/s, and a few cores together about twice as fast (benchmarks/LOG.md, "The settings' measurements").
FILL_PARALLEL_ABOVE = 128 << 10
FILL_HELPERS = 3

#: What this module declares of ``_hot.c`` (see that file); the table of wgpu-native functions
#: is an array of pointers here, a struct of them there (the same layout).
HOT_FUNCTIONS = (
    "wgpuDeviceCreateCommandEncoder", "wgpuCommandEncoderBeginComputePass", "wgpuComputePassEncoderSetPipeline",
    "wgpuComputePassEncoderSetBindGroup", "wgpuComputePassEncoderDispatchWorkgroups", "wgpuComputePassEncoderEnd",
    "wgpuComputePassEncoderRelease", "wgpuCommandEncoderClearBuffer", "wgpuCommandEncoderCopyBufferToBuffer",
    "wgpuCommandEncoderFinish", "wgpuCommandEncoderRelease", "wgpuQueueSubmitForIndex", "wgpuCommandBufferRelease",
    "wgpuBufferMapAsync", "wgpuDevicePoll", "wgpuBufferGetMappedRange", "wgpuBufferUnmap",
)
_HOT_CDEF = f"""
typedef struct {{ int word; }} DmlState;
typedef struct {{ void *pipeline, *group; uint32_t x, y, z; }} DmlStep;
typedef struct {{
    void *wstaging; DmlState *wstate; void *input; uint64_t in_size;
    void *clear; uint64_t clear_size;
    const DmlStep *steps; size_t n_steps;
    void *output; uint64_t out_offset; void *rstaging; DmlState *rstate; uint64_t out_size;
    uint64_t ticket;
}} DmlCall;
typedef struct {{
    void *fn[{len(HOT_FUNCTIONS)}];
    uint32_t callback_mode, map_success; uint64_t map_read, map_write;
    const void *encoder_descriptor, *pass_descriptor, *buffer_descriptor;
    void *poller;
}} DmlFns;
size_t dml_layout(int which);
DmlState *dml_state_new(int landed);
int dml_state(const DmlState *s);
void dml_state_drop(DmlState *s);
void dml_map(const DmlFns *f, void *buffer, int write, size_t size, DmlState *s);
typedef struct DmlPoller DmlPoller;
DmlPoller *dml_poller_new(void);
void dml_poller_free(DmlPoller *p);
int dml_wait(const DmlFns *f, void *device, const DmlState *s, double spin_s, double nap_s, double idle_timeout_s,
             const uint64_t *ticket);
void *dml_record(const DmlFns *f, void *device, void *encoder, void *clear, uint64_t clear_size,
                 const DmlStep *steps, size_t n_steps);
void dml_release(const DmlFns *f, void **buffers, size_t count);
typedef struct DmlCopier DmlCopier;
DmlCopier *dml_copier_start(int helpers, double spin_s);
int dml_copier_helpers(const DmlCopier *p);
void dml_copier_stop(DmlCopier *p);
int dml_fill(const DmlFns *f, void *device, const DmlState *s, double spin_s, double idle_timeout_s,
             DmlCopier *p, size_t parallel_above, void *buffer, size_t size, const void *data, size_t nbytes);
int dml_read(const DmlFns *f, void *device, const DmlState *s, double spin_s, double nap_s, double idle_timeout_s,
             const uint64_t *ticket, void *buffer, size_t size, void *out, size_t nbytes);
size_t dml_record_calls(const DmlFns *f, void *device, DmlCall *const *calls, size_t n, void **pending,
                        size_t n_pending);
uint64_t dml_submit_calls(const DmlFns *f, void *queue, DmlCall *const *calls, size_t n, void **buffers,
                          size_t count);
void dml_resume_polls(const DmlFns *f);
"""
_hot_loaded: list = []  # [(ffi, lib)] once loaded, [None, reason] once it failed
_copiers: dict = {}  # (pid, helpers, spin_s) -> DmlCopier of this process (hot_copier)
_copier_lock = threading.Lock()
#: What ``configure`` set (None: the environment's, else the default).
_configured: dict[str, int | None] = {"copy_helpers": None, "spin_us": None, "nap_us": None}
_ENV = {"copy_helpers": "DMLGPU_COPY_HELPERS", "spin_us": "DMLGPU_SPIN_US", "nap_us": "DMLGPU_NAP_US"}
_MOST_HELPERS = 16  # _hot.c's DML_MAX_HELPERS


def _checked_setting(name: str, value, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{where} must be an int, not {type(value).__name__} ({value!r})")
    most = _MOST_HELPERS if name == "copy_helpers" else 10**7
    if not 0 <= value <= most:
        raise ValueError(f"{where} is {value}, but it must be in [0, {most}]")
    return value


def configure(*, copy_helpers: int | None = None, spin_us: int | None = None, nap_us: int | None = None) -> dict:
    """Set the host threads and spinning of devices opened from now on; returns the settings
    before (``settings()``), so that they can be put back with ``configure(**before)`` (as
    values set from then on: the environment no longer counts for them).

    ``copy_helpers``: threads that help copy a small call's input into mapped staging (0:
    none; default 3, fewer on hosts with fewer cores; ``DMLGPU_COPY_HELPERS``). ``spin_us``:
    how long a wait for the GPU polls without blocking, and a helper spins for its next copy,
    before they sleep (0: block at once; default 500; ``DMLGPU_SPIN_US``). Neither applies
    to software adapters (lavapipe), whose "GPU" is the CPU's cores. ``nap_us``: after the
    spin, how long a large transfer's wait sleeps between polls that do not block (default
    50; ``DMLGPU_NAP_US``; 0: it blocks in wgpu-native's poll, which keeps other threads'
    submits waiting meanwhile, as a small call's wait does: ``NAP_S``), on every adapter.
    The defaults are the fast ones on a GPU; an idle process uses no CPU either way."""
    before = settings()
    for name, value in (("copy_helpers", copy_helpers), ("spin_us", spin_us), ("nap_us", nap_us)):
        if value is not None:
            _configured[name] = _checked_setting(name, value, name)
    return before


@contextlib.contextmanager
def configured(**values):
    """``configure(**values)`` for the devices opened inside the block, then what was
    configured before put back as it was (unset settings unset again, so the environment
    counts once more), not pinned to the values they had (as ``configure(**before)`` does)."""
    saved = dict(_configured)
    configure(**values)
    try:
        yield
    finally:
        _configured.update(saved)


def settings() -> dict:
    """The host threads, spinning and napping devices opened now get: ``configure``'s, else
    the environment's (``DMLGPU_COPY_HELPERS``, ``DMLGPU_SPIN_US``, ``DMLGPU_NAP_US``), else
    the defaults."""
    defaults = {"copy_helpers": min(FILL_HELPERS, (os.cpu_count() or 1) - 1), "spin_us": int(SPIN_S * 1e6),
                "nap_us": int(NAP_S * 1e6)}
    out = {}
    for name, default in defaults.items():
        value = _configured[name]
        if value is None and os.environ.get(_ENV[name], "").strip():
            text = os.environ[_ENV[name]].strip()
            if not text.isdigit():
                raise ValueError(f"{_ENV[name]} is {text!r}, but it must be a whole number >= 0")
            value = _checked_setting(name, int(text), _ENV[name])
        out[name] = default if value is None else value
    return out


def library_path() -> tuple[str | None, str]:
    """Where the installed package keeps its compiled hot path (``setup.py`` builds it), and
    why there is none (an empty reason where there is one). Native code is loaded from here
    only: never compiled at run time, never from a cache or a temporary folder."""
    from importlib import resources

    folder = resources.files("dmlgpu.runtime")
    missing = folder.joinpath("_hot_missing.txt")
    if missing.is_file():
        return None, f"this install of dmlgpu has no compiled hot loop: {missing.read_text().strip()}"
    library = folder.joinpath("_hot.so")
    if not library.is_file():
        return None, ("this install of dmlgpu carries no compiled hot path (dmlgpu/runtime/_hot.so); "
                      "reinstall it where a C compiler is present, or from a wheel for this platform")
    return str(library), ""


def hot_library():
    """(ffi, lib) of the compiled hot path, loaded once; raises RuntimeError saying why not."""
    if not _hot_loaded:
        import cffi
        from wgpu.backends.wgpu_native._api import ffi as wffi

        try:
            path, missing = library_path()
            if path is None:
                raise RuntimeError(missing)
            ffi = cffi.FFI()
            ffi.cdef(_HOT_CDEF)
            lib = ffi.dlopen(path)
            # the structs passed to wgpu-native by value must be laid out as its own header says
            ours = [lib.dml_layout(i) for i in range(4)]
            theirs = [wffi.sizeof("WGPUBufferMapCallbackInfo"), wffi.offsetof("WGPUBufferMapCallbackInfo", "callback"),
                      wffi.sizeof("WGPUStringView"), wffi.sizeof("WGPUFuture")]
            if ours != theirs:
                raise RuntimeError(f"_hot.c's structs {ours} do not match wgpu-native's {theirs}")
            # and ours as this module declares them (a library built from another _hot.c would
            # read them wrongly: a crash, not an error)
            built, declared = [lib.dml_layout(4), lib.dml_layout(5)], [ffi.sizeof("DmlCall"), ffi.sizeof("DmlFns")]
            if built != declared:
                raise RuntimeError(f"{path} was built from another _hot.c (struct sizes {built}, declared "
                                   f"{declared}): reinstall dmlgpu")
            _hot_loaded[:] = [(ffi, lib)]
        except (OSError, RuntimeError) as err:
            _hot_loaded[:] = [None, str(err)]
    if _hot_loaded[0] is None:
        raise RuntimeError(_hot_loaded[1])
    return _hot_loaded[0]


def hot_copier(helpers: int, spin_s: float):
    """Helper threads for copies into mapped staging (``_hot.c``'s ``DmlCopier``): ``helpers``
    threads that spin for ``spin_s`` after a copy, then sleep until the next; started on
    first use of that setting and shared by every device of this process that uses it, like a
    BLAS library's threads (a child process gets its own). NULL for none, or where none could
    start."""
    ffi, lib = hot_library()
    key = (os.getpid(), helpers, spin_s)
    with _copier_lock:
        if key not in _copiers:
            _copiers[key] = lib.dml_copier_start(helpers, spin_s) if helpers > 0 else ffi.NULL
        return _copiers[key]
