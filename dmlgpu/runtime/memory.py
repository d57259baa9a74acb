"""GPU memory: allocating buffers, the pools of buffers kept for reuse, and running out.

Owns the usages every room allocates with, the sizes buffers are rounded to (``word_size``,
``bound_size``), ``Pool`` and ``Memory``: one per runner, holding every pool (storage,
readable storage, read and write staging, the staging rings) and counting the buffers it
made. May touch the runner's device (to create buffers) and its queue order (recorded work is
submitted before a buffer it may use is destroyed); nothing records or maps here.
"""

from __future__ import annotations

import collections
import weakref
from collections import OrderedDict, defaultdict
from typing import TYPE_CHECKING, Any, cast

import wgpu

from ..errors import AdapterError, DeviceLostError, GPUMemoryError

if TYPE_CHECKING:
    from .runner import Runner

STORAGE = wgpu.BufferUsage.STORAGE | wgpu.BufferUsage.COPY_DST | wgpu.BufferUsage.COPY_SRC
MAP_READ = wgpu.BufferUsage.MAP_READ | wgpu.BufferUsage.COPY_DST
MAP_WRITE = wgpu.BufferUsage.MAP_WRITE | wgpu.BufferUsage.COPY_SRC
#: A small call's upload staging that its passes bind as their input
MAP_WRITE_BOUND = MAP_WRITE | wgpu.BufferUsage.STORAGE
#: A small output that passes write into mappable memory and a read maps as it is
#: (``Memory.storage(readable=True)``; a kit's read-back staging, ``kits.Kit``)
READABLE = STORAGE | wgpu.BufferUsage.MAP_READ

#: Freed storage buffers are kept for the next allocation of the same size, up to this many
#: bytes in all (the oldest given back first): a NumPy call takes its GPU buffers from here,
#: so that repeated calls allocate nothing (a 1 GiB buffer takes tens of milliseconds to
#: allocate and free: benchmarks/LOG.md, "The settings' measurements") and find their bind groups cached. Running short of memory gives them
#: back before an allocation fails; Device.close() gives back everything.
POOL_BYTES = 4 << 30
#: Staging buffers of small reads and writes kept for reuse, in bytes of each kind.
STAGING_POOL_BYTES = 64 << 20


def word_size(nbytes: int) -> int:
    """``nbytes`` rounded up to whole 4-byte words (what copies and maps move)."""
    return (nbytes + 3) & ~3


def bound_size(nbytes: int) -> int:
    """The size of a buffer that passes bind for ``nbytes``: whole 16-byte quads, at least one,
    so that a shader reading quads never meets a partial one at the end (robust access would
    clamp it to other data)."""
    return (nbytes + 15) & ~15 or 16


class Pool:
    """Things with a ``size`` (buffers, staging maps) kept for reuse by size: the most recent
    of a size is taken first, the oldest of all given back first when ``limit`` bytes are
    exceeded. Not locked: the runner calls it under its lock."""

    def __init__(self, limit: int):
        self.limit, self.bytes = limit, 0
        self._by_size: dict[int, list] = defaultdict(list)
        self._age: OrderedDict = OrderedDict()

    def take(self, size: int):
        """One kept of this size, or None."""
        kept = self._by_size.get(size)
        if not kept:
            return None
        item = kept.pop()
        del self._age[item]
        self.bytes -= size
        return item

    def put(self, item) -> list:
        """Keep ``item``; what no longer fits (the oldest first, or ``item`` itself) comes back
        for the caller to destroy."""
        size = item.size
        if size > self.limit:
            return [item]
        self._by_size[size].append(item)
        self._age[item] = None
        self.bytes += size
        evicted = []
        while self.bytes > self.limit:
            old, _ = self._age.popitem(last=False)
            self._by_size[old.size].remove(old)
            self.bytes -= old.size
            evicted.append(old)
        return evicted

    def clear(self) -> list:
        """Everything kept, taken out."""
        items = list(self._age)
        self._by_size.clear()
        self._age.clear()
        self.bytes = 0
        return items


