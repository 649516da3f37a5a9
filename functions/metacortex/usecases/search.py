"""Hybrid search: both retrievers under one filter, fused, then conversational context;
with a ``keyword``, only the memories that hold it as written (``retrieval/literal.py``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor, wait
from datetime import datetime
from functools import partial
from typing import TYPE_CHECKING, Any, Final

from metacortex.access.rules import Access
from metacortex.domain import limits
from metacortex.domain.occurrence import TimeSource, parse_bound
from metacortex.domain.records import Memory, Origin, utc_now
from metacortex.domain.text import summarize
from metacortex.errors import InvalidArgument
from metacortex.providers.base import Embedder
from metacortex.retrieval.context import with_context
from metacortex.retrieval.fusion import Ranked, fuse, keyword_weights
from metacortex.retrieval.literal import Keyword, parse_keyword
from metacortex.retrieval.relevance import STRONG_SIMILARITY, judged, keyword_coverage
from metacortex.retrieval.text import doubtful_words, query_terms, respelled, term_frequencies
from metacortex.retrieval.typos import MIN_TERM_CHARS
from metacortex.retrieval.when import TimeWanted, in_time
from metacortex.storage.base import MemoryFilter, MemoryStore, Scored
from metacortex.timeline.question import (
    QuestionTime,
    asks_when,
    event_reference,
    question_time,
)
from metacortex.usecases.arguments import parse_enum
from metacortex.usecases.filters import applied_filters, read_states, reported
from metacortex.usecases.options import ServiceOptions
from metacortex.usecases.relations import KnownRelations, attach_related

if TYPE_CHECKING:
    from metacortex.timeline.reader import TimeReader

# How many candidates each retriever contributes before fusion.
CANDIDATE_POOL = 100
# How many of the best fused candidates have their relations (and their neighbours')
# read while conversational context and the time step rank them (two queries of 30),
# with those of the neighbours context's first batch finds beside its second: the page
# is mostly among them, so ``related`` seldom costs a round trip of its own (issue 39
# §5; LoCoMo figures in docs/benchmarks.md).
RELATED_AHEAD = 60
# Where those reads run (a store is thread-safe; the search's thread waits for them).
_AHEAD: Final = ThreadPoolExecutor(max_workers=4, thread_name_prefix="search-related")
# What a search whose matches are all weak says to the model that reads it.
NOTHING_RELEVANT = (
    "Nothing relevant found: no match shares enough meaning or keywords with the query "
    "(every match is weak). Do not treat these as an answer; say nothing is saved about it, "
    "or search again with other words."
)


def _match(
    memory: Memory, score: float, similarity: float | None, names: Mapping[str, str]
) -> dict[str, Any]:
    return {
        "id": memory.id,
        "summary": summarize(memory.content),
        "score": round(score, 6),
        "similarity": None if similarity is None else round(similarity, 6),
        "metadata": memory.metadata(names),
    }


class Searching:
    """``search_context``."""

    def __init__(
        self,
        store: MemoryStore,
        embedder: Embedder,
        options: ServiceOptions,
        times: TimeReader | None = None,
    ) -> None:
        self._store = store
        self._embedder = embedder
        self._options = options
        self._times = times
        self._strong_similarity = (
            options.strong_similarity
            if options.strong_similarity is not None
            else STRONG_SIMILARITY.get(embedder.identity.model)
        )

    def search(
        self,
        access: Access,
        *,
        query: str | None = None,
        keyword: str | None = None,
        filter_topic: str | None = None,
        filter_state: str | Sequence[str] | None = None,
        limit: int | None = None,
        valid_at: str | datetime | None = None,
        filter_origin: str | None = None,
        explain: bool = False,
        space: str | None = None,
        after: str | datetime | None = None,
        before: str | datetime | None = None,
    ) -> dict[str, Any]:
        """Hybrid search. ``explain`` adds each match's ``breakdown``: the parts of its
        score from semantic similarity, keywords, conversational context and the time the
        question names (the owner's console shows them; the ranking is the same either
        way), and its ``keyword_coverage`` (what its relevance is judged on, with its
        ``similarity``). ``after`` (inclusive) and ``before`` (exclusive) keep the memories that
        happened then (``occurred_at``). ``keyword`` keeps only the memories holding it as
        written (a ticket number, a version): alone, they are ranked by the keyword index;
        with ``query``, as the query ranks them. One of the two is needed."""
        space_key = access.space(space)
        if query is None and keyword is None:
            raise InvalidArgument(
                "give query (what you look for, in words), keyword (a code or number to "
                "find as written), or both"
            )
        literal = parse_keyword(keyword) if keyword is not None else None
        query = limits.check_query(query) if query is not None else None
        count = limits.check_limit(
            limit if limit is not None else self._options.search_result_limit,
            limits.MAX_SEARCH_LIMIT,
        )
        where = MemoryFilter(
            states=read_states(access, filter_state),
            topic=limits.check_topic(filter_topic, "filter_topic") if filter_topic else None,
            origin=parse_enum(Origin, filter_origin, "filter_origin"),
            valid_at=limits.parse_instant(valid_at, "valid_at"),
            space=space_key,
            occurred_after=parse_bound(after, "after"),
            occurred_before=parse_bound(before, "before"),
        )
        limits.check_range(where.occurred_after, where.occurred_before, "after", "before")
        pool = max(CANDIDATE_POOL, count)
        if query is None:
            assert literal is not None
            # The keyword index's candidates holding the keyword, ranked as it ranks them.
            lexical = self._store.lexical_search(literal.terms, where, pool)
            held = [hit for hit in lexical if literal.held_by(hit.memory.retrieval_text)]
            ranked = fuse([], held, dense_weight=0.0)[:count]
            weights = _weights(literal.terms, held)
            return self._answer(
                access,
                space_key,
                where,
                count,
                ranked,
                weights,
                {},
                literal.terms,
                explain,
                literal,
            )
        # The time the question names, relative to now (or to the instant it asks about).
        asked = (
            question_time(self._times, query, where.valid_at or utc_now())
            if self._times is not None
            else None
        )
        spelled = self._spelled(query, space_key)
        vector = self._embedder.embed_query(spelled)
        # A corrected word is a keyword too, beside the typed one (which only its
        # expansions can match): the same terms as typed when nothing was corrected.
        terms = list(dict.fromkeys(query_terms(query) + query_terms(spelled)))
        if asked is not None and self._options.time_strip_keywords:
            # The words that named a time are no keywords: "october" and "2023" would
            # favour every memory that mentions them, not those that happened then.
            naming = set(query_terms(" ".join(query[a:b] for a, b in asked.spans)))
            terms = [term for term in terms if term not in naming]
        if literal is not None:
            # The keyword's terms find its candidates on the keyword side.
            terms = list(dict.fromkeys([*terms, *literal.terms]))
        dense, lexical = self._store.hybrid_search(
            vector, terms, where, pool, typos=self._options.typo_tolerance
        )
        fused = fuse(dense, lexical, self._options.dense_weight)
        weights = _weights(terms, lexical)
        known = KnownRelations(self._store, space_key)
        likely = [r.memory.id for r in fused[: max(count, RELATED_AHEAD)]]
        reading = [_AHEAD.submit(known.read_around, likely)]

        def lifted(neighbours: Sequence[Memory]) -> None:
            # Records context may lift into the page: theirs beside its second batch
            # (one hop: the second of the few that rise is read with the page's).
            ids = [m.id for m in neighbours]
            reading.append(_AHEAD.submit(partial(known.read_around, ids, far=False)))

        try:
            if self._options.conversational_context:
                fused = with_context(self._store, fused, where, weights, lifted)
            fused = self._timed(query, asked, fused)
            if literal is not None:
                fused = [r for r in fused if literal.held_by(r.memory.retrieval_text)]
            ranked = fused[:count]
            # What the reads ahead did not claim, beside those still in flight (the
            # second hop of the page's, where none was read ahead: after them).
            known.read_around([r.memory.id for r in ranked], far=False)
        finally:
            wait(reading)
        for read in reading:
            read.result()  # its failure is the search's
        # The raw cosine similarity, for clients that thresholded the original's score.
        cosine = {hit.memory.id: hit.score for hit in dense}
        return self._answer(
            access, space_key, where, count, ranked, weights, cosine, terms, explain, literal, known
        )

    def _answer(
        self,
        access: Access,
        space_key: str,
        where: MemoryFilter,
        count: int,
        ranked: Sequence[Ranked],
        weights: Mapping[str, float],
        cosine: Mapping[str, float],
        terms: Sequence[str],
        explain: bool = False,
        literal: Keyword | None = None,
        known: KnownRelations | None = None,
    ) -> dict[str, Any]:
        """The result of a search that ranked ``ranked`` (judged on ``terms``), with the
        relations ``known`` read ahead (None: read here)."""
        matches = [_match(r.memory, r.score, cosine.get(r.memory.id), access.names) for r in ranked]
        self._judge(matches, ranked, weights, terms, explain)
        # Everything is read by now where ``known`` was read ahead: this only shows it.
        attach_related(self._store, access, space_key, matches, known=known)
        strong = sum(match["relevance"] == "strong" for match in matches)
        applied = applied_filters(where)
        if literal is not None:
            applied["keyword"] = literal.text
        result: dict[str, Any] = {
            "matches": matches,
            "applied_filters": reported(applied, where, count),
            "nothing_relevant": strong == 0,
        }
        if matches and not strong:
            result["note"] = NOTHING_RELEVANT
        return result

    def _judge(
        self,
        matches: list[dict[str, Any]],
        ranked: Sequence[Ranked],
        weights: Mapping[str, float],
        terms: Sequence[str],
        explain: bool,
    ) -> None:
        """Each match's ``relevance`` (``retrieval/relevance.py``); with ``explain``, its
        score's parts and its keyword coverage."""
        # A query term no candidate holds weighs in as not held (a typo's expansions
        # count where held, beside it: a misspelled question is judged a little harder).
        missing = [t for t in terms if not weights.get(t)]
        for match, r in zip(matches, ranked, strict=True):
            coverage = keyword_coverage(r.memory.retrieval_text, weights, missing)
            match["relevance"] = judged(match["similarity"], coverage, self._strong_similarity)
            if explain:
                match["breakdown"] = {
                    "semantic": round(r.semantic, 6),
                    "keyword": round(r.keyword, 6),
                    "context": round(r.context, 6),
                    "time": round(r.time, 6),
                }
                # What relevance is judged on, beside the similarity the match shows.
                match["keyword_coverage"] = round(coverage, 6)

    def _timed(self, query: str, asked: QuestionTime | None, ranked: list[Ranked]) -> list[Ranked]:
        """``ranked`` with the memories of the time the question names raised
        (``retrieval/when.py``): a range it writes ("in October 2023"), else one it places
        against a memory among the candidates ("before the launch": the best-ranked one
        holding those words, when it has a time of its own)."""
        if self._times is None:
            return ranked
        wanted = TimeWanted(asks_when=asks_when(query))
        if asked is not None:
            if asked.yearless:
                asked = _latest_holding(ranked, asked)
            wanted = TimeWanted(asked.start, asked.end, True, wanted.asks_when)
        elif (event := event_reference(query)) is not None:
            side, words, _ = event
            anchor = _anchor(ranked, query_terms(words))
            if anchor is not None:
                occurrence = anchor.occurrence
                if side == "before":
                    wanted = TimeWanted(None, occurrence.at, True, wanted.asks_when)
                else:
                    start = occurrence.end if side == "after" else occurrence.at
                    wanted = TimeWanted(start, None, True, wanted.asks_when)
        return in_time(
            ranked, wanted, self._options.time_range_weight, self._options.time_when_weight
        )

    def _spelled(self, query: str, space: str) -> str:
        """What the model embeds: with typo tolerance, ``query`` with the words the model
        does not read whole and no record of the space holds corrected where the store
        can (one embedding either way; the keyword side expands the query's own terms)."""
        if not self._options.typo_tolerance:
            return query
        doubtful = doubtful_words(query, self._embedder.knows)

        def meant(term: str) -> dict[str, int]:
            word = doubtful[term]
            if not word.isalpha() or len(word) < MIN_TERM_CHARS:
                return {}
            return self._embedder.words_near(word)

        return respelled(query, self._store.spelling_corrections(list(doubtful), space, meant))


