"""The clients of the other memory servers, welcome (issue 40 §4).

What those clients do, as the seeds describe their servers: the .NET server's clients
send their key in ``X-Api-Key``; the TypeScript original's profiles may leave
``allowedTools`` out (its three browser tools); the .NET server's writers "forget"
their own memories. Each is checked through the official ``mcp`` SDK's ``Client``
over real loopback HTTP against uvicorn serving the app, on a real store (SQLite, and
the Firestore emulator where the store decides the answer).

A household: Ann and Cy, writers of ``family``, each with a stored client made the
way ``metacortex client add`` makes one (``ClientManager.create``, default tools);
``legacy``, an ``MCP_CLIENT_PROFILES_JSON`` entry of the original's shape, without
``allowedTools``; the owner with the admin token.
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from pydantic import SecretStr

from metacortex.access.model import Level, Person, Role
from metacortex.access.profiles import load_profiles, new_token
from metacortex.access.registry import Registry
from metacortex.cli.banner import banner
from metacortex.clients import ClientManager
from metacortex.config import Settings
from metacortex.kernel.events import MEMORY_EVENTS
from metacortex.kernel.logs import SERVER_LOGGER, JsonFormatter
from metacortex.providers.offline_merge import SentenceUnionMerger
from metacortex.server.app import create_app
from metacortex.service import MemoryService
from metacortex.storage.base import MemoryStore
from metacortex.storage.sqlite import SQLiteStore
from tests.fakes import HashingEmbedder
from tests.oauth_support import serving
from tests.spaces.world import STORES
from tests.tool_results import payload

pytestmark = pytest.mark.anyio

ADMIN_TOKEN: Final = "admin-" + "Xk4Pq9Lm2Nr7Ts5Vw8Yz3Bc6Df1Gh0Jk"
LEGACY_TOKEN: Final = "legacy-" + "Qw3Er5Ty7Ui9Op2As4Df6Gh8Jk1Lz0Xc"
WEB_ORIGIN: Final = "https://chat.example.com"
STATELESS: Final = "2026-07-28"
JSON_HEADERS: Final = {
    "content-type": "application/json",
    "accept": "application/json, text/event-stream",
}
# The original's profile shape: no allowedTools (its browser connector's three tools).
LEGACY_ENTRY: Final = {"id": "legacy", "token": LEGACY_TOKEN, "allowedOrigins": [WEB_ORIGIN]}


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def _settings(data_dir: Path) -> Settings:
    return Settings(
        _env_file=None,  # type: ignore[call-arg]
        metacortex_data_dir=data_dir,
        mcp_admin_token=SecretStr(ADMIN_TOKEN),
        mcp_client_profiles_json=SecretStr(json.dumps([LEGACY_ENTRY])),
    )


@dataclass
class Household:
    url: str
    service: MemoryService
    app: Any
    ann: Person
    cy: Person
    tokens: dict[str, str]  # "ann" / "cy": their stored clients' tokens

    @asynccontextmanager
    async def connect(self, path: str, headers: dict[str, str]) -> AsyncIterator[Client]:
        async with (
            httpx2.AsyncClient(headers=headers, timeout=60) as http,
            Client(streamable_http_client(self.url + path, http_client=http), mode=STATELESS) as c,
        ):
            yield c

    def as_(self, who: str, header: str = "authorization") -> Any:
        """``who``'s session at their stored client, the token in ``header``."""
        token = self.tokens[who]
        value = f"Bearer {token}" if header == "authorization" else token
        return self.connect(f"/clients/{who}-laptop/mcp", {header: value})

    def events(self) -> list[dict[str, Any]]:
        self.app.state.runtime.events.flush()  # wait for the background writer
        return self.service.store.read_events(MEMORY_EVENTS, limit=100_000)


@contextmanager
def _household(store: MemoryStore, data_dir: Path) -> Iterator[Household]:
    service = MemoryService(store, HashingEmbedder(), merger=SentenceUnionMerger())
    registry = Registry(store)
    registry.add_space("family", "Family")
    settings = _settings(data_dir)
    people = {
        name: registry.add_person(
            f"{name}@example.com", name.title(), Role.WRITER, {"family": Level.WRITE}
        )
        for name in ("ann", "cy")
    }
    manager = ClientManager(store, settings)
    tokens: dict[str, str] = {}
    for name in people:
        created = manager.create(
            f"{name}-laptop",
            person=f"{name}@example.com",
            spaces={"family": Level.WRITE},
            default_space="family",
        )
        tokens[name] = created.token
    app = create_app(settings, service)
    with serving(app) as url:
        yield Household(url, service, app, people["ann"], people["cy"], tokens)


@pytest.fixture
def household(tmp_path: Path) -> Iterator[Household]:
    store = SQLiteStore(tmp_path / "m.sqlite3")
    try:
        with _household(store, tmp_path / "data") as running:
            yield running
    finally:
        store.close()


