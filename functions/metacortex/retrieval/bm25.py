"""BM25 as SQLite FTS5's ``bm25()`` computes it; every keyword path ranks with these.

FTS5 fixes k1 and b, and replaces a non-positive IDF (a term in more than half of
the records) with a small positive floor. The SQLite store's in-memory keyword
index (``storage/sqlite_keywords.py``) reproduces the function bit for bit, the
Firestore term index (``storage/firestore_lexical.py``) to rounding.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Final

K1: Final = 1.2
B: Final = 0.75
IDF_FLOOR: Final = 1e-6


def idf(records: int, hits: int) -> float:
    """FTS5's IDF of a term found in ``hits`` of ``records`` records."""
    value = math.log((records - hits + 0.5) / (hits + 0.5))
    return value if value > 0.0 else IDF_FLOOR


def rank(query: Sequence[str], texts: Mapping[str, Mapping[str, int]]) -> list[tuple[str, float]]:
    """BM25 of ``query``'s terms over a small closed set of records (id -> term counts),
    best first, ties by id; records sharing no term are left out. For searching inside
    one document (its passages), where the set is known whole."""
    if not texts or not query:
        return []
    lengths = {key: sum(counts.values()) for key, counts in texts.items()}
    average = sum(lengths.values()) / len(lengths) or 1.0
    weights = {term: idf(len(texts), sum(1 for c in texts.values() if term in c)) for term in query}
    scored: list[tuple[str, float]] = []
    for key, counts in texts.items():
        norm = K1 * (1 - B + B * lengths[key] / average)
        score = sum(
            weights[term] * counts[term] * (K1 + 1) / (counts[term] + norm)
            for term in query
            if term in counts
        )
        if score > 0:
            scored.append((key, score))
    return sorted(scored, key=lambda pair: (-pair[1], pair[0]))
