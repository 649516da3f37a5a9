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

from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import Executor
from dataclasses import dataclass
from typing import Any, Final

from google.cloud.firestore_v1.base_query import FieldFilter
from google.cloud.firestore_v1.collection import CollectionReference
from google.cloud.firestore_v1.field_path import FieldPath

from metacortex.domain.records import Memory
from metacortex.retrieval import typos as spelling
from metacortex.retrieval.bm25 import K1, B
from metacortex.retrieval.bm25 import idf as bm25_idf
from metacortex.storage.base import MemoryFilter, Scored, TermStats
from metacortex.storage.firestore_codec import (
    MEMORY_FIELDS,
    TERM_COUNT,
    TERM_FREQS,
    TERMS,
    decode_memory,
    fields_of,
)
from metacortex.storage.firestore_queries import (
    MAX_ARRAY_CONTAINS_ANY,
    MAX_DISJUNCTIONS,
    filtered,
    native_filters,
)

# Records the keyword side reads at most, whatever the candidate pool (100): with the
# 100 records find_nearest returns (scored for every query term) and the neighbours
# conversational context reads, a search stays within 250 billed reads (issue 39 §5).
RARE_BUDGET: Final = 50
# Records read for the common terms at most, within what the rare terms leave.
# Their lists look for records strong in words but not near in meaning: the
# records the vector query returned are scored for every term anyway.
COMMON_BUDGET: Final = 20


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
        return bm25_idf(self.doc_count, self.doc_freqs.get(term, 0))


def bm25(
    stats: CorpusStats,
    query_terms: Sequence[str],
    freqs: Mapping[str, int],
    length: int,
    weights: Mapping[str, float] | None = None,
) -> float:
    """FTS5's bm25() for one record, as a positive number (higher is better).
    ``weights``: a factor on the IDF of some terms (typo expansions)."""
    average = stats.average_length
    if average <= 0:
        return 0.0
    norm = K1 * (1 - B + B * length / average)
    score = 0.0
    for term in query_terms:
        freq = freqs.get(term, 0)
        if freq:
            idf = stats.idf(term)
            if weights and term in weights:
                idf *= weights[term]
            score += idf * (freq * (K1 + 1)) / (freq + norm)
    return score


def _aggregate(query: Any) -> dict[str, Any]:
    """alias -> value of one aggregation query (the client's annotations here are wrong)."""
    return {result.alias: result.value for result in query.get()[0]}


@dataclass(frozen=True, slots=True)
class _Candidate:
    memory: Memory
    score: float
    terms: TermStats


def _ranked(found: Mapping[str, _Candidate], limit: int) -> list[Scored]:
    ranked = sorted(found.values(), key=lambda c: (-c.score, c.memory.created_at, c.memory.id))
    return [Scored(c.memory, c.score, c.terms) for c in ranked[:limit]]


