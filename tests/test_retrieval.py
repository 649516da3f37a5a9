"""Ranking pieces shared by every store: BM25 length relaxation and score fusion."""

from __future__ import annotations

import math
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from metacortex.domain.records import BranchState, Memory, Modality, new_memory_id
from metacortex.retrieval.context import COVERAGE, with_context
from metacortex.retrieval.fusion import (
    STORE_B,
    STORE_K1,
    Ranked,
    fuse,
    keyword_weights,
    relax_length_normalization,
)
from metacortex.retrieval.text import query_terms, term_count
from metacortex.storage.base import MemoryFilter, Scored
from metacortex.storage.sqlite import SQLiteStore
from tests.fakes import HashingEmbedder

T0 = datetime(2026, 3, 1, 12, 0, 0, tzinfo=UTC)


EMBEDDER = HashingEmbedder(32)
ACTIVE = MemoryFilter(states=(BranchState.ACTIVE,))


def _memory(text: str, seconds: int = 0, topic: str = "general") -> Memory:
    at = T0 + timedelta(seconds=seconds)
    return Memory(
        id=new_memory_id(),
        content=text,
        retrieval_text=text,
        topic=topic,
        branch_state=BranchState.ACTIVE,
        modality=Modality.TEXT,
        created_at=at,
        updated_at=at,
    )


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SQLiteStore]:
    opened = SQLiteStore(tmp_path / "retrieval.sqlite3")
    yield opened
    opened.close()


def _save(store: SQLiteStore, memory: Memory) -> Memory:
    [vector] = EMBEDDER.embed_documents([memory.retrieval_text])
    store.insert(memory, vector, f"fp-{memory.id}", memory.created_at - timedelta(minutes=15))
    return memory


def _bm25(idfs: list[float], length: int, average: float, b: float) -> float:
    """BM25 of a record holding each query term once (FTS5's formula)."""
    norm = STORE_K1 * (1 - b + b * length / average)
    return sum(idf * (STORE_K1 + 1) / (1 + norm) for idf in idfs)


def test_relaxed_scores_equal_bm25_with_the_other_b_when_terms_occur_once() -> None:
    texts = {
        "kafka consumer lag": [2.0],
        "kafka consumer lag alert raised during the night shift by the on call team": [2.0],
        "the kafka cluster was upgraded and consumer groups rebalanced slowly": [2.0, 1.5],
    }
    memories = {text: _memory(text) for text in texts}
    average = sum(term_count(text) for text in texts) / len(texts)
    store_scores = [
        Scored(memories[text], _bm25(idfs, term_count(text), average, STORE_B))
        for text, idfs in texts.items()
    ]

    relaxed = {
        hit.memory.retrieval_text: hit.score
        for hit in relax_length_normalization(store_scores, 0.0)
    }

    for text, idfs in texts.items():
        assert math.isclose(relaxed[text], _bm25(idfs, term_count(text), average, 0.0))


def test_with_no_length_normalization_a_longer_record_no_longer_loses_for_the_same_terms() -> None:
    short = _memory("deploy window friday")
    long = _memory("deploy window friday afternoon after the release review with the platform team")
    average = (term_count(short.retrieval_text) + term_count(long.retrieval_text)) / 2
    lexical = [
        Scored(memory, _bm25([1.0], term_count(memory.retrieval_text), average, STORE_B))
        for memory in (short, long)
    ]
    assert lexical[0].score > lexical[1].score

    relaxed = relax_length_normalization(lexical, 0.0)

    assert relaxed[0].score == pytest.approx(relaxed[1].score)


def test_the_store_b_leaves_scores_unchanged_and_no_candidates_is_fine() -> None:
    hits = [Scored(_memory("alpha beta"), 3.0), Scored(_memory("gamma"), 1.0)]
    assert relax_length_normalization(hits, STORE_B) == hits
    assert relax_length_normalization([], 0.0) == []


def test_fused_scores_stay_in_0_1_best_first_and_cover_both_lists() -> None:
    a, b, c = _memory("alpha one"), _memory("beta two words here"), _memory("gamma")
    dense = [Scored(a, 0.9), Scored(b, 0.5)]
    lexical = [Scored(c, 7.0), Scored(b, 2.0)]

    fused = fuse(dense, lexical, dense_weight=0.4)

    assert {r.memory.id for r in fused} == {a.id, b.id, c.id}
    scores = [r.score for r in fused]
    assert all(0.0 <= s <= 1.0 for s in scores)
    assert scores == sorted(scores, reverse=True)
    assert fused[0].memory.id == c.id  # the keyword hit outweighs the semantic one at 0.4


def test_keyword_weights_recover_the_idfs_behind_the_stores_bm25_scores(
    store: SQLiteStore,
) -> None:
    texts = [
        "the release train leaves on tuesday",
        "release notes for the tuesday train are late",
        "lunch on friday with the platform team",
        "the platform team owns the release tooling and the train schedule",
        "friday deploy freeze",
        "a long note about nothing in particular that goes on for a while",
        "coffee machine on floor two is broken",
        "quarterly planning starts next month",
        "new laptops arrive for the design group",
        "the office closes early before the holidays",
    ]
    for offset, text in enumerate(texts):
        _save(store, _memory(text, seconds=offset))
    wanted = query_terms("release train friday")
    lexical = store.lexical_search(wanted, ACTIVE, 10)

    weights = keyword_weights(wanted, lexical)

    total = len(texts)
    for term in wanted:
        holding = sum(term in query_terms(text) for text in texts)
        idf = math.log((total - holding + 0.5) / (holding + 0.5))
        assert weights[term] == pytest.approx(idf, rel=0.02)
    assert keyword_weights(wanted, []) == {}
    assert keyword_weights([], lexical) == {}


def test_a_candidate_whose_neighbours_hold_the_rest_of_the_query_rises_above_an_equal_one(
    store: SQLiteStore,
) -> None:
    subject = _save(store, _memory("I joined the marching event for veterans last week", 0, "chat"))
    _save(store, _memory("What inspired you to do that?", 1, "chat"))
    answer = _save(store, _memory("My respect for the military inspired me", 2, "chat"))
    _save(store, _memory("Weather was grey all day", 3, "chat"))
    elsewhere = _save(store, _memory("Cooking inspired me this winter", 3600 * 5, "chat"))
    weights = dict.fromkeys(query_terms("what inspired the marching for veterans"), 1.0)
    fused = [Ranked(elsewhere, 0.5), Ranked(answer, 0.5)]

    plain = {r.memory.id: r.score for r in with_context(store, fused, ACTIVE)}
    covered = with_context(store, fused, ACTIVE, weights)

    score = {r.memory.id: r.score for r in covered}
    assert plain[answer.id] == plain[elsewhere.id]
    assert score[answer.id] > score[elsewhere.id]
    assert all(0.0 <= r.score <= 1.0 for r in covered)
    # The answer's window (two records back) holds two of the three query terms it lacks.
    assert score[answer.id] * (1 + COVERAGE) * 1.4 == pytest.approx(0.5 + COVERAGE * 2 / 3)
    assert subject.id in score  # neighbours still receive shares
