"""Erasure: the owner's exception to lineage.

Deprecation keeps a record for history; erasure destroys its content (text,
retrieval text, embedding, keyword-index entries, write fingerprints) and
leaves a tombstone (id, when, by whom), so links that name it read "erased".
Only an access that may erase gets here: the owner's console and
``metacortex erase``, and the admin endpoint's ``erase_context`` tool when the
operator turned it on. Agents keep ``deprecate_context``.

The owner is shown what will go before anything changes (``plan_erase``: the
count, and the records whose text came from them) and confirms exactly that:
``erase`` takes the same selection and the count confirmed, and refuses if a
topic's count changed in between.

Documents go whole (``usecases/document_erase``): a passage named, or a topic holding a
document (or its passages), takes every version of that document with it (record,
extracted text, original bytes, every passage, their relations); the plan names them and
counts their passages. An erase cut short is finished by the next erase in the space.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from metacortex.access.model import Level
from metacortex.access.rules import Access
from metacortex.domain import limits
from metacortex.domain.documents import Document
from metacortex.domain.records import ALL_STATES, Memory, Tombstone, to_wire_time, utc_now
from metacortex.domain.text import summarize
from metacortex.errors import Conflict, Forbidden, InvalidArgument, NotFound
from metacortex.storage.base import MAX_ERASE_BATCH, MemoryFilter, MemoryStore, PageKey
from metacortex.usecases import document_erase

# Ids one selection may name; a topic has no limit (it is erased in batches).
MAX_ERASE_IDS: Final = 1_000
# Records read per page when listing a topic's records.
_TOPIC_PAGE: Final = 500
# How far consolidations built on consolidations are followed.
_MAX_DERIVED_HOPS: Final = 10
# Records shown by name in a plan (the count covers them all).
_PREVIEWED: Final = 20
# Ids an event lists at most (a topic may hold thousands; the count is exact).
_EVENT_IDS: Final = 1_000


@dataclass(frozen=True, slots=True)
class _Selection:
    """The records a request names (those stored, and those already erased) and the
    documents that go whole with them; ``records`` holds every passage of ``documents``."""

    records: list[Memory]
    already_erased: list[Tombstone]
    topic: str | None
    documents: list[Document]


class Erasure:
    """Erase one record, a selection, or a topic's records, and say what it left."""

    def __init__(self, store: MemoryStore) -> None:
        self._store = store

    def plan_erase(
        self,
        access: Access,
        *,
        ids: Sequence[str] = (),
        topic: str | None = None,
        space: str | None = None,
    ) -> dict[str, Any]:
        """What ``erase`` with the same arguments would remove; nothing changes."""
        space_key = access.space(space, Level.WRITE)
        selection = self._select(access, ids, topic, space_key)
        erased_ids = [memory.id for memory in selection.records]
        return {
            "space": space_key,
            "topic": selection.topic,
            "count": len(erased_ids),
            "ids": erased_ids,
            "records": [_brief(memory) for memory in selection.records[:_PREVIEWED]],
            "already_erased": [_tombstone(t) for t in selection.already_erased],
            "documents": [document_erase.brief(d) for d in selection.documents],
            "derived": self._derived(erased_ids, space_key),
        }

    def erase(
        self,
        access: Access,
        *,
        erased_by: str,
        ids: Sequence[str] = (),
        topic: str | None = None,
        expected_count: int | None = None,
        progress: Callable[[int], None] | None = None,
        space: str | None = None,
    ) -> dict[str, Any]:
        """Erase the selection in transactions of ``MAX_ERASE_BATCH`` records.

        ``expected_count``: the count the owner confirmed; a different count now (a
        record saved to or removed from the topic since) erases nothing.
        ``progress`` is told how many records are erased so far, after each batch."""
        space_key = access.space(space, Level.WRITE)
        selection = self._select(access, ids, topic, space_key)
        targets = [memory.id for memory in selection.records]
        if expected_count is not None and expected_count != len(targets):
            what = f"topic {selection.topic!r}" if selection.topic else "the selection"
            raise Conflict(
                f"{what} now holds {len(targets)} memories to erase, not the "
                f"{expected_count} you confirmed; nothing was erased. Review it and confirm "
                "again."
            )
        erased_at = utc_now()
        # The documents first: their passages, then each version's record, text and bytes.
        erased = document_erase.erase_versions(
            self._store, selection.documents, erased_by, erased_at, space_key, progress
        )
        done = set(erased)
        rest = [memory_id for memory_id in targets if memory_id not in done]
        for start in range(0, len(rest), MAX_ERASE_BATCH):
            batch = rest[start : start + MAX_ERASE_BATCH]
            erased += self._store.erase(batch, erased_by, erased_at, space=space_key)
            if progress is not None:
                progress(len(erased))
        return {
            "space": space_key,
            "erased_ids": erased,
            "erased_count": len(erased),
            "erased_document_ids": [document.id for document in selection.documents],
            "already_erased_ids": [t.id for t in selection.already_erased],
            "erased_at": to_wire_time(erased_at),
            "derived": self._derived(erased, space_key),
        }

    # ------------------------------------------------------------ selection
    def _select(
        self, access: Access, ids: Sequence[str], topic: str | None, space: str
    ) -> _Selection:
        if not access.may_erase:
            raise Forbidden("this endpoint may not erase memories; deprecate them instead")
        if ids and topic is not None:
            raise InvalidArgument("give either ids or a topic to erase, not both")
        if topic is not None:
            return self._topic(access, limits.check_topic(topic), space)
        if not ids:
            raise InvalidArgument("name the memories to erase: one or more ids, or a topic")
        if len(ids) > MAX_ERASE_IDS:
            raise InvalidArgument(
                f"{len(ids)} ids were given; at most {MAX_ERASE_IDS} are erased at a time "
                "(erase a whole topic with its name instead)"
            )
        wanted = list(dict.fromkeys(limits.check_id(v, f"ids[{i}]") for i, v in enumerate(ids)))
        stored = dict(zip(wanted, self._store.get_many(wanted, space=space), strict=True))
        readable = {
            memory_id: memory
            for memory_id, memory in stored.items()
            if memory is not None and memory.branch_state in access.readable_states
        }
        missing = [memory_id for memory_id, memory in stored.items() if memory is None]
        tombstones = self._store.tombstones(missing, space=space) if missing else {}
        unknown = [i for i in wanted if i not in readable and i not in tombstones]
        if unknown:
            named = ", ".join(repr(i) for i in unknown[:3])
            more = f" and {len(unknown) - 3} more" if len(unknown) > 3 else ""
            raise NotFound(f"no memory with id {named}{more}; nothing was erased")
        records = [readable[i] for i in wanted if i in readable]
        documents = document_erase.of_passages(self._store, records, space)
        if documents or tombstones:  # a passage: an erase of it may have been cut short
            documents += document_erase.unfinished(self._store, space)
        return self._with_documents(
            records, [tombstones[i] for i in wanted if i in tombstones], None, documents, space
        )

    def _with_documents(
        self,
        records: list[Memory],
        already_erased: list[Tombstone],
        topic: str | None,
        documents: list[Document],
        space: str,
    ) -> _Selection:
        """The selection with every version of ``documents`` and all their passages."""
        versions = document_erase.whole(self._store, documents)
        held = {memory.id for memory in records}
        passages = document_erase.passages_of(self._store, versions, space)
        records = records + [passage for passage in passages if passage.id not in held]
        return _Selection(records, already_erased, topic, versions)

    def _topic(self, access: Access, topic: str, space: str) -> _Selection:
        where = MemoryFilter(
            states=tuple(s for s in ALL_STATES if s in access.readable_states),
            topic=topic,
            space=space,
        )
        records: list[Memory] = []
        after: PageKey | None = None
        while True:
            page = self._store.list_page(where, _TOPIC_PAGE, after)
            records += page
            if len(page) < _TOPIC_PAGE:
                break
            after = PageKey(page[-1].created_at, page[-1].id)
        documents = [
            *self._store.document_versions(space=space, topic=topic),
            *document_erase.of_passages(self._store, records, space),
            *document_erase.unfinished(self._store, space),
        ]
        if not records and not documents:
            raise NotFound(f"topic {topic!r} has no memories; nothing was erased")
        return self._with_documents(records, [], topic, documents, space)

    # -------------------------------------------------------------- lineage
    def _derived(self, erased_ids: Sequence[str], space: str) -> list[dict[str, Any]]:
        """The records (not erased) whose text came from an erased one: named in their
        ``derived_from``, directly or through other such records."""
        frontier = list(dict.fromkeys(erased_ids))
        tainted = set(frontier)
        found: dict[str, Memory] = {}
        for _ in range(_MAX_DERIVED_HOPS):
            if not frontier:
                break
            fresh = [
                m
                for m in self._store.derived_from_any(frontier, space=space)
                if m.id not in tainted
            ]
            for memory in fresh:
                tainted.add(memory.id)
                found[memory.id] = memory
            frontier = [memory.id for memory in fresh]
        ordered = sorted(found.values(), key=lambda m: (m.created_at, m.id))
        return [
            _brief(memory) | {"from": [i for i in memory.provenance.derived_from if i in tainted]}
            for memory in ordered
        ]


def event_summary(result: Mapping[str, Any]) -> dict[str, Any]:
    """An erase result as an event records it: ids and counts, never content."""
    return {
        "erased_count": result["erased_count"],
        "erased_ids": result["erased_ids"][:_EVENT_IDS],
        "erased_document_ids": result["erased_document_ids"][:_EVENT_IDS],
        "already_erased_count": len(result["already_erased_ids"]),
        "derived_ids": [record["id"] for record in result["derived"]][:_EVENT_IDS],
    }


def _brief(memory: Memory) -> dict[str, Any]:
    return {
        "id": memory.id,
        "summary": summarize(memory.content),
        "topic": memory.topic,
        "branch_state": memory.branch_state.value,
    }


def _tombstone(tombstone: Tombstone) -> dict[str, Any]:
    return {
        "id": tombstone.id,
        "erased_at": to_wire_time(tombstone.erased_at),
        "erased_by": tombstone.erased_by,
    }
