"""How a document, its text and its bytes look in Firestore (``firestore_documents``).

One Firestore document per version in the space's documents collection (id = document
id). The extracted text and the original bytes are cut into parts, each a document of
the version's ``..._document_parts`` subcollection well inside Firestore's 1 MiB document limit:
``t000000``... hold text (``text``), ``b000000``... bytes (``data``, a Blob), ``u000000``...
the records a new version changes, as they were (its undo log while it is written).
``text_parts`` on the version lists where each text part starts, so a page of text reads
only the parts it needs.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any, Final

from metacortex.domain.documents import Document
from metacortex.storage.firestore_codec import SCHEMA_VERSION, from_stored_time, to_stored_time

# Bytes in one part document: Firestore's limit is 1 MiB (1,048,576 bytes) with the
# document's name and field names; this leaves room for both.
PART_BYTES: Final = 900_000
TEXT_PREFIX: Final = "t"
BYTES_PREFIX: Final = "b"
UNDO_PREFIX: Final = "u"


def part_id(prefix: str, number: int) -> str:
    return f"{prefix}{number:06d}"


def encode_document(document: Document, text_parts: list[int], byte_parts: int) -> dict[str, Any]:
    return document.details() | {
        "sha256": document.sha256,
        "created_at": to_stored_time(document.created_at),
        "space": document.space,
        "source": document.source,
        "superseded_by": document.superseded_by,
        "text_parts": text_parts,
        "byte_parts": byte_parts,
        "schema_version": SCHEMA_VERSION,
    }


def decode_document(document_id: str, data: Mapping[str, Any], space: str) -> Document:
    created = data.get("created_at")
    return Document.from_details(
        data,
        id=document_id,
        space=space,
        sha256=str(data.get("sha256") or ""),
        source=data.get("source"),
        created_at=(
            from_stored_time(created)
            if isinstance(created, datetime)
            else datetime.fromtimestamp(0, UTC)
        ),
        superseded_by=data.get("superseded_by"),
    )


def text_parts(text: str) -> list[tuple[int, str]]:
    """The text cut into (start, part) pieces of at most ``PART_BYTES`` in UTF-8, at
    character boundaries."""
    encoded = text.encode("utf-8")
    parts: list[tuple[int, str]] = []
    start_byte = 0
    start_char = 0
    while start_byte < len(encoded):
        end = min(start_byte + PART_BYTES, len(encoded))
        while end < len(encoded) and encoded[end] & 0xC0 == 0x80:  # inside a character
            end -= 1
        piece = encoded[start_byte:end].decode("utf-8")
        parts.append((start_char, piece))
        start_char += len(piece)
        start_byte = end
    return parts


def byte_parts(data: bytes) -> list[bytes]:
    return [data[start : start + PART_BYTES] for start in range(0, len(data), PART_BYTES)]
