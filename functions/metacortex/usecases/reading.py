"""Reading records as stored: one by id (``fetch_context``), pages (``list_context``) and
the console's pages (both ways, with the total; or the records containing some words)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final

from metacortex.access.rules import Access, visible
from metacortex.domain import limits
from metacortex.domain.occurrence import parse_bound
from metacortex.domain.records import ALL_STATES, Memory, Origin
from metacortex.domain.text import summarize
from metacortex.errors import InvalidArgument
from metacortex.retrieval.text import query_terms
from metacortex.storage.base import ListOrder, MemoryFilter, MemoryStore
from metacortex.usecases.arguments import parse_enum
from metacortex.usecases.cursors import decode_cursor, encode_cursor
from metacortex.usecases.filters import applied_filters, read_states, reported
from metacortex.usecases.relations import attach_related

# The most records ``fetch_context`` brings on each side of the one asked for.
MAX_NEIGHBOURS: Final = 3


class Reading:
    """``fetch_context`` and ``list_context``; the console reads whole records here."""

    def __init__(self, store: MemoryStore) -> None:
        self._store = store

    def fetch(
        self,
        access: Access,
        *,
        id: str | None = None,
        document_id: str | None = None,
        space: str | None = None,
        neighbours: int | None = None,
    ) -> dict[str, Any]:
        """``fetch_context``. ``neighbours`` (1 to ``MAX_NEIGHBOURS``) adds the records
        around it, in reading order: a document's passage gets the passages before and
        after it in the document; any other memory the ones written just before and after
        it in its topic (a conversation saved turn by turn reads on)."""
        if id is not None and document_id is not None and id != document_id:
            raise InvalidArgument("id and document_id name different memories; give one")
        memory_id = id if id is not None else document_id
        if memory_id is None:
            raise InvalidArgument("id is required")
        space_key = access.space(space)
        memory = visible(self._store, access, limits.check_id(memory_id), space_key)
        item = memory.to_item(access.names)
        attach_related(self._store, access, space_key, [item])
        found: dict[str, Any] = {"item": item}
        if neighbours:
            span = limits.check_limit(neighbours, MAX_NEIGHBOURS, "neighbours")
            where = MemoryFilter(
                states=tuple(s for s in ALL_STATES if s in access.readable_states),
                space=space_key,
            )
            if memory.document is not None:
                around = self._store.passage_neighbours(memory, where, span)
            else:
                around = self._store.neighbours([memory], where, span)[memory.id]
            found["neighbours"] = {
                "before": [m.to_item(access.names) for m in reversed(around.older)],
                "after": [m.to_item(access.names) for m in around.newer],
            }
        return found

    def memory(self, access: Access, memory_id: str, space: str | None = None) -> Memory:
        """The whole record (with its retrieval text), as ``fetch`` would find it."""
        return visible(self._store, access, limits.check_id(memory_id), access.space(space))

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
        space: str | None = None,
        after: str | datetime | None = None,
        before: str | datetime | None = None,
        order_by: str | None = None,
    ) -> dict[str, Any]:
        """``list_context``. ``after`` / ``before`` bound when the memories happened
        (``occurred_at``); ``order_by`` ``occurred_at`` lists what happened most recently
        first (``created_at``, the default: what was saved most recently)."""
        count = _limit(limit)
        where = _where(
            access,
            space,
            filter_topic,
            filter_state,
            filter_origin,
            created_after,
            created_before,
            valid_at,
            after,
            before,
        )
        order = _order(order_by)
        applied = applied_filters(where)
        if order == "occurred":
            applied["order_by"] = "occurred_at"
        start = decode_cursor(cursor, applied) if cursor else None
        page = self._store.list_page(where, count + 1, start, order=order)
        more = len(page) > count
        page = page[:count]
        next_cursor = (
            encode_cursor(page[-1], applied, by_occurrence=order == "occurred")
            if more and page
            else None
        )
        items = [
            {"id": m.id, "summary": summarize(m.content), "metadata": m.metadata(access.names)}
            for m in page
        ]
        attach_related(self._store, access, where.space, items)
        return {
            "items": items,
            "next_cursor": next_cursor,
            "applied_filters": reported(applied, where, count),
        }

    def page(
        self,
        access: Access,
        *,
        filter_topic: str | None = None,
        filter_state: str | Sequence[str] | None = None,
        filter_origin: str | None = None,
        valid_at: str | datetime | None = None,
        limit: int | None = None,
        cursor: str | None = None,
        newer: bool = False,
        space: str | None = None,
    ) -> MemoryPage:
        """The console's listing: whole records newest first, the count of every record
        the filters match, and cursors both ways. ``cursor`` names a record of an earlier
        page: the page is the records just older than it, or with ``newer`` just newer
        (still newest first); ``list_memories``' cursors are accepted too."""
        count = _limit(limit)
        where = _where(
            access, space, filter_topic, filter_state, filter_origin, None, None, valid_at
        )
        applied = applied_filters(where)
        key = decode_cursor(cursor, applied) if cursor else None
        if key is not None and newer:
            found = self._store.list_page(where, count + 1, key, oldest_first=True)
            page = list(reversed(found[:count]))
            newer_exists, older_exists = len(found) > count, True
        else:
            found = self._store.list_page(where, count + 1, key)
            page = found[:count]
            newer_exists, older_exists = key is not None, len(found) > count
        return MemoryPage(
            memories=page,
            older_cursor=encode_cursor(page[-1], applied) if page and older_exists else None,
            newer_cursor=encode_cursor(page[0], applied) if page and newer_exists else None,
            total=self._store.count_memories(where),
        )

    def matching(
        self,
        access: Access,
        *,
        words: str,
        filter_topic: str | None = None,
        filter_state: str | Sequence[str] | None = None,
        filter_origin: str | None = None,
        valid_at: str | datetime | None = None,
        limit: int | None = None,
        space: str | None = None,
    ) -> list[Memory]:
        """The console's keyword filter: whole records the filters match that contain any
        of ``words`` as keyword search analyzes them (stems, no stop words), best keyword
        (BM25) match first, at most ``limit`` (100)."""
        query_words = query_terms(limits.check_query(words))
        count = _limit(limit)
        where = _where(
            access, space, filter_topic, filter_state, filter_origin, None, None, valid_at
        )
        if not query_words:
            return []
        return [hit.memory for hit in self._store.lexical_search(query_words, where, count)]


