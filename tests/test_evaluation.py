"""Retrieval evaluation: metrics, the synthetic corpus, cases from usage events."""

from __future__ import annotations

from itertools import count
from pathlib import Path
from typing import Any

import pytest

from metacortex.operations.evaluation import (
    Case,
    cases_from_events,
    load_cases,
    percentile,
    run_cases,
    save_cases,
    score_ranking,
    synthetic_corpus,
)
from metacortex.providers.offline_merge import SentenceUnionMerger
from metacortex.service import MemoryService
from metacortex.storage.sqlite import SQLiteStore
from tests.fakes import HashingEmbedder


def test_metrics_count_recall_hits_and_reciprocal_rank() -> None:
    report = score_ranking(
        rankings=[["a", "b", "c"], ["x", "y"], []],
        expected=[["b", "z"], ["q"], ["a"]],
        latencies_ms=[1.0, 2.0, 3.0],
    )
    assert report.recall[1] == 0.0
    assert report.recall[5] == pytest.approx(0.5 / 3)
    assert report.hit[5] == pytest.approx(1 / 3)
    assert report.mrr == pytest.approx(0.5 / 3)
    assert report.zero_result_rate == pytest.approx(1 / 3)
    assert report.latency_ms_p50 == 2.0


def test_percentiles_use_the_nearest_rank() -> None:
    values = [float(v) for v in range(1, 101)]
    assert percentile(values, 0.95) == 95.0
    assert percentile(values, 0.50) == 50.0
    assert percentile([], 0.95) == 0.0


def test_the_synthetic_corpus_is_deterministic_and_answerable(tmp_path: Path) -> None:
    def build(name: str) -> tuple[MemoryService, list[Case]]:
        service = MemoryService(
            SQLiteStore(tmp_path / name), HashingEmbedder(), merger=SentenceUnionMerger()
        )
        return service, synthetic_corpus(service, topics=2, per_topic=10)

    service, cases = build("a.sqlite3")
    _, again = build("b.sqlite3")
    ticks = count()
    report = run_cases(service, cases, clock=lambda: float(next(ticks)))

    assert [c.query for c in cases] == [c.query for c in again]
    assert report.cases == len(cases) == 26
    exact = [c for c in cases if c.label.startswith("exact term")]
    exact_report = run_cases(service, exact)
    assert exact_report.hit[1] == 1.0, exact_report.misses
    assert report.latency_ms_p50 == 1000.0  # one fake clock tick per search


def test_cases_round_trip_through_a_file(tmp_path: Path) -> None:
    cases = [Case("où est le café ?", ("a", "b"), "t", "x"), Case("q", ("c",))]
    save_cases(cases, tmp_path / "cases.ndjson")
    assert load_cases(tmp_path / "cases.ndjson") == cases


def test_a_search_followed_by_a_fetch_of_a_result_becomes_a_case() -> None:
    events: list[dict[str, Any]] = [
        {
            "event_type": "search",
            "client_id": "c1",
            "query": "q1",
            "result_ids": ["a", "b"],
            "filters": {"topic": "t"},
        },
        {"event_type": "search", "client_id": "c2", "query": "q2", "result_ids": ["x"]},
        {"event_type": "fetch", "client_id": "c1", "fetched_ids": ["b"]},
        {"event_type": "fetch", "client_id": "c1", "fetched_ids": ["zzz"]},
        {"event_type": "search", "client_id": "c1", "query": "q3", "result_ids": ["c"]},
        {"event_type": "fetch", "client_id": "c2", "fetched_ids": ["not-a-result"]},
    ]
    assert cases_from_events(events) == [Case("q1", ("b",), "t", "from events")]
