"""Whether a match is relevant, judged on its own evidence, not on its rank.

A search always returns its best candidates, and its ``score`` is normalised per query:
the best of nothing still scores high. ``relevance`` says whether a match carries
evidence of its own:

- **semantic**: its cosine similarity to the query reaches the embedding model's
  ``strong_similarity`` (measured per model: ``STRONG_SIMILARITY``);
- **keyword**: it holds at least ``STRONG_COVERAGE`` of the query's keyword weight
  (each query term weighted by its IDF as the store ranked it, ``fusion.keyword_weights``;
  a term no candidate holds counts as heavy as the heaviest, so a question naming
  things nobody mentioned is not half answered by its everyday words).

Either makes a match ``strong``; neither, ``weak``. Evidence lent by neighbours
(conversational context) or by time alone makes nothing strong. Thresholds measured on
LoCoMo in ``bench/relevance_floor.py`` (docs/benchmarks.md, "An honest floor").
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Final, Literal

from metacortex.retrieval.text import term_frequencies

Relevance = Literal["strong", "weak"]

# Cosine similarity from which a match is strong on meaning alone, per embedding model
# (``EmbeddingIdentity.model``). A model not listed is judged on keywords alone unless
# the operator sets METACORTEX_STRONG_SIMILARITY.
STRONG_SIMILARITY: Final[Mapping[str, float]] = {
    "all-MiniLM-L6-v2-int8": 0.50,
}
STRONG_COVERAGE: Final = 0.7


def keyword_coverage(
    retrieval_text: str, weights: Mapping[str, float], missing: Sequence[str] = ()
) -> float:
    """The share of the query's keyword weight ``retrieval_text`` holds (0..1).
    ``weights``: query term -> weight (0 for a term no candidate holds); ``missing``:
    such terms, each counted as heavy as the heaviest weight."""
    positive = {term: weight for term, weight in weights.items() if weight > 0}
    if not positive:
        return 0.0
    heaviest = max(positive.values())
    total = sum(positive.values()) + heaviest * len(missing)
    held = term_frequencies(retrieval_text)
    return sum(weight for term, weight in positive.items() if term in held) / total


def judged(
    similarity: float | None,
    coverage: float,
    strong_similarity: float | None,
    strong_coverage: float = STRONG_COVERAGE,
) -> Relevance:
    if strong_similarity is not None and similarity is not None and similarity >= strong_similarity:
        return "strong"
    return "strong" if coverage >= strong_coverage else "weak"
