"""How a memory, a fingerprint and an event look as Firestore documents.

One memory is one document in the memory collection, keyed by the memory id.
Besides the record's fields (topic stored as ``module_name``, as the original
did) it carries ``embedding`` (a ``Vector``), the term index of
``retrieval_text`` (``terms``, ``term_freqs``, ``term_count``; see
``firestore_lexical``) and ``schema_version``.

Timestamps: Firestore keeps microseconds; the domain keeps milliseconds. Values
are truncated to the millisecond on the way in (as ``to_wire_time`` does), so
what is read back equals what was written and keyset cursors built from wire
times compare exactly.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Final

import numpy as np
from google.cloud.firestore_v1.vector import Vector as FirestoreVector

from metacortex.domain.occurrence import stored as stored_occurrence
from metacortex.domain.records import (
    DEFAULT_SPACE,
    Attribution,
    BranchState,
    DocumentRef,
    Initiator,
    Memory,
    Modality,
    Origin,
    Provenance,
    SupersessionReason,
    Tombstone,
)
from metacortex.errors import FailedPrecondition
from metacortex.retrieval.text import terms as analyze
from metacortex.storage.base import Event

if TYPE_CHECKING:
    from metacortex.storage.base import Vector

SCHEMA_VERSION: Final = 1
_STATE_VALUES: Final = frozenset(state.value for state in BranchState)

EMBEDDING: Final = "embedding"
TERMS: Final = "terms"
TERM_FREQS: Final = "term_freqs"
TERM_COUNT: Final = "term_count"
OCCURRED_AT: Final = "occurred_at"

# The record's own fields: everything a ``Memory`` is built from.
MEMORY_FIELDS: Final = (
    "content",
    "retrieval_text",
    "module_name",
    "branch_state",
    "modality",
    "created_at",
    "updated_at",
    "artifact_refs",
    "valid_from",
    "valid_until",
    "superseded_by",
    "supersession_reason",
    "initiator",
    "origin",
    "source_session",
    "derived_from",
    "confidence",
    "merge_method",
    "space",
    "created_by",
    "changed_by",
    "document_id",
    "document_start",
    "document",
    "occurred_at",
    "occurred_precision",
    "occurred_source",
)
# Enough of a record to decide ``MemoryFilter.matches`` (see ``decode_memory``).
FILTER_FIELDS: Final = (
    "module_name",
    "branch_state",
    "origin",
    "created_at",
    "valid_from",
    "valid_until",
    "supersession_reason",
    "occurred_at",
)

# Firestore reserves document ids of the form __name__.
_RESERVED_ID: Final = re.compile(r"^__.*__$")


def storable_id(document_id: str) -> bool:
    """Whether a (validated) id can name a Firestore document at all."""
    return bool(document_id) and not _RESERVED_ID.match(document_id)


# ----------------------------------------------------------------- timestamps
def to_stored_time(value: datetime) -> datetime:
    """Aware UTC, truncated to the millisecond."""
    value = value.astimezone(UTC) if value.tzinfo else value.replace(tzinfo=UTC)
    return value.replace(microsecond=(value.microsecond // 1000) * 1000)


def from_stored_time(value: datetime) -> datetime:
    """A plain ``datetime`` (not the client's ``DatetimeWithNanoseconds``), UTC, ms precision."""
    value = value.astimezone(UTC)
    return datetime(
        value.year,
        value.month,
        value.day,
        value.hour,
        value.minute,
        value.second,
        (value.microsecond // 1000) * 1000,
        tzinfo=UTC,
    )


def _time_or_none(value: datetime | None) -> datetime | None:
    return None if value is None else to_stored_time(value)


def _read_time(value: Any) -> datetime | None:
    return from_stored_time(value) if isinstance(value, datetime) else None


# --------------------------------------------------------------------- memory
def term_index(retrieval_text: str) -> dict[str, Any]:
    """The per-record term index: distinct terms, their frequencies, the stream length."""
    stream = analyze(retrieval_text)
    freqs = Counter(stream)
    return {
        TERMS: sorted(freqs),
        TERM_FREQS: dict(sorted(freqs.items())),
        TERM_COUNT: len(stream),
    }


def vector_value(vector: Vector) -> FirestoreVector:
    return FirestoreVector([float(x) for x in np.asarray(vector, dtype=np.float32)])


def encode_memory(memory: Memory, embedding: Vector | None) -> dict[str, Any]:
    """Every stored field of a record; ``embedding`` only when one is given."""
    provenance = memory.provenance
    data: dict[str, Any] = {
        "content": memory.content,
        "retrieval_text": memory.retrieval_text,
        "module_name": memory.topic,
        "branch_state": memory.branch_state.value,
        "modality": memory.modality.value,
        "created_at": to_stored_time(memory.created_at),
        "updated_at": to_stored_time(memory.updated_at),
        "artifact_refs": list(memory.artifact_refs),
        "valid_from": _time_or_none(memory.valid_from),
        "valid_until": _time_or_none(memory.valid_until),
        "superseded_by": memory.superseded_by,
        "supersession_reason": (
            memory.supersession_reason.value if memory.supersession_reason else None
        ),
        "initiator": memory.initiator.value if memory.initiator else None,
        "origin": provenance.origin.value if provenance.origin else None,
        "source_session": provenance.source_session,
        "derived_from": list(provenance.derived_from),
        "confidence": provenance.confidence,
        "merge_method": memory.merge_method,
        # The record's space is where its document lives (``FirestoreStore``); the field
        # says it again for a reader that holds the document alone.
        "space": memory.space,
        "created_by": memory.created_by.encode() if memory.created_by else None,
        "changed_by": memory.changed_by.encode() if memory.changed_by else None,
        "schema_version": SCHEMA_VERSION,
        **term_index(memory.retrieval_text),
        **ref_fields(memory.document),
        **occurrence_fields(memory),
    }
    if embedding is not None:
        data[EMBEDDING] = vector_value(embedding)
    return data


def occurrence_fields(memory: Memory) -> dict[str, Any]:
    """When the record happened (``Memory.occurrence``): ``occurred_at`` is always written,
    the time it was saved when it keeps none of its own, so a range or an order on the
    field sees every record written since (one written before has no such field)."""
    occurrence = memory.occurrence
    return {
        "occurred_at": to_stored_time(occurrence.at),
        "occurred_precision": occurrence.precision.value,
        "occurred_source": occurrence.source.value,
    }


def ref_fields(ref: DocumentRef | None) -> dict[str, Any]:
    """A passage's document reference: ``document_id`` and ``document_start`` as fields of
    their own (the passages of a document are queried, in order, by them), the rest in the
    ``document`` map (never indexed: ``firestore_queries``). Other records have none of
    these fields (a reference is never taken away from a passage)."""
    if ref is None:
        return {}
    return {"document_id": ref.id, "document_start": ref.start, "document": ref.details()}


def _ref(data: Mapping[str, Any]) -> DocumentRef | None:
    document_id = data.get("document_id")
    details = data.get("document")
    if not document_id or not isinstance(details, Mapping):
        return None
    return DocumentRef.from_details(str(document_id), int(data.get("document_start") or 0), details)


def fields_of(snapshot: Any) -> dict[str, Any]:
    """A snapshot's fields, read-only, without ``to_dict()``'s deep copy (about a
    fifth of a search's client CPU on Firestore). Decoders only read them."""
    if not snapshot.exists:
        return {}
    data = getattr(snapshot, "_data", None)
    if isinstance(data, dict):
        return data
    return snapshot.to_dict() or {}


def decode_memory(document_id: str, data: Mapping[str, Any], space: str = DEFAULT_SPACE) -> Memory:
    """A ``Memory`` from a stored document of ``space``'s collection (a document
    written before spaces has no ``space`` field: it is the default space's).

    Tolerates a projection that holds only ``FILTER_FIELDS``: the result is then
    good for ``MemoryFilter.matches`` and nothing else (empty texts).
    """
    created = _read_time(data.get("created_at")) or datetime.fromtimestamp(0, UTC)
    reason = data.get("supersession_reason")
    initiator = data.get("initiator")
    origin = data.get("origin")
    confidence = data.get("confidence")
    return Memory(
        id=document_id,
        content=str(data.get("content") or ""),
        retrieval_text=str(data.get("retrieval_text") or ""),
        topic=str(data.get("module_name") or ""),
        branch_state=BranchState(data.get("branch_state") or BranchState.ACTIVE.value),
        modality=Modality(data.get("modality") or Modality.TEXT.value),
        created_at=created,
        updated_at=_read_time(data.get("updated_at")) or created,
        artifact_refs=tuple(data.get("artifact_refs") or ()),
        valid_from=_read_time(data.get("valid_from")),
        valid_until=_read_time(data.get("valid_until")),
        superseded_by=data.get("superseded_by"),
        supersession_reason=SupersessionReason(reason) if reason else None,
        initiator=Initiator(initiator) if initiator else None,
        provenance=Provenance(
            origin=Origin(origin) if origin else None,
            source_session=data.get("source_session"),
            derived_from=tuple(data.get("derived_from") or ()),
            confidence=float(confidence) if confidence is not None else None,
        ),
        merge_method=data.get("merge_method"),
        space=space,
        created_by=Attribution.decode(data.get("created_by")),
        changed_by=Attribution.decode(data.get("changed_by")),
        document=_ref(data),
        occurred=stored_occurrence(
            _read_time(data.get("occurred_at")),
            data.get("occurred_precision"),
            data.get("occurred_source"),
        ),
    )


def decode_record(document_id: str, data: Mapping[str, Any], space: str = DEFAULT_SPACE) -> Memory:
    """``decode_memory`` of a document read by id, refusing one without a top-level topic
    or state rather than reading it as an active record of topic "" (a document still in
    the TypeScript MetaCortex's layout, which keeps both in a ``metadata`` map)."""
    if "module_name" not in data or "branch_state" not in data:
        raise FailedPrecondition(
            f"memory {document_id!r} has no top-level topic or state: it is still in the "
            "TypeScript MetaCortex's layout. Run `metacortex migrate firestore`, which "
            "migrates it or names what keeps it from being migrated"
        )
    return decode_memory(document_id, data, space)


# ---------------------------------------------------------------- fingerprint
def encode_fingerprint(
    memory_id: str, written_at: datetime, expires_at: datetime, space: str = DEFAULT_SPACE
) -> dict[str, Any]:
    return {
        "memory_id": memory_id,
        "space": space,
        "written_at": to_stored_time(written_at),
        # TTL field: Firestore deletes the document some time after this instant.
        "expires_at": to_stored_time(expires_at),
        "schema_version": SCHEMA_VERSION,
    }


# ------------------------------------------------------------------ tombstone
def encode_tombstone(
    erased_by: str, erased_at: datetime, branch_state: str | None, space: str = DEFAULT_SPACE
) -> dict[str, Any]:
    """An erased record's tombstone document (id = the memory id): never content; the
    state the record was in (who could not read it is not told it existed) and its
    space (it speaks in no other)."""
    return {
        "space": space,
        "erased_at": to_stored_time(erased_at),
        "erased_by": erased_by,
        "branch_state": branch_state,
        "schema_version": SCHEMA_VERSION,
    }


def tombstone_space(data: Mapping[str, Any]) -> str:
    return str(data.get("space") or DEFAULT_SPACE)


def decode_tombstone(document_id: str, data: Mapping[str, Any]) -> Tombstone:
    erased_at = _read_time(data.get("erased_at")) or datetime.fromtimestamp(0, UTC)
    state = data.get("branch_state")
    return Tombstone(
        document_id,
        erased_at,
        str(data.get("erased_by") or ""),
        BranchState(state) if state in _STATE_VALUES else None,
    )


# --------------------------------------------------------------------- events
def _has_nested_array(value: Any, inside_array: bool = False) -> bool:
    if isinstance(value, list):
        return inside_array or any(_has_nested_array(item, True) for item in value)
    if isinstance(value, dict):
        return any(_has_nested_array(item) for item in value.values())
    return False


def encode_event(event: Event) -> dict[str, Any]:
    """Fields go through JSON (as in the SQLite store), so both stores read back alike.

    Firestore cannot hold an array directly inside an array; such fields are
    kept as one JSON string (``fields_json``) instead of a map.
    """
    encoded = json.dumps(event.fields, default=str, ensure_ascii=False)
    fields = json.loads(encoded)
    data: dict[str, Any] = {
        "timestamp": to_stored_time(event.timestamp),
        "expires_at": _time_or_none(event.expires_at),
        "schema_version": SCHEMA_VERSION,
    }
    if _has_nested_array(fields):
        data["fields_json"] = encoded
    else:
        data["fields"] = fields
    return data


def decode_event(data: dict[str, Any]) -> dict[str, Any]:
    if "fields_json" in data:
        decoded: dict[str, Any] = json.loads(data["fields_json"])
        return decoded
    return dict(data.get("fields") or {})
