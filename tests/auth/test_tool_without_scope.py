"""A tool fails closed: one the tool catalogue gives no OAuth scope is refused to every
OAuth token, however its grant and its endpoint allow it.

The tool is added the way a developer adds one (an entry in ``tool_catalogue``,
granted by every consent preset but given no scope, and a ``ToolSpec`` on the MCP
surface) before the server starts, and is called through the running server over
loopback (``tests.oauth_support``: uvicorn, the real guard, an OAuth grant approved
on the consent page). The admin token is served it, so the tool is real and offered;
an OAuth token holding both scopes is refused before MCP runs it.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final

import pytest
from pydantic import BaseModel

from metacortex import tool_catalogue
from metacortex.mcp_surface import schemas, tools
from metacortex.mcp_surface.tools import ToolSpec
from metacortex.service import Access, MemoryService
from metacortex.tool_catalogue import Group, Tool
from tests.oauth_support import Browserless, OAuthLive, oauth_server, tool_call
from tests.server.conftest import ADMIN_TOKEN

NEW_TOOL: Final = "count_words"


class CountWordsInput(schemas.ToolInput):
    text: str


class CountWordsOutput(BaseModel):
    words: int


def _count_words(service: MemoryService, access: Access, args: dict[str, Any]) -> dict[str, Any]:
    return {"words": len(str(args["text"]).split())}


@pytest.fixture
def live(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[OAuthLive]:
    """The OAuth server, started after ``count_words`` was added without a scope."""
    monkeypatch.setitem(
        tool_catalogue.CATALOGUE,
        NEW_TOOL,
        Tool(
            NEW_TOOL,
            Group.READING,
            read_only=True,
            default=True,
            presets=frozenset(
                {
                    tool_catalogue.READ_PRESET,
                    tool_catalogue.READ_WRITE_PRESET,
                    tool_catalogue.CURATOR_PRESET,
                }
            ),
        ),
    )
    monkeypatch.setitem(
        tools.TOOLS,
        NEW_TOOL,
        ToolSpec(
            name=NEW_TOOL,
            title="Count words",
            description='Count the words of a text.\nExample: {"text": "two words"}',
            input_model=CountWordsInput,
            output_model=CountWordsOutput,
            run=_count_words,
        ),
    )
    with oauth_server(tmp_path) as running:
        yield running


def test_a_new_tool_without_a_scope_is_refused_to_an_oauth_token_not_served(
    live: OAuthLive, agent: Browserless
) -> None:
    arguments = {"text": "three little words"}
    served = tool_call(live.mcp, ADMIN_TOKEN, NEW_TOOL, arguments)
    assert served.status_code == 200, served.text
    assert served.json()["result"]["structuredContent"] == {"words": 3}

    client = agent.register()
    token = agent.tokens(client["client_id"], preset="curator")
    assert set(token["scope"].split()) >= {"memory:read", "memory:write"}
    refused = tool_call(live.mcp, token["access_token"], NEW_TOOL, arguments)

    assert refused.status_code == 403
    assert refused.json() == {
        "error": {
            "code": "forbidden",
            "message": "the tool 'count_words' is not offered to OAuth tokens",
        }
    }
    # No scope would help, so none is asked for.
    assert "www-authenticate" not in refused.headers
    # The same token is served a tool that has a scope.
    found = tool_call(live.mcp, token["access_token"], "search_context", {"query": "words"})
    assert found.status_code == 200
    assert found.json()["result"]["isError"] is False


def test_the_owners_erase_tool_has_no_scope_so_no_oauth_token_calls_it(tmp_path: Path) -> None:
    """Where the operator offers ``erase_context`` on the admin endpoint, the admin token
    calls it and an OAuth token at that endpoint is refused at the door, whatever its
    preset (no preset grants it either)."""
    with oauth_server(tmp_path, metacortex_admin_erase_tool=True) as running:
        agent = Browserless(running)
        try:
            assert agent.sign_in().status_code == 303
            token = agent.tokens(agent.register()["client_id"], preset="curator")
        finally:
            agent.close()
        refused = tool_call(running.mcp, token["access_token"], "erase_context", {"ids": []})
        served = tool_call(running.mcp, ADMIN_TOKEN, "erase_context", {"ids": ["0" * 26]})

    assert refused.status_code == 403
    assert refused.json()["error"]["message"] == (
        "the tool 'erase_context' is not offered to OAuth tokens"
    )
    assert served.status_code == 200
    assert "result" in served.json()
