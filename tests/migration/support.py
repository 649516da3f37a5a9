"""The migrated corpus served for real: the app over loopback HTTP, the official MCP client.

The only stand-in is the external embedding model: ``HashingEmbedder`` named
``text-embedding-004`` at 768 dimensions plays Gemini's model for both the
original's writes (``OriginalMetaCortex.embed``) and this server's queries, as one
model would.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx2
import mcp_types as types
from google.cloud import firestore
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from metacortex.providers.offline_merge import SentenceUnionMerger
from metacortex.server import create_app
from metacortex.service import MemoryService
from metacortex.storage.base import MemoryStore
from tests.fakes import HashingEmbedder
from tests.migration.original_metacortex import (
    EMBEDDING_DIMENSIONS,
    EMBEDDING_MODEL,
    OriginalMetaCortex,
)
from tests.oauth_support import serving
from tests.server.conftest import ADMIN_TOKEN, make_settings
from tests.tool_results import payload


def original_model() -> HashingEmbedder:
    """The stand-in for Gemini ``text-embedding-004`` (768 numbers), the original's default."""
    return HashingEmbedder(EMBEDDING_DIMENSIONS, EMBEDDING_MODEL)


def the_original(client: firestore.Client) -> OriginalMetaCortex:
    model = original_model()
    return OriginalMetaCortex(client, lambda text: model.embed_documents([text])[0].tolist())


@contextmanager
def served(store: MemoryStore, directory: Path) -> Iterator[str]:
    """This server on ``store``, configured for the original's model, on a loopback port."""
    service = MemoryService(store, original_model(), merger=SentenceUnionMerger())
    app = create_app(make_settings(directory / "data"), service)
    with serving(app) as url:
        yield url + "/mcp"


@dataclass
class Tools:
    client: Client

    async def call(self, name: str, **arguments: Any) -> dict[str, Any]:
        return payload(await self.client.call_tool(name, arguments))

    async def refused(self, name: str, **arguments: Any) -> dict[str, str]:
        result = await self.client.call_tool(name, arguments)
        assert result.is_error, result.structured_content
        assert isinstance(result.content[0], types.TextContent)
        error: dict[str, str] = json.loads(result.content[0].text)["error"]
        return error


@asynccontextmanager
async def connected(url: str) -> AsyncIterator[Tools]:
    """The official MCP client on the admin endpoint, over real HTTP."""
    async with (
        httpx2.AsyncClient(headers={"authorization": f"Bearer {ADMIN_TOKEN}"}, timeout=60) as http,
        Client(streamable_http_client(url, http_client=http)) as client,
    ):
        yield Tools(client)
