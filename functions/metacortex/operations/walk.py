"""Iterate every memory of a store, oldest first, in pages (through the Protocol only).

Space by space: a page never mixes two spaces, so a caller writes it back in one
transaction of that space (``page[0].space``). The spaces are those the store's
registry knows (``default`` always among them): a space is removed only once it
holds nothing.
"""

from __future__ import annotations

from collections.abc import Iterator

from metacortex.access.registry import read_directory
from metacortex.domain.records import ALL_STATES, Memory
from metacortex.storage.base import MemoryFilter, MemoryStore, PageKey

PAGE = 200


def spaces_of(store: MemoryStore) -> list[str]:
    """Every space of the store, ``default`` first."""
    return sorted(read_directory(store).spaces, key=lambda key: (key != "default", key))


def all_memories(
    store: MemoryStore, page_size: int = PAGE, space: str | None = None
) -> Iterator[list[Memory]]:
    """Every memory of ``space`` (of every space when None), oldest first per space."""
    for key in [space] if space is not None else spaces_of(store):
        where = MemoryFilter(states=ALL_STATES, space=key)
        after: PageKey | None = None
        while True:
            page = store.list_page(where, page_size, after, oldest_first=True)
            if not page:
                break
            yield page
            last = page[-1]
            after = PageKey(created_at=last.created_at, id=last.id)
            if len(page) < page_size:
                break


def count_memories(store: MemoryStore) -> int:
    """How many memories every space holds together."""
    return sum(
        store.count_memories(MemoryFilter(states=ALL_STATES, space=key)) for key in spaces_of(store)
    )
