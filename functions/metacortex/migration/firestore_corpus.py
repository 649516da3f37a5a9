"""Bring a Firestore corpus written by the TypeScript MetaCortex to this server's shape.

The original keeps everything but ``content``, ``retrieval_text``, ``embedding``
and ``media`` in a nested ``metadata`` map, times as epoch milliseconds; this
server reads top-level fields, Timestamps, a term index (``terms``,
``term_freqs``, ``term_count``) and ``schema_version``. Each document is read
strictly (``original_record``: either layout, never a defaulted topic or state,
never a value of the wrong type coerced) and its target is what
``firestore_codec.encode_memory`` writes for that record; only fields that differ
are updated. The embedding, ``metadata``, ``media`` and any other field stay as
they are, so nothing the original wrote is lost.

* Dry by default: ``apply=False`` reads everything and reports exactly what
  ``apply=True`` writes (the two reports compare equal).
* One bad document never stops the run: it is refused, named and counted, and
  left as it is.
* Idempotent: a second run finds nothing to do.
* Resumable: pages go in document-id order, and each page's updates are committed
  in one batch together with the cursor (``<collection>_meta/migration``), so an
  interrupted run continues after the last committed page.
* Last, the embedding model of the original's vectors is recorded
  (``embedding_model``), so a server configured for another refuses to start.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Final

from google.cloud import firestore
from google.cloud.firestore_v1.base_document import DocumentSnapshot
from google.cloud.firestore_v1.field_path import FieldPath
from google.cloud.firestore_v1.vector import Vector

from metacortex.domain.record_rules import supersession_loops
from metacortex.domain.stored_values import Refused
from metacortex.migration.embedding_model import (
    ORIGINAL_DEFAULT,
    IdentityStep,
    apply_identity,
    plan_identity,
)
from metacortex.migration.original_record import Reading, read_document
from metacortex.storage.base import EmbeddingIdentity
from metacortex.storage.firestore import META_SUFFIX, FirestoreStore
from metacortex.storage.firestore_codec import (
    EMBEDDING,
    TERM_COUNT,
    TERM_FREQS,
    TERMS,
    encode_memory,
    to_stored_time,
)

CURSOR_DOCUMENT: Final = "migration"
DEFAULT_PAGE: Final = 200  # one batch holds the page's updates and the cursor (limit 500)
_TERM_FIELDS: Final = frozenset({TERMS, TERM_FREQS, TERM_COUNT})
_NOTED_FIELDS: Final = frozenset({"retrieval_text", "modality", "origin"})
_TIME_FIELDS: Final = frozenset({"created_at", "updated_at", "valid_from", "valid_until"})
NESTED_FIX: Final = "layout: the original's metadata map -> top-level fields (the map is kept)"


@dataclass(slots=True)
class CorpusReport:
    """What a run found and wrote (or, dry, would write). Equal for a dry run and the
    ``--apply`` run after it: ``applied`` does not take part in the comparison."""

    applied: bool = field(compare=False)
    resumed_after: str | None = None
    scanned: int = 0
    changed: int = 0
    layouts: Counter[str] = field(default_factory=Counter)
    fixes: Counter[str] = field(default_factory=Counter)
    refused: list[tuple[str, str]] = field(default_factory=list)
    missing_embedding: int = 0
    other_dimension: int = 0
    loops: dict[str, list[str]] = field(default_factory=dict)
    identity: IdentityStep | None = None


@dataclass(frozen=True, slots=True)
class _Plan:
    update: dict[str, Any]
    fixes: tuple[str, ...]
    reading: Reading


def backfill(
    client: firestore.Client,
    collection: str,
    *,
    embedding: EmbeddingIdentity = ORIGINAL_DEFAULT,
    apply: bool = False,
    restart: bool = False,
    page_size: int = DEFAULT_PAGE,
    advance: Callable[[int], None] = lambda _count: None,
) -> CorpusReport:
    """Scan (and with ``apply`` rewrite) every document of ``collection``; see the module doc."""
    memories = client.collection(collection)
    cursor_ref = client.collection(collection + META_SUFFIX).document(CURSOR_DOCUMENT)
    report = CorpusReport(applied=apply)
    after = None if (restart or not apply) else _resume_point(cursor_ref)
    report.resumed_after = after
    links: dict[str, str | None] = {}
    for page in _pages(memories, page_size, after):
        batch = client.batch()
        for snapshot in page:
            report.scanned += 1
            data = snapshot.to_dict() or {}
            try:
                plan = _plan(snapshot, data)
            except Refused as why:
                report.refused.append((snapshot.id, str(why)))
                continue
            report.layouts[plan.reading.layout] += 1
            links[snapshot.id] = plan.reading.memory.superseded_by
            _count_embedding(data, embedding.dimension, report)
            if plan.update:
                report.changed += 1
                report.fixes.update(plan.fixes)
                if apply:
                    batch.update(snapshot.reference, plan.update)
        if apply:
            batch.set(cursor_ref, {"last_id": page[-1].id, "updated_at": _now()}, merge=True)
            batch.commit()
        advance(len(page))
    report.loops = supersession_loops(links)
    store = FirestoreStore(client, collection)  # its identity record; closed with the client
    original_found = after is not None or report.layouts["nested"] + report.layouts["top-level"] > 0
    report.identity = plan_identity(store, embedding, original_found=original_found)
    if apply:
        apply_identity(store, report.identity)
        cursor_ref.set({"last_id": None, "completed_at": _now()}, merge=True)
    return report


def count_documents(client: firestore.Client, collection: str) -> int:
    """One aggregation query: the size of the progress bar."""
    result = client.collection(collection).count().get()  # type: ignore[no-untyped-call]
    return int(result[0][0].value)


def _resume_point(cursor_ref: Any) -> str | None:
    snapshot = cursor_ref.get()
    last = (snapshot.to_dict() or {}).get("last_id") if snapshot.exists else None
    return last if isinstance(last, str) else None


def _pages(memories: Any, size: int, after: str | None) -> Iterator[list[DocumentSnapshot[Any]]]:
    query = memories.order_by(FieldPath.document_id()).limit(size)
    if after is not None:
        query = query.start_after({FieldPath.document_id(): memories.document(after)})
    while True:
        page = list(query.stream())
        if not page:
            return
        yield page
        if len(page) < size:
            return
        query = memories.order_by(FieldPath.document_id()).limit(size).start_after(page[-1])


def _count_embedding(data: dict[str, Any], dimension: int, report: CorpusReport) -> None:
    value = data.get(EMBEDDING)
    if not isinstance(value, Vector | list) or not value:
        report.missing_embedding += 1
    elif len(value) != dimension:
        report.other_dimension += 1


def _embedding(value: Any) -> Vector | None:
    """The stored embedding as a ``Vector`` (None when absent); ``Refused`` if it is not numbers."""
    if value is None or isinstance(value, Vector):
        return None
    if not isinstance(value, list):
        raise Refused(f"embedding is a {type(value).__name__}, not a vector")
    for index, item in enumerate(value):
        if isinstance(item, bool) or not isinstance(item, int | float):
            raise Refused(f"embedding[{index}] is a {type(item).__name__}, not a number")
        if not math.isfinite(item):
            raise Refused(f"embedding[{index}] is {item!r}, not a finite number")
    return Vector([float(item) for item in value])


def _plan(snapshot: DocumentSnapshot[Any], data: dict[str, Any]) -> _Plan:
    reading = read_document(snapshot.id, data, create_time=snapshot.create_time)
    vector = _embedding(data.get(EMBEDDING))
    fixes: list[str] = [NESTED_FIX] if reading.layout == "nested" else []
    fixes += reading.notes
    update: dict[str, Any] = {}
    for key, wanted in encode_memory(reading.memory, None).items():
        if key in data and _same(data[key], wanted):
            continue
        update[key] = wanted
        if reading.layout == "nested" or key in _NOTED_FIELDS or key in _TIME_FIELDS:
            continue  # said once above, or by the reading's notes
        if key in _TERM_FIELDS:
            fixes.append("term index (keyword search) added")
        elif key not in data and wanted in (None, []):
            fixes.append("empty optional fields written (Firestore filters need them present)")
        else:
            fixes.append(f"{key}: {'added' if key not in data else 'normalised'}")
    if update and reading.layout == "nested":
        fixes.append("term index (keyword search) added")
    if vector is not None:
        update[EMBEDDING] = vector
        fixes.append("embedding: array -> Vector")
    return _Plan(update, tuple(dict.fromkeys(fixes)) if update else (), reading)


def _same(stored: Any, wanted: Any) -> bool:
    if isinstance(stored, datetime) and isinstance(wanted, datetime):
        return to_stored_time(stored) == wanted
    return bool(stored == wanted)


def _now() -> datetime:
    return datetime.now(UTC)
