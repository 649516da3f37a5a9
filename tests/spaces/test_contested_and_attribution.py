"""Over MCP, on SQLite and the Firestore emulator: nobody retires someone else's memory
behind their back (``contested_ids``), and every result shape names who wrote a
memory and who last changed its state (issue 30 §3 and §6).

Counterparts: the official ``mcp`` SDK's ``Client`` over the app's HTTP transport
(in-process ASGI), the real store. A household: Ann and Cy, writers of ``family``,
each with a client endpoint of their own; the owner with the admin token.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import httpx2
import mcp_types as types
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from pydantic import SecretStr

from metacortex.access.model import Level, Person, Role
from metacortex.access.profiles import new_token
from metacortex.access.registry import Registry
from metacortex.config import Settings
from metacortex.providers.offline_merge import SentenceUnionMerger
from metacortex.server.app import create_app
from metacortex.service import Access, MemoryService
from metacortex.storage.base import MemoryStore
from metacortex.storage.sqlite import SQLiteStore
from tests.fakes import HashingEmbedder
from tests.spaces.team import client_entry, store_client
from tests.spaces.world import STORES
from tests.tool_results import payload

pytestmark = pytest.mark.anyio

ADMIN_TOKEN: Final = "admin-" + "H0u5e7h0L9d2A4t6T8r1I3b5U7t9I2o4"
BASE: Final = "http://localhost"
FAMILY: Final = {"family": "write"}


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@dataclass
class Household:
    service: MemoryService
    registry: Registry
    ann: Person
    cy: Person
    tokens: dict[str, str]  # who -> token ("owner" is the admin token)
    app: Any

    def owner_in_console(self) -> Access:
        return Access.admin(principal="console", directory=self.registry.directory())

    @asynccontextmanager
    async def as_(self, who: str) -> AsyncIterator[Client]:
        """``who``'s MCP session: the owner at ``/mcp``, a person at their endpoint."""
        path = "/mcp" if who == "owner" else f"/clients/{who}-laptop/mcp"
        headers = {"authorization": f"Bearer {self.tokens[who]}"}
        async with (
            httpx2.AsyncClient(
                transport=httpx2.ASGITransport(app=self.app), base_url=BASE, headers=headers
            ) as http,
            Client(streamable_http_client(BASE + path, http_client=http), mode="2026-07-28") as c,
        ):
            yield c


@pytest.fixture(params=STORES)
async def household(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Household]:
    if request.param == "sqlite":
        store: MemoryStore = SQLiteStore(tmp_path / "m.sqlite3")
    else:
        store = request.getfixturevalue("firestore_store_factory")()
    service = MemoryService(store, HashingEmbedder(), merger=SentenceUnionMerger())
    registry = Registry(store)
    registry.add_space("family", "Family")
    people = {
        name: registry.add_person(
            f"{name}@example.com", name.title(), Role.WRITER, {"family": Level.WRITE}
        )
        for name in ("ann", "cy")
    }
    tokens = {"owner": ADMIN_TOKEN}
    for name, person in people.items():
        tokens[name] = new_token()
        store_client(
            store, client_entry(f"{name}-laptop", tokens[name], person.id, FAMILY, "family")
        )
    settings = Settings(
        _env_file=None,  # type: ignore[call-arg]
        metacortex_data_dir=tmp_path / "data",
        mcp_admin_token=SecretStr(ADMIN_TOKEN),
    )
    app = create_app(settings, service)
    try:
        async with app.router.lifespan_context(app):
            yield Household(service, registry, people["ann"], people["cy"], tokens, app)
    finally:
        if request.param == "sqlite":
            store.close()


async def _call(client: Client, tool: str, **arguments: Any) -> dict[str, Any]:
    return payload(await client.call_tool(tool, arguments))


async def _save(client: Client, content: str, **extra: Any) -> str:
    return str((await _call(client, "save_context", content=content, **extra))["item"]["id"])


async def _state(client: Client, memory_id: str) -> str:
    found = await _call(client, "fetch_context", id=memory_id)
    return str(found["item"]["metadata"]["branch_state"])


async def test_a_writer_leaves_another_persons_memory_as_it_is_and_names_it_contested(
    household: Household,
) -> None:
    async with household.as_("cy") as cy, household.as_("ann") as ann:
        hers = await _save(cy, "The boiler is serviced every October")
        newer = await _save(ann, "The boiler is serviced every November")
        deprecated = await _call(ann, "deprecate_context", id=hers, superseding_id=newer)

        mine = await _save(ann, "Packing list: passports.", draft=True)
        theirs = await _save(cy, "Packing list: sun cream.", draft=True)
        merged = await _call(ann, "consolidate_context", source_ids=[mine, theirs], topic="trip")

        states = {memory_id: await _state(cy, memory_id) for memory_id in (hers, theirs, mine)}

    assert deprecated["contested_ids"] == [hers]
    assert "written by someone else" in deprecated["message"]
    assert merged["contested_ids"] == [theirs]
    assert merged["deprecated_ids"] == [mine]
    assert "written by someone else" in merged["message"]
    assert states == {hers: "active", theirs: "wip", mine: "deprecated"}


