"""Reading MCP tool results the way a client model does: structured content,
mirrored by the JSON text block, or an ``isError`` result carrying the spec's
``{"error": {"code", "message"}}``."""

from __future__ import annotations

import json
from typing import Any

import mcp_types as types


def payload(result: types.CallToolResult) -> dict[str, Any]:
    assert not result.is_error, result.content
    assert isinstance(result.content[0], types.TextContent)
    assert json.loads(result.content[0].text) == result.structured_content
    assert result.structured_content is not None
    return dict(result.structured_content)


def error_code(result: types.CallToolResult) -> str:
    assert result.is_error
    assert isinstance(result.content[0], types.TextContent)
    return str(json.loads(result.content[0].text)["error"]["code"])
