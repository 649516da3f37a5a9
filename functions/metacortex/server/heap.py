"""Keep the garbage collector off what is loaded once at start.

After start-up the process holds hundreds of thousands of long-lived objects:
the embedding model, the MCP SDK and pydantic schemas, Starlette routes. The
cyclic collector walks them again on every full collection, which shows up as
tens of milliseconds added to whichever request happens to trigger it (the
console's clients and activity pages, which allocate many small objects, had a
bimodal p95 because of it; docs/benchmarks.md). ``gc.freeze`` moves everything
alive now into a permanent generation the collector ignores; objects created
later are collected as usual.
"""

from __future__ import annotations

import gc


def freeze_startup_heap() -> None:
    """Collect once, then exclude every surviving object from future collections."""
    gc.collect()
    gc.freeze()
