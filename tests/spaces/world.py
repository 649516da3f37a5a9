"""One store (SQLite or the Firestore emulator) with the team on it, served over real
loopback HTTP, and the four routes a credential reaches it by.

- ``admin``: ``/mcp`` with ``MCP_ADMIN_TOKEN`` (the owner, every space);
- ``client``: Ann's stored client endpoint ``/clients/ann-laptop/mcp``;
- ``oauth``: an OAuth access token of Ann's grant at ``/mcp``;
- ``stdio``: ``metacortex stdio --client ann-laptop``, a real subprocess on the same
  store, driven by the SDK's stdio client;
- ``environment``: Ann's client defined in ``MCP_CLIENT_PROFILES_JSON`` (an entry of the
  very shape of the stored one, with the same grants), ``/clients/ann-desk/mcp``;
- ``environment-stdio``: ``metacortex stdio --client ann-desk``, that variable in the
  subprocess's environment.

Every request goes through the official ``mcp`` SDK's ``Client``. Over HTTP the raw
response body of each request is kept as well (``WireTap``), so two answers can be
compared byte for byte; over stdio the SDK's parsed message is compared (the server
serializes equal messages to equal bytes).

The models: the real local embedder (``MiniLMEmbedder``) in the server and in the
stdio process alike, since both write to one store bound to one embedding model.
"""

from __future__ import annotations

import functools
import json
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, Literal

import httpx2
import mcp_types as types
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from pydantic import SecretStr

from metacortex.access.profiles import new_token
from metacortex.config import Settings
from metacortex.providers.base import Embedder
from metacortex.providers.offline_merge import SentenceUnionMerger
from metacortex.server.app import create_app
from metacortex.service import MemoryService
from metacortex.storage.base import MemoryStore
from metacortex.storage.sqlite import SQLiteStore
from tests.firestore_support import Emulator
from tests.oauth_support import loopback_listener, serving
from tests.spaces.team import (
    CLIENT_ID,
    GRANTS,
    OWN,
    Team,
    add_ann_client,
    build_team,
    client_entry,
    mint_grant,
)

StoreKind = Literal["sqlite", "firestore"]
RouteName = Literal["admin", "client", "oauth", "stdio", "environment", "environment-stdio"]
ROUTES: Final[tuple[RouteName, ...]] = (
    "admin",
    "client",
    "oauth",
    "stdio",
    "environment",
    "environment-stdio",
)
STDIO_ROUTES: Final[frozenset[RouteName]] = frozenset({"stdio", "environment-stdio"})
# Ann's client of MCP_CLIENT_PROFILES_JSON: the stored one's entry, under another id.
ENVIRONMENT_CLIENT_ID: Final = "ann-desk"
ADMIN_TOKEN: Final = "admin-" + "S1p2A3c4E5s6I7s8O9l0A1t2I3o4N5x6"
# A project of its own on the emulator: the contract suites wipe theirs per test.
FIRESTORE_PROJECT: Final = "demo-metacortex-spaces"
STORES: Final = ["sqlite", pytest.param("firestore", marks=pytest.mark.firestore)]


@functools.cache
def local_embedder() -> Embedder:
    local = pytest.importorskip(
        "metacortex.providers.local", reason="LOCAL EMBEDDER NOT AVAILABLE: stdio cannot start"
    )
    embedder: Embedder = local.MiniLMEmbedder.load()
    return embedder


@dataclass
class World:
    kind: StoreKind
    store: MemoryStore
    service: MemoryService
    team: Team
    url: str
    data_dir: Path
    client_token: str
    grant_id: str
    oauth_token: str
    stdio_env: dict[str, str]
    environment_token: str
    profiles_json: str  # MCP_CLIENT_PROFILES_JSON, as the server and stdio read it

    def credential(self, route: RouteName) -> str:
        """The credential id a route's calls are recorded under (``Access.principal``)."""
        return {
            "admin": "default",
            "client": CLIENT_ID,
            "oauth": f"oauth-{self.grant_id}",
            "stdio": CLIENT_ID,
            "environment": ENVIRONMENT_CLIENT_ID,
            "environment-stdio": ENVIRONMENT_CLIENT_ID,
        }[route]

    @asynccontextmanager
    async def connect(self, route: RouteName) -> AsyncIterator[Connection]:
        if route in STDIO_ROUTES:
            server = StdioServerParameters(
                command=sys.executable,
                args=[
                    "-m",
                    "metacortex.cli.main",
                    "stdio",
                    "--data-dir",
                    str(self.data_dir),
                    "--client",
                    self.credential(route),
                ],
                env=self.stdio_env | {"MCP_CLIENT_PROFILES_JSON": self.profiles_json},
                cwd=self.data_dir.parent,
            )
            async with Client(server, mode="legacy") as client:
                yield Connection(client, None)
            return
        path, token = {
            "admin": ("/mcp", ADMIN_TOKEN),
            "client": (f"/clients/{CLIENT_ID}/mcp", self.client_token),
            "oauth": ("/mcp", self.oauth_token),
            "environment": (f"/clients/{ENVIRONMENT_CLIENT_ID}/mcp", self.environment_token),
        }[route]
        tap = WireTap()
        async with (
            httpx2.AsyncClient(
                transport=tap, headers={"authorization": f"Bearer {token}"}, timeout=60
            ) as http,
            Client(
                streamable_http_client(self.url + path, http_client=http), mode="2026-07-28"
            ) as client,
        ):
            yield Connection(client, tap)