@pytest.fixture(params=STORES)
def household_on_each_store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Household]:
    if request.param == "sqlite":
        store: MemoryStore = SQLiteStore(tmp_path / "m.sqlite3")
    else:
        store = request.getfixturevalue("firestore_store_factory")()
    try:
        with _household(store, tmp_path / "data") as running:
            yield running
    finally:
        if request.param == "sqlite":
            store.close()


async def _call(client: Client, tool: str, **arguments: Any) -> dict[str, Any]:
    return payload(await client.call_tool(tool, arguments))


async def _refused(session: Any) -> bool:
    """Whether the SDK client was refused (its word for a 401 or a 400 is ``MCPError``)."""
    refused = False
    try:
        async with session as client:
            await client.list_tools()
    except* MCPError:
        refused = True
    return refused


def _log_lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    """The server's log lines as written where logs are collected (``JsonFormatter``)."""
    formatter = JsonFormatter()
    return [formatter.format(r) for r in caplog.records if r.name == SERVER_LOGGER]


# ------------------------------------------------------------------ X-Api-Key
async def test_an_x_api_key_opens_the_admin_endpoint_and_a_stored_client_as_bearer_does(
    household: Household,
) -> None:
    async with household.connect("/mcp", {"x-api-key": ADMIN_TOKEN}) as owner:
        saved = await _call(
            owner, "save_context", content="The boiler was serviced in May", space="family"
        )
        assert saved["item"]["id"]
    async with household.as_("ann", header="x-api-key") as ann:
        me = await _call(ann, "who_am_i")
        found = await _call(ann, "search_context", query="boiler serviced")
    assert me["person"]["email"] == "ann@example.com"
    assert me["client"] == "ann-laptop"
    assert [m["id"] for m in found["matches"]] == [saved["item"]["id"]]


async def test_a_wrong_x_api_key_is_refused_as_a_wrong_bearer_token_is(
    household: Household,
) -> None:
    assert await _refused(household.connect("/mcp", {"x-api-key": new_token()}))
    async with httpx2.AsyncClient(base_url=household.url, headers=JSON_HEADERS) as http:
        wrong_key = await http.post("/mcp", json={}, headers={"x-api-key": new_token()})
        wrong_bearer = await http.post(
            "/mcp", json={}, headers={"authorization": f"Bearer {new_token()}"}
        )
    assert wrong_key.status_code == wrong_bearer.status_code == 401
    assert wrong_key.json() == wrong_bearer.json()


async def test_bearer_and_a_different_x_api_key_together_are_refused_and_the_same_token_passes(
    household: Household,
) -> None:
    ann = household.tokens["ann"]
    path = "/clients/ann-laptop/mcp"
    async with household.connect(path, {"authorization": f"Bearer {ann}", "x-api-key": ann}) as c:
        assert "search_context" in {tool.name for tool in (await c.list_tools()).tools}

    # Each header holds a valid token of its own: which one was meant cannot be told.
    both = {"authorization": f"Bearer {ann}", "x-api-key": household.tokens["cy"]}
    assert await _refused(household.connect(path, both))
    async with httpx2.AsyncClient(base_url=household.url, headers=JSON_HEADERS) as http:
        answer = await http.post(path, json={}, headers=both)
    assert answer.status_code == 400
    assert answer.json()["error"]["code"] == "invalid_request"
    assert "X-Api-Key" in answer.json()["error"]["message"]
    rejected = [e for e in household.events() if e.get("reason") == "conflicting_credentials"]
    assert len(rejected) == 2


async def test_a_browser_preflight_may_ask_for_the_x_api_key_header(
    household: Household,
) -> None:
    async with httpx2.AsyncClient(base_url=household.url) as http:
        answer = await http.options(
            "/clients/legacy/mcp",
            headers={
                "origin": WEB_ORIGIN,
                "access-control-request-method": "POST",
                "access-control-request-headers": "content-type, x-api-key",
            },
        )
    assert answer.status_code == 204
    allowed = {h.strip() for h in answer.headers["access-control-allow-headers"].split(",")}
    assert allowed == {"content-type", "x-api-key"}


async def test_no_token_sent_in_x_api_key_reaches_a_log_line_or_an_event(
    household: Household, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="metacortex")
    refused = new_token()
    async with household.as_("ann", header="x-api-key") as ann:
        await _call(ann, "search_context", query="anything")
    assert await _refused(household.connect("/mcp", {"x-api-key": refused}))

    written = "\n".join(_log_lines(caplog))
    assert "ann-laptop" in written  # the lines were captured
    events = json.dumps(household.events())
    for secret in (household.tokens["ann"], refused):
        assert secret not in written
        assert secret not in events


