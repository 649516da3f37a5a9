"""memory_events keep the original MetaCortex's summary keys, and never a query or a secret."""

from __future__ import annotations

import json

import pytest

from tests.server.conftest import ADMIN_TOKEN, WEB_TOKEN, Harness
from tests.tool_results import payload

pytestmark = pytest.mark.anyio


async def test_events_keep_the_original_summary_keys_without_query_text_or_secrets(
    harness: Harness,
) -> None:
    query = "zanzibar quarterly ledger"
    async with harness.connect() as admin:
        old = payload(
            await admin.call_tool(
                "save_context", {"content": "The zanzibar ledger closes in May.", "topic": "fin"}
            )
        )["item"]["id"]
        new = payload(
            await admin.call_tool(
                "save_context", {"content": "The zanzibar ledger closes in June.", "topic": "fin"}
            )
        )["item"]["id"]
        found = payload(await admin.call_tool("search_context", {"query": query}))
        await admin.call_tool("deprecate_context", {"id": old, "superseding_id": new})
    async with harness.connect("/clients/web/mcp", WEB_TOKEN) as web:
        await web.call_tool("search_context", {"query": query})

    events = [e for e in harness.events() if e["event_type"] == "tool_call"]
    save, _, search, deprecate, web_search = events
    assert {k: save["response"][k] for k in ("topic", "branch_state", "modality")} == {
        "topic": "fin",
        "branch_state": "active",
        "modality": "text",
    }
    assert search["response"]["result_count"] == len(found["matches"]) >= 1
    assert search["response"]["result_ids"] == [m["id"] for m in found["matches"]]
    assert deprecate["response"]["superseding_id"] == new
    assert web_search["response"]["result_ids"] == [new]  # the deprecated one is not active
    recorded = json.dumps(harness.events())
    assert "zanzibar" not in recorded
    assert "quarterly" not in recorded
    assert ADMIN_TOKEN not in recorded
    assert WEB_TOKEN not in recorded
