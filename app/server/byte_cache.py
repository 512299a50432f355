"""Caches shared by every session on a server, bounded in bytes (not entries): a long upload's runs are large."""

from __future__ import annotations

import os
import sys
import threading
from collections import OrderedDict
from dataclasses import fields, is_dataclass
from functools import wraps

import numpy as np

# All of the app's shared caches together hold at most this many bytes (BATCHVIZ_CACHE_MB overrides): a class
# opening the default page computes it once, and a run of distinct long uploads cannot grow the server past it.
DEFAULT_CACHE_MB = 512
CACHES: list[ByteCache] = []


def cache_limit_bytes() -> int:
    """Return the byte budget of all shared caches together (BATCHVIZ_CACHE_MB, default 512 MB)."""
    text = os.environ.get("BATCHVIZ_CACHE_MB", "")
    mb = int(text) if text.isdigit() and int(text) > 0 else DEFAULT_CACHE_MB
    return mb * 1024 * 1024


def size_of(value, _seen: set | None = None) -> int:
    """Return about how many bytes `value` holds: numpy buffers, strings, containers and dataclasses, each once."""
    seen = set() if _seen is None else _seen
    if id(value) in seen:
        return 0
    seen.add(id(value))
    if isinstance(value, np.ndarray):
        return value.nbytes + 112
    if isinstance(value, (str, bytes, int, float, bool)) or value is None:
        return sys.getsizeof(value)
    if isinstance(value, dict):
        return sys.getsizeof(value) + sum(size_of(k, seen) + size_of(v, seen) for k, v in value.items())
    if isinstance(value, (list, tuple, set, frozenset)):
        if value and all(type(x) is int for x in value[:8] if isinstance(value, (list, tuple))):
            return sys.getsizeof(value) + 28 * len(value)  # a row of numbers (a pool map): not walked one by one
        return sys.getsizeof(value) + sum(size_of(x, seen) for x in value)
    if is_dataclass(value):
        return sys.getsizeof(value) + sum(size_of(getattr(value, f.name, None), seen) for f in fields(value))
    return sys.getsizeof(value)


class ByteCache:
    """A least-recently-used cache of a function's results, each sized in bytes; all instances share one budget."""

    def __init__(self, func, share: float):
        self.func, self.share = func, share
        self.entries: OrderedDict = OrderedDict()  # key -> (value, bytes)
        self.bytes = 0
        self.lock = threading.RLock()

    @property
    def limit(self) -> int:
        """Return this cache's byte budget: its share of all shared caches' budget."""
        return int(cache_limit_bytes() * self.share)

    def __call__(self, *args, **kwargs):
        """Return the cached result for these arguments, computing (and keeping, if it fits) it when absent."""
        key = (args, tuple(sorted(kwargs.items())))
        with self.lock:
            if key in self.entries:
                self.entries.move_to_end(key)
                return self.entries[key][0]
        value = self.func(*args, **kwargs)  # outside the lock: a long computation does not block other sessions
        size = size_of(value)
        with self.lock:
            if key not in self.entries and size <= self.limit:  # a value larger than the budget is not kept
                self.entries[key] = (value, size)
                self.bytes += size
                while self.bytes > self.limit:
                    _, (_, dropped) = self.entries.popitem(last=False)
                    self.bytes -= dropped
        return value

    def cache_clear(self) -> None:
        """Forget every entry."""
        with self.lock:
            self.entries.clear()
            self.bytes = 0


def byte_cache(share: float):
    """Decorate a pure function of hashable arguments: its results are cached in `share` of the byte budget."""

    def wrap(func):
        cache = ByteCache(func, share)
        CACHES.append(cache)
        return wraps(func)(cache)

    return wrap


def cached_bytes() -> int:
    """Return the bytes all shared caches hold now."""
    return sum(cache.bytes for cache in CACHES)
