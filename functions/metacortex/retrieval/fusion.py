"""Hybrid ranking: fuse semantic (cosine) and lexical (BM25) evidence into one 0..1 score.

Lexical scores first have BM25's length normalization relaxed (see
``relax_length_normalization``). Then each retriever's candidate scores are
min-max normalized over its own candidate list and combined as a weighted sum;
a record one retriever did not return counts 0 there. The weights were measured
on the LoCoMo development split (docs/benchmarks.md): keyword evidence carries
more weight than MiniLM's similarity because BM25 alone beats dense retrieval
there, and the mix beats both.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from metacortex.domain.records import Memory
from metacortex.retrieval import bm25
from metacortex.retrieval.text import term_frequencies
from metacortex.storage.base import Scored, TermStats

DENSE_WEIGHT = 0.4

# BM25 as the stores compute it: SQLite FTS5's bm25(), whose k1 and b are fixed,
# and the Firestore term index, which reproduces it.
STORE_K1: Final = bm25.K1
STORE_B: Final = bm25.B
# BM25's b used for ranking instead (0 = no length normalization). Memories are
# short, single-subject records: a longer one is usually a more detailed
# statement (a turn plus a photo caption), not a longer document that mentions
# the term in passing, so penalizing length mostly buries the detailed answer.
LENGTH_NORMALIZATION: Final = 0.0


@dataclass(frozen=True, slots=True)
class Ranked:
    """A candidate and its score; ``semantic`` and ``keyword`` are the parts of ``score``
    each retriever contributed (for explaining a rank; ranking reads only ``score``)."""

    memory: Memory
    score: float
    semantic: float = 0.0
    keyword: float = 0.0
    # What the time the question names added (``retrieval/when.py``).
    time: float = 0.0

    @property
    def context(self) -> float:
        """What conversational context added (``retrieval/context.py``); 0 without it."""
        return max(0.0, self.score - self.semantic - self.keyword - self.time)


def _min_max(hits: Sequence[Scored]) -> dict[str, float]:
    if not hits:
        return {}
    scores = [hit.score for hit in hits]
    low, high = min(scores), max(scores)
    span = high - low
    return {hit.memory.id: (1.0 if span <= 0 else (hit.score - low) / span) for hit in hits}


def term_stats(hit: Scored) -> TermStats:
    """The record's term stream as the keyword index holds it, when the store returned it
    (no analysis at search time); else analyzed from its text (the same stream: stores
    index ``terms(retrieval_text)``)."""
    if hit.terms is not None:
        return hit.terms
    freqs = term_frequencies(hit.memory.retrieval_text)
    return TermStats(length=sum(freqs.values()), freqs=freqs)


def rank_key(ranked: Ranked) -> tuple[float, float, str]:
    """Best score first; ties to the newer record, then by id (deterministic)."""
    return (-ranked.score, -ranked.memory.updated_at.timestamp(), ranked.memory.id)


def relax_length_normalization(
    lexical: Sequence[Scored], b: float = LENGTH_NORMALIZATION
) -> list[Scored]:
    """The stores' BM25 scores (b = ``STORE_B``) rescaled to BM25 with ``b``, best first.

    A query term found once in a record contributes
    ``idf * (k1 + 1) / (1 + k1 * (1 - b + b * length / average))``; only the
    denominator depends on b, and it is the same for every such term of the
    record, so multiplying the record's score by the ratio of the two
    denominators gives the score under the other b exactly (closely when a term
    repeats, which is rare in short records). ``average`` is the mean length of
    the candidates: the stores do not expose their corpus mean, and after
    min-max normalization only the ratio of lengths to it matters.
    """
    if not lexical or b == STORE_B:
        return list(lexical)
    lengths = [term_stats(hit).length for hit in lexical]
    average = sum(lengths) / len(lengths) or 1.0

    def denominator(length: int, param: float) -> float:
        return 1.0 + STORE_K1 * (1.0 - param + param * length / average)

    rescaled = [
        Scored(
            hit.memory,
            hit.score * denominator(length, STORE_B) / denominator(length, b),
            hit.terms,
        )
        for hit, length in zip(lexical, lengths, strict=True)
    ]
    rescaled.sort(key=lambda hit: -hit.score)
    return rescaled


def keyword_weights(query_terms: Sequence[str], lexical: Sequence[Scored]) -> dict[str, float]:
    """How much each query term adds to a record's BM25 score (its idf), as the store used it.

    The stores return one score per record, not the per-term IDFs behind it. A
    record's BM25 is ``sum(idf[t] * f(tf[t], length))`` over the query terms,
    linear in the IDFs, so a least-squares fit over the candidates recovers
    them (exactly when the mean-length estimate is exact, as in
    ``relax_length_normalization``). A term no candidate contains gets 0.
    """
    import numpy as np  # here: answering tools/list at a cold start needs no numpy

    wanted = list(dict.fromkeys(query_terms))
    if not wanted or not lexical:
        return {}
    stats = [term_stats(hit) for hit in lexical]
    freqs = [s.freqs for s in stats]
    lengths = [s.length for s in stats]
    average = sum(lengths) / len(lengths) or 1.0
    design = np.zeros((len(lexical), len(wanted)))
    for row, (counts, length) in enumerate(zip(freqs, lengths, strict=True)):
        norm = STORE_K1 * (1.0 - STORE_B + STORE_B * length / average)
        for column, term in enumerate(wanted):
            freq = counts.get(term, 0)
            design[row, column] = freq * (STORE_K1 + 1.0) / (freq + norm)
    scores = np.array([hit.score for hit in lexical])
    solution = np.linalg.lstsq(design, scores, rcond=None)[0]
    return {term: max(0.0, float(weight)) for term, weight in zip(wanted, solution, strict=True)}


def fuse(
    dense: Sequence[Scored], lexical: Sequence[Scored], dense_weight: float = DENSE_WEIGHT
) -> list[Ranked]:
    """Every candidate of either list with its fused score in [0, 1], best first."""
    dense_norm = _min_max(dense)
    lexical_norm = _min_max(relax_length_normalization(lexical))
    memories = {hit.memory.id: hit.memory for hit in (*dense, *lexical)}
    ranked = []
    for memory_id, memory in memories.items():
        semantic = dense_weight * dense_norm.get(memory_id, 0.0)
        keyword = (1.0 - dense_weight) * lexical_norm.get(memory_id, 0.0)
        ranked.append(
            Ranked(
                memory=memory,
                score=min(1.0, max(0.0, semantic + keyword)),
                semantic=semantic,
                keyword=keyword,
            )
        )
    ranked.sort(key=rank_key)
    return ranked
