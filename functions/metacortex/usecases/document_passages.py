"""A document's passages as records, and what a new version of a document keeps, adds and
retires (``usecases/documents.py`` uses them; pure, no store or model here)."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING

from metacortex.domain.documents import Document
from metacortex.domain.records import (
    Attribution,
    BranchState,
    DocumentRef,
    Memory,
    Modality,
    Origin,
    Provenance,
    SupersessionReason,
    new_memory_id,
)
from metacortex.retrieval.text import terms

if TYPE_CHECKING:  # types only: the readers load on the first document
    from metacortex.documents import ExtractedDocument
    from metacortex.documents.passages import Passage


def page_starts(extracted: ExtractedDocument) -> tuple[int, ...]:
    """Where each page of a PDF starts in the text: the first block printed on it or
    after it (a page with no text of its own starts where the next text does)."""
    if not extracted.page_count:
        return ()
    starts: list[int] = []
    blocks = extracted.blocks
    index = 0
    for page in range(1, extracted.page_count + 1):
        while index < len(blocks) and (blocks[index].page_end or 0) < page:
            index += 1
        starts.append(blocks[index].start if index < len(blocks) else len(extracted.text))
    return tuple(starts)


def reference(document: Document, passage: Passage) -> DocumentRef:
    return DocumentRef(
        id=document.id,
        title=document.title,
        start=passage.start,
        end=passage.end,
        content_hash=passage.content_hash,
        section=passage.heading_path,
        page=passage.page,
        page_end=passage.page_end,
    )


def passage_record(document: Document, passage: Passage, now: datetime) -> Memory:
    """A new passage: an active record of origin ``document`` in the document's topic and
    space, written by whoever added the document."""
    return Memory(
        id=new_memory_id(),
        content=passage.text,
        retrieval_text=passage.retrieval_text(document.title),
        topic=document.topic,
        branch_state=BranchState.ACTIVE,
        modality=Modality.TEXT,
        created_at=now,
        updated_at=now,
        provenance=Provenance(origin=Origin.DOCUMENT),
        space=document.space,
        created_by=document.added_by,
        document=reference(document, passage),
    )


@dataclass(frozen=True, slots=True)
class VersionChange:
    """How the passages of a new version relate to the previous version's.

    ``fresh``: the new version's passages to embed and write. ``kept``: the previous
    version's records whose content hash (and the document's title) did not change, with
    their reference moved to the new version (same id, same vector). ``retired``: the
    previous version's other active records, deprecated (reason ``changed``), each
    superseded by the new passage nearest to it."""

    fresh: list[tuple[Passage, Memory]]
    kept: list[Memory]
    retired: list[Memory]


def version_change(
    document: Document,
    passages: Sequence[Passage],
    previous: Document | None,
    previous_records: Sequence[Memory],
    now: datetime,
    by: Attribution,
) -> VersionChange:
    """Match the new passages with the previous version's active records by content hash.
    A retitled document keeps nothing: the title is part of every passage's embedded text."""
    reusable: dict[str, list[Memory]] = {}
    if previous is not None and previous.title == document.title:
        for record in previous_records:
            if record.branch_state is BranchState.ACTIVE and record.document is not None:
                reusable.setdefault(record.document.content_hash, []).append(record)
    fresh: list[tuple[Passage, Memory]] = []
    kept: list[Memory] = []
    for passage in passages:
        same = reusable.get(passage.content_hash)
        if same:
            record = same.pop(0)
            # The same words under the same headings: the stored vector stays; the text
            # is the new version's (whitespace may differ), so its span quotes it exactly.
            kept.append(
                record.with_changes(
                    content=passage.text,
                    retrieval_text=passage.retrieval_text(document.title),
                    topic=document.topic,
                    document=reference(document, passage),
                    updated_at=now,
                )
            )
        else:
            fresh.append((passage, passage_record(document, passage, now)))
    kept_ids = {record.id for record in kept}
    candidates = [record for _, record in fresh] or kept
    retired = [
        record.with_changes(
            branch_state=BranchState.DEPRECATED,
            superseded_by=nearest(record, candidates),
            supersession_reason=SupersessionReason.CHANGED,
            valid_until=record.valid_until if record.valid_until is not None else now,
            updated_at=now,
            changed_by=by,
        )
        for record in previous_records
        if record.branch_state is BranchState.ACTIVE and record.id not in kept_ids
    ]
    return VersionChange(fresh, kept, retired)


def nearest(record: Memory, candidates: Sequence[Memory]) -> str | None:
    """The candidate whose words are nearest the record's (cosine of analyzed term counts),
    the one nearest in the document on a tie: an edited paragraph's new version shares
    most of its words. None without candidates."""
    if not candidates:
        return None
    mine = Counter(terms(record.content))
    place = record.document.start if record.document is not None else 0

    def score(candidate: Memory) -> tuple[float, int]:
        theirs = Counter(terms(candidate.content))
        shared = sum(count * theirs[term] for term, count in mine.items())
        norm = math.sqrt(sum(c * c for c in mine.values()) * sum(c * c for c in theirs.values()))
        where = candidate.document.start if candidate.document is not None else 0
        return (shared / norm if norm else 0.0, -abs(where - place))

    return max(candidates, key=score).id
