"""Usage events: one compact record per tool call, retrieval events on demand, none lost."""

from __future__ import annotations

import json
import threading
from collections.abc import Sequence
from datetime import timedelta
from pathlib import Path

import anyio
import pytest

from metacortex.kernel.events import MEMORY_EVENTS, RETRIEVAL_QUERY_EVENTS, EventRecorder
from metacortex.kernel.rejections import RejectionBudget
from metacortex.operations.evaluation import cases_from_events
from metacortex.service import MemoryService
from metacortex.storage.base import Event
from tests.server.conftest import WEB_TOKEN, Harness, make_settings, started

pytestmark = pytest.mark.anyio


async def test_each_tool_call_is_one_event_without_bodies_or_image_bytes(
    harness: Harness, png_base64: str
) -> None:
    secret_text = "My bank PIN is 4812 and my passport expires in 2031. " * 10
    async with harness.connect("/clients/web/mcp", WEB_TOKEN) as web:
        await web.call_tool("save_context", {"content": secret_text, "topic": "private"})
        await web.call_tool(
            "save_context", {"image_base64": png_base64, "image_mime_type": "image/png"}
        )
        await web.call_tool("search_context", {"query": "when does the passport expire"})
        await web.call_tool("fetch_context", {"id": "0" * 26})
    events = [e for e in harness.events() if e["event_type"] == "tool_call"]
    assert [(e["tool_name"], e["status"]) for e in events] == [
        ("save_context", "ok"),
        ("save_context", "ok"),
        ("search_context", "ok"),
        ("fetch_context", "error"),
    ]
    recorded = json.dumps(events)
    assert "PIN" not in recorded
    assert png_base64 not in recorded
    assert "passport" not in recorded
    save_event, image_event, search_event, fetch_event = events
    assert save_event["client_id"] == "web"
    assert save_event["request"]["content"]["chars"] == len(secret_text)
    assert len(save_event["request"]["content"]["sha256_prefix"]) == 12
    assert save_event["request"]["topic"] == "private"
    assert save_event["response"]["write_status"] == "created"
    assert image_event["request"]["image_base64"]["chars"] == len(png_base64)
    assert search_event["request"]["query"]["chars"] == len("when does the passport expire")
    assert search_event["response"]["match_count"] >= 1
    assert fetch_event["error"]["code"] == "not_found"
    assert fetch_event["response"] is None
    for event in events:
        assert event["latency_ms"] >= 0
        assert event["protocol_version"] == "2026-07-28"
        assert event["timestamp"] < event["expires_at"]
    assert harness.events(RETRIEVAL_QUERY_EVENTS) == []  # off unless enabled


async def test_retrieval_events_hold_full_queries_and_ids_and_feed_the_evaluation(
    tmp_path: Path, service: MemoryService
) -> None:
    settings = make_settings(tmp_path, retrieval_event_logging_enabled=True)
    async with started(settings, service) as harness, harness.connect() as admin:
        saved = await admin.call_tool(
            "save_context", {"content": "Invoices go to ap@corp.example."}
        )
        assert saved.structured_content is not None
        memory_id = saved.structured_content["item"]["id"]
        await admin.call_tool("search_context", {"query": "where do invoices go", "limit": 3})
        await admin.call_tool("fetch_context", {"id": memory_id})
    search, fetch = service.store.read_events(RETRIEVAL_QUERY_EVENTS)
    assert search["event_type"] == "search"
    assert search["client_id"] == "default"
    assert search["query"] == "where do invoices go"
    assert search["filters"]["limit"] == 3
    assert search["result_ids"][0] == memory_id
    assert len(search["scores"]) == len(search["result_ids"])
    assert fetch == {**fetch, "event_type": "fetch", "fetched_ids": [memory_id]}
    [case] = cases_from_events([search, fetch])
    assert case.query == "where do invoices go"
    assert case.expected_ids == (memory_id,)


async def test_a_clean_shutdown_writes_every_queued_event(
    tmp_path: Path, service: MemoryService
) -> None:
    async with (
        started(make_settings(tmp_path), service) as harness,
        harness.connect() as admin,
        anyio.create_task_group() as group,
    ):
        for n in range(40):
            group.start_soon(admin.call_tool, "save_context", {"content": f"fact {n}"})
    # No flush: leaving the lifespan alone must write everything.
    assert len(service.store.read_events(MEMORY_EVENTS)) == 40


