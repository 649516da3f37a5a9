"""Hybrid ranking: fuse semantic (cosine) and lexical (BM25) evidence into one 0..1 score.

Each retriever's candidate scores are min-max normalized over its own candidate
list and combined as a weighted sum; a record one retriever did not return
counts 0 there. The weights were measured on the LoCoMo development split
(docs/benchmarks.md): keyword evidence carries more weight than MiniLM's
similarity because BM25 alone beats dense retrieval there, and the mix beats both.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from metacortex.domain.records import Memory
from metacortex.storage.base import Scored

DENSE_WEIGHT = 0.4


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


def rank_key(ranked: Ranked) -> tuple[float, float, str]:
    """Best score first; ties to the newer record, then by id (deterministic)."""
    return (-ranked.score, -ranked.memory.updated_at.timestamp(), ranked.memory.id)


def fuse(
    dense: Sequence[Scored], lexical: Sequence[Scored], dense_weight: float = DENSE_WEIGHT
) -> list[Ranked]:
    """Every candidate of either list with its fused score in [0, 1], best first."""
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
                    dense_weight * dense_norm.get(memory_id, 0.0)
                    + (1.0 - dense_weight) * lexical_norm.get(memory_id, 0.0),
                ),
            ),
        )
        for memory_id, memory in memories.items()
    ]
    ranked.sort(key=rank_key)
    return ranked
