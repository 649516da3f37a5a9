"""Erasing a document: every version of it, their passages and their bytes (the owner's).

A document's passages are records: they are erased as ``erase`` erases any record (content,
vector and keyword entries deleted, a tombstone left), in batches of ``MAX_ERASE_BATCH``;
then each version's record, extracted text and original bytes go (``remove_document``).
Every version goes, not only the one named: kept passages move from version to version,
and an owner erasing a document means its words, whichever version holds them. A re-run
after an interruption finishes the work (what is left is found again).
"""

from __future__ import annotations

from typing import Any

from metacortex.access.model import Level
from metacortex.access.rules import Access
from metacortex.domain import limits
from metacortex.domain.documents import Document
from metacortex.domain.records import to_wire_time, utc_now
from metacortex.errors import Forbidden, NotFound
from metacortex.storage.base import MAX_ERASE_BATCH, MemoryStore


class DocumentErasure:
    def __init__(self, store: MemoryStore) -> None:
        self._store = store

    def erase_document(
        self, access: Access, *, id: str, erased_by: str, space: str | None = None
    ) -> dict[str, Any]:
        if not access.may_erase:
            raise Forbidden("this endpoint may not erase documents")
        space_key = access.space(space, Level.WRITE)
        named = self._store.get_document(limits.check_id(id), space=space_key)
        if named is None:
            raise NotFound(f"no document with id {id!r}")
        versions = self.versions(named)
        erased_at = utc_now()
        erased: list[str] = []
        for version in versions:
            ids = [m.id for m in self._store.document_passages(version.id, space=space_key)]
            for start in range(0, len(ids), MAX_ERASE_BATCH):
                batch = ids[start : start + MAX_ERASE_BATCH]
                erased += self._store.erase(batch, erased_by, erased_at, space=space_key)
        for version in versions:
            self._store.remove_document(version.id, space=space_key)
        return {
            "space": space_key,
            "erased_document_ids": [version.id for version in versions],
            "erased_passage_count": len(erased),
            "erased_at": to_wire_time(erased_at),
        }

    def versions(self, document: Document) -> list[Document]:
        """Every version of ``document``'s source, oldest first."""
        chain = [document]
        seen = {document.id}
        while chain[0].supersedes is not None and chain[0].supersedes not in seen:
            older = self._store.get_document(chain[0].supersedes, space=document.space)
            if older is None:
                break
            chain.insert(0, older)
            seen.add(older.id)
        while chain[-1].superseded_by is not None and chain[-1].superseded_by not in seen:
            newer = self._store.get_document(chain[-1].superseded_by, space=document.space)
            if newer is None:
                break
            chain.append(newer)
            seen.add(newer.id)
        return chain
