"""The runner: opens a wgpu device, orders work on its queue, and owns its lifetime.

It opens the device (``adapters``), records dispatches and submits them in order, and hands
the rest to its rooms: ``programs`` (pipelines and bind groups), ``memory`` (buffers and their
pools), ``transfers`` (bytes to and from the GPU) and a backend (``path``:
``native.NativePath`` or ``public.PublicPath``) that records, submits and maps. It knows
nothing of operators: it is handed WGSL text, parameter words and buffers.

**Two backends, one switch.** Recording, submitting, mapping and reading back go either
straight to wgpu-native through the ``ffi`` / ``lib`` that wgpu-py's backend exports, with
the calling thread polling the device until its map has landed (``native``, the default),
or through wgpu-py's public objects (``public``, where wgpu-py's own poll thread resolves
maps). ``DMLGPU_RUNNER=public`` selects the second; the native path is used only with the
wgpu-py versions in ``native.NATIVE_WGPU`` (it reads wgpu-py internals: objects' ``_internal``
handles and ``libf``), and any other version falls back to the public path with a warning.
Objects are created through wgpu-py either way, so that their lifetimes stay wgpu-py's.

**Threads.** Any number of threads may use one Runner. What is shared and how:

- ``lock`` (one per runner) orders everything that must happen in one order on the queue:
  appending a call's recorded encoder to the pending work, submitting, queue writes (which
  land before the next submit, so pending work is submitted first), starting a map, the
  pipeline cache, the buffer pools and the byte count. Each call records its passes into its
  own command encoder, so a call interrupted while recording (an error, Ctrl-C) drops only
  its own encoder and never leaves a shared one half-written or locked; a pending encoder has
  no pass open, and a read-back adds its copy to the last one (one command buffer for a
  small call's passes and its read-back, shorter than two: benchmarks/LOG.md, "The settings' measurements"). On the native
  path a dispatch stays its steps until the submit (``Deferred``), which records it, under
  the lock, with the read-back that follows it in one C call.
- No lock is held while a thread waits for the GPU, nor the interpreter's (cffi lets go of
  it for every C call): each thread waits for its own result, and the threads waiting on one
  device take turns polling it (``native.NativePath.wait``, ``_hot.c``'s ``DmlPoller``; the
  public path's maps land in wgpu-py's poll thread), so submissions from several threads are
  in flight together.
- Small calls on the native path share submissions (``commits.Commits``): a thread that finds no
  submission of them under way submits its own at once; the calls that arrive while one is
  under way (outside the lock: recording and submitting, in C) make the next batch, which one
  of their threads leads when it is done, with one encoder, one compute pass and one submit
  for all of them. A batch's threads wait on its own condition, not the lock. A resident
  call made alone (nothing else recorded, read or submitted: ``dispatch``'s ``now``) is
  recorded and submitted under the lock (``Commits.submit_alone``).
- A small output in mappable memory read in place (``Transfers._read_in_place``) is mapped
  from the submit that starts its map to its unmap; wgpu-native aborts the process on a
  submit that uses a mapped buffer. Such buffers are in ``mapped``; a submit whose work
  uses one (``uses``: the buffers of the pending work's steps and copies) waits until it is
  unmapped (``unmapped``, a condition of ``lock``), and any other submit goes ahead.
- Staging buffers are taken from and returned to pools, so a buffer is mapped by one
  thread at a time; a call that fails between map and unmap drops its staging buffer
  instead of returning it to the pool.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import threading
import traceback
from typing import Any

import wgpu

from ..errors import AdapterError, DeviceLostError, warn_at_caller
from ..plan import Capabilities
from .adapters import choose_adapter, release_device, request_device
from .admission import Admission
from .backend import Backend
from .commits import Commits
from .hot import hot_copier, settings
from .memory import Memory
from .native import Deferred, NativePath, native_unsupported
from .programs import Programs
from .public import PublicPath
from .recorder import check_device
from .transfers import Transfers

#: Features used when the adapter has them. "mappable-primary-buffers" lets a small call's
#: passes bind its staging buffers (``kits.Kit``).
_WANTED_FEATURES = ("shader-int64", "shader-f16", "subgroup", "timestamp-query", "shader-int64-atomic-all-ops",
                    "mappable-primary-buffers")


class _MappableWarning(logging.Filter):
    """wgpu-native warns, on a discrete GPU, that "mappable-primary-buffers" is "a massive
    performance footgun" (for buffers a GPU reads much of over the bus); dmlgpu binds only a
    small call's staging with it, and says so in ``kits.Kit.make``."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not record.getMessage().startswith("Feature MAPPABLE_PRIMARY_BUFFERS enabled")


