"""Every tool and the prompt through the real MCP client, in-process (ASGI), both protocol eras.

The client itself checks each successful result's ``structuredContent`` against
the tool's ``outputSchema``; these tests also check the text copy and the
``isError`` codes.
"""

from __future__ import annotations

import json
from typing import Any

import jsonschema  # type: ignore[import-untyped]
import mcp_types as types
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError

from tests.server.conftest import (
    HANDSHAKE_MODE,
    READER_TOKEN,
    STATELESS_MODE,
    WEB_TOKEN,
    Harness,
)
from tests.server.surface_snapshot import tool_names

pytestmark = pytest.mark.anyio
ERAS = pytest.mark.parametrize("mode", [HANDSHAKE_MODE, STATELESS_MODE])


def ok(result: types.CallToolResult) -> dict[str, Any]:
    assert not result.is_error, result.content
    assert len(result.content) == 1
    text = result.content[0]
    assert isinstance(text, types.TextContent)
    assert result.structured_content is not None
    assert json.loads(text.text) == result.structured_content
    return dict(result.structured_content)


def failed(result: types.CallToolResult) -> dict[str, str]:
    assert result.is_error
    assert len(result.content) == 1
    text = result.content[0]
    assert isinstance(text, types.TextContent)
    body = json.loads(text.text)
    assert set(body) == {"error"}
    return dict(body["error"])


async def save(client: Client, content: str, **extra: Any) -> dict[str, Any]:
    return ok(await client.call_tool("save_context", {"content": content, **extra}))


@ERAS
async def test_each_profile_lists_only_its_tools_and_the_prompt_where_usable(
    harness: Harness, mode: str
) -> None:
    async with harness.connect(mode=mode) as admin:
        names = [tool.name for tool in (await admin.list_tools()).tools]
        prompts = [prompt.name for prompt in (await admin.list_prompts()).prompts]
    assert names == tool_names("default")
    assert prompts == ["correct_memory", "context"]
    async with harness.connect("/clients/web/mcp", WEB_TOKEN, mode) as web:
        names = [tool.name for tool in (await web.list_tools()).tools]
        prompts = [prompt.name for prompt in (await web.list_prompts()).prompts]
    assert names == tool_names("web")
    assert "deprecate_context" not in names
    assert prompts == ["context"]  # correct_memory needs deprecate_context


async def test_every_tool_has_an_output_schema_and_honest_hints(harness: Harness) -> None:
    async with harness.connect() as admin:
        tools = {tool.name: tool for tool in (await admin.list_tools()).tools}
    for tool in tools.values():
        assert tool.output_schema is not None
        jsonschema.Draft202012Validator.check_schema(tool.output_schema)
        jsonschema.Draft202012Validator.check_schema(tool.input_schema)
        assert tool.description is not None
        assert "Example:" in tool.description
        assert tool.annotations is not None
    for name in ("search_context", "fetch_context", "list_context"):
        assert tools[name].annotations.read_only_hint is True  # type: ignore[union-attr]
    for name, idempotent in [
        ("save_context", False),
        ("deprecate_context", True),
        ("consolidate_context", True),
    ]:
        hints = tools[name].annotations
        assert hints is not None
        assert hints.read_only_hint is False
        assert hints.destructive_hint is False
        assert hints.idempotent_hint is idempotent


@ERAS
async def test_save_search_fetch_round_trip(harness: Harness, mode: str) -> None:
    async with harness.connect(mode=mode) as admin:
        saved = await save(
            admin,
            "The staging database moved to host db-staging-2.",
            topic="infra",
            origin="user_asserted",
            artifact_refs=["gs://bucket/runbook.md"],
        )
        assert saved["write_status"] == "created"
        memory_id = saved["item"]["id"]
        assert saved["item"]["metadata"]["topic"] == "infra"
        again = await save(
            admin,
            "The staging database moved to host db-staging-2.",
            topic="infra",
            origin="user_asserted",
            artifact_refs=["gs://bucket/runbook.md"],
        )
        assert again["write_status"] == "duplicate"
        assert again["item"]["id"] == memory_id

        found = ok(await admin.call_tool("search_context", {"query": "db-staging-2 host"}))
        assert found["matches"][0]["id"] == memory_id
        assert 0 <= found["matches"][0]["score"] <= 1
        assert found["applied_filters"]["states"] == ["active"]
        nothing = ok(await admin.call_tool("search_context", {"query": "x", "filter_topic": "no"}))
        assert nothing["matches"] == []

        fetched = ok(await admin.call_tool("fetch_context", {"id": memory_id}))
        assert fetched["item"]["content"] == "The staging database moved to host db-staging-2."
        alias = ok(await admin.call_tool("fetch_context", {"document_id": memory_id}))
        assert alias == fetched


