"""One memory as the TypeScript MetaCortex stored it, read strictly into a ``Memory``.

Three layouts reach this module (the fields of each are listed, with the line
of the original's source that writes them, in ``tests/migration/original_metacortex.py``):

* ``nested``, what the original writes (memoryRepository.ts ``store``): top-level
  ``content``, ``retrieval_text``, ``embedding`` and ``media``; everything else in a
  ``metadata`` map with times as epoch milliseconds, provenance in
  ``metadata.provenance``. Its portable archive (archive.ts) has the same shape
  with the id inside the record. Records of its first releases say
  ``metadata.timestamp`` for ``created_at`` and ``text_image`` for ``mixed``;
* ``top-level``: the same fields beside ``content`` (``module_name``,
  ``branch_state``, ``origin`` ...), times as Timestamps, ISO strings or epoch
  milliseconds: what earlier versions of this migration expected;
* ``current``: this server's own documents (they carry ``schema_version``);
* ``portable``: a line of this server's own archive (``Memory.to_item``: wire
  metadata with ``topic``, provenance nested, times as ISO text), read by the same
  rules so that both archives are checked alike.

Nothing is guessed. A topic or state that cannot be found, a value of the wrong
type (``derived_from: "abc"`` is not a list of ids, ``module_name: ["x"]`` is not
a topic), a time that is not an instant, or a record the tools would refuse
(``record_rules``) raises ``Refused`` naming the field. Where the original itself
read a missing value a certain way, this reads it that way too and says so in
``notes`` (e.g. no ``retrieval_text`` is the content: memoryRepository.ts
``mapFirestoreDocument``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any, Final, Literal

from metacortex.access.model import check_space_key
from metacortex.domain.occurrence import Occurrence, Precision, TimeSource, parse_occurred
from metacortex.domain.record_rules import check_record
from metacortex.domain.records import (
    DEFAULT_SPACE,
    Attribution,
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

Layout = Literal["nested", "top-level", "current", "portable"]
# The original's first modality name for text with an image (service.ts
# normalizePublicModality maps it to "mixed" on every read).
_LEGACY_MODALITIES: Final = {"text_image": Modality.MIXED}


@dataclass(frozen=True, slots=True)
class Reading:
    memory: Memory
    layout: Layout
    notes: tuple[str, ...]


def layout_of(data: Mapping[str, Any]) -> Layout:
    if isinstance(data.get("schema_version"), int):
        return "current"
    if "metadata" in data:
        if not isinstance(data["metadata"], Mapping):
            raise Refused(f"metadata is {kind(data['metadata'])}, not a map")
        return "nested"
    return "top-level"


def read_document(
    document_id: str, data: Mapping[str, Any], *, create_time: datetime | None = None
) -> Reading:
    """A Firestore document of either layout (``create_time``: the document's own)."""
    layout = layout_of(data)
    if layout == "nested":
        return _read(document_id, data, data["metadata"], "metadata.", create_time, layout)
    return _read(document_id, data, data, "", create_time, layout)


def read_archived(record: Mapping[str, Any]) -> Reading:
    """One line of the original's portable archive (archive.ts ``ArchivedMemory``)."""
    return _read_line(record, "nested")


def read_portable(record: Mapping[str, Any]) -> Reading:
    """One line of this server's portable archive (``metacortex backup``)."""
    return _read_line(record, "portable")


def _read_line(record: Mapping[str, Any], layout: Layout) -> Reading:
    memory_id = record.get("id")
    if not isinstance(memory_id, str):
        raise Refused(f"id is {kind(memory_id)}, not a string")
    metadata = record.get("metadata")
    if not isinstance(metadata, Mapping):
        raise Refused(f"metadata is {kind(metadata)}, not a map")
    return _read(memory_id, record, metadata, "metadata.", None, layout)


def _read(
    memory_id: str,
    top: Mapping[str, Any],
    meta: Mapping[str, Any],
    prefix: str,
    create_time: datetime | None,
    layout: Layout,
) -> Reading:
    notes: list[str] = []
    legacy = layout in ("nested", "top-level")  # the original's: its own defaults apply
    topic_key = "topic" if layout == "portable" else "module_name"
    content = text(top.get("content"), "content")
    if content is None or not content.strip():
        raise Refused("content is missing or empty")
    retrieval_text = text(top.get("retrieval_text"), "retrieval_text")
    if retrieval_text is None:
        retrieval_text = content
        notes.append("retrieval_text: none, the content (as the original read it)")
    topic = text(meta.get(topic_key), prefix + topic_key)
    if topic is None:
        raise Refused(f"no topic: {prefix}{topic_key} is missing")
    state_value = meta.get("branch_state")
    if state_value is None:
        raise Refused(f"no state: {prefix}branch_state is missing")
    state = member(BranchState, state_value, prefix + "branch_state")

    modality_value = meta.get("modality")
    if modality_value is None and legacy:
        modality = Modality.TEXT
        notes.append("modality: none, text (as the original showed it)")
    elif isinstance(modality_value, str) and modality_value in _LEGACY_MODALITIES and legacy:
        modality = _LEGACY_MODALITIES[modality_value]
        notes.append(f"modality: {modality_value} -> {modality.value}")
    else:
        modality = member(Modality, modality_value, prefix + "modality")

    created = instant(meta.get("created_at"), prefix + "created_at", notes)
    if created is None and legacy and meta.get("timestamp") is not None:
        created = instant(meta["timestamp"], prefix + "timestamp")
        notes.append(f"created_at: from {prefix}timestamp (the original's first name for it)")
    if created is None and create_time is not None:
        created = instant(create_time, "the document's creation time")
        notes.append("created_at: none, the document's creation time")
    if created is None:
        raise Refused(f"no creation time: {prefix}created_at is missing")
    updated = instant(meta.get("updated_at"), prefix + "updated_at", notes)
    if updated is None:
        updated = created
        notes.append("updated_at: none, created_at")

    if layout in ("nested", "portable"):
        provenance_map = meta.get("provenance")
        if provenance_map is not None and not isinstance(provenance_map, Mapping):
            raise Refused(f"{prefix}provenance is {kind(provenance_map)}, not a map")
        source: Mapping[str, Any] = provenance_map or {}
        where = prefix + "provenance."
    else:
        source, where = meta, prefix
    origin_value = source.get("origin")
    origin = None if origin_value is None else member(Origin, origin_value, where + "origin")
    if origin is None and legacy:
        origin = Origin.LEGACY_IMPORT
        notes.append("origin: none recorded, legacy_import (as the original's backfill set it)")
    memory = Memory(
        id=memory_id,
        content=content,
        retrieval_text=retrieval_text,
        topic=topic,
        branch_state=state,
        modality=modality,
        created_at=created,
        updated_at=updated,
        artifact_refs=strings(meta.get("artifact_refs"), prefix + "artifact_refs"),
        valid_from=instant(meta.get("valid_from"), prefix + "valid_from", notes),
        valid_until=instant(meta.get("valid_until"), prefix + "valid_until", notes),
        superseded_by=text(meta.get("superseded_by"), prefix + "superseded_by"),
        supersession_reason=optional_member(
            SupersessionReason, meta.get("supersession_reason"), prefix + "supersession_reason"
        ),
        initiator=optional_member(Initiator, meta.get("initiator"), prefix + "initiator"),
        provenance=Provenance(
            origin=origin,
            source_session=text(source.get("source_session"), where + "source_session"),
            derived_from=strings(source.get("derived_from"), where + "derived_from"),
            confidence=number(source.get("confidence"), where + "confidence"),
        ),
        merge_method=text(meta.get("merge_method"), prefix + "merge_method"),
        # This server's records carry their space and authors (none before spaces: the
        # default space, unattributed); the original's have neither.
        space=_space(meta.get("space"), prefix) if not legacy else DEFAULT_SPACE,
        created_by=_author(meta.get("created_by"), prefix + "created_by") if not legacy else None,
        changed_by=_author(meta.get("changed_by"), prefix + "changed_by") if not legacy else None,
        # When it happened (none before memories kept it: when it was saved).
        occurred=(
            None
            if legacy
            else _stored_occurred(meta)
            if layout == "current"
            else _occurred(meta, prefix)
        ),
    )
    try:
        checked = check_record(memory)
    except InvalidArgument as error:
        raise Refused(f"the tools would refuse it: {error.message}") from None
    return Reading(checked, layout, tuple(notes))


def _stored_occurred(data: Mapping[str, Any]) -> Occurrence | None:
    """When one of this server's Firestore documents happened, as the store keeps it (a
    timestamp and its precision and source, ``storage/firestore_codec.py``)."""
    at = instant(data.get("occurred_at"), "occurred_at")
    if at is None:
        return None
    precision = optional_member(Precision, data.get("occurred_precision"), "occurred_precision")
    source = optional_member(TimeSource, data.get("occurred_source"), "occurred_source")
    return Occurrence(at, precision or Precision.INSTANT, source or TimeSource.SAVED)


def _occurred(meta: Mapping[str, Any], prefix: str) -> Occurrence | None:
    """``occurred_at`` and ``occurred_at_source`` as results show them."""
    value = meta.get("occurred_at")
    if value is None:
        return None
    if not isinstance(value, str):
        raise Refused(f"{prefix}occurred_at is {kind(value)}, not text")
    try:
        found = parse_occurred(value, prefix + "occurred_at")
    except InvalidArgument as error:
        raise Refused(error.message) from None
    source = optional_member(
        TimeSource, meta.get("occurred_at_source"), prefix + "occurred_at_source"
    )
    return replace(found, source=source or TimeSource.GIVEN)


def _space(value: Any, prefix: str) -> str:
    if value is None:
        return DEFAULT_SPACE
    key = text(value, prefix + "space")
    try:
        return check_space_key(key or "", prefix + "space")
    except InvalidArgument as error:
        raise Refused(error.message) from None


def _author(value: Any, where: str) -> Attribution | None:
    """``{"person_id", "client", ...}`` as results show it (a portable archive), or
    ``"person|client"`` as a Firestore document keeps it, or null (unattributed)."""
    if value is None:
        return None
    if isinstance(value, str):
        decoded = Attribution.decode(value)
        if decoded is None:
            raise Refused(f"{where} is {value[:40]!r}, not 'person|client'")
        return decoded
    if not isinstance(value, Mapping):
        raise Refused(f"{where} is {kind(value)}, not a map")
    person = text(value.get("person_id"), where + ".person_id")
    via = text(value.get("client"), where + ".client")
    if not person or not via or "|" in person or "|" in via:
        raise Refused(f"{where} needs person_id and client (without '|')")
    return Attribution(person, via)