async def test_the_owner_and_the_author_retire_and_merge_as_before(household: Household) -> None:
    async with household.as_("cy") as cy, household.as_("owner") as owner:
        hers = await _save(cy, "The bins go out on Tuesday")
        retired = await _call(owner, "deprecate_context", id=hers, space="family")
        drafts = [await _save(cy, f"Menu idea {n}.", draft=True) for n in (1, 2)]
        merged = await _call(
            owner, "consolidate_context", source_ids=drafts, topic="menu", space="family"
        )
        own = await _save(cy, "The bins go out on Wednesday")
        by_author = await _call(cy, "deprecate_context", id=own)
        changed = await _call(cy, "fetch_context", id=hers)

    assert "contested_ids" not in retired
    assert retired["item"]["branch_state"] == "deprecated"
    assert "contested_ids" not in merged
    assert merged["deprecated_ids"] == drafts
    assert "contested_ids" not in by_author
    assert by_author["item"]["branch_state"] == "deprecated"
    assert changed["item"]["metadata"]["changed_by"] == {
        "person_id": "owner",
        "name": "Owner",
        "client": "default",
    }


def _text(result: types.ReadResourceResult) -> dict[str, Any]:
    content = result.contents[0]
    assert isinstance(content, types.TextResourceContents)
    parsed: dict[str, Any] = json.loads(content.text)
    return parsed


async def test_every_result_shape_names_who_wrote_a_memory_and_who_changed_it(
    household: Household,
) -> None:
    ann_wrote = {"person_id": household.ann.id, "name": "Ann", "client": "ann-laptop"}
    owner_promoted = {"person_id": "owner", "name": "Owner", "client": "console"}
    owner_retired = {"person_id": "owner", "name": "Owner", "client": "default"}
    async with household.as_("ann") as ann, household.as_("owner") as owner:
        saved = await _call(
            ann, "save_context", content="The spare tent is in the loft", draft=True
        )
        draft = str(saved["item"]["id"])
        retire = await _save(ann, "The old tent is in the shed")
        household.service.promote(household.owner_in_console(), id=draft, space="family")
        await _call(owner, "deprecate_context", id=retire, space="family")

    async with household.as_("cy") as cy:
        found = await _call(cy, "search_context", query="spare tent loft")
        fetched = await _call(cy, "fetch_context", id=draft)
        retired = await _call(cy, "fetch_context", id=retire)
        listed = [
            item
            for state in ("active", "deprecated")
            for item in (await _call(cy, "list_context", filter_state=state))["items"]
        ]
        one = _text(await cy.read_resource(f"memory://{draft}"))
        recent = _text(await cy.read_resource("memory://recent"))
        prompt = await cy.get_prompt("context", {})
        chatgpt = json.loads(_first_text(await cy.call_tool("fetch", {"id": draft})))

    def authors(metadata: dict[str, Any]) -> tuple[Any, Any]:
        return metadata["created_by"], metadata["changed_by"]

    assert authors(saved["item"]["metadata"]) == (ann_wrote, None)
    assert authors(found["matches"][0]["metadata"]) == (ann_wrote, owner_promoted)
    assert authors(fetched["item"]["metadata"]) == (ann_wrote, owner_promoted)
    assert authors(retired["item"]["metadata"]) == (ann_wrote, owner_retired)
    assert {item["id"]: authors(item["metadata"]) for item in listed} == {
        draft: (ann_wrote, owner_promoted),
        retire: (ann_wrote, owner_retired),
    }
    assert authors(one["metadata"]) == (ann_wrote, owner_promoted)
    assert [authors(item["metadata"]) for item in recent["items"]] == [(ann_wrote, owner_promoted)]
    assert authors(chatgpt["metadata"]) == (ann_wrote, owner_promoted)
    message = prompt.messages[0].content
    assert isinstance(message, types.TextContent)
    assert f"by Ann, changed by Owner · id {draft}" in message.text


def _first_text(result: types.CallToolResult) -> str:
    assert not result.is_error, result.content
    first = result.content[0]
    assert isinstance(first, types.TextContent)
    return first.text
