"""Iterate every memory of a store, oldest first, in pages (through the Protocol only)."""

from __future__ import annotations

from collections.abc import Iterator

from metacortex.domain.records import ALL_STATES, Memory
from metacortex.storage.base import MemoryFilter, MemoryStore, PageKey

PAGE = 200


def all_memories(store: MemoryStore, page_size: int = PAGE) -> Iterator[list[Memory]]:
    where = MemoryFilter(states=ALL_STATES)
    after: PageKey | None = None
    while True:
        page = store.list_page(where, page_size, after, oldest_first=True)
        if not page:
            return
        yield page
        last = page[-1]
        after = PageKey(created_at=last.created_at, id=last.id)
        if len(page) < page_size:
            return


def count_memories(store: MemoryStore) -> int:
    return sum(len(page) for page in all_memories(store, 1000))
