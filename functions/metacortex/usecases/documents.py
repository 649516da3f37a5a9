"""Documents: a file becomes cited memory (``docs/DOCUMENTS.md``).

``create_document`` reads the file in the isolated reader (``documents.extract_isolated``:
a process killed at the deadline; the service runs in a worker thread already, so this
blocks no event loop), cuts it into passages, embeds them in batches and writes the
document, its bytes, its text and its passages in one store change (``add_document``): a
failure leaves no memories and no stored bytes. The same bytes again return the document
already stored; a changed version of the same ``source`` replaces it in one step, keeping
the passages whose content did not change (not embedded again) and retiring the others as
superseded by the new version's nearest passage (``document_passages.version_change``).
A scanned PDF's picture pages are read by OCR where it is on and installed
(``documents/pdf_ocr.py``); one OCR did not read is kept with ``no_text`` ("no text to
index; OCR is not offered") and no passages.

``list_documents`` pages the current documents of a space; ``get_document`` shows one with
its extracted text paged by ``offset`` (a 300-page PDF never floods a model's context);
``erase_document`` (the owner's) erases every version with its passages (tombstones, as
``erase`` leaves) and its bytes.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import replace
from datetime import datetime
from pathlib import PurePath
from typing import TYPE_CHECKING, Any, Final

from metacortex.access.model import Level
from metacortex.access.rules import Access
from metacortex.domain import limits
from metacortex.domain.documents import Document, DocumentState
from metacortex.domain.occurrence import Occurrence, Precision, TimeSource, parse_occurred
from metacortex.domain.records import (
    DEFAULT_TOPIC,
    Attribution,
    BranchState,
    Memory,
    new_memory_id,
    utc_now,
)
from metacortex.errors import Busy, DocumentRefused, InvalidArgument, NotFound
from metacortex.providers.base import Embedder
from metacortex.retrieval import bm25
from metacortex.retrieval.text import query_terms, term_frequencies
from metacortex.storage.base import DocumentWrite, MemoryStore
from metacortex.usecases.cursors import decode_cursor, encode_cursor
from metacortex.usecases.document_passages import VersionChange, page_starts, version_change
from metacortex.usecases.options import DEFAULT_PASSAGE_CHARS
from metacortex.usecases.passage_relations import RelationChange, reading_order, relation_change

if TYPE_CHECKING:  # the readers load on the first document (0.1 s a server need not pay)
    from metacortex.cancellation import Cancellation
    from metacortex.documents import DocumentLimits, ExtractedDocument
    from metacortex.documents.passages import Passage
    from metacortex.documents.timed import TimedPiece

Extractor = Callable[[bytes, str, "DocumentLimits"], "ExtractedDocument"]
Progress = Callable[[int], None]

MAX_TITLE_CHARS: Final = 300
MAX_SOURCE_CHARS: Final = 2_048
# Texts per call to the embedder: it batches inside at its own ceiling (32 texts a run
# for the local model, 100 a request for Gemini); a call this size lets it sort by
# length and keeps progress moving.
EMBED_CHUNK: Final = 256
DEFAULT_TEXT_CHARS: Final = 10_000
MAX_TEXT_CHARS: Final = 50_000
UNTITLED: Final = "Untitled document"
# What "busy" answers: a document of ordinary size is read and embedded within it.
RETRY_AFTER_SECONDS: Final = 5


class Documents:
    """``create_document``, ``list_documents``, ``get_document``; the owner's erase."""

    def __init__(
        self,
        store: MemoryStore,
        embedder: Embedder,
        document_limits: Callable[[], DocumentLimits] | None = None,
        passage_chars: int = DEFAULT_PASSAGE_CHARS,
        extractor: Extractor | None = None,
    ) -> None:
        self._store = store
        self._embedder = embedder
        self._make_limits = document_limits
        self._limits: DocumentLimits | None = None
        self._passage_chars = passage_chars
        self._extractor = extractor
        self._slots: DocumentSlots | None = None
        self._slots_lock = threading.Lock()

    @property
    def limits(self) -> DocumentLimits:
        """Built at the first document (see ``ServiceOptions.document_limits``)."""
        if self._limits is None:
            from metacortex.documents import DocumentLimits

            self._limits = self._make_limits() if self._make_limits else DocumentLimits()
        return self._limits

    @property
    def slots(self) -> DocumentSlots:
        """The documents this server reads and embeds at once (built with ``limits``)."""
        with self._slots_lock:
            if self._slots is None:
                limits = self.limits
                self._slots = DocumentSlots(limits.concurrent, limits.concurrent_per_credential)
            return self._slots

    def _extract(
        self, data: bytes, media_type: str, cancellation: Cancellation | None
    ) -> ExtractedDocument:
        if self._extractor is not None:
            return self._extractor(data, media_type, self.limits)
        from metacortex.documents import extract_isolated

        return extract_isolated(data, media_type, self.limits, cancellation)

    # ---------------------------------------------------------------- create
    def create_document(
        self,
        access: Access,
        *,
        content: str | None = None,
        content_base64: str | None = None,
        data: bytes | None = None,
        media_type: str | None = None,
        title: str | None = None,
        source: str | None = None,
        topic: str | None = None,
        space: str | None = None,
        progress: Progress | None = None,
        cancellation: Cancellation | None = None,
        occurred_at: str | datetime | None = None,
    ) -> dict[str, Any]:
        """Add a document (or a new version of ``source``), given as ``content`` (text),
        ``content_base64`` (the tool's) or ``data`` (the bytes: ``metacortex ingest``, the
        console's upload); ``progress`` is told how many passages are embedded so far.
        Within the bounds of ``DocumentLimits`` (text, passages, seconds to embed; how
        many documents at once: ``Busy`` past them); ``cancellation`` (the caller gone)
        stops it between steps, keeping nothing.

        ``occurred_at``: when the document was written (a message's or page's time), the
        time of each new passage; without it passages happened when they were saved (a
        passage's own dates are not read: a passage spans several of a long text's dates,
        and its first date cost questions on LoCoMo as documents, docs/benchmarks.md)."""
        space_key = access.space(space, Level.WRITE)
        given = parse_occurred(occurred_at) if occurred_at is not None else None
        source = _optional_text(source, "source", MAX_SOURCE_CHARS)
        wanted_title = _optional_text(title, "title", MAX_TITLE_CHARS)
        topic_name = limits.check_topic(topic if topic is not None else DEFAULT_TOPIC)
        data, kind = self._bytes(content, content_base64, data, media_type, source)
        return self._unless_stored(
            access,
            space_key,
            data,
            lambda digest: self._create(
                access, data, kind, digest, space_key, source, wanted_title, topic_name,
                progress, cancellation, given,
            ),
        )  # fmt: skip

    def _unless_stored(
        self,
        access: Access,
        space_key: str,
        data: bytes,
        create: Callable[[str], dict[str, Any]],
    ) -> dict[str, Any]:
        """The document of these bytes already stored in the space ("duplicate"), else
        ``create(sha256)`` run within the documents this server reads at once."""
        digest = hashlib.sha256(data).hexdigest()
        existing = self._store.find_document(space=space_key, sha256=digest)
        if existing is not None:
            return _created(existing, access, "duplicate", 0, 0, 0)
        with self.slots.taken(access.principal):
            return create(digest)

    def _create(
        self,
        access: Access,
        data: bytes,
        kind: str,
        digest: str,
        space_key: str,
        source: str | None,
        wanted_title: str | None,
        topic_name: str,
        progress: Progress | None,
        cancellation: Cancellation | None,
        given: Occurrence | None,
    ) -> dict[str, Any]:
        """The work ``create_document`` bounds: read, cut, embed, write (each new passage
        happening at ``given``, when the document's time was given)."""
        extracted = self._extract(data, kind, cancellation)
        self.limits.check_chars(len(extracted.text))  # a custom extractor's too
        from metacortex.documents.passages import cut_passages

        passages = [] if extracted.no_text else cut_passages(extracted, self._passage_chars)
        times = None if given is None else [given] * len(passages)
        return self._write_version(
            access, data, kind, digest, space_key, source, wanted_title, topic_name,
            extracted, passages, times, progress, cancellation,
        )  # fmt: skip

    def create_timed_document(
        self,
        access: Access,
        *,
        pieces: Sequence[TimedPiece],
        title: str,
        source: str,
        topic: str | None = None,
        space: str | None = None,
        progress: Progress | None = None,
        cancellation: Cancellation | None = None,
    ) -> dict[str, Any]:
        """A document given already cut: ``pieces`` in order, each with the time it
        happened (a conversation's messages: ``metacortex.importing``). Its text is the
        title, then the pieces, each kept apart: a piece becomes one passage (or several,
        cut at sentences, when longer than the passage size) and every passage of it
        happened at the piece's time. Otherwise as ``create_document``: the same text
        again is the document already stored, a changed one is a new version of
        ``source`` keeping the passages that did not change; nothing is written when
        anything is refused."""
        space_key = access.space(space, Level.WRITE)
        checked_source = _optional_text(source, "source", MAX_SOURCE_CHARS)
        checked_title = _optional_text(title, "title", MAX_TITLE_CHARS)
        if checked_source is None or checked_title is None:
            raise InvalidArgument("a timed document needs a title and a source")
        topic_name = limits.check_topic(topic if topic is not None else DEFAULT_TOPIC)
        for number, piece in enumerate(pieces):
            limits.check_string(piece.text, f"pieces[{number}]")
        from metacortex.documents.timed import timed_document

        extracted, passages, instants = timed_document(
            checked_title, pieces, self._passage_chars, self.limits
        )
        times = [Occurrence.of(at, Precision.INSTANT, TimeSource.GIVEN) for at in instants]
        data = extracted.text.encode("utf-8")
        self.limits.check_size(len(data))
        return self._unless_stored(
            access,
            space_key,
            data,
            lambda digest: self._write_version(
                access, data, extracted.media_type, digest, space_key, checked_source,
                checked_title, topic_name, extracted, passages, times, progress, cancellation,
            ),
        )  # fmt: skip

    def _write_version(
        self,
        access: Access,
        data: bytes,
        kind: str,
        digest: str,
        space_key: str,
        source: str | None,
        wanted_title: str | None,
        topic_name: str,
        extracted: ExtractedDocument,
        passages: list[Passage],
        times: Sequence[Occurrence] | None,
        progress: Progress | None,
        cancellation: Cancellation | None,
    ) -> dict[str, Any]:
        """Embed and write the passages of a read document as a new document or a new
        version of ``source``; ``times``: when each passage happened (else when saved)."""
        previous = self._store.find_document(space=space_key, source=source) if source else None
        now = utc_now()
        adder = Attribution(access.person, access.principal)
        self.limits.check_passages(len(passages))
        document = Document(
            id=new_memory_id(),
            title=wanted_title or extracted.title or _title_from(source) or UNTITLED,
            media_type=kind,
            size=len(data),
            sha256=digest,
            created_at=now,
            added_by=adder,
            topic=topic_name,
            space=space_key,
            source=source,
            page_count=extracted.page_count,
            page_starts=page_starts(extracted),
            pages_without_text=extracted.pages_without_text,
            no_text=extracted.no_text,
            text_chars=len(extracted.text),
            passage_count=len(passages),
            passage_chars=self._passage_chars,
            version=previous.version + 1 if previous is not None else 1,
            supersedes=previous.id if previous is not None else None,
        )
        old = self._store.document_passages(previous.id, space=space_key) if previous else []
        change = version_change(document, passages, previous, old, now, adder)
        if times is not None:
            when = {passage.index: time for passage, time in zip(passages, times, strict=True)}
            change = replace(
                change,
                fresh=[
                    (passage, record.with_changes(occurred=when[passage.index]))
                    for passage, record in change.fresh
                ],
            )
        links = self._relations(document, change, old, now, adder)
        vectors = self._embed(
            [p.retrieval_text(document.title) for p, _ in change.fresh], progress, cancellation
        )
        if cancellation is not None:
            cancellation.check()  # the last point where nothing was written
        outcome = self._store.add_document(
            DocumentWrite(
                document=document,
                data=data,
                text=extracted.text,
                passages=[
                    (record, vector)
                    for (_, record), vector in zip(change.fresh, vectors, strict=True)
                ],
                kept=change.kept,
                retired=change.retired,
                previous=previous,
                relations=links.write,
                relations_before=links.before,
            )
        )
        if not outcome.created:  # the same bytes were added meanwhile
            return _created(outcome.document, access, "duplicate", 0, 0, 0)
        status = "replaced" if previous is not None else "created"
        return _created(
            document, access, status, len(change.fresh), len(change.kept), len(change.retired)
        )

    def _relations(
        self,
        document: Document,
        change: VersionChange,
        old: Sequence[Memory],
        now: datetime,
        by: Attribution,
    ) -> RelationChange:
        """The passages' ``part_of`` and ``next``; for a new version, what it changes among
        the relations of the previous version's passages (one read of them)."""
        current = reading_order([*(record for _, record in change.fresh), *change.kept])
        active = [m.id for m in old if m.branch_state is BranchState.ACTIVE]
        stored = (
            self._store.relations_of(active, space=document.space, include_invalid=True)
            if active
            else []
        )
        return relation_change(document, current, change.retired, stored, now, by)

    def _bytes(
        self,
        content: str | None,
        content_base64: str | None,
        data: bytes | None,
        media_type: str | None,
        source: str | None,
    ) -> tuple[bytes, str]:
        """The document's bytes and media type, the size checked before anything reads it."""
        from metacortex.documents import (
            SUPPORTED_MEDIA_TYPES,
            media_type_for_path,
            parse_media_type,
        )

        if [content, content_base64, data].count(None) != 2:
            raise InvalidArgument(
                "give the document as content (text) or content_base64 (any file), one of them"
            )
        named = parse_media_type(media_type)[0] if media_type else None
        kind = named or (media_type_for_path(source) if source else None)
        if content is not None:
            limits.check_string(content, "content")
            data = content.encode("utf-8")
            kind = kind or "text/plain"
        elif content_base64 is not None:
            # Four base64 characters are three bytes: refuse a huge one before decoding it.
            self.limits.check_size(len(content_base64) // 4 * 3)
            try:
                data = base64.b64decode("".join(content_base64.split()), validate=True)
            except (binascii.Error, ValueError):
                raise InvalidArgument(
                    "content_base64 is not valid base64 (standard alphabet, no data: prefix)"
                ) from None
        if kind is None:
            raise InvalidArgument(
                "media_type is required with content_base64 (e.g. application/pdf), unless "
                "source ends in a known extension (.pdf, .docx, .md, .txt, .csv, .html)"
            )
        assert data is not None
        if kind not in SUPPORTED_MEDIA_TYPES:
            known = ", ".join(sorted(SUPPORTED_MEDIA_TYPES))
            raise DocumentRefused(
                "unsupported_type", f"documents of type {kind!r} are not read; known: {known}"
            )
        self.limits.check_size(len(data))
        if not data:
            raise InvalidArgument("the document is empty")
        return data, kind

    def _embed(
        self, texts: Sequence[str], progress: Progress | None, cancellation: Cancellation | None
    ) -> list[Any]:
        """In chunks of ``EMBED_CHUNK``; between two, the caller gone stops it, and so
        does the document's embedding time past ``DocumentLimits.embed_seconds``."""
        deadline = time.monotonic() + self.limits.embed_seconds
        vectors: list[Any] = []
        for start in range(0, len(texts), EMBED_CHUNK):
            if cancellation is not None:
                cancellation.check()
            if start and time.monotonic() > deadline:
                raise self.limits.embedding_refusal(len(vectors), len(texts))
            vectors += self._embedder.embed_documents(texts[start : start + EMBED_CHUNK])
            if progress is not None:
                progress(len(vectors))
        if texts and time.monotonic() > deadline:
            raise self.limits.embedding_refusal(len(vectors), len(texts))
        return vectors

    # ------------------------------------------------------------------ read
    def list_documents(
        self,
        access: Access,
        *,
        space: str | None = None,
        cursor: str | None = None,
        limit: int | None = None,
    ) -> dict[str, Any]:
        space_key = access.space(space)
        count = limits.check_limit(
            limit if limit is not None else limits.DEFAULT_LIST_LIMIT, limits.MAX_LIST_LIMIT
        )
        applied = {"space": space_key, "listing": "documents"}
        after = decode_cursor(cursor, applied) if cursor else None
        page = self._store.list_documents(count + 1, after, space=space_key)
        more = len(page) > count
        page = page[:count]
        return {
            "documents": [document.to_wire(access.names) for document in page],
            "next_cursor": encode_cursor(page[-1], applied) if more and page else None,
            "space": space_key,
        }

    def document(self, access: Access, document_id: str, space: str | None = None) -> Document:
        """One version (current or superseded) the caller may read, else ``NotFound``."""
        space_key = access.space(space)
        found = self._store.get_document(limits.check_id(document_id), space=space_key)
        if found is None or found.state is DocumentState.ERASING:  # half-erased is erased
            raise NotFound(f"no document with id {document_id!r}")
        return found

    def get_document(
        self,
        access: Access,
        *,
        id: str,
        offset: int | None = None,
        limit_chars: int | None = None,
        page: int | None = None,
        space: str | None = None,
    ) -> dict[str, Any]:
        """The document's metadata and ``limit_chars`` of its text from ``offset`` (or from
        the start of ``page``), with where the next slice starts and the pages in this one."""
        document = self.document(access, id, space)
        size = limits.check_limit(
            limit_chars if limit_chars is not None else DEFAULT_TEXT_CHARS,
            MAX_TEXT_CHARS,
            "limit_chars",
        )
        if offset is not None and page is not None:
            raise InvalidArgument("give offset or page, not both")
        start = offset or 0
        if page is not None:
            if not document.page_starts:
                raise InvalidArgument("this document has no pages; use offset")
            if not 1 <= page <= len(document.page_starts):
                raise InvalidArgument(
                    f"page must be between 1 and {len(document.page_starts)}, got {page}"
                )
            start = document.page_starts[page - 1]
        if start < 0:
            raise InvalidArgument(f"offset must not be negative, got {start}")
        end = min(start + size, document.text_chars)
        text = self._store.document_text(document.id, start, end, space=document.space)
        return {
            "document": document.to_wire(access.names),
            "offset": start,
            "text": text,
            "next_offset": end if end < document.text_chars else None,
            "page": document.page_at(start) if start < document.text_chars else None,
            "pages": [
                {"page": number, "offset": at}
                for number, at in enumerate(document.page_starts, start=1)
                if start <= at < max(end, start + 1)
            ],
        }

    def passages(
        self, access: Access, *, id: str, space: str | None = None
    ) -> tuple[Document, list[Memory]]:
        """A version the caller may read and its passages in reading order (the kept and
        new ones of a current version; a superseded version's retired ones)."""
        document = self.document(access, id, space)
        passages = self._store.document_passages(document.id, space=document.space)
        readable = access.readable_states
        return document, [p for p in passages if p.branch_state in readable]

    def search_document(
        self,
        access: Access,
        *,
        id: str,
        query: str,
        limit: int | None = None,
        space: str | None = None,
    ) -> tuple[Document, list[tuple[Memory, float]]]:
        """The document's passages that hold the query's words, best first (BM25 over its
        passages alone, the keyword side of search restricted to one document)."""
        document, passages = self.passages(access, id=id, space=space)
        wanted = query_terms(limits.check_query(query))
        count = limits.check_limit(
            limit if limit is not None else limits.DEFAULT_LIST_LIMIT, limits.MAX_LIST_LIMIT
        )
        by_id = {passage.id: passage for passage in passages}
        ranked = bm25.rank(wanted, {p.id: term_frequencies(p.retrieval_text) for p in passages})
        return document, [(by_id[key], score) for key, score in ranked[:count]]


def _created(
    document: Document, access: Access, status: str, added: int, kept: int, retired: int
) -> dict[str, Any]:
    result: dict[str, Any] = {
        "document": document.to_wire(access.names),
        "write_status": status,
        "passages": {"added": added, "kept": kept, "retired": retired},
    }
    if document.no_text is not None:
        result["message"] = (
            f"the document was kept, but {document.no_text}: none of it can be searched"
        )
    return result


def _optional_text(value: str | None, field_name: str, maximum: int) -> str | None:
    if value is None:
        return None
    value = limits.check_string(value, field_name).strip()
    if len(value) > maximum:
        raise InvalidArgument(f"{field_name} is {len(value)} characters; the limit is {maximum}")
    return value or None


def _title_from(source: str | None) -> str | None:
    """A file name without its extension, as a last resort ("notes/q3-plan.md" -> "q3-plan")."""
    if not source:
        return None
    name = PurePath(source.rstrip("/").split("?", 1)[0]).stem
    return name or None


class DocumentSlots:
    """How many documents this server reads and embeds at once, in all and per credential
    (``DocumentLimits.concurrent``, ``concurrent_per_credential``). Past either bound a
    document is refused at once with ``Busy`` (retry after ``RETRY_AFTER_SECONDS``), never
    queued: a queue would hold its caller's connection, and its bytes in memory, for as
    long as the others take. Each document runs one reader process at a time."""

    def __init__(self, limit: int, per_credential: int) -> None:
        self._limit = limit
        self._per_credential = per_credential
        self._lock = threading.Condition()
        self._running: Counter[str] = Counter()

    @contextmanager
    def taken(self, credential: str) -> Iterator[None]:
        with self._lock:
            if self._running.total() >= self._limit:
                raise Busy(
                    f"the server is reading {self._running.total()} documents already, as many "
                    f"as it reads at once (METACORTEX_DOCUMENT_CONCURRENCY={self._limit}): "
                    f"busy, retry after {RETRY_AFTER_SECONDS} s",
                    RETRY_AFTER_SECONDS,
                )
            if self._running[credential] >= self._per_credential:
                raise Busy(
                    f"this credential is adding {self._running[credential]} document(s) "
                    "already, as many as one credential adds at once "
                    f"(METACORTEX_DOCUMENT_CONCURRENCY_PER_CREDENTIAL={self._per_credential}):"
                    f" busy, retry after {RETRY_AFTER_SECONDS} s, once it is done",
                    RETRY_AFTER_SECONDS,
                )
            self._running[credential] += 1
        try:
            yield
        finally:
            with self._lock:
                self._running[credential] -= 1
                if self._running[credential] <= 0:
                    del self._running[credential]
                self._lock.notify_all()

    @property
    def running(self) -> int:
        with self._lock:
            return self._running.total()

    def idle(self, timeout: float) -> bool:
        """Wait until no document is being read or embedded here (one whose caller went
        away included: it ends at its next check); False if ``timeout`` passes first."""
        with self._lock:
            return self._lock.wait_for(lambda: not self._running, timeout)
