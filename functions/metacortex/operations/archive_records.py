"""The records of a portable archive, read strictly and checked by the tools' rules.

Two formats are restored: this server's (``metacortex backup``: a manifest with
``format: metacortex-portable`` naming its archive and its sha256; records carry
the wire metadata, times as ISO 8601 text) and the TypeScript MetaCortex's
(``backup:memories``: ``manifest.json`` with ``document_count`` and
``memories.ndjson`` beside it; records carry its Firestore ``metadata`` map, times
in epoch milliseconds). Both are read by ``migration.original_record``.

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

from metacortex.domain import limits
from metacortex.domain.records import DocumentRef, Memory
from metacortex.domain.stored_values import Refused, kind, text
from metacortex.errors import InvalidArgument
from metacortex.migration import original_record

RecordReader = Callable[[Mapping[str, Any]], Memory]


@dataclass(frozen=True, slots=True)
class Line:
    number: int
    memory: Memory | None
    refusal: str | None


def read_lines(lines: Iterable[str], reader: RecordReader) -> Iterator[Line]:
    """Each non-blank line as a record or as a refusal naming the line (and id, if any)."""
    for position, raw in enumerate(lines, start=1):
        if not raw.strip():
            continue
        record_id = None
        try:
            record = json.loads(raw)
            if not isinstance(record, dict):
                raise Refused(f"the line is {kind(record)}, not a JSON object")
            record_id = record.get("id")
            yield Line(position, reader(record), None)
        except (json.JSONDecodeError, RecursionError):
            yield Line(position, None, f"line {position}: not a JSON object")
        except Refused as why:
            named = f" (id {record_id!r})" if isinstance(record_id, str) else ""
            yield Line(position, None, f"line {position}{named}: {why}")


def read_portable(record: Mapping[str, Any]) -> Memory:
    """A record of this server's own archive (``Memory.to_item``'s shape; a passage also
    its ``document`` reference, ``passage_line``)."""
    memory = original_record.read_portable(record).memory
    if record.get("document") is None:
        return memory
    return memory.with_changes(document=_passage_ref(record["document"]))


def passage_line(ref: DocumentRef) -> dict[str, Any]:
    """A passage's reference to its document as an archive record holds it (beside the
    ``metadata.document`` results show, which leaves out what a store needs)."""
    return {"id": ref.id, "start": ref.start} | ref.details()


def _passage_ref(value: Any) -> DocumentRef:
    if not isinstance(value, Mapping):
        raise Refused(f"document is {kind(value)}, not a map")
    start = value.get("start")
    if not isinstance(start, int) or isinstance(start, bool) or start < 0:
        raise Refused("document.start is not a whole number")
    try:
        document_id = limits.check_id(text(value.get("id"), "document.id") or "", "document.id")
        ref = DocumentRef.from_details(document_id, start, value)
    except InvalidArgument as error:
        raise Refused(error.message) from None
    except (TypeError, ValueError):
        raise Refused("document is not as a backup writes it") from None
    differing = sorted(name for name, v in passage_line(ref).items() if value.get(name) != v)
    if differing:
        raise Refused(f"document.{', document.'.join(differing)} not as a backup writes them")
    return ref


def read_original(record: Mapping[str, Any]) -> Memory:
    """A record of the TypeScript MetaCortex's archive (archive.ts ``ArchivedMemory``)."""
    return original_record.read_archived(record).memory
