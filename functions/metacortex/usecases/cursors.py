"""Opaque listing cursors: the last (created_at, id) plus a digest of the filters (the
last occurrence instant instead in a listing by when memories happened)."""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
from typing import Any

from metacortex.domain import limits
from metacortex.domain.documents import Document
from metacortex.domain.records import Memory, to_wire_time
from metacortex.errors import InvalidArgument
from metacortex.storage.base import PageKey

CursorFilters = dict[str, Any]


def _filters_digest(applied: CursorFilters) -> str:
    encoded = json.dumps(applied, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(encoded.encode()).hexdigest()[:16]


def encode_cursor(
    last: Memory | Document, applied: CursorFilters, *, by_occurrence: bool = False
) -> str:
    """``by_occurrence``: the listing is ordered by when memories happened; the key is the
    start of ``last``'s occurrence (``PageKey``)."""
    at = last.occurrence.at if by_occurrence and isinstance(last, Memory) else last.created_at
    payload = {"c": to_wire_time(at), "i": last.id, "f": _filters_digest(applied)}
    raw = json.dumps(payload, separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_cursor(cursor: str, applied: CursorFilters) -> PageKey:
    bad = InvalidArgument("cursor is not valid; start again without a cursor")
    try:
        padded = cursor + "=" * (-len(cursor) % 4)
        payload = json.loads(base64.urlsafe_b64decode(padded.encode()))
        created = limits.parse_instant(str(payload["c"]), "cursor")
        memory_id = str(payload["i"])
        digest = str(payload["f"])
    except (binascii.Error, ValueError, KeyError, TypeError, UnicodeDecodeError, InvalidArgument):
        raise bad from None
    if created is None or not limits.ID_PATTERN.fullmatch(memory_id):
        raise bad
    if digest != _filters_digest(applied):
        raise InvalidArgument("cursor belongs to a listing with other filters; start again")
    return PageKey(created_at=created, id=memory_id)
