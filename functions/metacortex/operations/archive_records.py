"""The records of a portable archive, read strictly and checked by the tools' rules.

Two formats are restored: this server's (``metacortex backup``: a manifest with
``format: metacortex-portable`` naming its archive and its sha256; records carry
the wire metadata, times as ISO 8601 text) and the TypeScript MetaCortex's
(``backup:memories``: ``manifest.json`` with ``document_count`` and
``memories.ndjson`` beside it; records carry its Firestore ``metadata`` map, times
in epoch milliseconds; read by ``migration.original_record``).

Every line becomes a ``Memory`` or a refusal naming the line, the id and the
field: text that is not JSON, a missing or mistyped field, a value outside its
enumeration (``origin: "agent"``), an instant outside years 1-9999, or a record
``record_rules`` refuses (an id with a space or a trailing newline, a NUL, content
over the limit). Refusals are counted; the other records are restored.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from metacortex.domain.record_rules import check_record
from metacortex.domain.records import (
    BranchState,
    Initiator,
    Memory,
    Modality,
    Origin,
    Provenance,
    SupersessionReason,
)
from metacortex.domain.stored_values import (
    Refused,
    instant,
    kind,
    member,
    number,
    optional_member,
    strings,
    text,
)
from metacortex.errors import InvalidArgument
from metacortex.migration.original_record import read_archived

RecordReader = Callable[[Mapping[str, Any]], Memory]


@dataclass(frozen=True, slots=True)
class Line:
    number: int
    memory: Memory | None
    refusal: str | None


def read_lines(lines: Iterable[str], reader: RecordReader) -> Iterator[Line]:
    """Each non-blank line as a record or as a refusal naming the line (and id, if any)."""
    for number_, raw in enumerate(lines, start=1):
        if not raw.strip():
            continue
        record_id = None
        try:
            record = json.loads(raw)
            if not isinstance(record, dict):
                raise Refused(f"the line is {kind(record)}, not a JSON object")
            record_id = record.get("id")
            yield Line(number_, reader(record), None)
        except (json.JSONDecodeError, RecursionError):
            yield Line(number_, None, f"line {number_}: not a JSON object")
        except Refused as why:
            named = f" (id {record_id!r})" if isinstance(record_id, str) else ""
            yield Line(number_, None, f"line {number_}{named}: {why}")


def read_portable(record: Mapping[str, Any]) -> Memory:
    """A record of this server's own archive (``Memory.to_item``'s shape)."""
    memory_id = text(record.get("id"), "id")
    content = text(record.get("content"), "content")
    if memory_id is None or content is None:
        raise Refused("id and content are required")
    meta = record.get("metadata")
    if not isinstance(meta, Mapping):
        raise Refused(f"metadata is {kind(meta)}, not a map")
    provenance = meta.get("provenance") or {}
    if not isinstance(provenance, Mapping):
        raise Refused(f"metadata.provenance is {kind(provenance)}, not a map")
    topic = text(meta.get("topic"), "metadata.topic")
    if topic is None:
        raise Refused("no topic: metadata.topic is missing")
    created = instant(meta.get("created_at"), "metadata.created_at")
    if created is None:
        raise Refused("metadata.created_at is missing")
    memory = Memory(
        id=memory_id,
        content=content,
        retrieval_text=text(record.get("retrieval_text"), "retrieval_text") or content,
        topic=topic,
        branch_state=member(BranchState, meta.get("branch_state"), "metadata.branch_state"),
        modality=member(Modality, meta.get("modality"), "metadata.modality"),
        created_at=created,
        updated_at=instant(meta.get("updated_at"), "metadata.updated_at") or created,
        artifact_refs=strings(meta.get("artifact_refs"), "metadata.artifact_refs"),
        valid_from=instant(meta.get("valid_from"), "metadata.valid_from"),
        valid_until=instant(meta.get("valid_until"), "metadata.valid_until"),
        superseded_by=text(meta.get("superseded_by"), "metadata.superseded_by"),
        supersession_reason=optional_member(
            SupersessionReason, meta.get("supersession_reason"), "metadata.supersession_reason"
        ),
        initiator=optional_member(Initiator, meta.get("initiator"), "metadata.initiator"),
        provenance=Provenance(
            origin=optional_member(Origin, provenance.get("origin"), "provenance.origin"),
            source_session=text(provenance.get("source_session"), "provenance.source_session"),
            derived_from=strings(provenance.get("derived_from"), "provenance.derived_from"),
            confidence=number(provenance.get("confidence"), "provenance.confidence"),
        ),
        merge_method=text(meta.get("merge_method"), "metadata.merge_method"),
    )
    try:
        return check_record(memory)
    except InvalidArgument as error:
        raise Refused(f"the tools would refuse it: {error.message}") from None


def read_original(record: Mapping[str, Any]) -> Memory:
    """A record of the TypeScript MetaCortex's archive (archive.ts ``ArchivedMemory``)."""
    return read_archived(record).memory