logging.getLogger("wgpu").addFilter(_MappableWarning())

def _check_limits(limits, needs: dict) -> None:
    """An ``AdapterError`` naming every limit of a caller's device below what ``needs`` asks."""
    short = [name for name, (least, _) in needs.items() if limits.get(name, 0) < least]
    if short:
        why = "; ".join(f"{name} is {limits.get(name)}, but {needs[name][1]} (at least {needs[name][0]})"
                        for name in short)
        asks = ", ".join(f"{name!r}: {needs[name][0]}" for name in short)
        raise AdapterError(f"the wgpu device lacks what dmlgpu needs: {why}. Request the device "
                           f"with required_limits={{{asks}}} (or a smaller dmlgpu Tuning.workgroup_size)")


def _open(name: str | None, int64: bool | None, device, needs: dict | None) -> tuple:
    """(adapter, wgpu device, features used, limits): the adapter ``name`` picks opened with the
    features of ``_WANTED_FEATURES`` it has; or the caller's ``device`` as it is, its limits
    checked against ``needs`` (``Runner.__init__``)."""
    if device is None:
        adapter = choose_adapter(name)
        available, where = set(adapter.features), f"adapter {adapter.info['device']!r}"
    else:
        check_device(device)
        adapter = device.adapter
        available, where = set(device.features), "the wgpu device (request it with that feature)"
    wanted = [f for f in _WANTED_FEATURES if f in available]
    if int64 is False:
        wanted = [f for f in wanted if f != "shader-int64"]
    elif int64 is True and "shader-int64" not in available:
        raise AdapterError(f"int64 is True, but {where} lacks shader-int64")
    if device is not None:
        _check_limits(device.limits, needs or {})
        return adapter, device, frozenset(wanted), device.limits
    limits = adapter.limits
    device = request_device(
        adapter,
        required_features=wanted,
        required_limits={
            "max-storage-buffer-binding-size": limits["max-storage-buffer-binding-size"],
            "max-buffer-size": limits["max-buffer-size"],
        },
    )
    return adapter, device, frozenset(wanted), limits


#: Recorded work reading at least this many bytes is submitted at once, so that the GPU runs
#: it while Python records the next call; smaller work waits for the next read (one submit).
SUBMIT_EARLY_BYTES = 4 << 20

def _capabilities(features: set, limits, smaller: dict, software: bool = False) -> Capabilities:
    """What the planner may use of a device with these features and limits (of a CPU adapter
    where ``software``), made ``smaller`` (``Runner``) where asked."""
    capabilities = Capabilities(
        max_storage_binding=limits["max-storage-buffer-binding-size"],
        max_buffer=limits["max-buffer-size"],
        max_workgroups_per_dim=limits["max-compute-workgroups-per-dimension"],
        shader_int64="shader-int64" in features,
        offset_alignment=limits["min-storage-buffer-offset-alignment"],
        subgroups="subgroup" in features,
        int64_atomics={"shader-int64", "shader-int64-atomic-all-ops"} <= features,
        software=software,
    )
    for name, value in smaller.items():
        if value > getattr(capabilities, name):
            raise AdapterError(f"smaller[{name!r}] is {value}, above the adapter's {getattr(capabilities, name)}")
    return dataclasses.replace(capabilities, **smaller)


def _choose_path(device) -> NativePath | PublicPath:
    """The native path (``_hot.c``) unless DMLGPU_RUNNER says public or it cannot run here."""
    wanted = os.environ.get("DMLGPU_RUNNER", "native").strip().lower()
    if wanted not in ("native", "public"):
        raise AdapterError(f"DMLGPU_RUNNER is {wanted!r}, but it must be 'native' or 'public'")
    if wanted == "native":
        reason = native_unsupported()
        if reason is None:
            try:
                return NativePath(device)
            except RuntimeError as err:  # no hot loop: installed without it, or it does not match
                reason = str(err)
        warn_at_caller(f"dmlgpu: {reason}; using wgpu-py's public objects (slower small calls)", UserWarning)
    return PublicPath(device)


