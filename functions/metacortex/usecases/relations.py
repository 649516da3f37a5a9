"""Linked memory: the relations the lifecycle and callers assert, and reading them.

Where relations come from (each in one space, never across):

- the lifecycle, in the same transaction as the change: a deprecation with a
  replacement (and a correction) writes ``replacement supersedes old``; a
  consolidation ``merged derived_from source`` for every source; undoing them
  invalidates those relations; a writer who proposes retiring someone else's
  memory (spaces' contested rule) records ``supersedes`` while the memory stays;
- the caller: ``save_context``'s ``relations`` (``CALLER_TYPES``) to memories it
  can read in the same space, checked before anything is saved;
- documents: ``part_of`` and ``next`` between a document's passages.

Reading: every search, list and fetch result carries ``related``, up to
``RELATED_PER_RESULT`` neighbours, read for the whole page at once
(``attach_related``: one store read); a search's results also show up to as many
links two hops away (``hops`` 2, ``via`` the neighbour between), read ahead for its
likeliest page beside its other work (``KnownRelations``); ``neighbourhood`` walks out from one
memory (``related_context``) and ``graph`` pages a space's or topic's edges
(``memory://graph``), both bounded.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any, Final

from metacortex.access.rules import Access, all_visible, visible
from metacortex.domain import limits
from metacortex.domain.records import Attribution, Memory, utc_now
from metacortex.domain.relations import (
    CALLER_TYPES,
    MAX_NOTE_CHARS,
    RELATED_PER_RESULT,
    Relation,
    RelationType,
)
from metacortex.domain.text import summarize
from metacortex.errors import InvalidArgument
from metacortex.storage.base import MemoryFilter, MemoryStore
from metacortex.usecases.cursors import decode_cursor, encode_cursor
from metacortex.usecases.filters import applied_filters, read_states

MAX_CALLER_RELATIONS: Final = 10
MAX_DEPTH: Final = 3
MAX_NODES: Final = 50
# Which neighbours a result shows first when it has more than it may show: what
# replaced it, then what it came from, then the rest, newest first.
_ORDER: Final = {
    RelationType.SUPERSEDES: 0,
    RelationType.UPDATES: 1,
    RelationType.DERIVED_FROM: 2,
    RelationType.EXTENDS: 3,
    RelationType.DERIVES: 4,
    RelationType.PART_OF: 5,
    RelationType.NEXT: 6,
    RelationType.RELATES_TO: 7,
}


def between(
    source: Memory,
    target: Memory,
    type_: RelationType,
    by: Attribution | None,
    note: str = "",
    at: datetime | None = None,
) -> Relation:
    """The relation ``source -[type]-> target`` (both of one space), with their summaries."""
    if source.space != target.space:
        raise InvalidArgument("a relation never crosses a space")
    return Relation(
        source=source.id,
        target=target.id,
        type=type_,
        space=source.space,
        created_at=at or utc_now(),
        note=note,
        created_by=by,
        source_summary=summarize(source.content),
        target_summary=summarize(target.content),
        source_state=source.branch_state.value,
        target_state=target.branch_state.value,
    )


def requested(
    store: MemoryStore, access: Access, space: str, raw: Sequence[Mapping[str, Any]] | None
) -> list[tuple[Memory, RelationType, str]]:
    """``save_context``'s ``relations``, checked before anything is saved: at most
    ``MAX_CALLER_RELATIONS``, a caller's type, a short note, and each id a memory the
    caller can read in the same space (read in one round trip; ``not_found`` else)."""
    entries = list(raw or ())
    if len(entries) > MAX_CALLER_RELATIONS:
        raise InvalidArgument(
            f"relations has {len(entries)} entries; the limit is {MAX_CALLER_RELATIONS}"
        )
    parsed: list[tuple[str, RelationType, str]] = []
    for index, entry in enumerate(entries):
        where = f"relations[{index}]"
        memory_id = limits.check_id(str(entry.get("id") or ""), f"{where}.id")
        try:
            type_ = RelationType(str(entry.get("type") or RelationType.RELATES_TO.value))
        except ValueError:
            type_ = None
        if type_ not in CALLER_TYPES:
            allowed = ", ".join(sorted(t.value for t in CALLER_TYPES))
            raise InvalidArgument(f"{where}.type must be one of {allowed}")
        assert type_ is not None
        note = limits.check_string(str(entry.get("note") or ""), f"{where}.note").strip()
        if len(note) > MAX_NOTE_CHARS:
            raise InvalidArgument(
                f"{where}.note is {len(note)} characters; the limit is {MAX_NOTE_CHARS}"
            )
        parsed.append((memory_id, type_, note))
    if not parsed:
        return []
    targets = all_visible(store, access, [memory_id for memory_id, _, _ in parsed], space)
    by_id = {memory.id: memory for memory in targets}
    return [(by_id[memory_id], type_, note) for memory_id, type_, note in parsed]


class KnownRelations:
    """The valid relations read so far around some memories of one space, up to two
    hops out: ``read_around`` reads the relations of the ids not read yet (one round
    trip), then those of their other ends (one more), so a search can read its likely
    page's while it does other work and read only what it missed once its page is
    known. Thread-safe: reads in flight at once claim their ids first; a second hop
    is read from the first as known when asked (complete once no read is in flight)."""

    def __init__(self, store: MemoryStore, space: str) -> None:
        self._store = store
        self._space = space
        self._lock = threading.Lock()
        self._read: set[str] = set()
        self._far: set[str] = set()  # ids whose neighbours' relations were read too
        self._touching: dict[str, dict[str, Relation]] = {}

    def read_around(self, ids: Sequence[str], *, far: bool = True) -> KnownRelations:
        """Read what is missing for ``ids`` and, when ``far``, their neighbours (two
        reads at most; none when every one of them was read before). Returns ``self``."""
        self._read_of(ids)
        if far:
            with self._lock:
                near = [i for i in dict.fromkeys(ids) if i not in self._far]
                self._far.update(near)
            self._read_of(sorted({r.other(i) for i in near for r in self.touching(i)}))
        return self

    def _read_of(self, ids: Sequence[str]) -> list[str]:
        """Read the relations of those of ``ids`` nobody has claimed yet; those ids."""
        with self._lock:
            claimed = [i for i in dict.fromkeys(ids) if i not in self._read]
            self._read.update(claimed)
        if not claimed:
            return []
        relations = self._store.relations_of(claimed, space=self._space)
        with self._lock:
            for relation in relations:
                for end in (relation.source, relation.target):
                    self._touching.setdefault(end, {})[relation.id] = relation
        return claimed

    def touching(self, memory_id: str) -> list[Relation]:
        with self._lock:
            return list(self._touching.get(memory_id, {}).values())


def attach_related(
    store: MemoryStore,
    access: Access,
    space: str,
    results: Sequence[dict[str, Any]],
    *,
    known: KnownRelations | None = None,
) -> None:
    """Give each result (a dict with ``id``) its ``related`` neighbours in states the
    caller may read: one read of the relations of the whole page; none when the page is
    empty. With ``known`` (what a search read ahead), also the links two hops away
    (``hops`` 2, ``via`` the neighbour between), reading only what it lacks."""
    ids = [str(result["id"]) for result in results]
    if not ids:
        return
    readable = {state.value for state in access.readable_states} | {""}
    if known is None:
        by_memory = related_by_memory(store.relations_of(ids, space=space), ids, readable)
    else:
        known.read_around(ids)
        by_memory = two_hops(known, ids, readable)
    for result in results:
        result["related"] = by_memory.get(str(result["id"]), [])


def related_by_memory(
    relations: Iterable[Relation], ids: Sequence[str], readable: set[str]
) -> dict[str, list[dict[str, Any]]]:
    """Per id, its neighbours (in ``readable`` states) as a result shows them, the most
    telling first."""
    wanted = set(ids)
    grouped: dict[str, list[Relation]] = {}
    for relation in relations:
        for end in {relation.source, relation.target} & wanted:
            if relation.other_state(end) in readable:
                grouped.setdefault(end, []).append(relation)
    shown: dict[str, list[dict[str, Any]]] = {}
    for memory_id, found in grouped.items():
        shown[memory_id] = [r.seen_from(memory_id) for r in _telling(found, memory_id)][
            :RELATED_PER_RESULT
        ]
    return shown


def two_hops(
    known: KnownRelations, ids: Sequence[str], readable: set[str]
) -> dict[str, list[dict[str, Any]]]:
    """Per id, its neighbours (``hops`` 1) and theirs (``hops`` 2, ``via`` the
    neighbour between), every memory in a ``readable`` state and shown once at its
    nearest: up to ``RELATED_PER_RESULT`` of each, the most telling first."""
    shown: dict[str, list[dict[str, Any]]] = {}
    for memory_id in dict.fromkeys(ids):
        near = [r for r in known.touching(memory_id) if r.other_state(memory_id) in readable]
        first = _telling(near, memory_id)[:RELATED_PER_RESULT]
        seen = {memory_id} | {r.other(memory_id) for r in near}
        entries = [r.seen_from(memory_id) for r in first]
        further: list[dict[str, Any]] = []
        for step in first:
            via = step.other(memory_id)
            for relation in _telling(known.touching(via), via):
                far = relation.other(via)
                if far in seen or relation.other_state(via) not in readable:
                    continue
                seen.add(far)
                further.append(relation.seen_from(via) | {"hops": 2, "via": via})
        entries += further[:RELATED_PER_RESULT]
        if entries:
            shown[memory_id] = entries
    return shown


def _telling(relations: Iterable[Relation], memory_id: str) -> list[Relation]:
    """``relations`` of ``memory_id``, the most telling first."""
    return sorted(relations, key=lambda r: (_rank(r, memory_id), -r.created_at.timestamp(), r.id))


def _rank(relation: Relation, memory_id: str) -> int:
    # What replaced a memory (an incoming supersedes) comes before anything else.
    if relation.type is RelationType.SUPERSEDES and relation.target == memory_id:
        return -1
    return _ORDER[relation.type]


def neighbourhood(
    store: MemoryStore,
    space: str,
    start: str,
    depth: int,
    types: frozenset[RelationType] | None,
    max_nodes: int = MAX_NODES,
) -> tuple[list[str], list[Relation], bool]:
    """The ids reached from ``start`` within ``depth`` hops over valid relations of
    ``types`` (all when None), at most ``max_nodes`` of them, and the edges between
    them; whether the walk was cut short. One read per hop."""
    if not 1 <= depth <= MAX_DEPTH:
        raise InvalidArgument(f"depth must be between 1 and {MAX_DEPTH}; got {depth}")
    seen = [start]
    edges: dict[str, Relation] = {}
    frontier = [start]
    cut = False
    for _ in range(depth):
        if not frontier:
            break
        fresh: list[str] = []
        for relation in store.relations_of(frontier, space=space):
            if types is not None and relation.type not in types:
                continue
            for end in (relation.source, relation.target):
                if end in seen or end in fresh:
                    continue
                if len(seen) + len(fresh) >= max_nodes:
                    cut = True
                    continue
                fresh.append(end)
            if relation.source in seen + fresh and relation.target in seen + fresh:
                edges[relation.id] = relation
        seen += fresh
        frontier = fresh
    return seen, sorted(edges.values(), key=lambda r: (r.created_at, r.id)), cut


class Linking:
    """``related_context``: a memory's neighbourhood, bounded."""

    def __init__(self, store: MemoryStore) -> None:
        self._store = store

    def related_context(
        self,
        access: Access,
        *,
        id: str,
        depth: int | None = None,
        types: Sequence[str] | None = None,
        space: str | None = None,
    ) -> dict[str, Any]:
        """The memories linked to ``id`` within ``depth`` links (at most ``MAX_NODES``),
        in states the caller may read, and the links between them."""
        space_key = access.space(space)
        root = visible(self._store, access, limits.check_id(id), space_key)
        wanted = frozenset(RelationType(t) for t in types) if types else None
        ids, edges, cut = neighbourhood(self._store, space_key, root.id, depth or 1, wanted)
        readable = {state.value for state in access.readable_states} | {""}
        summaries: dict[str, str] = {root.id: summarize(root.content)}
        kinds: dict[str, str] = {root.id: "memory"}
        hidden: set[str] = set()
        for edge in edges:
            for end, summary, state in (
                (edge.source, edge.source_summary, edge.source_state),
                (edge.target, edge.target_summary, edge.target_state),
            ):
                if state not in readable:
                    hidden.add(end)
                summaries.setdefault(end, summary)
                kinds.setdefault(end, "document" if state == "" else "memory")
        shown = [node for node in ids if node not in hidden]
        return {
            "root": root.id,
            "nodes": [
                {"id": node, "kind": kinds.get(node, "memory"), "summary": summaries.get(node, "")}
                for node in shown
            ],
            "edges": [
                {
                    "source": edge.source,
                    "target": edge.target,
                    "type": edge.type.value,
                    "note": edge.note,
                }
                for edge in edges
                if edge.source not in hidden and edge.target not in hidden
            ],
            "truncated": cut,
        }


