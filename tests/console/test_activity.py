"""The numbers behind the activity charts, and the SVG they are drawn as."""

from __future__ import annotations

from datetime import date
from typing import Any

from metacortex.console import charts
from metacortex.console.activity import RELEVANCE_FLOOR, summarize

TODAY = date(2026, 12, 4)


def _call(
    day: str, client: str, latency: float, tool: str = "fetch_context", **extra: object
) -> dict[str, Any]:
    return {
        "timestamp": f"2026-12-{day}T10:00:00.000Z",
        "event_type": "tool_call",
        "client_id": client,
        "tool_name": tool,
        "latency_ms": latency,
        **extra,
    }


def test_summary_counts_calls_by_day_and_client_zero_results_latency_and_refusals() -> None:
    events: list[dict[str, Any]] = [
        _call("03", "web", 10.0),
        _call("04", "web", 20.0),
        _call("04", "default", 30.0, "search_context", response={"result_count": 0}),
        _call("04", "default", 40.0, "search_context", response={"result_count": 4}),
        {
            "timestamp": "2026-12-04T11:00:00.000Z",
            "event_type": "request_rejected",
            "reason": "rate_limited",
        },
        {
            "timestamp": "2026-12-04T11:00:00.000Z",
            "event_type": "requests_rejected_aggregate",
            "count": 7,
        },
        _call("01", "old", 5.0),  # outside the window
    ]

    activity = summarize(events, TODAY, days=2)

    assert activity.days == ["2026-12-03", "2026-12-04"]
    assert activity.calls_by_client == {"default": [0, 2], "web": [1, 1]}
    assert activity.zero_rate == [-1.0, 50.0]
    assert activity.p50 == [10.0, 30.0]
    assert activity.p95[1] > activity.p50[1]
    assert activity.refusals == {"rate_limited": 1, "over the event budget": 7}
    assert activity.last_use["old"] == "2026-12-01T10:00:00.000Z"


def test_clients_beyond_the_top_six_are_one_series() -> None:
    events = [_call("04", f"client-{n}", 1.0) for n in range(9)]

    activity = summarize(events, TODAY, days=1)

    assert len(activity.calls_by_client) == 7
    assert activity.calls_by_client["other clients"] == [3]


def test_chart_labels_are_escaped() -> None:
    svg = charts.stacked_bars(
        "c", "Calls <b>", ["12-04"], [charts.Series('<script>alert("x")</script>', [2])]
    )

    assert "<script>" not in svg
    assert "&lt;script&gt;" in svg
    assert "Calls &lt;b&gt;" in svg


def test_an_empty_period_draws_a_message_not_an_empty_axis() -> None:
    svg = charts.lines("z", "Zero results", ["12-03", "12-04"], [charts.Series("rate", [-1, -1])])

    assert "No events in this period." in svg


def test_a_search_counts_as_relevant_only_when_its_best_result_clears_the_floor() -> None:
    def search(count: int, top: float | None = None) -> dict[str, Any]:
        response: dict[str, Any] = {"result_count": count}
        if count:
            response["top_score"] = top
        return _call("04", "agent", 12.0, "search_context", response=response)

    events = [
        search(20, 0.9),
        search(20, RELEVANCE_FLOOR),
        search(20, 0.31),  # nonsense still returns 20 results, none of them relevant
        search(0),
        search(5),  # an older server's event: no top_score, so not judged
    ]

    activity = summarize(events, TODAY, days=1)

    assert activity.searches == [5]
    assert activity.judged == [4]
    assert activity.relevant == [2]
    assert activity.relevant_rate == [50.0]
    assert activity.zero_rate == [20.0]


def test_new_memories_per_day_count_saves_and_console_additions_but_not_duplicates() -> None:
    """Issue 41 §2, growth: memories over time on the Activity page."""
    created, duplicate = {"write_status": "created"}, {"write_status": "duplicate"}
    events: list[dict[str, Any]] = [
        _call("03", "web", 1.0, "save_context", status="ok", response=created),
        _call("04", "web", 1.0, "save_context", status="ok", response=created),
        _call("04", "web", 1.0, "save_context", status="ok", response=duplicate),
        _call("04", "web", 1.0, "save_context", status="error", response=None),
        {
            "timestamp": "2026-12-04T12:00:00.000Z",
            "event_type": "owner_action",
            "tool_name": "add_memory",
            "status": "ok",
            "response": created,
        },
        _call("04", "web", 1.0, "search_context", status="ok", response={"result_count": 1}),
    ]

    activity = summarize(events, TODAY, days=2)

    assert activity.saved == [1, 2]
    assert activity.total_calls == 5  # the console's addition is not a tool call


def test_a_bar_chart_of_categories_that_all_count_zero_is_drawn() -> None:
    """A new space holds no memory: the growth chart by space drew a division by zero."""
    drawn = charts.horizontal_bars("c", "Memories by space", {"work": 0}, ("memories", "spaces"))

    assert "0 memories in 1 spaces." in drawn
    assert 'width="2.0"' in drawn
