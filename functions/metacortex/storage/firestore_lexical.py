"""Keyword retrieval on Firestore: a term index on each record, BM25 scored in Python.

Firestore has no full-text search. Each memory document carries the analyzed
term stream of its ``retrieval_text`` (``metacortex.retrieval.text.terms``, the
analyzer SQLite's FTS5 table is fed with):

- ``terms``: the distinct terms, an array (``array_contains_any`` finds candidates);
- ``term_freqs``: term -> occurrences (a map; queries project only the query's keys);
- ``term_count``: the stream length (BM25's document length).

Corpus statistics are not kept in counters: Firestore computes them when asked,
with aggregation queries over the same documents, so they can never drift from
the records and no hot counter document limits write throughput:

- N (records) and total length: one ``count()`` + ``sum(term_count)`` query;
- df(term): one ``count()`` per query term (``terms array_contains term``), in parallel.

Scores follow SQLite FTS5's ``bm25()`` exactly (k1 = 1.2, b = 0.75, the same IDF
with its 1e-6 floor, statistics over every record whatever its state), so both
stores rank alike. See ``docs/firestore.md`` for costs and limits.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping, Sequence
from concurrent.futures import Executor
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final

from google.cloud.firestore_v1.base_query import FieldFilter
from google.cloud.firestore_v1.collection import CollectionReference
from google.cloud.firestore_v1.field_path import FieldPath

from metacortex.storage.base import MemoryFilter
from metacortex.storage.firestore_codec import (
    FILTER_FIELDS,
    TERM_COUNT,
    TERM_FREQS,
    TERMS,
    decode_memory,
)
from metacortex.storage.firestore_queries import (
    MAX_ARRAY_CONTAINS_ANY,
    MAX_DISJUNCTIONS,
    filtered,
    native_filters,
)

K1: Final = 1.2
B: Final = 0.75
_IDF_FLOOR: Final = 1e-6  # FTS5 replaces a non-positive IDF with this

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class CorpusStats:
    """What BM25 needs besides the record itself; over every record of the collection."""

    doc_count: int
    term_total: int
    doc_freqs: Mapping[str, int]

    @property
    def average_length(self) -> float:
        return self.term_total / self.doc_count if self.doc_count else 0.0

    def idf(self, term: str) -> float:
        hits = self.doc_freqs.get(term, 0)
        value = math.log((self.doc_count - hits + 0.5) / (hits + 0.5))
        return value if value > 0 else _IDF_FLOOR


def bm25(
    stats: CorpusStats, query_terms: Sequence[str], freqs: Mapping[str, int], length: int
) -> float:
    """FTS5's bm25() for one record, as a positive number (higher is better)."""
    average = stats.average_length
    if average <= 0:
        return 0.0
    norm = K1 * (1 - B + B * length / average)
    score = 0.0
    for term in query_terms:
        freq = freqs.get(term, 0)
        if freq:
            score += stats.idf(term) * (freq * (K1 + 1)) / (freq + norm)
    return score


def _aggregate(query: Any) -> dict[str, Any]:
    """alias -> value of one aggregation query (the client's annotations here are wrong)."""
    return {result.alias: result.value for result in query.get()[0]}


@dataclass(frozen=True, slots=True)
class _Candidate:
    id: str
    score: float
    created_at: datetime


class LexicalIndex:
    """BM25 search over the term index of one memory collection."""

    def __init__(
        self, memories: CollectionReference, executor: Executor, candidate_cap: int
    ) -> None:
        self._memories = memories
        self._executor = executor
        self._candidate_cap = candidate_cap

    def statistics(self, query_terms: Sequence[str]) -> CorpusStats:
        """N, total length and the document frequency of each term, as stored right now."""
        totals = self._executor.submit(self._totals)
        counts = {term: self._executor.submit(self._doc_freq, term) for term in query_terms}
        doc_count, term_total = totals.result()
        return CorpusStats(
            doc_count=doc_count,
            term_total=term_total,
            doc_freqs={term: future.result() for term, future in counts.items()},
        )

    def _totals(self) -> tuple[int, int]:
        counted = self._memories.count(alias="n")  # type: ignore[no-untyped-call]
        values = _aggregate(counted.sum(TERM_COUNT, alias="length"))
        return int(values["n"] or 0), int(values["length"] or 0)

    def _doc_freq(self, term: str) -> int:
        query = self._memories.where(filter=FieldFilter(TERMS, "array_contains", term))
        return int(_aggregate(query.count(alias="n"))["n"] or 0)

    def search(
        self, query_terms: Sequence[str], where: MemoryFilter, limit: int
    ) -> list[tuple[str, float]]:
        """The ``limit`` best (id, score) pairs among records matching ``where``.

        Terms are visited rarest first, in groups that fit one
        ``array_contains_any`` query. Every record found is scored in full (its
        frequencies for all query terms are projected), so after each group a
        record not yet seen can score at most the sum of the remaining terms'
        upper bounds, idf * (k1 + 1). Once ``limit`` records beat that bound the
        rest cannot enter the top and are never read (MaxScore pruning).
        """
        wanted = list(dict.fromkeys(term for term in query_terms if term))
        if not wanted or limit <= 0:
            return []
        stats = self.statistics(wanted)
        present = sorted((t for t in wanted if stats.doc_freqs.get(t)), key=self._rarity(stats))
        if not present:
            return []
        # `in` over n states times array_contains_any over k terms is n*k disjunctions.
        group = max(1, min(MAX_ARRAY_CONTAINS_ANY, MAX_DISJUNCTIONS // len(where.states)))
        groups = [present[i : i + group] for i in range(0, len(present), group)]
        bounds = [sum(stats.idf(t) * (K1 + 1) for t in terms) for terms in groups]
        projection = [
            TERM_COUNT,
            *FILTER_FIELDS,
            *(FieldPath(TERM_FREQS, term).to_api_repr() for term in present),
        ]
        base = filtered(self._memories, native_filters(where, created_range=True))
        found: dict[str, _Candidate] = {}
        for index, terms in enumerate(groups):
            query = (
                base.where(filter=FieldFilter(TERMS, "array_contains_any", terms))
                .order_by("created_at", direction="DESCENDING")
                .limit(self._candidate_cap)
                .select(projection)
            )
            read = 0
            for snapshot in query.stream():
                read += 1
                if snapshot.id in found:
                    continue
                data: dict[str, Any] = snapshot.to_dict() or {}
                memory = decode_memory(snapshot.id, data)
                if not where.matches(memory):
                    continue
                freqs = data.get(TERM_FREQS) or {}
                score = bm25(stats, wanted, freqs, int(data.get(TERM_COUNT) or 0))
                found[snapshot.id] = _Candidate(snapshot.id, score, memory.created_at)
            if read >= self._candidate_cap:
                logger.info(
                    "lexical search read the candidate cap (%d) for terms %s; older records "
                    "containing only these terms were not scored",
                    self._candidate_cap,
                    terms,
                )
            remaining = sum(bounds[index + 1 :])
            if remaining and len(found) >= limit:
                kth = sorted((c.score for c in found.values()), reverse=True)[limit - 1]
                if kth > remaining:
                    break
        ranked = sorted(found.values(), key=lambda c: (-c.score, c.created_at, c.id))
        return [(c.id, c.score) for c in ranked[:limit]]

    @staticmethod
    def _rarity(stats: CorpusStats) -> Any:
        return lambda term: (stats.doc_freqs.get(term, 0), term)