class _SlowSink:
    """Stands in for a slow remote event store (a Firestore round trip under load)."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.written: list[Event] = []

    def record_events(self, events: Sequence[Event]) -> None:
        self.release.wait(timeout=10)
        self.written.extend(events)


def test_recording_never_waits_for_the_store_and_close_drains_the_queue() -> None:
    sink = _SlowSink()
    recorder = EventRecorder(
        retention=timedelta(days=90),
        retrieval_logging=False,
        rejection_budget=RejectionBudget(per_minute=1000),
    )
    recorder.start(sink)
    for n in range(500):  # returns at once although the store is stuck
        recorder.rejection(
            client_id=None,
            reason="unauthorized",
            http_status=401,
            method="POST",
            path=f"/clients/c{n}/mcp",
            query="",
            latency_ms=0.1,
        )
    assert sink.written == []
    sink.release.set()
    recorder.close()
    assert len(sink.written) == 500
    assert [e.fields["request"]["path"] for e in sink.written][-1] == "/clients/c499/mcp"
    assert all(e.expires_at is not None for e in sink.written)


def test_a_full_queue_drops_and_counts_instead_of_blocking() -> None:
    sink = _SlowSink()
    recorder = EventRecorder(retention=timedelta(days=1), retrieval_logging=False, max_queue=10)
    recorder.start(sink)
    for _ in range(50):
        recorder.fetch(client_id="c", fetched_ids=["x"])  # retrieval logging off: ignored
        recorder.tool_call(
            client_id="c", tool_name="t", status="ok", latency_ms=1, request_summary={}
        )
    assert recorder.dropped > 0  # at most one batch in hand plus ten queued
    sink.release.set()
    recorder.close()
    assert len(sink.written) == 50 - recorder.dropped


class _CollectingSink:
    def __init__(self) -> None:
        self.written: list[Event] = []

    def record_events(self, events: Sequence[Event]) -> None:
        self.written.extend(events)


def test_rejected_requests_are_recorded_bounded_and_past_the_budget_only_counted() -> None:
    """Issue 8 item 2: 300 refusals with a 14 KB query string each were kept in full."""
    now = [0.0]
    sink = _CollectingSink()
    recorder = EventRecorder(
        retention=timedelta(days=90),
        retrieval_logging=False,
        rejection_budget=RejectionBudget(per_minute=60, clock=lambda: now[0]),
    )
    recorder.start(sink)
    query = "q=" + "x" * 14_000
    for _ in range(300):
        recorder.rejection(
            client_id="no-such-client",
            reason="unauthorized",
            http_status=401,
            method="POST",
            path="/clients/no-such-client/mcp",
            query=query,
            latency_ms=0.1,
        )
    now[0] = 61.0  # the next minute's first refusal reports the last minute's overflow
    recorder.rejection(
        client_id=None,
        reason="not_found",
        http_status=404,
        method="POST",
        path="/" + "p" * 5_000,
        query="",
        latency_ms=0.1,
    )
    recorder.close()
    kinds = [event.fields["event_type"] for event in sink.written]
    assert kinds.count("request_rejected") == 61
    [aggregate] = [e.fields for e in sink.written if e.fields["event_type"] != "request_rejected"]
    assert aggregate["event_type"] == "requests_rejected_aggregate"
    assert aggregate["count"] == 240
    first = sink.written[0].fields["request"]
    assert first["query"]["chars"] == len(query)
    assert len(first["query"]["sha256_prefix"]) == 16
    assert "xxxx" not in json.dumps([e.fields for e in sink.written])
    long_path = [e.fields["request"] for e in sink.written if e.fields.get("reason") == "not_found"]
    assert len(long_path[0]["path"]) == 200
    assert long_path[0]["path_chars"] == 5_001
    assert max(len(json.dumps(e.fields)) for e in sink.written) < 1_000


def test_refusals_suppressed_when_the_server_stops_are_still_counted() -> None:
    sink = _CollectingSink()
    recorder = EventRecorder(
        retention=timedelta(days=90),
        retrieval_logging=False,
        rejection_budget=RejectionBudget(per_minute=1, clock=lambda: 0.0),
    )
    recorder.start(sink)
    for _ in range(3):
        recorder.rejection(
            client_id=None,
            reason="unauthorized",
            http_status=401,
            method="POST",
            path="/mcp",
            query="",
            latency_ms=0.1,
        )
    recorder.close()
    assert [e.fields.get("count") for e in sink.written] == [None, 2]