class WireTap(httpx2.AsyncBaseTransport):
    """The real HTTP transport, keeping every response's status and body as received."""

    def __init__(self) -> None:
        self._inner = httpx2.AsyncHTTPTransport()
        self.answers: list[tuple[int, bytes]] = []

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        response = await self._inner.handle_async_request(request)
        body = await response.aread()
        await response.aclose()
        self.answers.append((response.status_code, body))
        return httpx2.Response(
            response.status_code, headers=response.headers, content=body, request=request
        )

    async def aclose(self) -> None:
        await self._inner.aclose()


@dataclass
class Answer:
    """What a call came to, as the client saw it (``shown``: the SDK's message as JSON)
    and, over HTTP, the raw response (status and body)."""

    ok: bool
    payload: dict[str, Any]  # a result's structured content / JSON; an error's fields
    shown: str
    wire: tuple[int, bytes] | None
    text: str = ""  # a prompt's message text


@dataclass
class Connection:
    client: Client
    tap: WireTap | None

    def _wire(self) -> tuple[int, bytes] | None:
        return self.tap.answers[-1] if self.tap is not None else None

    async def tool(self, name: str, arguments: dict[str, Any]) -> Answer:
        result = await self.client.call_tool(name, arguments)
        first = result.content[0]
        assert isinstance(first, types.TextContent)
        parsed = json.loads(first.text)
        return Answer(not result.is_error, parsed, result.model_dump_json(), self._wire())

    async def resource(self, uri: str) -> Answer:
        try:
            result = await self.client.read_resource(uri)
        except MCPError as error:
            return self._error(error)
        content = result.contents[0]
        assert isinstance(content, types.TextResourceContents)
        return Answer(True, json.loads(content.text), result.model_dump_json(), self._wire())

    async def prompt(self, name: str, arguments: dict[str, str]) -> Answer:
        try:
            result = await self.client.get_prompt(name, arguments)
        except MCPError as error:
            return self._error(error)
        message = result.messages[0].content
        assert isinstance(message, types.TextContent)
        return Answer(True, {}, result.model_dump_json(), self._wire(), message.text)

    def _error(self, error: MCPError) -> Answer:
        fields = {"code": error.code, "message": error.message, "data": error.data}
        return Answer(False, fields, json.dumps(fields, sort_keys=True), self._wire())


# ------------------------------------------------------------------- building one
def _settings(data_dir: Path, profiles_json: str) -> Settings:
    return Settings(
        _env_file=None,  # type: ignore[call-arg]
        metacortex_data_dir=data_dir,
        mcp_admin_token=SecretStr(ADMIN_TOKEN),
        mcp_client_profiles_json=SecretStr(profiles_json),
        metacortex_oauth=True,
        metacortex_rate_limit_per_minute=1_000_000,
        metacortex_admin_rate_limit_per_minute=1_000_000,
    )


@contextmanager
def open_store(
    kind: StoreKind, data_dir: Path, request: pytest.FixtureRequest
) -> Iterator[tuple[MemoryStore, dict[str, str]]]:
    """The store, and what the stdio process needs in its environment to open it too."""
    if kind == "sqlite":
        store: MemoryStore = SQLiteStore(data_dir / "metacortex.sqlite3")
        try:
            yield store, {}
        finally:
            store.close()
        return
    emulator: Emulator = request.getfixturevalue("firestore_emulator")
    emulator.wipe(FIRESTORE_PROJECT)
    environment = {
        "FIRESTORE_EMULATOR_HOST": emulator.host,
        "METACORTEX_STORE": "firestore",
        "GOOGLE_CLOUD_PROJECT": FIRESTORE_PROJECT,
    }
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("FIRESTORE_EMULATOR_HOST", emulator.host)
        from metacortex.storage.firestore import FirestoreStore

        firestore = FirestoreStore.from_settings(
            Settings(
                _env_file=None,  # type: ignore[call-arg]
                metacortex_store="firestore",
                google_cloud_project=FIRESTORE_PROJECT,
            )
        )
        try:
            yield firestore, environment
        finally:
            firestore.close()


@contextmanager
def world(kind: StoreKind, directory: Path, request: pytest.FixtureRequest) -> Iterator[World]:
    data_dir = directory / "data"
    data_dir.mkdir(mode=0o700)
    with open_store(kind, data_dir, request) as (store, environment):
        service = MemoryService(store, local_embedder(), merger=SentenceUnionMerger())
        team = build_team(store, service)
        client_token = add_ann_client(team)
        environment_token = new_token()
        profiles_json = json.dumps(
            [
                client_entry(
                    ENVIRONMENT_CLIENT_ID, environment_token, team.ann.email or "", GRANTS, OWN
                )
            ]
        )
        app = create_app(_settings(data_dir, profiles_json), service)
        listener = loopback_listener()
        url = f"http://127.0.0.1:{listener.getsockname()[1]}"
        grant_id, oauth_token = mint_grant(
            store, url + "/mcp", team.ann.id, GRANTS, OWN, preset="curator"
        )
        with serving(app, listener) as served:
            assert httpx2.get(f"{served}/healthz", timeout=30).status_code == 200
            yield World(
                kind,
                store,
                service,
                team,
                served,
                data_dir,
                client_token,
                grant_id,
                oauth_token,
                {"METACORTEX_EMBEDDINGS": "local", **environment},
                environment_token,
                profiles_json,
            )
