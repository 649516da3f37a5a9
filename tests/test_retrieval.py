"""Ranking pieces shared by every store: BM25 length relaxation and score fusion."""

from __future__ import annotations

import math
from datetime import UTC, datetime

import pytest

from metacortex.domain.records import BranchState, Memory, Modality, new_memory_id
from metacortex.retrieval.fusion import (
    STORE_B,
    STORE_K1,
    fuse,
    relax_length_normalization,
)
from metacortex.retrieval.text import term_count
from metacortex.storage.base import Scored

T0 = datetime(2026, 3, 1, 12, 0, 0, tzinfo=UTC)


def _memory(text: str) -> Memory:
    return Memory(
        id=new_memory_id(),
        content=text,
        retrieval_text=text,
        topic="general",
        branch_state=BranchState.ACTIVE,
        modality=Modality.TEXT,
        created_at=T0,
        updated_at=T0,
    )


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
