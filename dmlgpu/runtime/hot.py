"""The native backend's hot path in C (``_hot.c``): building it, loading it, its copy helpers.

Owns the C declarations of ``_hot.c``, the compiled library's cache and the process's copy
helper threads (``hot_copier``).
"""

from __future__ import annotations

import os
import threading

#: A wait on the native path polls without blocking for this long before it blocks (small
#: calls end within it; see ``NativePath.wait``). Not on software adapters (lavapipe), whose
#: "GPU" is the CPU's cores: a spinning caller would take one from the work it waits for.
SPIN_S = 0.5e-3

#: Copies of at least this many bytes into mapped staging on the native path run on
#: ``FILL_HELPERS`` threads besides the caller's (``hot_copier``; not on software adapters,
#: as ``SPIN_S``). Upload staging is write-combined memory that one core writes at about
#: 15 GB/s: on the H100's host a 600 KB input took 46.0 us on one core, 23.7 on two, 21.7 on
#: four, 20.5 on eight (C threads spinning for the work, one process).
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
    void *device, *queue;
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
}} DmlFns;
size_t dml_layout(int which);
DmlState *dml_state_new(int landed);
int dml_state(const DmlState *s);
void dml_state_drop(DmlState *s);
void dml_map(const DmlFns *f, void *buffer, int write, size_t size, DmlState *s);
typedef struct DmlPoller DmlPoller;
DmlPoller *dml_poller_new(void);
void dml_poller_free(DmlPoller *p);
int dml_wait(const DmlFns *f, void *device, const DmlState *s, double spin_s, double idle_timeout_s,
             const uint64_t *ticket, DmlPoller *p);
void *dml_record(const DmlFns *f, void *device, void *encoder, void *clear, uint64_t clear_size,
                 const DmlStep *steps, size_t n_steps);
void dml_finish(const DmlFns *f, void **encoders, size_t count);
void dml_release(const DmlFns *f, void **buffers, size_t count);
uint64_t dml_submit(const DmlFns *f, void *queue, void **buffers, size_t count);
typedef struct DmlCopier DmlCopier;
DmlCopier *dml_copier_start(int helpers, double spin_s);
int dml_copier_helpers(const DmlCopier *p);
void dml_copier_stop(DmlCopier *p);
int dml_fill(const DmlFns *f, DmlCopier *p, size_t parallel_above, void *buffer, size_t size, const void *data,
             size_t nbytes);
int dml_drain(const DmlFns *f, void *buffer, size_t size, void *out, size_t nbytes);
size_t dml_record_call(const DmlFns *f, const DmlCall *c, void **pending, size_t n_pending);
void dml_submit_call(const DmlFns *f, DmlCall *c, void **buffers, size_t count);
"""
_hot_loaded: list = []  # [(ffi, lib)] once loaded, [None, reason] once it failed
_copier: list = []  # [pid, DmlCopier] of this process (hot_copier)
_copier_lock = threading.Lock()


def hot_cache_dir() -> str:
    """Where the compiled hot path is kept: ``DMLGPU_CACHE``, else the user's cache folder."""
    return os.environ.get("DMLGPU_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"), "dmlgpu")


def _compile_hot() -> str:
    """The path of ``_hot.c`` compiled into a shared library (once per source text and
    compiler: the file's name holds their hash); raises RuntimeError saying why not."""
    import hashlib
    import shlex
    import shutil
    import subprocess
    import sys
    import tempfile
    from importlib import resources

    source = resources.files("dmlgpu.runtime").joinpath("_hot.c").read_bytes()
    compiler = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    if not compiler or sys.platform == "win32":
        raise RuntimeError("no C compiler was found to build the native path's hot loop (set CC, or install cc)")
    key = hashlib.sha256(source + compiler.encode() + sys.platform.encode()).hexdigest()[:16]
    folder = hot_cache_dir()
    target = os.path.join(folder, f"hot-{key}.so")
    if os.path.exists(target):
        return target
    try:
        os.makedirs(folder, exist_ok=True)
    except OSError:  # no writable cache folder: one in the temporary folder
        folder = os.path.join(tempfile.gettempdir(), f"dmlgpu-{os.getuid() if hasattr(os, 'getuid') else 0}")
        target = os.path.join(folder, f"hot-{key}.so")
        if os.path.exists(target):
            return target
        os.makedirs(folder, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=folder) as work:
        src = os.path.join(work, "_hot.c")
        with open(src, "wb") as f:
            f.write(source)
        built = os.path.join(work, "hot.so")
        try:  # CC may hold flags too ("gcc -m64"), as make reads it
            done = subprocess.run([*shlex.split(compiler), "-O2", "-std=c11", "-pthread", "-shared", "-fPIC", "-o", built, src],
                                  capture_output=True, text=True)
        except OSError as err:
            raise RuntimeError(f"{compiler} could not build the native path's hot loop: {err}") from None
        if done.returncode != 0:
            raise RuntimeError(f"{compiler} could not build the native path's hot loop: {done.stderr.strip()[-500:]}")
        os.replace(built, target)  # atomic: another process may be building it too
    return target


def hot_library():
    """(ffi, lib) of the compiled hot path, loaded once; raises RuntimeError saying why not."""
    if not _hot_loaded:
        import cffi
        from wgpu.backends.wgpu_native._api import ffi as wffi

        try:
            path = _compile_hot()
            ffi = cffi.FFI()
            ffi.cdef(_HOT_CDEF)
            lib = ffi.dlopen(path)
            # the structs passed to wgpu-native by value must be laid out as its own header says
            ours = [lib.dml_layout(i) for i in range(4)]
            theirs = [wffi.sizeof("WGPUBufferMapCallbackInfo"), wffi.offsetof("WGPUBufferMapCallbackInfo", "callback"),
                      wffi.sizeof("WGPUStringView"), wffi.sizeof("WGPUFuture")]
            if ours != theirs:
                raise RuntimeError(f"_hot.c's structs {ours} do not match wgpu-native's {theirs}")
            _hot_loaded[:] = [(ffi, lib)]
        except (OSError, RuntimeError) as err:
            _hot_loaded[:] = [None, str(err)]
    if _hot_loaded[0] is None:
        raise RuntimeError(_hot_loaded[1])
    return _hot_loaded[0]


def hot_copier(helpers: int | None = None):
    """This process's helper threads for copies into mapped staging (``_hot.c``'s
    ``DmlCopier``), started on first use and shared by every device, like a BLAS library's
    threads: they spin for ``SPIN_S`` after a copy, then sleep until the next. A child
    process gets its own. ``helpers``: how many the first call starts (default
    ``FILL_HELPERS``, fewer on a host with fewer cores). NULL where none could start."""
    ffi, lib = hot_library()
    with _copier_lock:
        if not _copier or _copier[0] != os.getpid():
            if helpers is None:
                helpers = min(FILL_HELPERS, (os.cpu_count() or 1) - 1)
            _copier[:] = [os.getpid(), lib.dml_copier_start(helpers, SPIN_S) if helpers > 0 else ffi.NULL]
        return _copier[1]
