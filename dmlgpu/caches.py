"""A small cache that keeps its most recently used entries, safe to share between threads."""

from __future__ import annotations

import threading
from collections import OrderedDict


class LruCache(OrderedDict):
    """A dict that keeps its ``size`` most recently used entries; safe to share between threads."""

    def __init__(self, size: int):
        super().__init__()
        self.size = size
        self._lock = threading.Lock()

    def get(self, key, default=None):
        # (locked: a key's __eq__ may be Python code, during which another thread could evict)
        with self._lock:
            try:
                self.move_to_end(key)
                return OrderedDict.__getitem__(self, key)
            except KeyError:
                return default

    def __setitem__(self, key, value):
        with self._lock:
            super().__setitem__(key, value)
            if len(self) > self.size:
                self.popitem(last=False)
