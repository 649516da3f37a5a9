"""Erasing documents whole: every version, their passages, text, bytes and relations.

A document's words are in its passages (records), in its extracted text and in its original
bytes; erasing any of it erases all of it, whichever version holds them (kept passages move
from version to version). The owner erases one document (``erase_document``, the
console's), or documents go with what else is erased: a passage named by ``erase``, a
topic's documents (``erase --topic``), a space's (``space remove --erase``).

The order survives a crash at any point (``erase_versions``):

1. every version is marked ``erasing`` (``MemoryStore.mark_erasing``): from then on none
   is listed, shown, or found by its bytes, so the same file added again is read anew;
2. their passages are erased as any record is (content, vector, keyword entries,
   relations; a tombstone left), in batches of ``MAX_ERASE_BATCH``;
3. each version's record, text and bytes go (``remove_document``).

A process killed after step 1 leaves versions marked ``erasing``; the next erase in that
space, of anything, finishes them first (``unfinished``), and so does running the same
command again.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from datetime import datetime
from typing import Any

from metacortex.access.model import Level
from metacortex.access.rules import Access
from metacortex.domain import limits
from metacortex.domain.documents import Document, DocumentState
from metacortex.domain.records import Memory, to_wire_time, utc_now
from metacortex.errors import Forbidden, NotFound
from metacortex.storage.base import MAX_ERASE_BATCH, MemoryStore


def versions(store: MemoryStore, document: Document) -> list[Document]:
    """Every version of ``document``'s source, oldest first."""
    chain = [document]
    seen = {document.id}
    while chain[0].supersedes is not None and chain[0].supersedes not in seen:
        older = store.get_document(chain[0].supersedes, space=document.space)
        if older is None:
            break
        chain.insert(0, older)
        seen.add(older.id)
    while chain[-1].superseded_by is not None and chain[-1].superseded_by not in seen:
        newer = store.get_document(chain[-1].superseded_by, space=document.space)
        if newer is None:
            break
        chain.append(newer)
        seen.add(newer.id)
    return chain


def whole(store: MemoryStore, documents: Iterable[Document]) -> list[Document]:
    """``documents`` with every other version of their sources, each once, oldest first."""
    found: dict[str, Document] = {}
    for document in documents:
        if document.id not in found:
            found.update((version.id, version) for version in versions(store, document))
    return sorted(found.values(), key=lambda version: (version.created_at, version.id))


def of_passages(store: MemoryStore, records: Iterable[Memory], space: str) -> list[Document]:
    """The versions the passages among ``records`` belong to (those still stored)."""
    named = dict.fromkeys(m.document.id for m in records if m.document is not None)
    found = (store.get_document(document_id, space=space) for document_id in named)
    return [document for document in found if document is not None]


def unfinished(store: MemoryStore, space: str) -> list[Document]:
    """The versions an erase cut short left marked ``erasing`` in ``space``."""
    return store.document_versions(space=space, erasing=True)


def passages_of(store: MemoryStore, documents: Sequence[Document], space: str) -> list[Memory]:
    """Every passage of these versions, in every state, each once."""
    found: dict[str, Memory] = {}
    for document in documents:
        found.update((m.id, m) for m in store.document_passages(document.id, space=space))
    return list(found.values())


def erase_versions(
    store: MemoryStore,
    documents: Sequence[Document],
    erased_by: str,
    erased_at: datetime,
    space: str,
    progress: Callable[[int], None] | None = None,
) -> list[str]:
    """Erase these versions whole, in the order the module's note gives; the ids of the
    passages erased. ``progress`` is told how many passages are erased so far."""
    ids = [document.id for document in documents]
    for start in range(0, len(ids), MAX_ERASE_BATCH):
        store.mark_erasing(ids[start : start + MAX_ERASE_BATCH], space=space)
    passages = [m.id for m in passages_of(store, documents, space)]
    erased: list[str] = []
    for start in range(0, len(passages), MAX_ERASE_BATCH):
        erased += store.erase(
            passages[start : start + MAX_ERASE_BATCH], erased_by, erased_at, space=space
        )
        if progress is not None:
            progress(len(erased))
    for document_id in ids:
        store.remove_document(document_id, space=space)
    return erased


def brief(document: Document) -> dict[str, Any]:
    """A version as a plan or a result names it (never its text)."""
    return {
        "id": document.id,
        "title": document.title,
        "version": document.version,
        "topic": document.topic,
        "passage_count": document.passage_count,
        "unfinished": document.state is DocumentState.ERASING,
    }


class DocumentErasure:
    def __init__(self, store: MemoryStore) -> None:
        self._store = store

    def erase_document(
        self, access: Access, *, id: str, erased_by: str, space: str | None = None
    ) -> dict[str, Any]:
        """Erase the named document's every version (the console's erase button)."""
        if not access.may_erase:
            raise Forbidden("this endpoint may not erase documents")
        space_key = access.space(space, Level.WRITE)
        named = self._store.get_document(limits.check_id(id), space=space_key)
        if named is None:
            raise NotFound(f"no document with id {id!r}")
        chain = whole(self._store, [named, *unfinished(self._store, space_key)])
        erased_at = utc_now()
        erased = erase_versions(self._store, chain, erased_by, erased_at, space_key)
        return {
            "space": space_key,
            "erased_document_ids": [version.id for version in chain],
            "erased_passage_count": len(erased),
            "erased_at": to_wire_time(erased_at),
        }
