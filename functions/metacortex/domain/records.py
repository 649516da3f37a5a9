"""The memory record and its enumerations, independent of storage and transport."""

from __future__ import annotations

import secrets
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime
from enum import StrEnum
from typing import Any, Final

# Re-exported: the record's times have always been read from here.
from metacortex.domain.instants import to_wire_time as to_wire_time
from metacortex.domain.instants import utc_now as utc_now
from metacortex.domain.occurrence import Occurrence, Precision, TimeSource


class BranchState(StrEnum):
    ACTIVE = "active"
    WIP = "wip"
    MERGED = "merged"
    DEPRECATED = "deprecated"


class Modality(StrEnum):
    TEXT = "text"
    IMAGE = "image"
    MIXED = "mixed"


class Origin(StrEnum):
    USER_ASSERTED = "user_asserted"
    AGENT_INFERRED = "agent_inferred"
    LEGACY_IMPORT = "legacy_import"
    # A passage of a document (``usecases/documents.py``); never given by a caller.
    DOCUMENT = "document"


class SupersessionReason(StrEnum):
    CHANGED = "changed"
    CORRECTED = "corrected"


class Initiator(StrEnum):
    USER = "user"
    AGENT = "agent"


ALL_STATES: tuple[BranchState, ...] = tuple(BranchState)
DEFAULT_TOPIC = "general"
# Where everything written before spaces existed lives (``metacortex.access``).
DEFAULT_SPACE: Final = "default"
_NO_NAMES: Final[Mapping[str, str]] = {}


_CROCKFORD = "0123456789abcdefghjkmnpqrstvwxyz"
_id_lock = threading.Lock()
_last_id_state = (0, 0)


def new_memory_id() -> str:
    """An opaque, URL-safe, stable identifier: 48-bit ms time + 80 random bits (26 chars).

    Ids sort by creation time, and within one process strictly by creation order
    (the random part is incremented inside a millisecond), so listings that break
    created_at ties on id stay in the order memories were written.
    """
    global _last_id_state
    with _id_lock:
        now_ms = time.time_ns() // 1_000_000
        last_ms, last_random = _last_id_state
        if now_ms <= last_ms:
            now_ms, randomness = last_ms, last_random + 1
        else:
            randomness = secrets.randbits(79)
        _last_id_state = (now_ms, randomness)
    value = (now_ms << 80) | (randomness & ((1 << 80) - 1))
    return "".join(_CROCKFORD[(value >> shift) & 31] for shift in range(125, -1, -5))


@dataclass(frozen=True, slots=True)
class Provenance:
    origin: Origin | None = None
    source_session: str | None = None
    derived_from: tuple[str, ...] = ()
    confidence: float | None = None

    def is_empty(self) -> bool:
        return (
            self.origin is None
            and self.source_session is None
            and not self.derived_from
            and self.confidence is None
        )

    def to_wire(self) -> dict[str, Any]:
        return {
            "origin": self.origin.value if self.origin else None,
            "source_session": self.source_session,
            "derived_from": list(self.derived_from),
            "confidence": self.confidence,
        }


@dataclass(frozen=True, slots=True)
class Attribution:
    """Who wrote or changed a record: the person and the credential they used (a client
    id, ``oauth-<grant>``, ``default`` for the admin token, ``console``, ``stdio``)."""

    person: str
    via: str

    def to_wire(self, names: Mapping[str, str]) -> dict[str, str]:
        return {
            "person_id": self.person,
            "name": names.get(self.person, self.person),
            "client": self.via,
        }

    def encode(self) -> str:
        """The stored form: ``person|via`` (neither holds a ``|``)."""
        return f"{self.person}|{self.via}"

    @classmethod
    def decode(cls, value: str | None) -> Attribution | None:
        if not value or "|" not in value:
            return None
        person, _, via = value.partition("|")
        return cls(person, via)


@dataclass(frozen=True, slots=True)
class DocumentRef:
    """Where a passage comes from: its document (id and title, as of the version it
    belongs to) and its place there. ``section`` is the heading path, outermost first;
    ``page``/``page_end`` are 1-based PDF pages (None for formats without pages);
    ``start``/``end`` index the document's extracted text; ``content_hash`` is the
    passage's (``documents.passages.content_hash``): what a new version compares."""

    id: str
    title: str
    start: int
    end: int
    content_hash: str
    section: tuple[str, ...] = ()
    page: int | None = None
    page_end: int | None = None

    def details(self) -> dict[str, Any]:
        """What stores keep beside ``id`` and ``start`` (which they index): plain values."""
        return {
            "title": self.title,
            "end": self.end,
            "hash": self.content_hash,
            "section": list(self.section),
            "page": self.page,
            "page_end": self.page_end,
        }

    @classmethod
    def from_details(cls, document_id: str, start: int, details: Mapping[str, Any]) -> DocumentRef:
        return cls(
            id=document_id,
            title=str(details.get("title") or ""),
            start=start,
            end=int(details.get("end") or 0),
            content_hash=str(details.get("hash") or ""),
            section=tuple(details.get("section") or ()),
            page=details.get("page"),
            page_end=details.get("page_end"),
        )

    def to_wire(self) -> dict[str, Any]:
        """What every result shows of a passage's origin, so an answer cites it."""
        return {
            "id": self.id,
            "title": self.title,
            "page": self.page,
            "page_end": self.page_end,
            "section": " > ".join(self.section) if self.section else None,
            "start": self.start,
            "end": self.end,
        }


