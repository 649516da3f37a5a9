"""Conversational context: memories written together lend each other evidence.

Agents often save a conversation or a working session as a run of memories in
one topic. The turn that answers a question is frequently next to (or two
turns from) the turn that matches the question's words: "I loved *Becoming
Nicole*" is followed by "It taught me self-acceptance". Two kinds of evidence
flow between neighbours (the records just before and after a record in the
same topic, in write order, that pass the same filters and were written within
``SAME_SITTING`` of it):

1. Window coverage. A candidate whose neighbours (up to ``WINDOW`` away) hold
   query terms it lacks gains ``COVERAGE`` times the share of the query's
   keyword weight they add: the question's subject named two turns earlier and
   its detail in this one make the pair a full match that neither is alone.
2. Shares. Each of the best candidates passes a share of its score to its
   neighbours (``SHARES`` by distance); a record keeps the largest it receives.

The final score is rescaled to 0..1. Neighbours come from the store's batch
keyset listing (``MemoryStore.neighbours``: the candidates' neighbours in one
round trip on Firestore, stopping at records the search already holds), so
every backend supports it with indexes it has. Measured effect on LoCoMo in docs/benchmarks.md.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Mapping, Sequence
from datetime import timedelta
from typing import Final

from metacortex.domain.records import Memory
from metacortex.retrieval.fusion import Ranked, rank_key
from metacortex.retrieval.text import term_frequencies
from metacortex.storage.base import MemoryFilter, MemoryStore

# Share of a candidate's score passed to the records 1 and 2 positions away.
SHARES: Final = (0.4, 0.25)
# How far window coverage looks, and what a full complement of the query is worth.
WINDOW: Final = 2
COVERAGE: Final = 0.3
# Candidates whose neighbours are looked up (the rest rarely change the top 20).
SOURCES: Final = 20
# Memories further apart in time than this are not treated as one conversation.
SAME_SITTING: Final = timedelta(hours=1)

_SPAN: Final = max(len(SHARES), WINDOW)


class _Neighbourhoods:
    """Neighbours of the records looked up so far, with the write-order links they reveal."""

    def __init__(
        self, store: MemoryStore, where: MemoryFilter, candidates: Sequence[Memory]
    ) -> None:
        self._store = store
        self._where = where
        # Records in hand (the search's candidates, then every neighbour learnt):
        # the store may stop its neighbour reads at them.
        self._in_hand: dict[str, Memory] = {m.id: m for m in candidates}
        self.seen: dict[str, list[tuple[int, Memory]]] = {}
        self.memories: dict[str, Memory] = {}
        self._older: dict[str, str] = {}
        self._newer: dict[str, str] = {}

    def look_up(self, memories: Sequence[Memory]) -> None:
        """Learn the neighbours of ``memories``: one batch (``MemoryStore.neighbours``)
        for those whose links are not known yet."""
        missing = [
            m
            for m in memories
            if m.id not in self.seen
            and min(len(self._known(m, self._older)), len(self._known(m, self._newer))) < _SPAN
        ]
        fetched = (
            self._store.neighbours(missing, self._where, _SPAN, list(self._in_hand.values()))
            if missing
            else {}
        )
        for memory in memories:
            if memory.id in self.seen:
                continue
            around = fetched.get(memory.id)
            if around is None:
                sides = (self._known(memory, self._older), self._known(memory, self._newer))
            else:
                sides = (
                    self._link(memory, around.older, self._older, self._newer),
                    self._link(memory, around.newer, self._newer, self._older),
                )
            self.memories[memory.id] = memory
            self.seen[memory.id] = [pair for side in sides for pair in enumerate(side, start=1)]
            self._in_hand.update((other.id, other) for side in sides for other in side)

    def of(self, memory: Memory) -> list[tuple[int, Memory]]:
        """(distance, record) for up to ``_SPAN`` records each side in write order."""
        self.look_up([memory])
        return self.seen[memory.id]

    def _known(self, memory: Memory, links: dict[str, str]) -> list[Memory]:
        """Records already linked on one side of ``memory``, nearest first, up to ``_SPAN``."""
        out: list[Memory] = []
        current = memory.id
        while len(out) < _SPAN and current in links:
            current = links[current]
            other = self.memories[current]
            if abs(other.created_at - memory.created_at) > SAME_SITTING:
                break
            out.append(other)
        return out

    def _link(
        self,
        memory: Memory,
        side: Sequence[Memory],
        links: dict[str, str],
        back: dict[str, str],
    ) -> list[Memory]:
        out: list[Memory] = []
        previous = memory
        for other in side:
            if abs(other.created_at - memory.created_at) > SAME_SITTING:
                break
            out.append(other)
            self.memories[other.id] = other
            links[previous.id] = other.id
            back[other.id] = previous.id
            previous = other
        return out

    def window(self, memory: Memory) -> list[Memory]:
        """Known records within ``WINDOW`` of ``memory`` (links revealed so far)."""
        return [
            other
            for links in (self._older, self._newer)
            for other in self._known(memory, links)[:WINDOW]
        ]


def with_context(
    store: MemoryStore,
    fused: Sequence[Ranked],
    where: MemoryFilter,
    keyword_weights: Mapping[str, float] | None = None,
    learnt: Callable[[Sequence[Memory]], None] | None = None,
) -> list[Ranked]:
    """Re-rank ``fused`` (best first) with neighbour evidence; scores stay in [0, 1].

    ``learnt`` is handed the neighbours the first batch found that were not
    candidates, the best sources' first, before anything else is read: records that
    may rise into the results, whose caller can start reading about them.

    ``keyword_weights`` (query term -> BM25 weight, ``fusion.keyword_weights``)
    enables window coverage; without it only shares flow.
    """
    own = {r.memory.id: r.score for r in fused}
    memories = {r.memory.id: r.memory for r in fused}
    hoods = _Neighbourhoods(store, where, [r.memory for r in fused])
    hoods.look_up([source.memory for source in fused[:SOURCES]])
    if learnt is not None:
        learnt([memory for memory_id, memory in hoods.memories.items() if memory_id not in own])
    scores = dict(own)
    weights = {term: w for term, w in (keyword_weights or {}).items() if w > 0}
    total = sum(weights.values())
    if total > 0:
        hits: dict[str, frozenset[str]] = {}

        def query_hits(memory: Memory) -> frozenset[str]:
            found = hits.get(memory.id)
            if found is None:
                freqs = term_frequencies(memory.retrieval_text)
                found = hits[memory.id] = frozenset(t for t in weights if t in freqs)
            return found

        # Candidates whose window is (at least partly) known: sources and their neighbours.
        for memory_id, memory in hoods.memories.items():
            if memory_id not in own:
                continue
            window = hoods.window(memory)
            if not window:
                continue
            lacking = set().union(*(query_hits(other) for other in window)) - query_hits(memory)
            if lacking:
                scores[memory_id] += COVERAGE * sum(weights[t] for t in lacking) / total
    memories.update(hoods.memories)
    received: dict[str, float] = {}
    best = heapq.nsmallest(
        SOURCES, (Ranked(memories[mid], score) for mid, score in scores.items()), key=rank_key
    )
    hoods.look_up([source.memory for source in best])  # new ones only: usually none
    for source in best:
        for distance, neighbour in hoods.of(source.memory):
            if distance > len(SHARES):
                continue
            share = SHARES[distance - 1] * source.score
            memories.setdefault(neighbour.id, neighbour)
            if share > received.get(neighbour.id, 0.0):
                received[neighbour.id] = share
    scale = (1.0 + (COVERAGE if total > 0 else 0.0)) * (1.0 + SHARES[0])
    parts = {r.memory.id: r for r in fused}
    ranked = []
    for mid, memory in memories.items():
        own_part = parts.get(mid)
        ranked.append(
            Ranked(
                memory,
                min(1.0, (scores.get(mid, 0.0) + received.get(mid, 0.0)) / scale),
                semantic=own_part.semantic / scale if own_part else 0.0,
                keyword=own_part.keyword / scale if own_part else 0.0,
            )
        )
    ranked.sort(key=rank_key)
    return ranked
