"""GPU memory: buffer usages, sizes a buffer is rounded to, and the pools of buffers kept for reuse.

Owns the usages every room allocates with, ``word_size`` / ``bound_size`` and ``_Pool``.
"""

from __future__ import annotations

from collections import OrderedDict, defaultdict

import wgpu

_STORAGE = wgpu.BufferUsage.STORAGE | wgpu.BufferUsage.COPY_DST | wgpu.BufferUsage.COPY_SRC
_MAP_READ = wgpu.BufferUsage.MAP_READ | wgpu.BufferUsage.COPY_DST
_MAP_WRITE = wgpu.BufferUsage.MAP_WRITE | wgpu.BufferUsage.COPY_SRC
#: A small call's upload staging that its passes bind as their input
_MAP_WRITE_BOUND = _MAP_WRITE | wgpu.BufferUsage.STORAGE
#: A small output that passes write into mappable memory and a read maps as it is
#: (``Runner.storage(readable=True)``; a kit's read-back staging, ``Runner.hot_call``)
_READABLE = _STORAGE | wgpu.BufferUsage.MAP_READ

#: Freed storage buffers are kept for the next allocation of the same size, up to this many
#: bytes in all (the oldest given back first): a NumPy call takes its GPU buffers from here,
#: so that repeated calls allocate nothing (a 1 GiB buffer takes 40-56 ms to allocate and
#: free on the H100) and find their bind groups cached. Running short of memory gives them
#: back before an allocation fails; Device.close() gives back everything.
POOL_BYTES = 4 << 30
#: Staging buffers of small reads and writes kept for reuse, in bytes of each kind.
_STAGING_POOL_BYTES = 64 << 20


def word_size(nbytes: int) -> int:
    """``nbytes`` rounded up to whole 4-byte words (what copies and maps move)."""
    return (nbytes + 3) & ~3


def bound_size(nbytes: int) -> int:
    """The size of a buffer that passes bind for ``nbytes``: whole 16-byte quads, at least one,
    so that a shader reading quads never meets a partial one at the end (robust access would
    clamp it to other data)."""
    return max(16, (nbytes + 15) & ~15)



class _Pool:
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
