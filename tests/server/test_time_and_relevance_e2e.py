"""When memories happened and whether a match is relevant, as an MCP client sees them (issue
39): the official SDK's ``Client`` over real loopback HTTP (it validates every structured
result against the tool's output schema), in both protocol eras."""

from __future__ import annotations

import json

import mcp_types as types
import pytest

from tests.server.conftest import ADMIN_TOKEN, HANDSHAKE_MODE, STATELESS_MODE, LiveServer
from tests.tool_results import error_code, payload

pytestmark = [pytest.mark.anyio, pytest.mark.slow]
ERAS = pytest.mark.parametrize("mode", [HANDSHAKE_MODE, STATELESS_MODE])
ADMIN = {"authorization": f"Bearer {ADMIN_TOKEN}"}


@ERAS
async def test_a_client_saves_when_something_happened_and_finds_it_by_that_time(
    live: LiveServer, mode: str
) -> None:
    topic = f"e2e-time-{mode}"
    async with live.connect("/mcp", mode, ADMIN) as client:
        for number in range(10):  # other memories of the topic: the budget words are rare
            await client.call_tool(
                "save_context", {"content": f"Lunch menu, dish {number}", "topic": topic}
            )
        ids = {}
        for month in ("2024-02", "2024-04", "2024-03"):
            saved = payload(
                await client.call_tool(
                    "save_context",
                    {"content": "Quarterly budget review", "topic": topic, "occurred_at": month},
                )
            )
            assert saved["item"]["metadata"]["occurred_at"] == month
            assert saved["item"]["metadata"]["occurred_at_source"] == "given"
            ids[month] = saved["item"]["id"]
        stated = payload(
            await client.call_tool(
                "save_context", {"content": "On 5 May 2024 the office moved", "topic": topic}
            )
        )["item"]["metadata"]

        named = payload(
            await client.call_tool(
                "search_context", {"query": "budget review in March 2024", "filter_topic": topic}
            )
        )
        between = payload(
            await client.call_tool(
                "search_context",
                {
                    "query": "budget review",
                    "filter_topic": topic,
                    "after": "2024-03",
                    "before": "2024-05",
                },
            )
        )
        listed = payload(
            await client.call_tool(
                "list_context",
                {"filter_topic": topic, "order_by": "occurred_at", "before": "2025", "limit": 2},
            )
        )
        refused = await client.call_tool(
            "save_context", {"content": "When?", "topic": topic, "occurred_at": "last Tuesday"}
        )

    assert (stated["occurred_at"], stated["occurred_at_source"]) == ("2024-05-05", "stated")
    assert named["matches"][0]["id"] == ids["2024-03"]
    assert {m["id"] for m in between["matches"]} == {ids["2024-03"], ids["2024-04"]}
    assert between["applied_filters"]["after"] == "2024-03-01T00:00:00.000Z"
    assert [item["metadata"]["occurred_at"] for item in listed["items"]] == [
        "2024-05-05",
        "2024-04",
    ]
    assert listed["next_cursor"] is not None
    assert error_code(refused) == "invalid_argument"


@ERAS
async def test_a_client_is_told_in_the_text_it_reads_when_nothing_is_relevant(
    live: LiveServer, mode: str
) -> None:
    topic = f"e2e-relevance-{mode}"
    async with live.connect("/mcp", mode, ADMIN) as client:
        await client.call_tool(
            "save_context", {"content": "The staging database is db-staging-2", "topic": topic}
        )
        found = await client.call_tool(
            "search_context", {"query": "staging database", "filter_topic": topic}
        )
        nothing = await client.call_tool(
            "search_context", {"query": "qzvx wrpltk", "filter_topic": topic}
        )

    answered = payload(found)
    assert [m["relevance"] for m in answered["matches"]] == ["strong"]
    assert answered["nothing_relevant"] is False
    weak = payload(nothing)
    assert [m["relevance"] for m in weak["matches"]] == ["weak"]
    assert weak["nothing_relevant"] is True
    assert isinstance(nothing.content[0], types.TextContent)
    text = json.loads(nothing.content[0].text)
    assert text["note"].startswith("Nothing relevant found")
