"""Bring a Firestore corpus written by the TypeScript MetaCortex to this server's shape.

The original stored ``content``, ``module_name``, ``branch_state``, ``embedding``
and times that were sometimes ISO strings rather than Timestamps. This server
also needs ``retrieval_text``, the term index behind keyword search (``terms``,
``term_freqs``, ``term_count``), ``updated_at``, a provenance ``origin`` and a
``schema_version``; a record whose ``created_at`` is a string would otherwise
sort as 1970 and fall out of every time filter.

Each document's target is what ``firestore_codec.encode_memory`` would write for
it, so the backfill follows the codec as it evolves. Only fields that differ are
updated; the embedding and any field this server does not know stay as they are.

* Dry by default: ``apply=False`` reads everything and reports what would change.
* Idempotent: a second run finds nothing to do.
* Resumable: pages go in document-id order, and each page's updates are committed
  in one batch together with the cursor (``<collection>_meta/migration``), so an
  interrupted run continues after the last committed page.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Final

from google.cloud import firestore
from google.cloud.firestore_v1.base_document import DocumentSnapshot
from google.cloud.firestore_v1.field_path import FieldPath
from google.cloud.firestore_v1.vector import Vector

from metacortex.domain.records import Origin
from metacortex.storage.firestore import META_SUFFIX
from metacortex.storage.firestore_codec import (
    EMBEDDING,
    TERM_COUNT,
    TERM_FREQS,
    TERMS,
    decode_memory,
    encode_memory,
    to_stored_time,
)

CURSOR_DOCUMENT: Final = "migration"
DEFAULT_PAGE: Final = 200  # one batch holds the page's updates and the cursor (limit 500)
_TIME_FIELDS: Final = ("created_at", "updated_at", "valid_from", "valid_until")
_TERM_FIELDS: Final = frozenset({TERMS, TERM_FREQS, TERM_COUNT})
_SHOWN_PROBLEMS: Final = 20


@dataclass(slots=True)
class CorpusReport:
    applied: bool
    resumed_after: str | None = None
    scanned: int = 0
    changed: int = 0
    fixes: Counter[str] = field(default_factory=Counter)
    problems: list[str] = field(default_factory=list)
    problem_count: int = 0
    missing_embedding: int = 0
    other_dimension: int = 0

    def problem(self, document_id: str, why: str) -> None:
        self.problem_count += 1
        if len(self.problems) < _SHOWN_PROBLEMS:
            self.problems.append(f"{document_id}: {why}")


@dataclass(frozen=True, slots=True)
class _Plan:
    update: dict[str, Any]
    fixes: tuple[str, ...]


class _Unmigratable(ValueError):
    pass


def backfill(
    client: firestore.Client,
    collection: str,
    *,
    dimension: int,
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
    for page in _pages(memories, page_size, after):
        batch = client.batch()
        for snapshot in page:
            report.scanned += 1
            data = snapshot.to_dict() or {}
            _count_embedding(data, dimension, report)
            try:
                plan = _plan(snapshot, data)
            except _Unmigratable as problem:
                report.problem(snapshot.id, str(problem))
                continue
            if plan.update:
                report.changed += 1
                report.fixes.update(plan.fixes)
                if apply:
                    batch.update(snapshot.reference, plan.update)
        if apply:
            batch.set(cursor_ref, {"last_id": page[-1].id, "updated_at": _now()}, merge=True)
            batch.commit()
        advance(len(page))
    if apply:
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


def _plan(snapshot: DocumentSnapshot[Any], data: dict[str, Any]) -> _Plan:
    if not isinstance(data.get("content"), str) or not data["content"].strip():
        raise _Unmigratable("no content: left as it is (the server skips it)")
    normalized = dict(data)
    fixes: list[str] = []
    for name in _TIME_FIELDS:
        value = data.get(name)
        if value is None or isinstance(value, datetime):
            continue
        normalized[name] = _instant(name, value)
        fixes.append(f"{name}: {type(value).__name__} -> Timestamp")
    if not isinstance(normalized.get("created_at"), datetime):
        created = snapshot.create_time
        if created is None:
            raise _Unmigratable("no created_at and no document creation time")
        normalized["created_at"] = created
        fixes.append("created_at: taken from the document's creation time")
    if not data.get("retrieval_text"):
        normalized["retrieval_text"] = data["content"]
    if not data.get("origin"):
        normalized["origin"] = Origin.LEGACY_IMPORT.value
    try:
        memory = decode_memory(snapshot.id, normalized)
    except ValueError as error:
        raise _Unmigratable(f"unreadable value ({error}); fix the document by hand") from None
    target = encode_memory(memory, None)
    update: dict[str, Any] = {}
    for key, wanted in target.items():
        if key in data and _same(data[key], wanted):
            continue
        update[key] = wanted
        if key in _TERM_FIELDS:
            fixes.append("term index (keyword search) added")
        elif key not in data and wanted in (None, []):
            fixes.append("empty optional fields written (Firestore filters need them present)")
        elif key not in _TIME_FIELDS or key not in data:
            fixes.append(f"{key}: {'added' if key not in data else 'normalised'}")
    embedding = data.get(EMBEDDING)
    if isinstance(embedding, list) and embedding:
        update[EMBEDDING] = Vector([float(x) for x in embedding])
        fixes.append("embedding: array -> Vector")
    return _Plan(update, tuple(dict.fromkeys(fixes)) if update else ())


def _instant(name: str, value: Any) -> datetime:
    if isinstance(value, str):
        try:
            parsed = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
        except ValueError:
            raise _Unmigratable(f"{name} {value!r} is not an ISO 8601 instant") from None
        return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)
    if isinstance(value, int | float) and not isinstance(value, bool):
        seconds = value / 1000 if abs(value) > 1e11 else value  # milliseconds or seconds
        try:
            return datetime.fromtimestamp(seconds, UTC)
        except (OverflowError, OSError, ValueError):
            raise _Unmigratable(f"{name} {value!r} is not a usable epoch time") from None
    raise _Unmigratable(f"{name} has an unexpected type {type(value).__name__}")


def _same(stored: Any, wanted: Any) -> bool:
    if isinstance(stored, datetime) and isinstance(wanted, datetime):
        return to_stored_time(stored) == wanted
    return bool(stored == wanted)


def _now() -> datetime:
    return datetime.now(UTC)
