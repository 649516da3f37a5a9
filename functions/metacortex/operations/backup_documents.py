"""Documents in a portable backup: ``documents.ndjson``, and their restore.

A line is one version of a document (current or superseded) with everything a store
keeps of it: ``id``, ``space``, ``sha256``, ``source``, ``created_at`` (ISO 8601),
``superseded_by``, ``details`` (``Document.details()``: title, media type, size, who
added it, topic, pages, text length, passage count, version, what it supersedes), its
extracted ``text`` and its original bytes as ``data_base64`` (standard base64). Lines
are ordered by space (``default`` first), then (created_at, id): a version always
after the one it supersedes. Its passages are memories (``memories.ndjson``).

Restore writes each version with ``add_document`` (same id, bytes, text and details;
no passages: they come back as memories) in that order, a new version naming the one
it supersedes, so the store marks that one superseded as it did when it was added. A
version whose id the store holds is skipped; a line whose bytes do not match its
sha256, or that a backup would not write, is refused and named.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import re
from collections.abc import Collection, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Final

from metacortex.access.model import check_space_key
from metacortex.domain import limits
from metacortex.domain.documents import Document, DocumentState
from metacortex.domain.records import to_wire_time
from metacortex.domain.stored_values import Refused, instant, kind, text
from metacortex.errors import Conflict, InvalidArgument
from metacortex.storage.base import DocumentWrite, MemoryStore, PageKey

DOCUMENTS: Final = "documents.ndjson"
_PAGE: Final = 100
_SHA256: Final = re.compile(r"[0-9a-f]{64}")


@dataclass(frozen=True, slots=True)
class Version:
    """One version of a document as a backup holds it."""

    document: Document
    data: bytes
    text: str


def document_line(version: Version) -> dict[str, Any]:
    document = version.document
    return {
        "id": document.id,
        "space": document.space,
        "sha256": document.sha256,
        "source": document.source,
        "created_at": to_wire_time(document.created_at),
        "superseded_by": document.superseded_by,
        "details": document.details(),
        "text": version.text,
        "data_base64": base64.b64encode(version.data).decode("ascii"),
    }


def versions(store: MemoryStore, space: str, cited: Iterable[str]) -> Iterator[Version]:
    """Every completely written version of the space's documents, oldest first: the
    current ones, those they supersede, and any a passage cites."""
    found: dict[str, Document] = {}
    pending = [*_current(store, space), *cited]
    while pending:
        document_id = pending.pop()
        if document_id in found:
            continue
        document = store.get_document(document_id, space=space)
        if document is None or document.state is not DocumentState.READY:
            continue
        found[document_id] = document
        if document.supersedes:
            pending.append(document.supersedes)
    for document in sorted(found.values(), key=lambda d: (d.created_at, d.id)):
        data = store.document_bytes(document.id, space=space)
        if data is None:  # erased meanwhile
            continue
        yield Version(
            document, data, store.document_text(document.id, 0, document.text_chars, space=space)
        )


def _current(store: MemoryStore, space: str) -> Iterator[str]:
    after: PageKey | None = None
    while True:
        page = store.list_documents(_PAGE, after, space=space)
        yield from (document.id for document in page)
        if len(page) < _PAGE:
            return
        after = PageKey(created_at=page[-1].created_at, id=page[-1].id)


def read_version(record: Mapping[str, Any]) -> Version:
    """A line as the version it records, or ``Refused`` naming what is wrong with it."""
    try:
        document_id = limits.check_id(text(record.get("id"), "id") or "")
        space = check_space_key(text(record.get("space"), "space") or "")
        superseded_by = text(record.get("superseded_by"), "superseded_by")
        if superseded_by is not None:
            limits.check_id(superseded_by, "superseded_by")
    except InvalidArgument as error:
        raise Refused(error.message) from None
    sha256 = record.get("sha256")
    if not isinstance(sha256, str) or not _SHA256.fullmatch(sha256):
        raise Refused("sha256 is not 64 lowercase hexadecimal digits")
    created_at = instant(record.get("created_at"), "created_at")
    if created_at is None:
        raise Refused("created_at is missing")
    details = record.get("details")
    if not isinstance(details, Mapping):
        raise Refused(f"details is {kind(details)}, not a map")
    try:
        document = Document.from_details(
            details,
            id=document_id,
            space=space,
            sha256=sha256,
            source=text(record.get("source"), "source"),
            created_at=created_at,
            superseded_by=superseded_by,
        )
    except (TypeError, ValueError):
        raise Refused("details are not as a backup writes them") from None
    differing = sorted(
        name for name, value in document.details().items() if details.get(name) != value
    )
    if differing:
        raise Refused(f"details.{', details.'.join(differing)} not as a backup writes them")
    if document.state is not DocumentState.READY:
        raise Refused(f"the version is {document.state.value}, not ready")
    body = text(record.get("text"), "text")
    if body is None or len(body) != document.text_chars:
        raise Refused("text is missing or not details.text_chars characters long")
    encoded = text(record.get("data_base64"), "data_base64")
    try:
        data = base64.b64decode(encoded or "", validate=True)
    except (binascii.Error, ValueError):
        raise Refused("data_base64 is not standard base64") from None
    if hashlib.sha256(data).hexdigest() != sha256 or len(data) != document.size:
        raise Refused("its bytes do not match its sha256 and size: they were changed")
    return Version(document, data, body)


@dataclass(frozen=True, slots=True)
class DocumentsRestored:
    restored: int = 0
    skipped_existing: int = 0
    refused: tuple[str, ...] = ()


def restore_documents(
    store: MemoryStore, lines: Iterable[str], spaces: Collection[str]
) -> DocumentsRestored:
    """Each version in the file's order, into the store's ``spaces`` only; a line is read
    only when its turn comes (a document's bytes are large)."""
    restored = existing = 0
    refused: list[str] = []
    for number, raw in enumerate(lines, start=1):
        if not raw.strip():
            continue
        where = f"{DOCUMENTS} line {number}"
        try:
            record = json.loads(raw)
            if not isinstance(record, dict):
                raise Refused(f"the line is {kind(record)}, not a JSON object")
            if isinstance(record.get("id"), str):
                where += f" (document {record['id']!r})"
            version = read_version(record)
        except (json.JSONDecodeError, RecursionError):
            refused.append(f"{where}: not a JSON object")
            continue
        except Refused as why:
            refused.append(f"{where}: {why}")
            continue
        document = version.document
        if document.space not in spaces:
            refused.append(f"{where}: the store has no space {document.space!r}")
            continue
        if store.get_document(document.id, space=document.space) is not None:
            existing += 1
            continue
        try:
            _add(store, version)
        except Refused as why:
            refused.append(f"{where}: {why}")
            continue
        restored += 1
    return DocumentsRestored(restored, existing, tuple(refused))


def _add(store: MemoryStore, version: Version) -> None:
    """Written as the version it was: current until the version superseding it is."""
    document = version.document
    previous = (
        store.get_document(document.supersedes, space=document.space)
        if document.supersedes
        else None
    )
    if previous is not None and not (previous.current and previous.source == document.source):
        previous = None
    try:
        outcome = store.add_document(
            DocumentWrite(
                document=document.with_changes(superseded_by=None),
                data=version.data,
                text=version.text,
                previous=previous,
            )
        )
    except Conflict as error:
        raise Refused(
            f"the store holds another current version of {document.source!r} ({error.message})"
        ) from None
    if not outcome.created:
        raise Refused(
            f"the store holds the same bytes as document {outcome.document.id!r} already; "
            "its passages in the backup cite this one"
        )
