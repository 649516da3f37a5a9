"""Tool-contract rules seen through a real MCP client: argument validation, unknown tools,
the image size limit and the original MetaCortex's output shapes (issue 8)."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any, Final

import jsonschema  # type: ignore[import-untyped]
import mcp_types as types
import pytest
from mcp.shared.exceptions import MCPError

from metacortex.config import Settings
from metacortex.domain import limits
from metacortex.mcp_surface.tools import TOOLS
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


def _png_base64(image_bytes: int) -> str:
    png = b"\x89PNG\r\n\x1a\n" + b"\x00" * (image_bytes - 8)
    return base64.b64encode(png).decode()


async def test_an_image_at_the_schema_maximum_fits_the_body_limit_and_one_above_is_a_tool_error(
    live: LiveServer,
) -> None:
    headers = {"authorization": f"Bearer {ADMIN_TOKEN}"}
    at_limit = _png_base64(limits.MAX_IMAGE_BYTES)
    assert len(at_limit) == limits.MAX_IMAGE_BASE64_CHARS
    # Every other argument as large as a realistic call makes it.
    others: dict[str, Any] = {
        "content": "c" * limits.MAX_CONTENT_CHARS,
        "topic": "t" * limits.MAX_TOPIC_CHARS,
        "image_mime_type": "image/png",
        "source_session": "s" * limits.MAX_SOURCE_SESSION_CHARS,
        "origin": "user_asserted",
        "valid_from": "2026-01-01T00:00:00.000+00:00",
    }
    async with live.connect("/mcp", STATELESS_MODE, headers) as admin:
        saved = payload(await admin.call_tool("save_context", {**others, "image_base64": at_limit}))
        too_big = await admin.call_tool(
            "save_context", {**others, "image_base64": at_limit + "AAAA"}
        )
    assert saved["write_status"] == "created"
    assert saved["item"]["metadata"]["modality"] == "mixed"
    assert error_code(too_big) == "invalid_argument"
    assert _message(too_big).startswith("image_base64: String should have at most 983040")


def test_the_image_limit_is_derived_from_the_body_limit_and_stated_to_the_model() -> None:
    assert Settings(_env_file=None).metacortex_max_body_bytes == limits.DEFAULT_MAX_BODY_BYTES  # type: ignore[call-arg]
    assert limits.MAX_IMAGE_BASE64_CHARS < limits.DEFAULT_MAX_BODY_BYTES
    assert limits.MAX_IMAGE_BASE64_CHARS % 4 == 0
    save = TOOLS["save_context"].definition()
    assert save.input_schema["properties"]["image_base64"]["maxLength"] == 983_040
    assert "983,040 base64 characters" in (save.description or "")
    assert (
        "983,040 base64 characters"
        in save.input_schema["properties"]["image_base64"]["description"]
    )


ORIGINAL_OUTPUTS: Final = Path(__file__).parent / "fixtures" / "original_metacortex_outputs.json"


@pytest.mark.parametrize("tool", ["search_context", "list_context"])
def test_the_original_metacortex_example_outputs_validate_against_our_output_schemas(
    tool: str,
) -> None:
    examples = json.loads(ORIGINAL_OUTPUTS.read_text())[tool]
    schema = TOOLS[tool].definition().output_schema
    assert schema is not None
    for example in examples:
        jsonschema.validate(example, schema)


async def test_applied_filters_carry_the_original_keys_beside_the_richer_ones(
    harness: Harness,
) -> None:
    async with harness.connect() as admin:
        payload(await admin.call_tool("save_context", {"content": "kmp uses ktor", "topic": "kmp"}))
        one = payload(
            await admin.call_tool("search_context", {"query": "ktor", "filter_topic": "kmp"})
        )["applied_filters"]
        listed = payload(await admin.call_tool("list_context", {}))["applied_filters"]
    assert one["filter_topic"] == "kmp"
    assert one["filter_state"] == "active"
    assert (one["topic"], one["states"], one["limit"]) == ("kmp", ["active"], 5)
    assert listed["filter_topic"] is None
    assert listed["filter_state"] == "active"
