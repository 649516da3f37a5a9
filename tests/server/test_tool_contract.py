"""Tool-contract rules seen through a real MCP client: argument validation, unknown tools,
the image size limit and the original MetaCortex's output shapes (issue 8)."""

from __future__ import annotations

import json
from typing import Any

import mcp_types as types
import pytest
from mcp.shared.exceptions import MCPError

from tests.server.conftest import (
    ADMIN_TOKEN,
    HANDSHAKE_MODE,
    STATELESS_MODE,
    WEB_TOKEN,
    Harness,
    LiveServer,
)
from tests.tool_results import error_code, payload

pytestmark = pytest.mark.anyio
ERAS = pytest.mark.parametrize("mode", [HANDSHAKE_MODE, STATELESS_MODE])


def _message(result: Any) -> str:
    return str(json.loads(result.content[0].text)["error"]["message"])


@pytest.mark.parametrize(
    ("tool", "arguments", "field"),
    [
        ("save_context", {"content": "x", "source_session": "run\x00one"}, "source_session"),
        ("save_context", {"content": "x\x00y"}, "content"),
        ("save_context", {"content": "x", "artifact_refs": ["gs://a/b\x01"]}, r"artifact_refs[0]"),
        ("search_context", {"query": "q\x1b[31m"}, "query"),
        ("list_context", {"cursor": "abc\x00"}, "cursor"),
    ],
)
async def test_nul_and_control_characters_are_refused_in_every_string_argument(
    harness: Harness, tool: str, arguments: dict[str, Any], field: str
) -> None:
    async with harness.connect() as admin:
        result = await admin.call_tool(tool, arguments)
    assert error_code(result) == "invalid_argument"
    assert _message(result).startswith(f"{field} contains the disallowed character U+")


async def test_trailing_newline_in_id_is_refused_by_every_tool(harness: Harness) -> None:
    async with harness.connect() as admin:
        saved = payload(await admin.call_tool("save_context", {"content": "an id to misuse"}))
        memory_id = saved["item"]["id"]
        for tool, arguments in [
            ("fetch_context", {"id": memory_id + "\n"}),
            ("deprecate_context", {"id": memory_id + "\n"}),
            ("save_context", {"content": "x", "derived_from": [memory_id + "\n"]}),
        ]:
            result = await admin.call_tool(tool, arguments)
            assert error_code(result) == "invalid_argument", tool
            assert "is not a memory id" in _message(result)
        assert payload(await admin.call_tool("fetch_context", {"id": memory_id}))


@ERAS
async def test_an_unknown_tool_is_a_json_rpc_invalid_params_error(
    live: LiveServer, mode: str
) -> None:
    headers = {"authorization": f"Bearer {ADMIN_TOKEN}"}
    async with live.connect("/mcp", mode, headers) as admin:
        with pytest.raises(MCPError) as raised:
            await admin.call_tool("delete_everything", {"really": True})
        # The session stays usable and known tools still answer as results.
        assert not (await admin.call_tool("search_context", {"query": "x"})).is_error
    assert raised.value.code == types.INVALID_PARAMS == -32602
    assert raised.value.message.startswith(
        "unknown tool 'delete_everything'; this endpoint offers:"
    )
    rejected = [e for e in live.events() if e.get("tool_name") == "delete_everything"]
    assert [e["status"] for e in rejected] == ["error"] * len(rejected) != []


async def test_a_tool_the_profile_does_not_offer_stays_a_forbidden_result(
    live: LiveServer,
) -> None:
    headers = {"authorization": f"Bearer {WEB_TOKEN}"}
    async with live.connect("/clients/web/mcp", STATELESS_MODE, headers) as web:
        result = await web.call_tool("deprecate_context", {"id": "abc"})
    assert error_code(result) == "forbidden"