class LexicalIndex:
    """BM25 search over the term index of one memory collection."""

    def __init__(
        self,
        memories: Callable[[str], CollectionReference],
        executor: Executor,
        budget: int = RARE_BUDGET,
        common_budget: int = COMMON_BUDGET,
    ) -> None:
        self._memories = memories  # a space's memory collection
        self._executor = executor
        self._budget = budget
        self._common_budget = common_budget

    def statistics(self, query_terms: Sequence[str], space: str) -> CorpusStats:
        """N, total length and the document frequency of each term in one space, as
        stored right now."""
        return self._statistics(query_terms, space, None)[0]

    def _statistics(
        self, query_terms: Sequence[str], space: str, where: MemoryFilter | None
    ) -> tuple[CorpusStats, dict[str, int]]:
        """The space's corpus statistics, and per term how many records matching
        ``where`` hold it (the space-wide count when ``where`` is None), all
        concurrently. Each space is its own corpus: no count reads another space."""
        totals = self._executor.submit(self._totals, space)
        counts = {term: self._executor.submit(self._doc_freq, term, space) for term in query_terms}
        inside = (
            {
                term: self._executor.submit(self._doc_freq, term, space, where)
                for term in query_terms
            }
            if where is not None
            else {}
        )
        doc_count, term_total = totals.result()
        stats = CorpusStats(
            doc_count=doc_count,
            term_total=term_total,
            doc_freqs={term: future.result() for term, future in counts.items()},
        )
        within = {term: future.result() for term, future in inside.items()} or dict(stats.doc_freqs)
        return stats, within

    def _totals(self, space: str) -> tuple[int, int]:
        counted = self._memories(space).count(alias="n")  # type: ignore[no-untyped-call]
        values = _aggregate(counted.sum(TERM_COUNT, alias="length"))
        return int(values["n"] or 0), int(values["length"] or 0)

    def _doc_freq(self, term: str, space: str, where: MemoryFilter | None = None) -> int:
        base: Any = self._memories(space)
        if where is not None:
            # Ordered like the candidate query, so the same composite index serves it.
            base = filtered(base, native_filters(where, created_range=True)).order_by(
                "created_at", direction="DESCENDING"
            )
        query = base.where(filter=FieldFilter(TERMS, "array_contains", term))
        return int(_aggregate(query.count(alias="n"))["n"] or 0)

    def search(
        self,
        query_terms: Sequence[str],
        where: MemoryFilter,
        limit: int,
        held: Callable[[], Mapping[str, Mapping[str, Any]]] | None = None,
        *,
        typos: bool = False,
    ) -> list[Scored]:
        """The ``limit`` best records (with their BM25 score) among those matching ``where``.

        Reads are bounded by design, in two round trips:

        1. the corpus statistics (one aggregation per term, concurrently) and, when
           ``where`` names a topic or an origin, per term how many records inside
           that filter hold it (one more aggregation per term, in the same round trip);
        2. concurrently, one query for every record holding one of the *rare*
           terms: the terms rarest inside the filter whose counts there add up to
           at most ``budget`` (so it reads that many records at most,
           whatever the corpus size); and, per *common* term, the shortest records
           holding it (BM25 ranks them highest for a term found once), together
           within what the rare terms leave of that budget and at most
           ``common_budget`` (plus one each for rounding). Each record is read
           whole (no second read) with its frequencies for every query term, so
           every record read is scored exactly.

        ``held``: records the caller has read already (id -> fields, with
        ``term_count`` and the query terms' frequencies), waited for once the
        statistics are in. A rare term all of whose records inside the filter are
        held is not queried: those records are scored from what was held, so the
        records read and their scores are the same, with fewer documents read.
        Every held record holding a query term is scored too, so a long record the
        common terms' lists skip keeps its FTS5 rank when the caller holds it.

        Records holding a rare term are ranked exactly as FTS5 ranks them. The
        common terms' part bounds reads, not an exact top: a longer record
        repeating a common term can be missed. Counting inside the filter lets a
        topic's search treat as rare every term that is rare *in that topic*,
        though the scores keep the collection-wide statistics FTS5 uses.
        Its effect on LoCoMo retrieval is measured in docs/benchmarks.md.

        ``typos``: a query term no record of the space holds (its count from step 1
        is 0) is expanded to near terms of the ``held`` records (``retrieval/typos.py``;
        they must carry their whole ``term_freqs``). Step 2 then also counts each
        expansion in the space (one aggregation each, for its IDF) and reads the
        records inside the filter holding one (one query, at most
        ``budget``): more RPCs, no more round trips.
        """
        wanted = list(dict.fromkeys(term for term in query_terms if term))
        if not wanted or limit <= 0:
            return []
        narrowed = where.topic is not None or where.origin is not None
        stats, within = self._statistics(wanted, where.space, where if narrowed else None)
        weights = self._expansions(wanted, stats, held) if typos and held is not None else {}
        # Each expansion's count in the space, in flight with the record queries below.
        counting = {
            term: self._executor.submit(self._doc_freq, term, where.space) for term in weights
        }
        # A term no record inside the filter holds needs no query.
        present = sorted(
            (t for t in wanted if within.get(t)), key=lambda t: (within[t], stats.doc_freqs[t], t)
        )
        if not present and not weights:
            return []
        rare, budget = self._rare(present, within, where, limit)
        common = present[len(rare) :]
        queried = rare
        held_rare: dict[str, Mapping[str, Any]] = {}
        if held is not None and rare:
            covered, held_rare = self._held_rare(held(), rare, within, where)
            queried = [term for term in rare if term not in covered]
        projection = [
            *MEMORY_FIELDS,
            TERM_COUNT,
            *(FieldPath(TERM_FREQS, term).to_api_repr() for term in [*present, *weights]),
        ]
        queries = [
            *self._rare_queries(where, queried, within, list(weights), limit, projection),
            *self._common_queries(where, common, limit, budget, projection),
        ]
        # All in flight at once: one round trip after the statistics.
        read = list(self._executor.map(lambda q: list(q.stream()), queries))
        if counting:
            stats = CorpusStats(
                doc_count=stats.doc_count,
                term_total=stats.term_total,
                doc_freqs={**stats.doc_freqs, **{t: f.result() for t, f in counting.items()}},
            )
        found: dict[str, _Candidate] = {}
        scored = [*wanted, *weights]
        self._score_each(held_rare.items(), stats, scored, weights, where, found)
        fetched = ((snapshot.id, fields_of(snapshot)) for each in read for snapshot in each)
        self._score_each(fetched, stats, scored, weights, where, found)
        # Held records are scored whatever terms they hold: a long record with a
        # common term, which the bounded lists above may miss, keeps the rank FTS5
        # gives it when the caller holds it (the nearest neighbours, which are the
        # likeliest to need their keyword score); so does one holding an expansion.
        lookout = [*(present if common else ()), *weights]
        if held is not None and lookout:
            holding = (
                (doc_id, data)
                for doc_id, data in held().items()
                if any((data.get(TERM_FREQS) or {}).get(term) for term in lookout)
            )
            self._score_each(holding, stats, scored, weights, where, found)
        return _ranked(found, limit)

    def _rare(
        self, present: Sequence[str], within: Mapping[str, int], where: MemoryFilter, limit: int
    ) -> tuple[list[str], int]:
        """The rare terms (rarest first, their counts inside the filter adding up to at
        most ``budget``) and that sum: the records their query reads."""
        # `in` over n states times array_contains_any over k terms is n*k disjunctions.
        width = max(1, min(MAX_ARRAY_CONTAINS_ANY, MAX_DISJUNCTIONS // len(where.states)))
        rare: list[str] = []
        budget = 0
        for term in present[:width]:
            if budget + within[term] > self._budget:
                break
            rare.append(term)
            budget += within[term]
        return rare, budget

    def _rare_queries(
        self,
        where: MemoryFilter,
        queried: Sequence[str],
        within: Mapping[str, int],
        expansions: Sequence[str],
        limit: int,
        projection: Sequence[str],
    ) -> list[Any]:
        """One query for every record holding a rare term not held already, and one for
        those holding an expansion of a typo."""
        queries = []
        if queried:
            queries.append(
                self._holding_any(where, queried)
                # The statistics already bound it; a concurrent write may not.
                .limit(sum(within[term] for term in queried))
                .select(projection)
            )
        if expansions:
            queries.append(
                self._holding_any(where, expansions).limit(self._budget).select(projection)
            )
        return queries

    def _common_queries(
        self,
        where: MemoryFilter,
        common: Sequence[str],
        limit: int,
        budget: int,
        projection: Sequence[str],
    ) -> list[Any]:
        """Per common term, the shortest records holding it, which BM25 ranks highest
        for that term (a record holding several common terms shows up in each of their
        lists); together at most what the rare terms' ``budget`` left, within the
        common terms' own cap."""
        left = min(self._budget - budget, self._common_budget)
        if not common or left <= 0:
            return []
        base = filtered(self._memories(where.space), native_filters(where, created_range=False))
        each = min(limit, -(-left // len(common)))
        return [
            base.where(filter=FieldFilter(TERMS, "array_contains", term))
            .order_by(TERM_COUNT, direction="ASCENDING")
            .limit(each)
            .select(projection)
            for term in common
        ]

    def _holding_any(self, where: MemoryFilter, terms: Sequence[str]) -> Any:
        """The records inside ``where`` holding one of ``terms``, newest first (the
        shape of the rare terms' query, served by one composite index)."""
        return (
            filtered(self._memories(where.space), native_filters(where, created_range=True))
            .where(filter=FieldFilter(TERMS, "array_contains_any", list(terms)))
            .order_by("created_at", direction="DESCENDING")
        )

    @staticmethod
    def _expansions(
        wanted: Sequence[str],
        stats: CorpusStats,
        held: Callable[[], Mapping[str, Mapping[str, Any]]],
    ) -> dict[str, float]:
        """Expansion term -> weight for the terms no record of the space holds, drawn
        from the held records' whole term maps."""
        unknown = [t for t in wanted if spelling.eligible(t) and not stats.doc_freqs.get(t)]
        if not unknown:
            return {}
        streams = ((data.get(TERM_FREQS) or {}).keys() for data in held().values())
        return spelling.expansions(unknown, spelling.vocabulary_of(streams), set(wanted))

    @staticmethod
    def _held_rare(
        held: Mapping[str, Mapping[str, Any]],
        rare: Sequence[str],
        within: Mapping[str, int],
        where: MemoryFilter,
    ) -> tuple[set[str], dict[str, Mapping[str, Any]]]:
        """The rare terms all of whose records inside the filter are held, and those
        held records (to be scored, not read again)."""
        holders: dict[str, list[str]] = {term: [] for term in rare}
        usable: dict[str, Mapping[str, Any]] = {}
        for doc_id, data in held.items():
            freqs = data.get(TERM_FREQS) or {}
            terms = [term for term in rare if freqs.get(term)]
            if terms and where.matches(decode_memory(doc_id, data, where.space)):
                usable[doc_id] = data
                for term in terms:
                    holders[term].append(doc_id)
        covered = {term for term in rare if len(holders[term]) == within[term]}
        chosen = {doc_id for term in covered for doc_id in holders[term]}
        return covered, {doc_id: usable[doc_id] for doc_id in usable if doc_id in chosen}

    @staticmethod
    def _score_each(
        records: Iterable[tuple[str, Mapping[str, Any]]],
        stats: CorpusStats,
        wanted: Sequence[str],
        weights: Mapping[str, float],
        where: MemoryFilter,
        found: dict[str, _Candidate],
    ) -> None:
        """Score into ``found`` each record not scored yet that matches ``where``."""
        for doc_id, data in records:
            memory = decode_memory(doc_id, data, where.space) if doc_id not in found else None
            if memory is None or not where.matches(memory):
                continue
            freqs = data.get(TERM_FREQS) or {}
            length = int(data.get(TERM_COUNT) or 0)
            score = bm25(stats, wanted, freqs, length, weights)
            # What fusion needs (the projected frequencies): no analysis at search time.
            counts = {term: int(count) for term in wanted if (count := freqs.get(term))}
            found[doc_id] = _Candidate(memory, score, TermStats(length=length, freqs=counts))
