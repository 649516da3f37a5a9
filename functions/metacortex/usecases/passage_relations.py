"""The relations a document's passages carry (``docs/DOCUMENTS.md``, "Passages'
relations"): each passage is ``part_of`` its document (the target is the document's
id, not a memory: its state is "") and ``next`` leads to the passage after it in
reading order.

``usecases/documents.py`` computes them with the passages and hands them to the store in
the same ``DocumentWrite``, so they commit with the passages (SQLite: one transaction;
Firestore: the same batches, undone with the rest). A new version keeps the relations
that still hold untouched (``next`` between two kept passages still side by side),
asserts the new ones (``part_of`` the new version, ``next`` around new passages) and
invalidates, never deletes, the previous version's that stopped holding (``part_of`` the
previous version, ``next`` to or from a retired passage). Pure: no store here.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from itertools import pairwise

from metacortex.domain.documents import Document
from metacortex.domain.records import Attribution, Memory
from metacortex.domain.relations import Relation, RelationType
from metacortex.domain.text import summarize

DOCUMENT_TYPES = frozenset({RelationType.PART_OF, RelationType.NEXT})


def reading_order(records: Iterable[Memory]) -> list[Memory]:
    """Passages as the document reads: by where they start, then by id (as stores list)."""
    return sorted(records, key=lambda m: (m.document.start if m.document else 0, m.id))


def passage_links(document: Document, passages: Sequence[Memory], at: datetime) -> list[Relation]:
    """``part_of`` the document for every passage, ``next`` between neighbours (the
    passages in reading order)."""

    def link(source: Memory, kind: RelationType, target: str, summary: str, state: str) -> Relation:
        return Relation(
            source=source.id,
            target=target,
            type=kind,
            space=document.space,
            created_at=at,
            created_by=document.added_by,
            source_summary=summarize(source.content),
            target_summary=summary,
            source_state=source.branch_state.value,
            target_state=state,
        )

    title = summarize(document.title)
    links = [link(p, RelationType.PART_OF, document.id, title, "") for p in passages]
    links += [
        link(a, RelationType.NEXT, b.id, summarize(b.content), b.branch_state.value)
        for a, b in pairwise(passages)
    ]
    return links


@dataclass(frozen=True, slots=True)
class RelationChange:
    """``write``: the relations to store as given (new, revived, invalidated, or with an
    end's state changed); ``before``: how those of them already stored are now (what a
    store that cannot write everything at once puts back when the document fails)."""

    write: list[Relation]
    before: list[Relation]


def relation_change(
    document: Document,
    current: Sequence[Memory],
    retired: Sequence[Memory],
    stored: Sequence[Relation],
    at: datetime,
    by: Attribution | None,
) -> RelationChange:
    """What the version's passages (``current``: new and kept) change among the
    relations ``stored`` (every relation, valid or not, touching the previous version's
    active passages; none for a first version)."""
    wanted = {relation.id: relation for relation in passage_links(document, current, at)}
    states = {memory.id: memory.branch_state.value for memory in retired}
    write: list[Relation] = []
    before: list[Relation] = []
    for relation in stored:
        changed = relation
        if relation.id in wanted:
            if relation.valid:
                del wanted[relation.id]  # still true: kept as it is
            continue  # else revived below, as the new version asserts it
        if relation.valid and relation.type in DOCUMENT_TYPES:
            changed = changed.invalidated(at, by)
        changed = replace(
            changed,
            source_state=states.get(changed.source, changed.source_state),
            target_state=states.get(changed.target, changed.target_state),
        )
        if changed != relation:
            write.append(changed)
            before.append(relation)
    invalid = {relation.id: relation for relation in stored if not relation.valid}
    for relation in wanted.values():
        if relation.id in invalid:
            before.append(invalid[relation.id])
        write.append(relation)
    return RelationChange(write, before)
