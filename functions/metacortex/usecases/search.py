"""Hybrid search: both retrievers under one filter, fused, then conversational context."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from metacortex.access.rules import Access
from metacortex.domain import limits
from metacortex.domain.records import Memory, Origin
from metacortex.domain.text import summarize
from metacortex.providers.base import Embedder
from metacortex.retrieval.context import with_context
from metacortex.retrieval.fusion import fuse, keyword_weights
from metacortex.retrieval.text import doubtful_words, query_terms, respelled
from metacortex.retrieval.typos import MIN_TERM_CHARS
from metacortex.storage.base import MemoryFilter, MemoryStore
from metacortex.usecases.arguments import parse_enum
from metacortex.usecases.filters import applied_filters, read_states, reported
from metacortex.usecases.options import ServiceOptions
from metacortex.usecases.relations import attach_related

# How many candidates each retriever contributes before fusion.
CANDIDATE_POOL = 100


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

    def __init__(self, store: MemoryStore, embedder: Embedder, options: ServiceOptions) -> None:
        self._store = store
        self._embedder = embedder
        self._options = options

    def search(
        self,
        access: Access,
        *,
        query: str,
        filter_topic: str | None = None,
        filter_state: str | Sequence[str] | None = None,
        limit: int | None = None,
        valid_at: str | datetime | None = None,
        filter_origin: str | None = None,
        explain: bool = False,
        space: str | None = None,
    ) -> dict[str, Any]:
        """Hybrid search. ``explain`` adds each match's ``breakdown``: the parts of its
        score from semantic similarity, keywords and conversational context (the owner's
        console shows them; the ranking is the same either way)."""
        space_key = access.space(space)
        query = limits.check_query(query)
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
        )
        spelled = self._spelled(query, space_key)
        vector = self._embedder.embed_query(spelled)
        pool = max(CANDIDATE_POOL, count)
        # A corrected word is a keyword too, beside the typed one (which only its
        # expansions can match): the same terms as typed when nothing was corrected.
        terms = list(dict.fromkeys(query_terms(query) + query_terms(spelled)))
        dense, lexical = self._store.hybrid_search(
            vector, terms, where, pool, typos=self._options.typo_tolerance
        )
        fused = fuse(dense, lexical, self._options.dense_weight)
        if self._options.conversational_context:
            # A typo's expansions count as query terms here too: the keyword hits
            # report them beside the query's own (none for a clean query).
            counted = dict.fromkeys(terms)
            for hit in lexical:
                counted.update(dict.fromkeys(hit.terms.freqs if hit.terms else ()))
            fused = with_context(self._store, fused, where, keyword_weights(list(counted), lexical))
        ranked = fused[:count]
        # The raw cosine similarity, for clients that thresholded the original's score.
        cosine = {hit.memory.id: hit.score for hit in dense}
        matches = [_match(r.memory, r.score, cosine.get(r.memory.id), access.names) for r in ranked]
        if explain:
            for match, r in zip(matches, ranked, strict=True):
                match["breakdown"] = {
                    "semantic": round(r.semantic, 6),
                    "keyword": round(r.keyword, 6),
                    "context": round(r.context, 6),
                }
        attach_related(self._store, access, space_key, matches)
        return {
            "matches": matches,
            "applied_filters": reported(applied_filters(where), where, count),
        }

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
