"""The MCP resources and the ``context`` prompt through the real MCP client (in-process
ASGI, both protocol eras), each profile seeing exactly what its tools let it see."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any, Final

import mcp_types as types
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError

from metacortex.service import Access, MemoryService
from tests.server.conftest import (
    HANDSHAKE_MODE,
    READER_TOKEN,
    STATELESS_MODE,
    WEB_TOKEN,
    Harness,
    client_profiles,
    make_settings,
    started,
)

pytestmark = pytest.mark.anyio
ERAS = pytest.mark.parametrize("mode", [HANDSHAKE_MODE, STATELESS_MODE])
SEARCHER_TOKEN: Final = "searcher-" + "Kd8sJ2mQ9xLp4RtV7nBc3WzY6hFg1EaU"
WRITER_TOKEN: Final = "writer-" + "Pq7Lm2Nx8Vb4Cz9Ad1Sf6Gh3Jk5Wr0Ty"
DRAFTS_TOKEN: Final = "drafts-" + "Yu3Io8Pa1Sd6Fg4Hj9Kl2Zx7Cv5Bn0Mq"
TOKENS: Final = {
    "web": WEB_TOKEN,
    "reader": READER_TOKEN,
    "searcher": SEARCHER_TOKEN,
    "writer": WRITER_TOKEN,
    "drafts": DRAFTS_TOKEN,
}


@pytest.fixture
async def harness(tmp_path: Path, service: MemoryService) -> AsyncIterator[Harness]:
    """The standard profiles plus: a search-only agent (no fetch_context), a write-only
    one, and a curator that may read only drafts."""
    profiles = [
        *client_profiles(),
        {"id": "searcher", "token": SEARCHER_TOKEN, "allowedTools": ["search_context"]},
        {"id": "writer", "token": WRITER_TOKEN, "allowedTools": ["save_context"]},
        {
            "id": "drafts",
            "token": DRAFTS_TOKEN,
            "allowedTools": ["list_context", "fetch_context"],
            "allowedFilterStates": ["wip"],
        },
    ]
    settings = make_settings(tmp_path / "data", mcp_client_profiles_json=json.dumps(profiles))
    async with started(settings, service) as running:
        yield running


def connect(harness: Harness, profile: str, mode: str = STATELESS_MODE) -> Any:
    if profile == "default":
        return harness.connect(mode=mode)
    return harness.connect(f"/clients/{profile}/mcp", TOKENS[profile], mode)


async def read_json(client: Client, uri: str) -> Any:
    result = await client.read_resource(uri, cache_mode="bypass")
    [content] = result.contents
    assert isinstance(content, types.TextResourceContents)
    assert content.uri == uri
    assert content.mime_type == "application/json"
    return json.loads(content.text)


def seed(service: MemoryService) -> dict[str, str]:
    admin = Access.admin()
    ids = {}
    ids["old"] = service.save(admin, content="The fence is green.", topic="garden")["item"]["id"]
    ids["tomato"] = service.save(admin, content="Tomatoes need sun.", topic="garden")["item"]["id"]
    ids["draft"] = service.save(admin, content="Maybe basil.", topic="garden", draft=True)["item"][
        "id"
    ]
    ids["invoice"] = service.save(admin, content="Invoice due Friday.", topic="work")["item"]["id"]
    ids["secret"] = service.save(admin, content="Archived plan.", topic="vault")["item"]["id"]
    service.deprecate(admin, id=ids["old"])
    service.deprecate(admin, id=ids["secret"])
    return ids


# ------------------------------------------------------------------ capabilities
@pytest.mark.parametrize("mode", [HANDSHAKE_MODE, "auto"])  # auto: server/discover
async def test_resources_and_prompts_are_declared_in_the_capabilities(
    harness: Harness, mode: str
) -> None:
    async with connect(harness, "default", mode) as client:
        capabilities = client.server_capabilities
    assert capabilities.resources is not None
    assert not capabilities.resources.subscribe  # a stateless server pushes nothing
    assert capabilities.prompts is not None


@ERAS
async def test_each_profile_lists_the_resources_its_tools_allow(
    harness: Harness, mode: str
) -> None:
    listed: dict[str, tuple[list[str], list[str], list[str]]] = {}
    for profile in ("default", "reader", "searcher", "writer", "drafts"):
        async with connect(harness, profile, mode) as client:
            resources = [r.uri for r in (await client.list_resources()).resources]
            templates = [
                t.uri_template for t in (await client.list_resource_templates()).resource_templates
            ]
            prompts = [p.name for p in (await client.list_prompts()).prompts]
        listed[profile] = (resources, templates, prompts)

    everything = ["memory://spaces", "memory://topics", "memory://graph", "memory://recent"]
    assert listed["default"] == (everything, ["memory://{id}"], ["correct_memory", "context"])
    assert listed["reader"] == (everything, ["memory://{id}"], ["context"])
    # search only: summaries, never a record body by id
    assert listed["searcher"] == (everything, [], ["context"])
    # writes only: nothing to read
    assert listed["writer"] == ([], [], [])
    # drafts only: no active memories to show
    assert listed["drafts"] == (
        ["memory://spaces", "memory://topics", "memory://graph"],
        ["memory://{id}"],
        [],
    )


# ------------------------------------------------------------------------ topics
@ERAS
async def test_topics_count_only_the_states_a_profile_may_read(harness: Harness, mode: str) -> None:
    seed(harness.service)
    async with connect(harness, "default", mode) as admin:
        everything = await read_json(admin, "memory://topics")
    async with connect(harness, "reader", mode) as reader:
        scoped = await read_json(reader, "memory://topics")
    async with connect(harness, "drafts", mode) as drafts:
        wip = await read_json(drafts, "memory://topics")

    assert everything["topics"] == [
        {"topic": "garden", "counts": {"active": 1, "wip": 1, "deprecated": 1}, "total": 3},
        {"topic": "vault", "counts": {"deprecated": 1}, "total": 1},
        {"topic": "work", "counts": {"active": 1}, "total": 1},
    ]
    # active and wip only: the deprecated records are neither counted nor named
    assert scoped == {
        "space": "default",
        "topics": [
            {"topic": "garden", "counts": {"active": 1, "wip": 1}, "total": 2},
            {"topic": "work", "counts": {"active": 1}, "total": 1},
        ],
        "readable_states": ["active", "wip"],
    }
    assert wip["topics"] == [{"topic": "garden", "counts": {"wip": 1}, "total": 1}]


# ------------------------------------------------------------------------ recent
@ERAS
async def test_recent_is_the_newest_active_memories_with_bodies_only_where_fetch_is_allowed(
    harness: Harness, mode: str
) -> None:
    ids = seed(harness.service)
    async with connect(harness, "reader", mode) as reader:
        full = await read_json(reader, "memory://recent")
    async with connect(harness, "searcher", mode) as searcher:
        summaries = await read_json(searcher, "memory://recent")

    assert [item["id"] for item in full["items"]] == [ids["invoice"], ids["tomato"]]
    assert full["items"][0]["content"] == "Invoice due Friday."
    assert full["items"][0]["metadata"]["branch_state"] == "active"
    assert full["more"] is False
    assert [item["id"] for item in summaries["items"]] == [ids["invoice"], ids["tomato"]]
    for item in summaries["items"]:
        assert "content" not in item
        assert set(item) == {"id", "summary", "metadata"}


async def test_recent_shows_twenty_and_says_more_exist(harness: Harness) -> None:
    admin = Access.admin()
    for i in range(23):
        harness.service.save(admin, content=f"Fact number {i}.", topic="facts")
    async with connect(harness, "default") as client:
        recent = await read_json(client, "memory://recent")
    assert len(recent["items"]) == 20
    assert recent["items"][0]["content"] == "Fact number 22."
    assert recent["more"] is True


# ------------------------------------------------------------------ memory://{id}
@ERAS
async def test_a_memory_resource_is_exactly_what_fetch_context_returns(
    harness: Harness, mode: str
) -> None:
    ids = seed(harness.service)
    async with connect(harness, "default", mode) as client:
        item = await read_json(client, f"memory://{ids['tomato']}")
        fetched = await client.call_tool("fetch_context", {"id": ids["tomato"]})
    assert fetched.structured_content is not None
    assert item == fetched.structured_content["item"]


@ERAS
async def test_a_memory_the_profile_may_not_read_is_not_found_like_fetch_context(
    harness: Harness, mode: str
) -> None:
    ids = seed(harness.service)
    async with connect(harness, "web", mode) as web:  # active only
        with pytest.raises(MCPError) as draft:
            await web.read_resource(f"memory://{ids['draft']}")
        tool = await web.call_tool("fetch_context", {"id": ids["draft"]})
    assert draft.value.code == types.INVALID_PARAMS
    assert isinstance(tool.content[0], types.TextContent)
    assert draft.value.message == json.loads(tool.content[0].text)["error"]["message"]
    assert draft.value.error.data == {"uri": f"memory://{ids['draft']}", "code": "not_found"}


async def test_an_erased_memory_resource_says_it_was_erased(harness: Harness) -> None:
    ids = seed(harness.service)
    harness.service.erase(Access.admin(), ids=[ids["tomato"]], erased_by="the test")
    async with connect(harness, "default") as client:
        with pytest.raises(MCPError, match=r"erased on .* by the test; its content is gone"):
            await client.read_resource(f"memory://{ids['tomato']}")


@ERAS
async def test_a_resource_the_profile_is_not_offered_is_an_unknown_resource(
    harness: Harness, mode: str
) -> None:
    ids = seed(harness.service)
    async with connect(harness, "searcher", mode) as searcher:
        with pytest.raises(MCPError, match="unknown resource") as body:
            await searcher.read_resource(f"memory://{ids['tomato']}")  # no fetch_context
    async with connect(harness, "writer", mode) as writer:
        with pytest.raises(MCPError, match="offers: no resources") as topics:
            await writer.read_resource("memory://topics")
    async with connect(harness, "drafts", mode) as drafts:
        with pytest.raises(MCPError, match="unknown resource 'memory://recent'") as recent:
            await drafts.read_resource("memory://recent")
    for refused in (body, topics, recent):
        assert refused.value.code == types.INVALID_PARAMS
    assert "Tomatoes" not in str(body.value)


async def test_malformed_and_foreign_uris_are_refused_with_the_uri(harness: Harness) -> None:
    async with connect(harness, "default") as client:
        for uri, message in (
            ("memory://", "the id is missing"),
            ("memory://not an id!", "id"),
            ("file:///etc/passwd", "unknown resource"),
            ("test://static-text", "unknown resource"),
        ):
            with pytest.raises(MCPError, match=message) as refused:
                await client.read_resource(uri)
            assert refused.value.code == types.INVALID_PARAMS
            assert refused.value.error.data["uri"] == uri


# ---------------------------------------------------------------- context prompt
def prompt_text(result: types.GetPromptResult) -> str:
    [message] = result.messages
    assert message.role == "user"
    assert isinstance(message.content, types.TextContent)
    return message.content.text


@ERAS
async def test_the_context_prompt_holds_a_topics_newest_active_memories_in_full(
    harness: Harness, mode: str
) -> None:
    ids = seed(harness.service)
    async with connect(harness, "reader", mode) as reader:
        garden = prompt_text(await reader.get_prompt("context", {"topic": "garden"}))
        everything = prompt_text(await reader.get_prompt("context"))

    assert "Tomatoes need sun." in garden
    assert ids["tomato"] in garden
    for absent in ("Maybe basil.", "The fence is green.", "Invoice due Friday."):
        assert absent not in garden  # a draft, a deprecated memory, another topic
    assert everything.index("Invoice due Friday.") < everything.index("Tomatoes need sun.")
    assert "Only the" not in everything  # nothing was left out


async def test_the_context_prompt_stays_within_the_budget_and_says_what_it_left_out(
    harness: Harness,
) -> None:
    admin = Access.admin()
    for i in range(30):
        harness.service.save(admin, content=f"Note {i}: " + "detail " * 40, topic="notes")
    async with connect(harness, "default") as client:
        small = prompt_text(await client.get_prompt("context", {"max_chars": "1500"}))
        large = prompt_text(await client.get_prompt("context", {"max_chars": "200000"}))

    assert len(small) <= 1500
    assert "Note 29:" in small  # the newest first
    assert "Note 0:" not in small
    shown = small.count("\n## ")
    assert f"(Only the {shown} most recent fit within 1500 characters;" in small
    assert all(f"Note {i}:" in large for i in range(30))
    assert "Only the" not in large


async def test_the_context_prompt_cuts_a_single_memory_longer_than_the_budget(
    harness: Harness,
) -> None:
    harness.service.save(Access.admin(), content="long " * 2000 + "END", topic="big")
    async with connect(harness, "default") as client:
        text = prompt_text(
            await client.get_prompt("context", {"topic": "big", "max_chars": "1000"})
        )
    assert len(text) <= 1000
    assert "…" in text
    assert "END" not in text


async def test_the_context_prompt_gives_summaries_where_fetch_context_is_not_offered(
    harness: Harness,
) -> None:
    long_fact = "The deployment checklist: " + "step " * 100 + "FINAL-STEP"
    harness.service.save(Access.admin(), content=long_fact, topic="ops")
    async with connect(harness, "searcher") as searcher:
        text = prompt_text(await searcher.get_prompt("context", {"topic": "ops"}))
    assert "The deployment checklist:" in text
    assert "FINAL-STEP" not in text
    assert "does not offer the full text" in text


async def test_the_context_prompt_says_so_when_a_topic_holds_nothing(harness: Harness) -> None:
    async with connect(harness, "default") as client:
        text = prompt_text(await client.get_prompt("context", {"topic": "empty"}))
    assert text == (
        "MetaCortex holds no active memories about the topic 'empty' in the space 'default' yet."
    )


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"max_chars": "lots"}, "max_chars must be a whole number"),
        ({"max_chars": "10"}, "max_chars must be between 1000 and 200000; got 10"),
        ({"max_chars": "-5"}, "max_chars must be a whole number"),
        ({"limit": "3"}, "unknown argument 'limit'; accepted: max_chars, space, topic"),
        ({"topic": "bad topic!"}, "topic"),
    ],
)
async def test_bad_context_prompt_arguments_are_invalid_params(
    harness: Harness, arguments: dict[str, str], message: str
) -> None:
    async with connect(harness, "default") as client:
        with pytest.raises(MCPError, match=message) as refused:
            await client.get_prompt("context", arguments)
    assert refused.value.code == types.INVALID_PARAMS


async def test_a_profile_that_cannot_read_active_memories_has_no_context_prompt(
    harness: Harness,
) -> None:
    async with connect(harness, "drafts") as drafts:
        with pytest.raises(MCPError, match="unknown prompt 'context'; this endpoint offers: no"):
            await drafts.get_prompt("context")


# ------------------------------------------------------------------------ events
async def test_resource_reads_and_prompt_gets_are_recorded_without_bodies(
    harness: Harness,
) -> None:
    ids = seed(harness.service)
    async with connect(harness, "reader") as reader:
        await read_json(reader, "memory://recent")
        await read_json(reader, f"memory://{ids['tomato']}")
        await reader.get_prompt("context", {"topic": "garden"})
        with pytest.raises(MCPError):
            await reader.read_resource("memory://01hzzzzzzzzzzzzzzzzzzzzzzz")

    events = [e for e in harness.events() if e["event_type"] in ("resource_read", "prompt_get")]
    assert [(e["event_type"], e["tool_name"], e["status"]) for e in events] == [
        ("resource_read", "recent", "ok"),
        ("resource_read", "memory", "ok"),
        ("prompt_get", "context", "ok"),
        ("resource_read", "memory", "error"),
    ]
    assert all(e["client_id"] == "reader" for e in events)
    assert events[0]["response"] == {"item_count": 2, "has_more": False}
    assert events[1]["response"] == {"id": ids["tomato"], "branch_state": "active"}
    assert events[3]["error"]["code"] == "not_found"
    assert "Tomatoes" not in json.dumps(events)
