"""Conversational context: memories written together lend each other evidence.

Agents often save a conversation or a working session as a run of memories in
one topic. The turn that answers a question is frequently next to (or two
turns from) the turn that matches the question's words: "I loved *Becoming
Nicole*" is followed by "It taught me self-acceptance". So after fusion, each
of the best candidates passes a share of its score to its neighbours: the
records just before and after it in the same topic, in write order, that pass
the same filters and were written within ``SAME_SITTING`` of it. A record's
final score is its own plus the largest share it receives, rescaled to 0..1.

Neighbours come from the store's ordinary keyset listing (``list_page`` with a
cursor at the candidate), so every backend supports it with indexes it has.
Measured effect on LoCoMo in docs/benchmarks.md.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from datetime import timedelta
from typing import Final

from metacortex.domain.records import Memory
from metacortex.retrieval.fusion import Ranked, rank_key
from metacortex.storage.base import MemoryFilter, MemoryStore, PageKey

# Share of a candidate's score passed to the records 1 and 2 positions away.
SHARES: Final = (0.4, 0.25)
# Candidates whose neighbours are looked up (the rest rarely change the top 20).
SOURCES: Final = 20
# Memories further apart in time than this are not treated as one conversation.
SAME_SITTING: Final = timedelta(hours=1)


def _neighbours(
    store: MemoryStore, memory: Memory, where: MemoryFilter
) -> list[tuple[int, Memory]]:
    """(distance, record) for up to len(SHARES) records each side in write order."""
    scoped = replace(where, topic=memory.topic)
    key = PageKey(created_at=memory.created_at, id=memory.id)
    span = len(SHARES)
    older = store.list_page(scoped, span, key)
    newer = store.list_page(scoped, span, key, oldest_first=True)
    found: list[tuple[int, Memory]] = []
    for side in (older, newer):
        for distance, other in enumerate(side, start=1):
            if abs(other.created_at - memory.created_at) > SAME_SITTING:
                break
            found.append((distance, other))
    return found


def with_context(store: MemoryStore, fused: Sequence[Ranked], where: MemoryFilter) -> list[Ranked]:
    """Re-rank ``fused`` (best first) with neighbour evidence; scores stay in [0, 1]."""
    own = {r.memory.id: r.score for r in fused}
    memories = {r.memory.id: r.memory for r in fused}
    received: dict[str, float] = {}
    for source in fused[:SOURCES]:
        for distance, neighbour in _neighbours(store, source.memory, where):
            share = SHARES[distance - 1] * source.score
            memories.setdefault(neighbour.id, neighbour)
            if share > received.get(neighbour.id, 0.0):
                received[neighbour.id] = share
    scale = 1.0 + SHARES[0]
    ranked = [
        Ranked(memory, (own.get(memory_id, 0.0) + received.get(memory_id, 0.0)) / scale)
        for memory_id, memory in memories.items()
    ]
    ranked.sort(key=rank_key)
    return ranked
