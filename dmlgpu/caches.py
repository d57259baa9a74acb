"""A small cache that keeps its most recently used entries, safe to share between threads."""

from __future__ import annotations

import threading
from collections import OrderedDict


class LruCache(OrderedDict):
    """A dict that keeps its ``size`` most recently used entries; safe to share between threads.

    The entry found last is remembered (``_last``): a loop of calls with one operator looks its
    key up every call, and finds it there without the lock (the entry is the most recent one
    already). Writing or removing any entry forgets it."""

    def __init__(self, size: int):
        super().__init__()
        self.size = size
        self._lock = threading.Lock()
        self._last: tuple | None = None  # (key, value) of the last entry found

    def get(self, key, default=None):
        last = self._last  # (one read: a pair another thread replaces whole)
        if last is not None and last[0] == key:
            return last[1]
        # (locked: a key's __eq__ may be Python code, during which another thread could evict)
        with self._lock:
            try:
                self.move_to_end(key)
                value = OrderedDict.__getitem__(self, key)
            except KeyError:
                return default
            self._last = (key, value)
            return value

    def __setitem__(self, key, value):
        with self._lock:
            self._last = None
            super().__setitem__(key, value)
            if len(self) > self.size:
                self.popitem(last=False)

    def __delitem__(self, key):
        with self._lock:
            self._last = None
            super().__delitem__(key)

    def clear(self):
        with self._lock:
            self._last = None
            super().clear()
