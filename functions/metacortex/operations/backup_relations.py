"""Relations in a portable backup: ``relations.ndjson``, and their restore.

A line is one relation of any space, valid or invalidated: its ``space`` and
``domain.relations.relation_fields`` (what Firestore keeps too) with times as ISO 8601
text. Lines are ordered by space (``default`` first), then (created_at, id).

Restore writes a relation (same id, type, note, authors, times) when both its ends are
in the store, in its space: a memory, or a document (``part_of``'s target), with each
end's state and summary taken from what the store holds (the archive's summaries are
words of a memory it may not hold, or not as written there). One whose
end is missing (the memory was refused, or left out of the archive) is skipped and
counted; one already stored (restoring twice) is left as it is. A line a backup would
not write (a field of the wrong type, an unknown type, a note over the limit) is
refused and named.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any, Final, TypeVar

from metacortex.access.model import check_space_key
from metacortex.domain import limits
from metacortex.domain.records import to_wire_time
from metacortex.domain.relations import (
    MAX_NOTE_CHARS,
    Relation,
    relation_fields,
    relation_from_fields,
)
from metacortex.domain.stored_values import Refused, instant, kind
from metacortex.domain.text import summarize
from metacortex.errors import InvalidArgument
from metacortex.storage.base import MemoryStore

T = TypeVar("T")

RELATIONS: Final = "relations.ndjson"
_CHUNK: Final = 200  # ids per read, relations per write


def relation_line(relation: Relation) -> dict[str, Any]:
    return {"space": relation.space} | relation_fields(relation, to_wire_time)


def ordered(relations: Iterable[Relation], spaces: Sequence[str]) -> list[Relation]:
    """Each relation once, by space (in ``spaces``' order), then (created_at, id)."""
    unique = {(r.space, r.id): r for r in relations}
    rank = {space: index for index, space in enumerate(spaces)}
    return sorted(
        unique.values(), key=lambda r: (rank.get(r.space, len(rank)), r.space, r.created_at, r.id)
    )


def _time(value: Any) -> datetime:
    parsed = instant(value, "time")
    if parsed is None:
        raise Refused("a time is missing")
    return parsed


def read_relation(record: dict[str, Any]) -> Relation:
    """A line as the relation it records, or ``Refused`` naming what a backup would not
    have written."""
    space = record.get("space")
    if not isinstance(space, str):
        raise Refused(f"space is {kind(space)}, not a string")
    try:
        check_space_key(space)
    except InvalidArgument as error:
        raise Refused(error.message) from None
    if "created_at" not in record:
        raise Refused("created_at is missing")
    for name in ("created_at", "invalid_at"):
        if record.get(name) is not None:
            instant(record[name], name)  # refused with the field's name
    try:
        relation = relation_from_fields(record, space, _time)
    except ValueError:
        raise Refused(f"type {record.get('type')!r} is not a relation type") from None
    differing = sorted(
        name for name, value in relation_line(relation).items() if record.get(name) != value
    )
    if differing:
        raise Refused(f"{', '.join(differing)} not as a backup writes them")
    if len(relation.note) > MAX_NOTE_CHARS:
        raise Refused(f"note is {len(relation.note)} characters; the limit is {MAX_NOTE_CHARS}")
    try:
        limits.check_string(relation.note, "note")
        limits.check_id(relation.source, "source")
        limits.check_id(relation.target, "target")
    except InvalidArgument as error:
        raise Refused(error.message) from None
    return relation


@dataclass(frozen=True, slots=True)
class RelationsRestored:
    restored: int = 0
    skipped_existing: int = 0
    # Skipped: an end is in neither the archive nor the store.
    missing_ends: int = 0
    refused: tuple[str, ...] = ()


def read_lines(lines: Iterable[str]) -> tuple[list[Relation], list[str]]:
    """The lines' relations, and the refusals naming the others."""
    relations: list[Relation] = []
    refused: list[str] = []
    for number, raw in enumerate(lines, start=1):
        if not raw.strip():
            continue
        try:
            record = json.loads(raw)
        except (json.JSONDecodeError, RecursionError):
            refused.append(f"{RELATIONS} line {number}: not a JSON object")
            continue
        if not isinstance(record, dict):
            refused.append(f"{RELATIONS} line {number}: not a JSON object")
            continue
        try:
            relations.append(read_relation(record))
        except Refused as why:
            refused.append(f"{RELATIONS} line {number}: {why}")
    return relations, refused


def restore_relations(store: MemoryStore, lines: Iterable[str]) -> RelationsRestored:
    relations, refused = read_lines(lines)
    restored = existing = missing = 0
    for space in dict.fromkeys(r.space for r in relations):
        mine = [r for r in relations if r.space == space]
        ends = _ends(store, space, {end for r in mine for end in (r.source, r.target)})
        states = {end: state for end, (state, _) in ends.items()}
        stored = {
            r.id
            for ids in _chunks(list(states))
            for r in store.relations_of(ids, space=space, include_invalid=True)
        }
        fresh: dict[str, Relation] = {}
        for relation in mine:
            if relation.source not in states or relation.target not in states:
                missing += 1
            elif relation.id in stored or relation.id in fresh:
                existing += 1
            else:
                # Each end's state and summary as the store holds it now (relations
                # carry both): never the archive's words for a memory it does not hold.
                fresh[relation.id] = replace(
                    relation,
                    source_state=ends[relation.source][0],
                    target_state=ends[relation.target][0],
                    source_summary=ends[relation.source][1],
                    target_summary=ends[relation.target][1],
                )
        for chunk in _chunks(list(fresh.values())):
            store.relate(chunk)
        restored += len(fresh)
    return RelationsRestored(restored, existing, missing, tuple(refused))


def _ends(store: MemoryStore, space: str, ends: set[str]) -> dict[str, tuple[str, str]]:
    """The ends the store holds in ``space``, each with its state ("" for a document) and
    its summary as the tools write it (a memory's content, a document's title)."""
    found: dict[str, tuple[str, str]] = {}
    for ids in _chunks(sorted(ends)):
        for memory_id, memory in zip(ids, store.get_many(ids, space=space), strict=True):
            if memory is not None:
                found[memory_id] = (memory.branch_state.value, summarize(memory.content))
    for end in sorted(ends - set(found)):
        document = store.get_document(end, space=space)
        if document is not None:
            found[end] = ("", summarize(document.title))
    return found


def _chunks(items: list[T]) -> Iterator[list[T]]:
    for start in range(0, len(items), _CHUNK):
        yield items[start : start + _CHUNK]
