"""The views as the MCP surface serves them, through the Python ``mcp`` SDK's client:
the extension announced, each linked tool's view readable as one self-contained
``text/html;profile=mcp-app`` document, and results unchanged for the model."""

from __future__ import annotations

import json
import re

import pytest
from mcp.shared.exceptions import MCPError

from metacortex.access.registry import Registry
from metacortex.apps.caller import CALLER_KEY
from metacortex.apps.documents import STATIC, document
from metacortex.apps.views import APP_ONLY, CALLED_BY_VIEWS, VIEW_OF_TOOL, VIEWS
from metacortex.clients.manage import ClientManager
from metacortex.config import Settings
from metacortex.mcp_surface.tools import TOOLS
from tests.server.conftest import HANDSHAKE_MODE, Harness

pytestmark = pytest.mark.anyio


async def test_the_server_announces_the_extension_and_serves_every_linked_view(
    harness: Harness,
) -> None:
    # Announced in server/discover (2026-07-28), which "auto" probes. The SDK sieves
    # `extensions` out of a 2025-era initialize: that schema has no such field.
    async with harness.connect(mode="auto") as client:
        assert client.server_capabilities.extensions == {"io.modelcontextprotocol/ui": {}}
    async with harness.connect(mode=HANDSHAKE_MODE) as client:
        assert client.server_capabilities.extensions is None
    async with harness.connect() as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        for name, view in VIEW_OF_TOOL.items():
            assert name in TOOLS
            if name in APP_ONLY:  # not the admin token's: see the stored client's below
                assert name not in tools
                continue
            called = {"openai/widgetAccessible": True} if name in CALLED_BY_VIEWS else {}
            assert tools[name].meta == {
                "ui": {"resourceUri": view.uri},
                "openai/outputTemplate": view.uri,
                **called,
            }
            read = await client.read_resource(view.uri)
            [content] = read.contents
            assert content.mime_type == "text/html;profile=mcp-app"
            assert content.meta is not None
            assert content.meta["ui"]["csp"] == {
                "connectDomains": [],
                "resourceDomains": [],
                "frameDomains": [],
                "baseUriDomains": [],
            }
        # Views are not context for a model: resources/list does not offer them.
        listed = [str(r.uri) for r in (await client.list_resources()).resources]
        assert not [uri for uri in listed if uri.startswith("ui://")]


async def test_the_view_only_tool_is_hidden_from_the_model_and_moves_a_stored_client_s_default(
    harness: Harness, settings: Settings
) -> None:
    """A stored client lists set_default_space with the extension's visibility ["app"]
    (promote_context, meant for models too, has none); called, the client's next call
    naming no space acts in the new default, on this server at once."""
    store = harness.service.store
    Registry(store).add_space("team", "Team")
    created = ClientManager(store, settings).create(
        "laptop", spaces={"default": None, "team": None}, default_space="default"
    )
    # The server checks the store once per refresh bound: the client is new, read it now.
    harness.runtime.clients.expire()
    async with harness.connect("/clients/laptop/mcp", created.token) as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        moved = await client.call_tool("set_default_space", {"space": "team"})
        saved = await client.call_tool("save_context", {"content": "Lunch is at noon."})
    async with harness.connect() as admin:
        promote = {tool.name: tool for tool in (await admin.list_tools()).tools}["promote_context"]

    assert tools["set_default_space"].meta == {
        "ui": {"resourceUri": "ui://metacortex/spaces.html", "visibility": ["app"]},
        "openai/outputTemplate": "ui://metacortex/spaces.html",
        # The same said to ChatGPT's older Apps SDK: for the view, not the model.
        "openai/visibility": "private",
        "openai/widgetAccessible": True,
    }
    assert promote.meta == {"openai/widgetAccessible": True}  # the model's too: no visibility
    assert moved.structured_content is not None
    assert moved.structured_content["default_space"] == "team"
    assert moved.structured_content["previous_default_space"] == "default"
    assert moved.meta is not None
    assert "set_default_space" in moved.meta[CALLER_KEY]["tools"]
    assert saved.structured_content is not None
    assert saved.structured_content["item"]["metadata"]["space"] == "team"


async def test_an_unknown_view_is_an_invalid_params_error_naming_the_views(
    harness: Harness,
) -> None:
    async with harness.connect() as client:
        with pytest.raises(MCPError) as refused:
            await client.read_resource("ui://metacortex/nope.html")
    assert refused.value.error.code == -32602
    assert "ui://metacortex/search.html" in refused.value.error.message


async def test_a_linked_tool_s_result_is_unchanged_but_for_the_caller_in_meta(
    harness: Harness,
) -> None:
    async with harness.connect() as client:
        saved = await client.call_tool("save_context", {"content": "Tea, not coffee."})
        listed = await client.call_tool("list_context", {})
    assert saved.structured_content is not None
    assert json.loads(saved.content[0].text) == saved.structured_content  # type: ignore[union-attr]
    assert saved.meta is not None
    assert {CALLER_KEY: saved.meta[CALLER_KEY]} == {
        CALLER_KEY: {
            "tools": [name for name in TOOLS if name not in APP_ONLY],
            "spaces": {"default": "write"},
            "default_space": "default",
            "may_write_lifecycle": True,
        }
    }
    assert listed.meta is not None
    assert CALLER_KEY not in listed.meta  # no view, nothing added


def test_every_view_is_one_document_that_loads_nothing() -> None:
    for view in VIEWS:
        html = document(view.name)
        assert "metacortex:script" not in html
        assert "metacortex:style" not in html
        assert "default-src 'none'" in html
        # No attribute or rule that fetches: src/href attributes, CSS url() or @import.
        assert not re.search(r"\s(src|href)\s*=|url\(|@import", html), view.name
        assert len(html.encode()) < 24_000, (view.name, len(html.encode()))


async def test_the_tools_the_views_call_are_open_to_an_apps_sdk_host_s_call_tool(
    harness: Harness,
) -> None:
    """ChatGPT's older Apps SDK runs ``window.openai.callTool`` only for a tool marked
    ``openai/widgetAccessible``: every tool a view calls carries it, and no other."""
    called = {
        name
        for page in STATIC.glob("*.*")
        for name in re.findall(r'bridge\.call\("([a-z_]+)"', page.read_text(encoding="utf-8"))
    }
    assert called == CALLED_BY_VIEWS
    async with harness.connect() as client:
        for tool in (await client.list_tools()).tools:
            accessible = (tool.meta or {}).get("openai/widgetAccessible") is True
            assert accessible == (tool.name in CALLED_BY_VIEWS), tool.name
