"""Moving a memory to another space (the owner's console): the record keeps its id,
content, vector, authors and lineage (``MemoryStore.move``); only its space changes.

The caller needs write on both spaces: a space they may only read, or do not hold, is
refused as every other call refuses it (``Access.space``). Relations that name the
record from the space it left stay as they are: they are history, not a way in.
"""

from __future__ import annotations

from typing import Any

from metacortex.access.model import Level
from metacortex.access.rules import Access, visible
from metacortex.domain import limits
from metacortex.errors import InvalidArgument, NotFound
from metacortex.storage.base import MemoryStore


class SpaceMoving:
    def __init__(self, store: MemoryStore) -> None:
        self._store = store

    def move_to_space(
        self, access: Access, *, id: str, to_space: str, space: str | None = None
    ) -> dict[str, Any]:
        """The record ``id`` of ``space`` (default: the caller's), moved to ``to_space``."""
        from_key = access.space(space, Level.WRITE)
        to_key = access.space(to_space, Level.WRITE)
        memory_id = limits.check_id(id)
        if to_key == from_key:
            raise InvalidArgument(f"memory {memory_id!r} is already in the space {to_key!r}")
        visible(self._store, access, memory_id, from_key)
        moved = self._store.move(memory_id, from_key, to_key)
        if moved is None:  # erased between the read and the move
            raise NotFound(f"no memory with id {memory_id!r}")
        return {"item": {"id": moved.id, "space": to_key}, "previous_space": from_key}
