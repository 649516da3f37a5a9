"""A document: a file someone added, kept with its bytes and extracted text, whose passages
are memories (origin ``document``, ``Memory.document`` naming it). Independent of storage
and transport; ``usecases/documents.py`` holds the rules."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import datetime
from enum import StrEnum
from typing import Any, Final

from metacortex.domain.records import DEFAULT_SPACE, Attribution, Memory, to_wire_time

_NO_NAMES: Final[Mapping[str, str]] = {}


class DocumentState(StrEnum):
    # Being written (Firestore writes a large document in several batches; SQLite never
    # shows this state: its writes are one transaction).
    INGESTING = "ingesting"
    READY = "ready"
    # Being erased (``usecases/document_erase.py``): marked before its passages go, so an
    # erase cut short (a crash, a kill) is found and finished by the next one; listed
    # nowhere, never a duplicate of the same bytes added again.
    ERASING = "erasing"


@dataclass(frozen=True, slots=True)
class Document:
    """One version of a document. ``source`` is the path or URL its adder gave (None when
    none was); a new version of the same source ``supersedes`` the previous one, which then
    names it in ``superseded_by`` and keeps its record, bytes, text and retired passages.

    ``page_starts[n - 1]`` is where page ``n`` of a PDF starts in the extracted text
    (empty for formats without pages). ``no_text`` says why nothing was indexed (a scanned
    PDF: ``documents.NO_TEXT_LAYER``); the document is kept all the same. ``text_chars`` is
    the extracted text's length; ``passage_chars`` the passage size it was cut with."""

    id: str
    title: str
    media_type: str
    size: int
    sha256: str
    created_at: datetime
    added_by: Attribution
    topic: str
    space: str = DEFAULT_SPACE
    source: str | None = None
    page_count: int | None = None
    page_starts: tuple[int, ...] = ()
    pages_without_text: tuple[int, ...] = ()
    no_text: str | None = None
    text_chars: int = 0
    passage_count: int = 0
    passage_chars: int = 0
    version: int = 1
    supersedes: str | None = None
    superseded_by: str | None = None
    state: DocumentState = DocumentState.READY

    def with_changes(self, **changes: Any) -> Document:
        return replace(self, **changes)

    @property
    def current(self) -> bool:
        """The newest version of its source, completely written."""
        return self.superseded_by is None and self.state is DocumentState.READY

    def details(self) -> dict[str, Any]:
        """What stores keep of a version beside the fields they look up (id, space,
        sha256, source, created_at, superseded_by): plain values."""
        return {
            "title": self.title,
            "media_type": self.media_type,
            "size": self.size,
            "added_by": self.added_by.encode(),
            "topic": self.topic,
            "page_count": self.page_count,
            "page_starts": list(self.page_starts),
            "pages_without_text": list(self.pages_without_text),
            "no_text": self.no_text,
            "text_chars": self.text_chars,
            "passage_count": self.passage_count,
            "passage_chars": self.passage_chars,
            "version": self.version,
            "supersedes": self.supersedes,
            "state": self.state.value,
        }

    @classmethod
    def from_details(
        cls,
        details: Mapping[str, Any],
        *,
        id: str,
        space: str,
        sha256: str,
        source: str | None,
        created_at: datetime,
        superseded_by: str | None,
    ) -> Document:
        return cls(
            id=id,
            title=str(details.get("title") or ""),
            media_type=str(details.get("media_type") or ""),
            size=int(details.get("size") or 0),
            sha256=sha256,
            created_at=created_at,
            added_by=Attribution.decode(details.get("added_by")) or Attribution("owner", "unknown"),
            topic=str(details.get("topic") or ""),
            space=space,
            source=source,
            page_count=details.get("page_count"),
            page_starts=tuple(details.get("page_starts") or ()),
            pages_without_text=tuple(details.get("pages_without_text") or ()),
            no_text=details.get("no_text"),
            text_chars=int(details.get("text_chars") or 0),
            passage_count=int(details.get("passage_count") or 0),
            passage_chars=int(details.get("passage_chars") or 0),
            version=int(details.get("version") or 1),
            supersedes=details.get("supersedes"),
            superseded_by=superseded_by,
            state=DocumentState(details.get("state") or DocumentState.READY.value),
        )

    def check_passage(self, memory: Memory) -> None:
        """Refuse (``ValueError``, a programming error) to write as this document's passage
        a record that names another document or lives in another space: documents and
        their passages never cross a space."""
        if memory.document is None or memory.document.id != self.id:
            raise ValueError(f"record {memory.id} is not a passage of this document")
        if memory.space != self.space:
            raise ValueError(f"passage {memory.id} is not in the document's space")

    def page_at(self, offset: int) -> int | None:
        """The page holding the character at ``offset`` of the text (None without pages)."""
        if not self.page_starts:
            return None
        page = 0
        for index, start in enumerate(self.page_starts):
            if start > offset:
                break
            page = index + 1
        return max(page, 1)

    def to_wire(self, names: Mapping[str, str] = _NO_NAMES) -> dict[str, Any]:
        """The document as the tools show it (never its bytes or text)."""
        return {
            "id": self.id,
            "space": self.space,
            "title": self.title,
            "source": self.source,
            "media_type": self.media_type,
            "size": self.size,
            "sha256": self.sha256,
            "page_count": self.page_count,
            "pages_without_text": list(self.pages_without_text),
            "no_text": self.no_text,
            "topic": self.topic,
            "text_chars": self.text_chars,
            "passage_count": self.passage_count,
            "version": self.version,
            "supersedes": self.supersedes,
            "superseded_by": self.superseded_by,
            "state": self.state.value,
            "created_at": to_wire_time(self.created_at),
            "added_by": self.added_by.to_wire(names),
        }
