"""End to end over real loopback HTTP: uvicorn serving the app, the official MCP client.

Every tool and the prompt, on the admin endpoint and on a scoped browser-style
profile, in both protocol eras (the initialize handshake and the 2026-07-28
stateless envelope). The server runs in a thread on a socket that is already
listening, so the first health check simply waits in the accept queue: no
sleeps, no polling loop.
"""

from __future__ import annotations

import json

import httpx2
import mcp_types as types
import pytest

from tests.server.conftest import (
    ADMIN_TOKEN,
    HANDSHAKE_MODE,
    STATELESS_MODE,
    WEB_ORIGIN,
    WEB_TOKEN,
    LiveServer,
)
from tests.server.surface_snapshot import tool_names
from tests.tool_results import error_code, payload

pytestmark = [pytest.mark.anyio, pytest.mark.slow]
ERAS = pytest.mark.parametrize("mode", [HANDSHAKE_MODE, STATELESS_MODE])


@ERAS
async def test_the_admin_endpoint_serves_every_tool_and_the_prompt(
    live: LiveServer, mode: str, png_base64: str
) -> None:
    topic = f"e2e-admin-{mode}"
    async with live.connect("/mcp", mode, {"authorization": f"Bearer {ADMIN_TOKEN}"}) as admin:
        assert len((await admin.list_tools()).tools) == len(tool_names("default"))
        saved = payload(
            await admin.call_tool(
                "save_context",
                {"content": f"The e2e release code is ZEBRA-{mode}.", "topic": topic},
            )
        )
        first_id = saved["item"]["id"]
        image = payload(
            await admin.call_tool(
                "save_context",
                {"image_base64": png_base64, "image_mime_type": "image/png", "topic": topic},
            )
        )
        assert image["item"]["metadata"]["modality"] == "image"
        found = payload(
            await admin.call_tool(
                "search_context", {"query": f"ZEBRA-{mode}", "filter_topic": topic}
            )
        )
        assert found["matches"][0]["id"] == first_id
        fetched = payload(await admin.call_tool("fetch_context", {"id": first_id}))
        assert fetched["item"]["content"] == f"The e2e release code is ZEBRA-{mode}."
        listed = payload(await admin.call_tool("list_context", {"filter_topic": topic}))
        assert {item["id"] for item in listed["items"]} == {first_id, image["item"]["id"]}

        prompt = await admin.get_prompt(
            "correct_memory",
            {"incorrect_memory_id": first_id, "corrected_content": f"The code is LION-{mode}."},
        )
        assert isinstance(prompt.messages[0].content, types.TextContent)
        assert first_id in prompt.messages[0].content.text
        # Do what the prompt says.
        corrected = payload(
            await admin.call_tool(
                "save_context", {"content": f"The code is LION-{mode}.", "topic": topic}
            )
        )["item"]["id"]
        deprecated = payload(
            await admin.call_tool(
                "deprecate_context",
                {"id": first_id, "superseding_id": corrected, "supersession_reason": "corrected"},
            )
        )
        assert deprecated["previous_state"] == "active"

        drafts = [
            payload(
                await admin.call_tool(
                    "save_context", {"content": text, "topic": topic, "draft": True}
                )
            )["item"]["id"]
            for text in ("Draft one.", "Draft two.")
        ]
        merged = payload(await admin.call_tool("consolidate_context", {"topic": topic}))
        assert merged["deprecated_ids"] == drafts
        assert error_code(await admin.call_tool("fetch_context", {"id": "0" * 26})) == "not_found"
    era = "2025-11-25" if mode == HANDSHAKE_MODE else STATELESS_MODE
    events = live.events()
    ours = [e for e in events if e.get("request", {}).get("topic") == topic]
    assert ours
    assert {e["protocol_version"] for e in ours} == {era}


@ERAS
async def test_a_scoped_browser_profile_works_with_its_url_token_and_origin(
    live: LiveServer, mode: str
) -> None:
    headers = {"origin": WEB_ORIGIN}
    async with live.connect(
        "/clients/web/mcp", mode, headers, query=f"?auth_token={WEB_TOKEN}"
    ) as web:
        tools = [tool.name for tool in (await web.list_tools()).tools]
        assert tools == ["save_context", "search_context", "fetch_context"]
        # context only: correct_memory needs deprecate_context
        assert [prompt.name for prompt in (await web.list_prompts()).prompts] == ["context"]
        saved = payload(
            await web.call_tool("save_context", {"content": f"Browser note about OTTER-{mode}."})
        )
        found = payload(await web.call_tool("search_context", {"query": f"OTTER-{mode}"}))
        assert found["matches"][0]["id"] == saved["item"]["id"]
        payload(await web.call_tool("fetch_context", {"id": saved["item"]["id"]}))
        refused = await web.call_tool("deprecate_context", {"id": saved["item"]["id"]})
        assert error_code(refused) == "forbidden"
    events = live.events()
    assert WEB_TOKEN not in json.dumps(events)


async def test_real_http_refusals_are_json(live: LiveServer) -> None:
    async with httpx2.AsyncClient(base_url=live.url) as http:
        unauthorized = await http.post("/clients/nobody/mcp", json={})
        assert unauthorized.status_code == 401
        assert unauthorized.json()["error"]["code"] == "unauthorized"
        sse = await http.get("/mcp", headers={"authorization": f"Bearer {ADMIN_TOKEN}"})
        assert sse.status_code == 405
        rebinding = await http.post("/mcp", json={}, headers={"host": "evil.example"})
        assert rebinding.status_code == 421
        preflight = await http.options(
            "/clients/web/mcp",
            headers={"origin": WEB_ORIGIN, "access-control-request-method": "POST"},
        )
        assert preflight.status_code == 204
        assert preflight.content == b""
        assert preflight.headers["access-control-allow-origin"] == WEB_ORIGIN
        bare = await http.options("/mcp")
        assert (bare.status_code, bare.headers["allow"]) == (204, "POST, OPTIONS")
