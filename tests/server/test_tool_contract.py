"""Tool-contract rules seen through a real MCP client: argument validation, unknown tools,
the image size limit and the original MetaCortex's output shapes (issue 8)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.server.conftest import Harness
from tests.tool_results import error_code, payload

pytestmark = pytest.mark.anyio


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