# ------------------------------------------------------- allowedTools left out
async def test_an_entry_without_allowed_tools_is_served_the_originals_three_browser_tools(
    household: Household, tmp_path: Path
) -> None:
    headers = {"authorization": f"Bearer {LEGACY_TOKEN}"}
    async with household.connect("/clients/legacy/mcp", headers) as legacy:
        tools = [tool.name for tool in (await legacy.list_tools()).tools]
        saved = await _call(legacy, "save_context", content="Bins go out on Tuesday nights")
        fetched = await _call(legacy, "fetch_context", id=saved["item"]["id"])
        other = await legacy.call_tool("list_context", {})
    assert tools == ["save_context", "search_context", "fetch_context"]
    assert fetched["item"]["content"] == "Bins go out on Tuesday nights"
    assert other.is_error

    # What `metacortex serve` prints says what the entry was given.
    text = banner(
        url=household.url,
        data_dir=tmp_path,
        profiles=load_profiles(_settings(tmp_path / "data")),
        token_path=None,
        new_token=None,
        passphrase_set=True,
        command=lambda rest: f"metacortex {rest}",
    )
    [line] = [line for line in text.splitlines() if "legacy" in line and "allowedTools" in line]
    assert "save_context, search_context, fetch_context" in line


# ------------------------------------------------------- a writer's own memories
async def test_a_writer_retires_their_own_memory_with_a_default_tool_but_not_anothers(
    household_on_each_store: Household,
) -> None:
    household = household_on_each_store
    async with household.as_("cy") as cy:
        cys = await _call(cy, "save_context", content="Cy parks the car on the left side")
    async with household.as_("ann") as ann:
        tools = {tool.name for tool in (await ann.list_tools()).tools}
        own = await _call(ann, "save_context", content="Ann's dentist is on Friday at nine")
        retired = await _call(ann, "deprecate_context", id=own["item"]["id"])
        kept = await _call(ann, "deprecate_context", id=cys["item"]["id"])
        fetched = await _call(ann, "fetch_context", id=cys["item"]["id"])
    assert "deprecate_context" in tools
    assert retired["item"]["branch_state"] == "deprecated"
    assert "contested_ids" not in retired
    assert kept["contested_ids"] == [cys["item"]["id"]]
    assert kept["item"]["branch_state"] == "active"
    assert fetched["item"]["metadata"]["branch_state"] == "active"


# ------------------------------------------------------------ the tool call's log line
async def test_each_tool_call_line_names_space_person_and_role_never_the_query(
    household: Household, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="metacortex")
    query = "zebracorn tapestry whereabouts"
    async with household.as_("ann") as ann:
        await _call(ann, "save_context", content="The zebracorn tapestry hangs in the hall")
        await _call(ann, "search_context", query=query)
        elsewhere = await ann.call_tool("search_context", {"query": query, "space": "nowhere"})
    assert elsewhere.is_error

    lines = [json.loads(line) for line in _log_lines(caplog)]
    calls = [line for line in lines if line.get("tool_name") == "search_context"]
    assert [(c["space"], c["person"], c["role"], c["status"]) for c in calls] == [
        ("family", household.ann.id, "writer", "ok"),
        ("not held", household.ann.id, "writer", "error"),
    ]
    written = "\n".join(_log_lines(caplog))
    assert "zebracorn" not in written
    assert "nowhere" not in written
    assert "zebracorn" not in json.dumps(household.events())


# ----------------------------------------------------------------- keyword search
async def test_search_context_finds_a_ticket_number_by_keyword_alone_or_beside_a_query(
    household: Household, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="metacortex")
    async with household.as_("ann") as ann:
        tools = {tool.name: tool for tool in (await ann.list_tools()).tools}
        ticket = await _call(ann, "save_context", content="INC-4821: checkout timed out")
        await _call(ann, "save_context", content="INC-48210: checkout was slow, another day")
        await _call(ann, "save_context", content="Checkout timed out twice in the spring")
        alone = await _call(ann, "search_context", keyword="inc-4821")
        beside = await _call(ann, "search_context", query="checkout timed out", keyword="INC-4821")
        neither = await ann.call_tool("search_context", {})

    schema = tools["search_context"].input_schema
    assert "keyword" in schema["properties"]
    assert "required" not in schema or "query" not in schema["required"]
    assert [m["id"] for m in alone["matches"]] == [ticket["item"]["id"]]
    assert [m["id"] for m in beside["matches"]] == [ticket["item"]["id"]]
    assert neither.is_error
    # The keyword is a query's kind of text: its length and digest only, in the event.
    [event] = [
        e
        for e in household.events()
        if e.get("tool_name") == "search_context"
        and "keyword" in e["request"]
        and "query" not in e["request"]
    ]
    assert event["request"]["keyword"]["chars"] == len("inc-4821")
    assert "inc-4821" not in json.dumps(household.events()).lower()
    assert "inc-4821" not in "\n".join(_log_lines(caplog)).lower()
