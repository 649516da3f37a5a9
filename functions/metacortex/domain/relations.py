"""Typed relations between memories: what links one memory to another, and since when.

A relation is directed (``source`` -> ``target``) and typed:

- ``supersedes``: the source replaces the target (deprecation, correction; also
  recorded, valid, when a writer proposed retiring someone else's memory, which
  stays active: spaces' contested rule);
- ``derived_from``: the source was merged from the target (consolidation);
- ``part_of``: a document's passage belongs to the document (target: its id);
- ``next``: a document's passage is followed by the target passage;
- ``updates``, ``extends``, ``derives``, ``relates_to``: what a caller (or
  extraction) asserts about two memories.

It carries a short note (why), who made it and when, both ends' summaries and
current states (a reader sees only neighbours in states it may read), and a
validity interval:
when what it asserted stops being true it is invalidated (``invalid_at``), never
deleted; erasing a memory removes every relation touching it. Relations never
cross a space. The summaries of both ends are kept on the relation (a memory's
content never changes once written), so reading a page's neighbours costs one
read of relations and none of memories.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from datetime import datetime
from enum import StrEnum
from typing import Any, Final

from metacortex.domain.records import Attribution, to_wire_time


class RelationType(StrEnum):
    SUPERSEDES = "supersedes"
    DERIVED_FROM = "derived_from"
    PART_OF = "part_of"
    NEXT = "next"
    UPDATES = "updates"
    EXTENDS = "extends"
    DERIVES = "derives"
    RELATES_TO = "relates_to"


# What a caller may assert with save_context's ``relations`` (the others come from the
# lifecycle and documents, which know when they are true).
CALLER_TYPES: Final = frozenset(
    {RelationType.UPDATES, RelationType.EXTENDS, RelationType.DERIVES, RelationType.RELATES_TO}
)
MAX_NOTE_CHARS: Final = 280
# Neighbours a result carries at most (``related``).
RELATED_PER_RESULT: Final = 5


@dataclass(frozen=True, slots=True)
class Relation:
    source: str
    target: str
    type: RelationType
    space: str
    created_at: datetime
    note: str = ""
    created_by: Attribution | None = None
    source_summary: str = ""
    target_summary: str = ""
    invalid_at: datetime | None = None
    invalidated_by: Attribution | None = None
    # Each end's lifecycle state as it is now (stores update it with the memory), so a
    # reader is shown only neighbours in states it may read; "" for an end that is not
    # a memory (a document).
    source_state: str = ""
    target_state: str = ""

    @property
    def id(self) -> str:
        """One relation per (space, source, type, target): asserting it again revives it."""
        return relation_id(self.space, self.source, self.type, self.target)

    @property
    def valid(self) -> bool:
        return self.invalid_at is None

    def invalidated(self, at: datetime, by: Attribution | None) -> Relation:
        return replace(self, invalid_at=at, invalidated_by=by)

    def touches(self, memory_id: str) -> bool:
        return memory_id in (self.source, self.target)

    def other(self, memory_id: str) -> str:
        """The end of this relation that is not ``memory_id``."""
        return self.target if self.source == memory_id else self.source

    def other_state(self, memory_id: str) -> str:
        return self.target_state if self.source == memory_id else self.source_state

    def seen_from(self, memory_id: str) -> dict[str, Any]:
        """The neighbour as a result of ``memory_id`` shows it (``related``)."""
        outgoing = self.source == memory_id
        return {
            "id": self.target if outgoing else self.source,
            "type": self.type.value,
            "direction": "outgoing" if outgoing else "incoming",
            "note": self.note,
            "summary": self.target_summary if outgoing else self.source_summary,
            "hops": 1,
        }

    def to_wire(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "source": self.source,
            "target": self.target,
            "type": self.type.value,
            "note": self.note,
            "created_at": to_wire_time(self.created_at),
            "valid": self.valid,
            "invalid_at": to_wire_time(self.invalid_at) if self.invalid_at else None,
        }


def relation_id(space: str, source: str, type_: RelationType, target: str) -> str:
    key = f"{space}\x00{source}\x00{type_.value}\x00{target}".encode()
    return hashlib.sha256(key).hexdigest()[:32]


def relation_fields(relation: Relation, time: Callable[[datetime], Any]) -> dict[str, Any]:
    """Every field of a relation but its space, as plain values with times written by
    ``time``: what Firestore keeps (Timestamps) and a portable backup's line (ISO 8601
    text) alike, so the two never drift apart."""
    return {
        "source": relation.source,
        "target": relation.target,
        "type": relation.type.value,
        "note": relation.note,
        "created_at": time(relation.created_at),
        "created_by": relation.created_by.encode() if relation.created_by else None,
        "source_summary": relation.source_summary,
        "target_summary": relation.target_summary,
        "invalid_at": time(relation.invalid_at) if relation.invalid_at else None,
        "invalidated_by": relation.invalidated_by.encode() if relation.invalidated_by else None,
        "source_state": relation.source_state,
        "target_state": relation.target_state,
    }


def relation_from_fields(
    data: Mapping[str, Any], space: str, time: Callable[[Any], datetime]
) -> Relation:
    """``relation_fields`` read back (times by ``time``); ``KeyError`` without
    ``created_at``, ``ValueError`` for a type that is not a ``RelationType``."""
    invalid = data.get("invalid_at")
    return Relation(
        source=str(data.get("source") or ""),
        target=str(data.get("target") or ""),
        type=RelationType(str(data.get("type"))),
        space=space,
        note=str(data.get("note") or ""),
        created_at=time(data["created_at"]),
        created_by=Attribution.decode(data.get("created_by")),
        source_summary=str(data.get("source_summary") or ""),
        target_summary=str(data.get("target_summary") or ""),
        invalid_at=time(invalid) if invalid is not None else None,
        invalidated_by=Attribution.decode(data.get("invalidated_by")),
        source_state=str(data.get("source_state") or ""),
        target_state=str(data.get("target_state") or ""),
    )