GRAPH_PAGE: Final = 50


def graph(
    store: MemoryStore,
    access: Access,
    *,
    space: str | None = None,
    topic: str | None = None,
    cursor: str | None = None,
) -> dict[str, Any]:
    """A page of a space's (or topic's) graph: its newest ``GRAPH_PAGE`` active memories
    readable by the caller (after ``cursor``) as nodes, and the valid relations among
    and from them as edges: two reads (the page, its relations)."""
    space_key = access.space(space)
    where = MemoryFilter(
        states=read_states(access, None),
        topic=limits.check_topic(topic, "topic") if topic else None,
        space=space_key,
    )
    applied = applied_filters(where)
    after = decode_cursor(cursor, applied) if cursor else None
    page = store.list_page(where, GRAPH_PAGE + 1, after)
    more = len(page) > GRAPH_PAGE
    page = page[:GRAPH_PAGE]
    ids = [memory.id for memory in page]
    readable = {state.value for state in access.readable_states} | {""}
    edges = [
        relation
        for relation in (store.relations_of(ids, space=space_key) if ids else [])
        if relation.source_state in readable and relation.target_state in readable
    ]
    return {
        "space": space_key,
        "topic": where.topic,
        "nodes": [
            {"id": m.id, "kind": "memory", "summary": summarize(m.content), "topic": m.topic}
            for m in page
        ],
        "edges": [
            {"source": e.source, "target": e.target, "type": e.type.value, "note": e.note}
            for e in edges
        ],
        "next_cursor": encode_cursor(page[-1], applied) if more and page else None,
    }