@dataclass(frozen=True, slots=True)
class Memory:
    """One memory. ``retrieval_text`` is what gets embedded and keyword-indexed."""

    id: str
    content: str
    retrieval_text: str
    topic: str
    branch_state: BranchState
    modality: Modality
    created_at: datetime
    updated_at: datetime
    artifact_refs: tuple[str, ...] = ()
    valid_from: datetime | None = None
    valid_until: datetime | None = None
    superseded_by: str | None = None
    supersession_reason: SupersessionReason | None = None
    initiator: Initiator | None = None
    provenance: Provenance = field(default_factory=Provenance)
    # How a consolidated record was produced (e.g. "offline_sentence_merge" or a model name).
    merge_method: str | None = None
    # The space the record lives in; every read and write names one (``metacortex.access``).
    space: str = DEFAULT_SPACE
    # Who created it, and who last changed its state; None on records written before
    # attribution (reported as unattributed, never guessed).
    created_by: Attribution | None = None
    changed_by: Attribution | None = None
    # A passage of a document (origin ``document``): which one and where in it.
    document: DocumentRef | None = None
    # When it happened (``domain/occurrence.py``); None on records saved before memories
    # kept it, which read as happening when they were saved (``occurrence``).
    occurred: Occurrence | None = None

    @property
    def occurrence(self) -> Occurrence:
        """When it happened: as given or stated, else when it was saved."""
        if self.occurred is not None:
            return self.occurred
        return Occurrence(self.created_at, Precision.INSTANT, TimeSource.SAVED)

    def with_changes(self, **changes: Any) -> Memory:
        return replace(self, **changes)

    def is_valid_at(self, instant: datetime) -> bool:
        """Temporal validity: inside [valid_from, valid_until) and not corrected."""
        if self.supersession_reason is SupersessionReason.CORRECTED:
            return False
        if self.valid_from is not None and instant < self.valid_from:
            return False
        return not (self.valid_until is not None and instant >= self.valid_until)

    def metadata(self, names: Mapping[str, str] = _NO_NAMES) -> dict[str, Any]:
        """The wire form of everything but id and content (``names``: person id -> name)."""
        meta: dict[str, Any] = {
            "space": self.space,
            "topic": self.topic,
            "branch_state": self.branch_state.value,
            "modality": self.modality.value,
            "created_at": to_wire_time(self.created_at),
            "updated_at": to_wire_time(self.updated_at),
            "artifact_refs": list(self.artifact_refs),
            "valid_from": to_wire_time(self.valid_from) if self.valid_from else None,
            "valid_until": to_wire_time(self.valid_until) if self.valid_until else None,
            "superseded_by": self.superseded_by,
            "supersession_reason": (
                self.supersession_reason.value if self.supersession_reason else None
            ),
            "initiator": self.initiator.value if self.initiator else None,
            "provenance": self.provenance.to_wire(),
        }
        occurrence = self.occurrence
        meta["occurred_at"] = occurrence.to_wire()
        meta["occurred_at_source"] = occurrence.source.value
        if self.merge_method is not None:
            meta["merge_method"] = self.merge_method
        meta["created_by"] = self.created_by.to_wire(names) if self.created_by else None
        meta["changed_by"] = self.changed_by.to_wire(names) if self.changed_by else None
        if self.document is not None:
            meta["document"] = self.document.to_wire()
        return meta

    def to_item(self, names: Mapping[str, str] = _NO_NAMES) -> dict[str, Any]:
        return {"id": self.id, "content": self.content, "metadata": self.metadata(names)}


@dataclass(frozen=True, slots=True)
class Tombstone:
    """What is left of an erased memory: its id, when and by whom, never its content.

    Supersession and consolidation links that name the id resolve to it, so they
    read "erased" instead of dangling."""

    id: str
    erased_at: datetime
    erased_by: str
    # The state the record was in when erased (None: erased before stores kept it). Who
    # could not read that state is never told the record existed (access/rules.py).
    branch_state: BranchState | None = None

    def describe(self) -> str:
        return (
            f"memory {self.id!r} was erased on {to_wire_time(self.erased_at)} by {self.erased_by}"
        )