class Memory:
    """The buffers of one runner: made, kept for reuse, given back. Called under the runner's
    lock where it changes shared state (it takes the lock itself, re-entrantly)."""

    def __init__(self, runner: "Runner", limit: int | None):
        """``limit``: bytes of storage buffers this runner may hold at once (None: what the
        device holds), so that tests reach memory exhaustion on small inputs."""
        # (a weak reference: the runner owns this room, and a cycle would keep its wgpu device
        # alive until the garbage collector ran, after close() too)
        self.runner: Runner = cast("Runner", weakref.proxy(runner))
        self.limit = limit
        self.pool = Pool(POOL_BYTES)  # freed storage buffers
        self.readable = Pool(STAGING_POOL_BYTES)  # freed readable buffers
        self._pools = {STORAGE: self.pool, READABLE: self.readable}  # storage's and free's, by usage
        self.staging = Pool(STAGING_POOL_BYTES)  # MAP_READ buffers of small reads, as their maps
        # MAP_WRITE staging of mid-sized writes, by size class, as their maps (landed once the
        # GPU has copied out of them)
        self.writes = Pool(STAGING_POOL_BYTES)
        self.rings: dict[bool, list] = {}  # MAP_WRITE (True) and MAP_READ (False) rings kept, by write
        # storage buffers of collected tensors (``tensor.Storage``), taken up by ``storage``
        self.returned: collections.deque = collections.deque()
        # every buffer this runner made and has not destroyed (buffers dropped with an object
        # that was collected leave on their own): what held_bytes counts
        self._live: weakref.WeakSet = weakref.WeakSet()

    def create(self, size: int, usage: Any, mapped: bool = False):
        """A new buffer (``mapped``: at creation), counted; running out of memory raises
        ``GPUMemoryError``."""
        runner = self.runner
        with runner.lock:
            runner.check()
            limit = self.limit if usage & wgpu.BufferUsage.STORAGE else None
            if limit is not None and self.held_bytes + size > limit:
                self.drop_kept()
            if limit is not None and self.held_bytes + size > limit:
                raise self.memory_error(size, f"the limit set for this device is {limit} bytes")
            try:
                buffer = runner.device.create_buffer(size=size, usage=usage, mapped_at_creation=mapped)
            except wgpu.GPUError as err:
                error = runner.gpu_error(err)
                if isinstance(error, DeviceLostError):
                    raise error from None
                if not self.drop_kept():
                    raise self.memory_error(size, str(err).strip().splitlines()[-1].strip()) from None
                try:  # kept buffers were given back: once more
                    buffer = runner.device.create_buffer(size=size, usage=usage, mapped_at_creation=mapped)
                except wgpu.GPUError as again:
                    raise self.memory_error(size, str(again).strip().splitlines()[-1].strip()) from None
            self._live.add(buffer)
            return buffer

    @property
    def held_bytes(self) -> int:
        """Bytes of GPU memory this runner holds now: tensors, scratch and the storage pool
        (staging buffers live in host memory and are not counted)."""
        with self.runner.lock:
            return sum(b.size for b in list(self._live) if b.usage & wgpu.BufferUsage.STORAGE)

    def destroy(self, buffer) -> None:
        """Destroy a buffer this runner made (its memory goes once the GPU is done with it).

        Recorded work and queued writes are submitted first: they may use the buffer, and
        wgpu-native aborts the process when a submit refers to a destroyed buffer."""
        runner = self.runner
        with runner.lock:
            runner.submit_pending()
            self._live.discard(buffer)
            buffer.destroy()

    def memory_error(self, size: int, why: str) -> GPUMemoryError:
        return GPUMemoryError(
            f"device {self.runner.name!r} could not allocate {size} bytes ({why}); dmlgpu holds "
            f"{self.held_bytes} bytes on it. Release tensors you no longer need (Tensor.release()), "
            f"close devices you no longer use, or use smaller inputs; the device remains usable")

    def drop_kept(self) -> bool:
        """Give back the buffers kept for reuse (pools, staging, rings); whether any were."""
        with self.runner.lock:
            self.take_returned()
            dropped = False
            for buffer in self.take_kept():
                self.destroy(buffer)
                dropped = True
            return dropped

    def take_kept(self) -> list:
        """Every buffer kept for reuse (storage pool, read and write staging, rings), taken out
        of the pools. A write staging buffer may be mid-map: destroying it cancels the map."""
        buffers = self.pool.clear() + self.readable.clear()
        buffers += [m.buffer for m in self.staging.clear() + self.writes.clear()]
        buffers += [b for rings in self.rings.values() for ring in rings for b, _ in ring]
        self.rings.clear()
        return buffers

    def forget(self, destroy: bool = False) -> None:
        """Count nothing any more: the device is being destroyed, and every buffer with it, or
        (``destroy``: on a caller's device, which lives on) every buffer made here is destroyed
        now."""
        if destroy:
            for buffer in list(self._live):
                buffer.destroy()
        self._live = weakref.WeakSet()
        self.returned.clear()

    def storage(self, nbytes: int, readable: bool = False):
        """A storage buffer of ``bound_size(nbytes)`` bytes from the pool of its kind;
        ``readable`` (where the runner is ``in_place``): in mappable memory, which a read maps
        as it is (``Transfers.read_into``)."""
        runner = self.runner
        if readable and not runner.in_place:
            raise AdapterError(f"readable storage needs the native path and mappable-primary-buffers, "
                               f"which adapter {runner.name!r} (path {runner.path.name!r}) lacks")
        size, usage = bound_size(nbytes), READABLE if readable else STORAGE
        with runner.lock:
            returned = self.returned
            while returned:  # (a call's output, collected since the last call: taken as it is)
                buffer = returned.popleft()
                if buffer.size == size and buffer.usage == usage and runner.usable:
                    self.take_returned()
                    return buffer
                self.free(buffer)
            return self._pools[usage].take(size) or self.create(size, usage)

    def take_returned(self) -> None:
        """Keep (or destroy) the buffers collected tensors gave back (``returned``). Under the lock."""
        returned = self.returned
        while returned:
            self.free(returned.popleft())

    def free(self, buffer, keep: bool = True) -> None:
        """Give a storage buffer back: kept for reuse if small (and ``keep``), else destroyed at once.

        Work already recorded that uses it still runs: a kept buffer's next contents are
        written by later work, after it on the queue, and a destroyed buffer's memory is
        freed by wgpu once the GPU is done with it."""
        with self.runner.lock:
            if not self.runner.usable:
                return
            pool = self._pools.get(buffer.usage)
            for old in pool.put(buffer) if keep and pool is not None else [buffer]:
                self.destroy(old)
