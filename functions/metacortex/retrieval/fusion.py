"""Hybrid ranking: fuse semantic (cosine) and lexical (BM25) evidence into one 0..1 score."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from metacortex.domain.records import Memory
from metacortex.storage.base import Scored

DENSE_WEIGHT = 0.7
LEXICAL_WEIGHT = 1.0 - DENSE_WEIGHT


@dataclass(frozen=True, slots=True)
class Ranked:
    memory: Memory
    score: float


def _min_max(hits: Sequence[Scored]) -> dict[str, float]:
    if not hits:
        return {}
    scores = [hit.score for hit in hits]
    low, high = min(scores), max(scores)
    span = high - low
    return {hit.memory.id: (1.0 if span <= 0 else (hit.score - low) / span) for hit in hits}


def fuse(dense: Sequence[Scored], lexical: Sequence[Scored], limit: int) -> list[Ranked]:
    """Weighted sum of min-max normalized scores; a signal a record lacks counts 0.

    Scores are clamped to [0, 1]. Ties break on newer ``updated_at`` then id,
    so rankings are deterministic.
    """
    dense_norm = _min_max(dense)
    lexical_norm = _min_max(lexical)
    memories = {hit.memory.id: hit.memory for hit in (*dense, *lexical)}
    ranked = [
        Ranked(
            memory=memory,
            score=min(
                1.0,
                max(
                    0.0,
                    DENSE_WEIGHT * dense_norm.get(memory_id, 0.0)
                    + LEXICAL_WEIGHT * lexical_norm.get(memory_id, 0.0),
                ),
            ),
        )
        for memory_id, memory in memories.items()
    ]
    ranked.sort(key=lambda r: (-r.score, -r.memory.updated_at.timestamp(), r.memory.id))
    return ranked[:limit]
