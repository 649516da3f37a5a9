"""Process memory: the garbage collector kept off what is loaded once, freed pages returned.

After start-up the process holds hundreds of thousands of long-lived objects:
the embedding model, the MCP SDK and pydantic schemas, Starlette routes. The
cyclic collector walks them again on every full collection, which shows up as
tens of milliseconds added to whichever request happens to trigger it (the
console's clients and activity pages, which allocate many small objects, had a
bimodal p95 because of it; docs/benchmarks.md). ``gc.freeze`` moves everything
alive now into a permanent generation the collector ignores; objects created
later are collected as usual.

Start-up also leaves freed memory behind: loading the vector mirror, the model
and the first queries allocate and free many small blocks, and glibc keeps the
freed pages of its arenas mapped (tens of MB at 100,000 memories; ``docs/benchmarks.md``, "Scale").
``malloc_trim`` hands them back to the system; elsewhere than glibc it is skipped.
The SQLite store calls it too, after loading its keyword index on a background
thread once the server is up (``storage/sqlite_keyword_keeper.py``).
"""

from __future__ import annotations

import ctypes
import gc
import sys
from typing import Any


def freeze_startup_heap() -> None:
    """Collect once, then exclude every surviving object from future collections."""
    gc.collect()
    gc.freeze()


def release_freed_memory() -> bool:
    """Return the heap's free pages to the system (glibc ``malloc_trim``); False when
    the C library has no such call (musl, macOS, Windows)."""
    trim = _glibc("malloc_trim")
    if trim is None:
        return False
    trim.argtypes = [ctypes.c_size_t]
    trim.restype = ctypes.c_int
    trim(0)
    return True


def _glibc(name: str) -> Any:
    """``name`` from the C library this process runs on, if glibc (Linux) has it."""
    if not sys.platform.startswith("linux"):
        return None
    # The process's own symbols: libc without ``ctypes.util.find_library``, which
    # runs ``ldconfig`` in a subprocess (tens of ms at a server's start).
    return getattr(ctypes.CDLL(None), name, None)