@dataclass(frozen=True, slots=True)
class MemoryPage:
    """One page of the console's listing (``Reading.page``)."""

    memories: list[Memory]
    older_cursor: str | None  # the next page down (older records), if any
    newer_cursor: str | None  # the page above (newer records), if any
    total: int  # every record the filters match, on every page


def memory_filter(
    access: Access,
    *,
    space: str | None = None,
    filter_topic: str | None = None,
    filter_state: str | Sequence[str] | None = None,
    filter_origin: str | None = None,
    created_after: str | datetime | None = None,
    created_before: str | datetime | None = None,
    valid_at: str | datetime | None = None,
    occurred_after: str | datetime | None = None,
    occurred_before: str | datetime | None = None,
) -> MemoryFilter:
    """The store filter a read by ``access`` asks for, checked as ``list_context`` checks
    it (the console's listings, which read several spaces page by page, build theirs
    here)."""
    return _where(
        access,
        space,
        filter_topic,
        filter_state,
        filter_origin,
        created_after,
        created_before,
        valid_at,
        occurred_after,
        occurred_before,
    )


def _order(order_by: str | None) -> ListOrder:
    if order_by is None or order_by == "created_at":
        return "created"
    if order_by == "occurred_at":
        return "occurred"
    raise InvalidArgument(f"order_by must be 'created_at' or 'occurred_at', got {order_by!r}")


def _limit(limit: int | None) -> int:
    return limits.check_limit(
        limit if limit is not None else limits.DEFAULT_LIST_LIMIT, limits.MAX_LIST_LIMIT
    )


def _where(
    access: Access,
    space: str | None,
    filter_topic: str | None,
    filter_state: str | Sequence[str] | None,
    filter_origin: str | None,
    created_after: str | datetime | None,
    created_before: str | datetime | None,
    valid_at: str | datetime | None,
    occurred_after: str | datetime | None = None,
    occurred_before: str | datetime | None = None,
) -> MemoryFilter:
    where = MemoryFilter(
        states=read_states(access, filter_state),
        topic=limits.check_topic(filter_topic, "filter_topic") if filter_topic else None,
        origin=parse_enum(Origin, filter_origin, "filter_origin"),
        created_after=limits.parse_instant(created_after, "created_after"),
        created_before=limits.parse_instant(created_before, "created_before"),
        valid_at=limits.parse_instant(valid_at, "valid_at"),
        space=access.space(space),
        occurred_after=parse_bound(occurred_after, "after"),
        occurred_before=parse_bound(occurred_before, "before"),
    )
    limits.check_range(where.occurred_after, where.occurred_before, "after", "before")
    if (
        where.created_after is not None
        and where.created_before is not None
        and where.created_after >= where.created_before
    ):
        raise InvalidArgument("created_after must be earlier than created_before")
    return where
