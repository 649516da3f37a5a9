"""BM25 as SQLite FTS5's ``bm25()`` computes it; every keyword path ranks with these.

FTS5 fixes k1 and b, and replaces a non-positive IDF (a term in more than half of
the records) with a small positive floor. The SQLite store's in-memory keyword
index (``storage/sqlite_keywords.py``) reproduces the function bit for bit, the
Firestore term index (``storage/firestore_lexical.py``) to rounding.
"""

from __future__ import annotations

import math
from typing import Final

K1: Final = 1.2
B: Final = 0.75
IDF_FLOOR: Final = 1e-6


def idf(records: int, hits: int) -> float:
    """FTS5's IDF of a term found in ``hits`` of ``records`` records."""
    value = math.log((records - hits + 0.5) / (hits + 0.5))
    return value if value > 0.0 else IDF_FLOOR