async def test_an_image_is_saved_as_described_text(harness: Harness, png_base64: str) -> None:
    async with harness.connect() as admin:
        saved = ok(
            await admin.call_tool(
                "save_context",
                {"image_base64": png_base64, "image_mime_type": "image/png", "topic": "ui"},
            )
        )
    assert saved["item"]["metadata"]["modality"] == "image"
    assert "red square" in saved["item"]["content"]


@ERAS
async def test_invalid_arguments_are_invalid_argument_results_saying_what_is_wrong(
    harness: Harness, mode: str
) -> None:
    async with harness.connect(mode=mode) as admin:
        cases: list[tuple[str, dict[str, Any], str]] = [
            ("search_context", {"query": "q", "limit": 50}, "limit: Input should be less than"),
            ("search_context", {}, "give query (what you look for, in words), keyword"),
            ("search_context", {"query": "q", "filter_stat": "wip"}, "unexpected argument"),
            ("save_context", {}, "content or image_base64 is required"),
            ("save_context", {"content": "c", "draft": True, "branch_state": "wip"}, "not both"),
            ("save_context", {"content": "c", "topic": "bad topic!"}, "topic 'bad topic!'"),
            (
                "save_context",
                {"content": "c", "topic": "architecture decisions"},
                "for example 'architecture-decisions'",
            ),
            ("save_context", {"content": "c", "confidence": 2}, "confidence: Input should be"),
            ("fetch_context", {}, "id is required"),
            ("deprecate_context", {"id": "a", "superseding_id": "a"}, "cannot supersede itself"),
            ("deprecate_context", {"id": "a", "superseding_id": "a"}, "last 15 minutes"),
            ("list_context", {"cursor": "garbage"}, "cursor is not valid"),
        ]
        for tool, arguments, expected in cases:
            error = failed(await admin.call_tool(tool, arguments))
            assert error["code"] == "invalid_argument", (tool, arguments)
            assert expected in error["message"], (error, expected)


async def test_a_scoped_client_is_held_to_its_profile(harness: Harness) -> None:
    async with harness.connect() as admin:
        draft = await save(admin, "A half-finished idea about caching.", draft=True)
        draft_id = draft["item"]["id"]
    async with harness.connect("/clients/web/mcp", WEB_TOKEN) as web:
        error = failed(await web.call_tool("deprecate_context", {"id": draft_id}))
        assert error["code"] == "forbidden"
        assert "deprecate_context" in error["message"]
        with pytest.raises(MCPError) as unknown:
            await web.call_tool("drop_everything", {})
        assert unknown.value.code == types.INVALID_PARAMS
        error = failed(await web.call_tool("save_context", {"content": "c", "branch_state": "wip"}))
        assert error["code"] == "forbidden"
        error = failed(await web.call_tool("search_context", {"query": "q", "filter_state": "wip"}))
        assert error["code"] == "forbidden"
        # A record in a state the profile may not read is indistinguishable from a missing one.
        hidden = failed(await web.call_tool("fetch_context", {"id": draft_id}))
        missing = failed(await web.call_tool("fetch_context", {"id": "0" * 26}))
        assert hidden["code"] == missing["code"] == "not_found"
        saved = await save(web, "Browser connectors save active memories.")
        assert saved["item"]["metadata"]["branch_state"] == "active"
    async with harness.connect("/clients/reader/mcp", READER_TOKEN) as reader:
        error = failed(await reader.call_tool("save_context", {"content": "c"}))
        assert error["code"] == "forbidden"
        drafts = ok(await reader.call_tool("list_context", {"filter_state": "wip"}))
        assert [item["id"] for item in drafts["items"]] == [draft_id]


async def test_a_client_that_saves_a_draft_reads_it_back_and_no_one_elses(
    harness: Harness,
) -> None:
    """The web profile reads active memories only and may save a draft (draft=true): the
    id it is given fetches that draft (it used to be not_found), while a draft someone
    else saved stays exactly a missing id, and asking for drafts stays forbidden."""
    async with harness.connect() as admin:
        others = (await save(admin, "The owner's draft about caching.", draft=True))["item"]
    async with harness.connect("/clients/web/mcp", WEB_TOKEN) as web:
        saved = (await save(web, "Draft: move the offsite to May.", draft=True))["item"]
        fetched = ok(await web.call_tool("fetch_context", {"id": saved["id"]}))["item"]
        again = await save(web, "Draft: move the offsite to May.", draft=True)
        hidden = failed(await web.call_tool("fetch_context", {"id": others["id"]}))
        drafts = failed(
            await web.call_tool("search_context", {"query": "offsite", "filter_state": "wip"})
        )

    assert (fetched["id"], fetched["content"]) == (saved["id"], "Draft: move the offsite to May.")
    assert fetched["metadata"]["branch_state"] == "wip"
    assert (again["write_status"], again["item"]["id"]) == ("duplicate", saved["id"])
    assert hidden["code"] == "not_found"
    assert drafts["code"] == "forbidden"