def _weights(terms: Sequence[str], lexical: Sequence[Scored]) -> dict[str, float]:
    """Each keyword's weight among the keyword hits. A typo's expansions count as query
    terms here too: the keyword hits report them beside the query's own (none for a
    clean query)."""
    counted = dict.fromkeys(terms)
    for hit in lexical:
        counted.update(dict.fromkeys(hit.terms.freqs if hit.terms else ()))
    return keyword_weights(list(counted), lexical)


def _anchor(ranked: Sequence[Ranked], words: Sequence[str]) -> Memory | None:
    """The best-ranked memory holding every one of ``words`` (analyzed terms), if it has
    a time of its own (given or stated)."""
    if not words:
        return None
    for item in ranked:
        held = term_frequencies(item.memory.retrieval_text)
        if all(word in held for word in words):
            occurrence = item.memory.occurrence
            return item.memory if occurrence.source is not TimeSource.SAVED else None
    return None


# How many years back a time named without a year ("in June") is looked for.
_YEARS_BACK = 30


def _latest_holding(ranked: Sequence[Ranked], asked: QuestionTime) -> QuestionTime:
    """``asked`` (named without a year, read as its last occurrence before now) moved back
    to the latest year in which some candidate happened in it, if any does: "in June" asked
    of memories from 2023 means June 2023."""
    spans = [(time.at, time.end) for time in {item.memory.occurrence for item in ranked}]
    for years in range(_YEARS_BACK + 1):
        moved = asked.earlier(years)
        start, end = moved.start, moved.end
        assert start is not None
        assert end is not None
        if any(at < end and start < until for at, until in spans):
            return moved
    return asked
