"""Fixtures for the server tests: real SQLite stores, the real app, the real MCP client.

The only stand-ins are for external models (``tests.fakes``: a hashing embedder,
a fixed image describer). Everything else (guard, transport, tools, service,
store, events) is the production code, driven through HTTP.
"""

from __future__ import annotations

import hashlib
import json
import logging
import socket
import threading
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import httpx2
import pytest
import uvicorn
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from starlette.applications import Starlette

from metacortex.config import Settings
from metacortex.kernel.events import MEMORY_EVENTS
from metacortex.kernel.runtime import Runtime
from metacortex.providers.offline_merge import SentenceUnionMerger
from metacortex.server.app import create_app
from metacortex.service import MemoryService
from metacortex.storage.sqlite import SQLiteStore
from tests.fakes import FixedImageDescriber, HashingEmbedder

BASE_URL: Final = "http://localhost"
ADMIN_TOKEN: Final = "admin-" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6"
WEB_TOKEN: Final = "web-" + "Z9y8X7w6V5u4T3s2R1q0P9o8N7m6L5k4"
READER_TOKEN: Final = "reader-" + "Q1w2E3r4T5y6U7i8O9p0A1s2D3f4G5h6"
WEB_ORIGIN: Final = "https://chat.example.com"
HANDSHAKE_MODE: Final = "legacy"
STATELESS_MODE: Final = "2026-07-28"
JSON_HEADERS: Final = {
    "content-type": "application/json",
    "accept": "application/json, text/event-stream",
}


def client_profiles() -> list[dict[str, Any]]:
    """A browser-style connector and a read-only agent (stored by digest)."""
    return [
        {
            "id": "web",
            "token": WEB_TOKEN,
            "allowedTools": ["save_context", "search_context", "fetch_context"],
            "allowedOrigins": [WEB_ORIGIN],
            "allowUrlToken": True,
        },
        {
            "id": "reader",
            "token_sha256": hashlib.sha256(READER_TOKEN.encode()).hexdigest(),
            "allowedTools": ["search_context", "fetch_context", "list_context"],
            "allowedFilterStates": ["active", "wip"],
        },
    ]


def make_settings(data_dir: Path, **overrides: Any) -> Settings:
    values: dict[str, Any] = {
        "metacortex_data_dir": data_dir,
        "mcp_admin_token": ADMIN_TOKEN,
        "mcp_client_profiles_json": json.dumps(client_profiles()),
    }
    values.update(overrides)
    return Settings(_env_file=None, **values)  # type: ignore[call-arg]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def restore_logging() -> Iterator[None]:
    """serve and configure_logging set up process-wide logging; undo it for the next tests."""
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    mcp_level = logging.getLogger("mcp").level
    yield
    root.handlers[:] = handlers
    root.setLevel(level)
    logging.getLogger("mcp").setLevel(mcp_level)


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return make_settings(tmp_path / "data")


@pytest.fixture
def service(tmp_path: Path) -> Iterator[MemoryService]:
    store = SQLiteStore(tmp_path / "m.sqlite3")
    yield MemoryService(
        store, HashingEmbedder(), merger=SentenceUnionMerger(), describer=FixedImageDescriber()
    )
    store.close()


def http_client(
    app: Starlette, token: str | None = None, headers: dict[str, str] | None = None
) -> httpx2.AsyncClient:
    all_headers = dict(headers or {})
    if token is not None:
        all_headers["authorization"] = f"Bearer {token}"
    return httpx2.AsyncClient(
        transport=httpx2.ASGITransport(app=app), base_url=BASE_URL, headers=all_headers
    )


@dataclass
class Harness:
    """A started app (inside its lifespan) and ways to talk to it."""

    app: Starlette
    service: MemoryService

    @property
    def runtime(self) -> Runtime:
        runtime: Runtime = self.app.state.runtime
        return runtime

    def http(
        self, token: str | None = None, headers: dict[str, str] | None = None
    ) -> httpx2.AsyncClient:
        return http_client(self.app, token, headers)

    @asynccontextmanager
    async def connect(
        self, path: str = "/mcp", token: str = ADMIN_TOKEN, mode: str = STATELESS_MODE
    ) -> AsyncIterator[Client]:
        async with (
            self.http(token) as http,
            Client(streamable_http_client(BASE_URL + path, http_client=http), mode=mode) as client,
        ):
            yield client

    def events(self, collection: str = MEMORY_EVENTS) -> list[dict[str, Any]]:
        """Every event recorded so far (waits for the background writer)."""
        recorder = self.runtime.events
        if recorder is not None:
            recorder.flush()
        return self.service.store.read_events(collection)


@asynccontextmanager
async def started(settings: Settings, service: MemoryService) -> AsyncIterator[Harness]:
    app = create_app(settings, service)
    async with app.router.lifespan_context(app):
        yield Harness(app, service)


@pytest.fixture
async def harness(settings: Settings, service: MemoryService) -> AsyncIterator[Harness]:
    async with started(settings, service) as running:
        yield running


@dataclass
class LiveServer:
    url: str
    service: MemoryService
    app: Starlette

    def events(self) -> list[dict[str, Any]]:
        self.app.state.runtime.events.flush()  # wait for the background writer
        return self.service.store.read_events(MEMORY_EVENTS, limit=100_000)

    @asynccontextmanager
    async def connect(
        self, path: str, mode: str, headers: dict[str, str], query: str = ""
    ) -> AsyncIterator[Client]:
        async with (
            httpx2.AsyncClient(headers=headers, timeout=30) as http,
            Client(
                streamable_http_client(f"{self.url}{path}{query}", http_client=http), mode=mode
            ) as client,
        ):
            yield client


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    directory: Path = tmp_path_factory.mktemp("live")
    store = SQLiteStore(directory / "m.sqlite3")
    service = MemoryService(
        store, HashingEmbedder(), merger=SentenceUnionMerger(), describer=FixedImageDescriber()
    )
    app = create_app(make_settings(directory / "data"), service)
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(128)
    url = f"http://127.0.0.1:{listener.getsockname()[1]}"
    server = uvicorn.Server(uvicorn.Config(app, log_config=None, access_log=False))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [listener]}, daemon=True)
    thread.start()
    try:
        # Queued in the listening socket until uvicorn has started the app.
        assert httpx2.get(f"{url}/healthz", timeout=30).json() == {"status": "ok"}
        yield LiveServer(url, service, app)
    finally:
        server.should_exit = True
        thread.join(timeout=30)
        listener.close()
        store.close()