@ERAS
async def test_list_context_pages_newest_first_with_cursors(harness: Harness, mode: str) -> None:
    async with harness.connect(mode=mode) as admin:
        ids = [
            (await save(admin, f"Fact number {n}.", topic="paging"))["item"]["id"] for n in range(5)
        ]
        first = ok(await admin.call_tool("list_context", {"filter_topic": "paging", "limit": 3}))
        assert [item["id"] for item in first["items"]] == ids[::-1][:3]
        assert first["next_cursor"] is not None
        second = ok(
            await admin.call_tool(
                "list_context",
                {"filter_topic": "paging", "limit": 3, "cursor": first["next_cursor"]},
            )
        )
        assert [item["id"] for item in second["items"]] == ids[::-1][3:]
        assert second["next_cursor"] is None


@ERAS
async def test_deprecate_is_idempotent_and_refuses_a_different_second_deprecation(
    harness: Harness, mode: str
) -> None:
    async with harness.connect(mode=mode) as admin:
        old = (await save(admin, "The office is on floor 3."))["item"]["id"]
        new = (await save(admin, "The office is on floor 5."))["item"]["id"]
        arguments = {"id": old, "superseding_id": new, "supersession_reason": "corrected"}
        first = ok(await admin.call_tool("deprecate_context", arguments))
        assert first == {
            "item": {
                "id": old,
                "branch_state": "deprecated",
                "superseded_by": new,
                "supersession_reason": "corrected",
            },
            "previous_state": "active",
        }
        again = ok(await admin.call_tool("deprecate_context", arguments))
        assert again["item"] == first["item"]
        conflict = failed(await admin.call_tool("deprecate_context", {"id": old}))
        assert conflict["code"] == "conflict"
        missing = failed(await admin.call_tool("deprecate_context", {"id": "0" * 26}))
        assert missing["code"] == "not_found"


@ERAS
async def test_consolidate_merges_the_wip_queue_once(harness: Harness, mode: str) -> None:
    async with harness.connect(mode=mode) as admin:
        lonely = failed(await admin.call_tool("consolidate_context", {"topic": "plans"}))
        assert lonely["code"] == "failed_precondition"
        drafts = [
            (await save(admin, text, topic="plans", draft=True))["item"]["id"]
            for text in ("Ship the beta in May.", "Ship the beta in May. Hire a designer.")
        ]
        merged = ok(await admin.call_tool("consolidate_context", {"topic": "plans"}))
        assert merged["source_count"] == 2
        assert merged["deprecated_ids"] == drafts
        assert merged["item"]["branch_state"] == "active"
        assert "Hire a designer." in merged["item"]["merged_content"]
        rerun = ok(
            await admin.call_tool("consolidate_context", {"topic": "plans", "source_ids": drafts})
        )
        assert rerun["item"]["merged_id"] == merged["item"]["merged_id"]


@ERAS
async def test_correct_memory_prompt_tells_the_model_to_save_deprecate_and_report(
    harness: Harness, mode: str
) -> None:
    async with harness.connect(mode=mode) as admin:
        prompt = await admin.get_prompt(
            "correct_memory",
            {
                "incorrect_memory_id": "01hq3v6kz8m2x4c7d9f0g1h2j3",
                "corrected_content": "The launch is on June 2.",
                "topic": "launch",
                "valid_from": "2026-01-01T00:00:00Z",
            },
        )
        assert len(prompt.messages) == 1
        message = prompt.messages[0]
        assert message.role == "user"
        assert isinstance(message.content, types.TextContent)
        text = message.content.text
        for expected in (
            "save_context",
            "deprecate_context",
            '"corrected"',
            "01hq3v6kz8m2x4c7d9f0g1h2j3",
            '"content": "The launch is on June 2."',
            '"topic": "launch"',
            '"valid_from": "2026-01-01T00:00:00Z"',
            "Report both ids",
        ):
            assert expected in text
        with pytest.raises(MCPError, match="corrected_content is required"):
            await admin.get_prompt("correct_memory", {"incorrect_memory_id": "abc"})
        with pytest.raises(MCPError, match="valid_from must be earlier than valid_until"):
            await admin.get_prompt(
                "correct_memory",
                {
                    "incorrect_memory_id": "abc",
                    "corrected_content": "x",
                    "valid_from": "2026-02-01",
                    "valid_until": "2026-01-01",
                },
            )
    async with harness.connect("/clients/web/mcp", WEB_TOKEN, mode) as web:
        with pytest.raises(MCPError, match="unknown prompt"):
            await web.get_prompt(
                "correct_memory", {"incorrect_memory_id": "a", "corrected_content": "b"}
            )


async def test_an_unexpected_failure_is_a_generic_unavailable_result_logged_server_side(
    harness: Harness, caplog: pytest.LogCaptureFixture
) -> None:
    harness.service.store.close()  # every store call now raises "store is closed"
    async with harness.connect() as admin:
        error = failed(await admin.call_tool("search_context", {"query": "anything"}))
    assert error["code"] == "unavailable"
    assert "closed" not in error["message"]
    assert "store is closed" in caplog.text
