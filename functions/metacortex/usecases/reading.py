"""Reading records as stored: one by id (``fetch_context``) or pages (``list_context``)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from metacortex.domain import limits
from metacortex.domain.records import Memory, Origin
from metacortex.domain.text import summarize
from metacortex.errors import InvalidArgument
from metacortex.storage.base import MemoryFilter, MemoryStore
from metacortex.usecases.access import Access, parse_enum, visible
from metacortex.usecases.cursors import decode_cursor, encode_cursor
from metacortex.usecases.filters import applied_filters, read_states, reported


class Reading:
    """``fetch_context`` and ``list_context``; the console reads whole records here."""

    def __init__(self, store: MemoryStore) -> None:
        self._store = store

    def fetch(
        self, access: Access, *, id: str | None = None, document_id: str | None = None
    ) -> dict[str, Any]:
        if id is not None and document_id is not None and id != document_id:
            raise InvalidArgument("id and document_id name different memories; give one")
        memory_id = id if id is not None else document_id
        if memory_id is None:
            raise InvalidArgument("id is required")
        memory = visible(self._store, access, limits.check_id(memory_id))
        return {"item": memory.to_item()}

    def memory(self, access: Access, memory_id: str) -> Memory:
        """The whole record (with its retrieval text), as ``fetch`` would find it."""
        return visible(self._store, access, limits.check_id(memory_id))

    def list_memories(
        self,
        access: Access,
        *,
        filter_topic: str | None = None,
        filter_state: str | Sequence[str] | None = None,
        filter_origin: str | None = None,
        created_after: str | datetime | None = None,
        created_before: str | datetime | None = None,
        limit: int | None = None,
        cursor: str | None = None,
        valid_at: str | datetime | None = None,
    ) -> dict[str, Any]:
        count = limits.check_limit(
            limit if limit is not None else limits.DEFAULT_LIST_LIMIT, limits.MAX_LIST_LIMIT
        )
        where = MemoryFilter(
            states=read_states(access, filter_state),
            topic=limits.check_topic(filter_topic, "filter_topic") if filter_topic else None,
            origin=parse_enum(Origin, filter_origin, "filter_origin"),
            created_after=limits.parse_instant(created_after, "created_after"),
            created_before=limits.parse_instant(created_before, "created_before"),
            valid_at=limits.parse_instant(valid_at, "valid_at"),
        )
        if (
            where.created_after is not None
            and where.created_before is not None
            and where.created_after >= where.created_before
        ):
            raise InvalidArgument("created_after must be earlier than created_before")
        applied = applied_filters(where)
        after = decode_cursor(cursor, applied) if cursor else None
        page = self._store.list_page(where, count + 1, after)
        more = len(page) > count
        page = page[:count]
        next_cursor = encode_cursor(page[-1], applied) if more and page else None
        return {
            "items": [
                {"id": m.id, "summary": summarize(m.content), "metadata": m.metadata()}
                for m in page
            ],
            "next_cursor": next_cursor,
            "applied_filters": reported(applied, where, count),
        }