class Runner:
    """One wgpu device: its pipeline cache, the order of work on its queue, its lifetime, and
    its rooms (``memory``, ``transfers``, ``path``)."""

    # Long: opening a device is one sequence (adapter, features, limits, capabilities, backend,
    # the queue's state, the rooms), each step reading the one before.
    def __init__(self, adapter: str | None = None, *, int64: bool | None = None, smaller: dict | None = None,
                 device=None, needs: dict | None = None):
        """``smaller``: act as if the adapter bound and held less (``max_storage_binding``,
        ``max_buffer``: tensors beyond one binding; ``memory``: bytes of buffers the runner
        may hold at once), so that tests reach those paths on small inputs.

        ``device``: a wgpu device of the caller's to run on, rather than one opened here
        (``Device.from_wgpu``): its queue is used, its features (those of ``_WANTED_FEATURES``
        it has) and limits are taken as they are, checked first against ``needs`` (limit name:
        (least value, why): ``programs.required_limits``), and ``close`` leaves it working."""
        self.owns_device = device is None
        self.adapter, self.device, self.features, limits = _open(adapter, int64, device, needs)
        smaller = dict(smaller or {})
        memory_limit = smaller.pop("memory", None)
        self.capabilities = _capabilities(self.features, limits, smaller, self.adapter.info["adapter_type"] == "CPU")
        path = _choose_path(self.device)
        self.path: Backend[Any] = path
        # the path where it is the native one, else None (asked on every dispatch)
        self.native: NativePath | None = path if isinstance(path, NativePath) else None
        if self.native is not None:
            threads = settings()
            self.native.nap_s = threads["nap_us"] * 1e-6  # (every adapter: hot.NAP_S says why)
            if self.adapter.info["adapter_type"] != "CPU":
                self.native.spin_s = threads["spin_us"] * 1e-6
                self.native.copier = hot_copier(threads["copy_helpers"], self.native.spin_s)
        # small outputs in mappable memory: a NumPy call's kit binds its staging (kits.Kit), a
        # resident call writes a buffer a read maps as it is (Memory.storage(readable=True));
        # on the native path, whose dispatches are recorded at their submit (Deferred)
        self.in_place = "mappable-primary-buffers" in self.features and self.native is not None
        self.lock = threading.RLock()
        # Finished command buffers of calls recorded since the last submit, the bytes their
        # passes read (small calls share one submit with their read-back), and the buffers
        # they use where known (``Steps.buffers``, copies)
        self._pending: list = []
        self._pending_bytes = 0
        self._pending_uses: set = set()
        # buffers mapped for a read in place, which no submit may use, and those a read in place
        # has claimed before its map starts (module docstring)
        self.mapped: set = set()
        self.reading: set = set()
        self.commits = Commits(self)  # small calls submitted together (its ``leading``: one is now)
        self.admission = Admission()  # resident small calls one at a time, to their read-backs
        self.changed = threading.Condition(self.lock)  # mapped, reading or commits.leading changed
        self._waiting = 0  # threads waiting on ``changed`` (``wait_until``)
        self._queued = False  # small writes queued since the last submit (``Transfers.write``)
        # write staging that pending work copies out of, mapped again after its submit
        self._remap: list = []
        self._lost: str | None = None
        self.memory = Memory(self, memory_limit)
        self.transfers = Transfers(self, os.cpu_count() or 1)
        self.programs = Programs(self)

    @property
    def name(self) -> str:
        return self.adapter.info["device"]

    @property
    def backend(self) -> str:
        return self.adapter.info["backend_type"]

    # ------------------------------------------------------------------ errors and lifetime

    @property
    def usable(self) -> bool:
        """False once the device was closed or lost."""
        return self._lost is None

    def check(self) -> None:
        """Raise ``DeviceLostError`` if the device was closed or lost."""
        if self._lost is not None:
            raise DeviceLostError(f"device {self.name!r} {self._lost}; open a new dmlgpu.Device")

    def lose(self, why: str) -> None:
        """Take the device as lost (``why``: what happened), unless it is gone already."""
        self._lost = self._lost or f"was lost ({why})"

    def gpu_error(self, err: Exception) -> Exception:
        """Our error for an error wgpu raised: a lost device is remembered.

        wgpu-py's errors hold the frames that raised them in a reference cycle; those frames
        hold memoryviews that C code borrowed, and the garbage collector can crash clearing
        such a cycle. Clearing the frames' locals now breaks it."""
        traceback.clear_frames(err.__traceback__)
        text = str(err)
        if "lost" in text.lower():
            self._lost = f"was lost ({text.strip().splitlines()[-1].strip()})"
            return DeviceLostError(f"device {self.name!r} {self._lost}; open a new dmlgpu.Device")
        return err

    def close(self) -> None:
        """Destroy every buffer this runner made and, where it opened the device, the device
        itself; a caller's device (``owns_device`` False) is left working. Later use raises."""
        with self.lock:
            if self._lost is not None and self._lost.startswith("was closed"):
                return
            for encoder in self._pending:
                encoder.drop()
            self._pending, self._remap = [], []
            self.notify_changed()
            for m in self.memory.writes.clear():  # let their maps land: a pending map keeps its
                try:                              # buffer (and wgpu-py's, its device) alive
                    self.path.wait(m, None)
                except DeviceLostError:
                    pass
            self._lost = "was closed"
            self.memory.take_kept()  # the device's destroy below destroys them all
            self.programs.clear()
            self.transfers.close()
            self.memory.forget(destroy=not self.owns_device)  # (the caller's device lives on)
            if self.owns_device:
                release_device(self.device)
            else:
                self.programs.close()

    # ------------------------------------------------------------------ recording and submitting

    def encode(self, steps, clear=None, copies=(), into=None):
        """An encoder (``into``, or a new one) with ``clear`` zeroed, the steps (pipeline, bind
        group, grid), then ``copies`` (src, src offset, dst, dst offset, size) recorded; not
        finished, and with no pass left open: ``submit`` finishes it. If recording fails, a
        new encoder is dropped; ``into`` is never handed in half-recorded (only copies, which
        open no pass, are added to one)."""
        encoder = into or self.path.encoder()
        try:
            encoder.record(clear, steps)
            for copy in copies:
                encoder.copy(*copy)
            return encoder
        except BaseException as err:
            if into is None:
                encoder.drop()
            if isinstance(err, wgpu.GPUError):
                raise self.gpu_error(err) from None
            raise

    def dispatch(self, steps, *, clear=None, reads: int = 0, now: bool = False) -> None:
        """Record the steps (pipeline, bind group, grid), ``clear`` zeroed first (on the native
        path: keep them, to be recorded at the submit).

        They run at the next submit: a read, a write, or at once when the work recorded since
        the last submit reads ``SUBMIT_EARLY_BYTES`` or more (``reads``: what these steps read),
        so that the GPU runs large work while the caller records the next. ``now``: a small
        call's, submitted at once on the native path where it is the only work recorded and no
        read or submission is under way (``Commits.submit_alone``: a thread calling alone), so
        that the GPU runs it while the caller goes on to its read; calls from several threads
        at once go on sharing submits (``Commits.commit``).
        """
        with self.lock:
            self.check()
            native = self.native
            self._pending.append(Deferred(native, steps, clear) if native is not None else self.encode(steps, clear))
            uses = getattr(steps, "buffers", None)
            if uses:
                self._pending_uses.update(uses)
            if clear:
                self._pending_uses.update(clear)
            if now and native is not None and len(self._pending) == 1 and not self.mapped and not self.reading:
                self.commits.submit_alone()  # (no other call's work or read in flight: a thread alone)
            else:
                self._count_pending(reads)

    def enqueue(self, encoder, uses=()) -> None:
        """Add an encoder the caller recorded (``encode``), which uses the buffers ``uses``, to
        the pending work: it runs at the next submit, in order with the rest. Under the lock."""
        self._pending.append(encoder)
        self._pending_uses.update(uses)

    def record_copy(self, copy: tuple, remap=None) -> None:
        """Record a buffer copy (src, src offset, dst, dst offset, size) like any other work:
        it runs at the next submit, in order with the rest; ``remap``: the map of the write
        staging it copies out of, mapped again after that submit (``Transfers.remapped``).
        Under the lock."""
        self.enqueue(self.encode((), copies=[copy]), (copy[0], copy[2]))
        if remap is not None:
            self._remap.append(remap)
        self._count_pending(copy[4])

    def queued_write(self, nbytes: int) -> None:
        """Note a queue write of ``nbytes`` (it lands before the next submit). Under the lock."""
        self._queued = True
        self._count_pending(nbytes)

    def _count_pending(self, nbytes: int) -> None:
        """Count bytes that recorded work reads or queued writes hold, and submit once they
        reach ``SUBMIT_EARLY_BYTES`` (under the lock)."""
        self._pending_bytes += nbytes
        if self._pending_bytes >= SUBMIT_EARLY_BYTES:
            self.submit()

    def submit_pending(self, writes: bool = True) -> None:
        """Submit the recorded work (and, with ``writes``, the queued writes) if there is any,
        e.g. before a buffer they may use is destroyed; in any case, return when no batch of
        committed calls is being submitted (a queue write may follow). Under the lock."""
        if self.commits.leading:
            self.wait_until(lambda: not self.commits.leading, check=False)
        if self._pending or (writes and (self._queued or self._remap)):
            self.submit()

    def submit(self, extra=(), read=None, uses=()):
        """Finish and submit the pending encoders (and ``extra``, which uses the buffers
        ``uses``), with the queued writes ahead of them, and ``read`` = (src, offset, map of a
        MAP_READ staging buffer): its copy recorded last and its map started
        (``path.submit``). The submission's ticket; None where there was nothing to submit.
        Under the lock; waits (letting go of it) while a batch of committed calls is being
        submitted (``Commits``), and while the work uses a buffer mapped for a read in place."""
        if self.commits.leading:
            self.wait_until(lambda: not self.commits.leading, check=False)
        if self.mapped:
            self.wait_unmapped(read[0] if read is not None else None, uses)
        encoders, queued, remap = self.take_pending(extra)
        if not encoders and not queued and read is None:
            return None
        try:
            ticket = self.path.submit(encoders, read)
        except wgpu.GPUError as err:
            for m in remap:
                self.memory.destroy(m.buffer)
            raise self.gpu_error(err) from None
        finally:
            for encoder in encoders:
                encoder.drop()
        if remap:
            self.transfers.remapped(remap)
        return ticket

    def settled(self) -> bool:
        """Nothing recorded, no queued write and no submission under way: every buffer the
        work wrote is written by work already submitted, and may be mapped now (a read in place
        with no submit of its own, ``Transfers._read_in_place``). Under the lock."""
        return not self._pending and not self._queued and not self._remap and self.commits.idle()

    def take_pending(self, extra=()) -> tuple[list, bool, list]:
        """For a submission: the recorded work (and ``extra`` after it), whether writes were
        queued (they land ahead of it), and the write staging to map again after it; taken,
        and the count of pending bytes started again. Under the lock."""
        pending = self._pending + list(extra) if extra else self._pending
        self._pending, self._pending_bytes, self._pending_uses = [], 0, set()
        queued, self._queued = self._queued, False
        remap, self._remap = self._remap, []
        return pending, queued, remap

    def wait_unmapped(self, read, uses) -> None:
        """Until no buffer of the pending work (nor ``read``, nor ``uses``) is mapped."""
        def unmapped() -> bool:
            mapped = self.mapped
            return mapped.isdisjoint(self._pending_uses) and read not in mapped and mapped.isdisjoint(uses)

        self.wait_until(unmapped)

    def wait_until(self, ready, check: bool = True) -> None:
        """Wait (letting go of the lock) until ``ready()``: it looks at ``mapped``, ``reading``
        or ``commits.leading``, whose changes are told by ``notify_changed`` (``check``: raise if the
        device is lost meanwhile). The thread counts as waiting from before its first look, so
        that a buffer ``unmapped`` without the lock is never missed. Under the lock."""
        self._waiting += 1
        try:
            while not ready():
                self.changed.wait()
                if check:
                    self.check()
        finally:
            self._waiting -= 1

    def notify_changed(self) -> None:
        """Wake the threads waiting in ``wait_until``, if any. Under the lock."""
        if self._waiting:
            self.changed.notify_all()

    def unmapped(self, buffer) -> None:
        """A buffer read in place is unmapped and its read over (``Transfers._read_in_place``):
        out of ``mapped`` and ``reading``, the threads waiting for that woken. Without the lock
        (each set's discard is atomic, and ``wait_until`` counts a waiter before it looks), so
        that threads ending their reads at once do not queue for it."""
        self.mapped.discard(buffer)
        self.reading.discard(buffer)
        if self._waiting:
            with self.lock:
                self.changed.notify_all()

    def flush(self) -> None:
        """Submit the recorded work."""
        with self.lock:
            self.check()
            self.submit()

    def copy_repeated(self, src, block: int, dst, total: int) -> None:
        """Record copies of ``src``'s first ``block`` bytes over ``dst``'s first ``total``, one
        after another (the last one cut short): a buffer filled on the GPU from a small one,
        at the next submit."""
        with self.lock:
            self.check()
            for offset in range(0, total, block):
                self.record_copy((src, 0, dst, offset, min(block, total - offset)))
