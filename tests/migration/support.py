"""The original's corpus, and this server on it: the app over loopback, the real MCP client.

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
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx2
import mcp_types as types
from google.cloud import firestore
from google.cloud.firestore_v1.vector import Vector
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from metacortex.providers.offline_merge import SentenceUnionMerger
from metacortex.server.app import create_app
from metacortex.service import MemoryService
from metacortex.storage.base import MemoryStore
from tests.fakes import HashingEmbedder
from tests.migration.original_metacortex import (
    EMBEDDING_DIMENSIONS,
    EMBEDDING_MODEL,
    MEMORY_COLLECTION,
    OriginalMetaCortex,
    first_release_document,
    iso,
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


DAY_MS = 24 * 60 * 60 * 1000


def the_originals_corpus(original: OriginalMetaCortex, *, every_era: bool = True) -> dict[str, str]:
    """What a few weeks of the original's tools leave in Firestore."""
    ids: dict[str, str] = {}
    ids["design"] = original.remember(
        "Uploads use the Ktor client with a 30 second timeout.",
        "kmp-networking",
        artifact_refs=["gs://team-bucket/upload-diagram.png", " gs://team-bucket/retry.md "],
        origin="user_asserted",
        source_session="chat-2026-01-01",
    )
    ids["draft1"] = original.remember(
        "Draft: retries use exponential backoff.", "kmp-networking", draft=True
    )
    ids["draft2"] = original.remember(
        "Draft: the backoff is capped at 8 seconds.", "kmp-networking", draft=True
    )
    ids["merged"] = original.consolidate(
        "kmp-networking",
        [ids["draft1"], ids["draft2"]],
        "Retries use exponential backoff capped at 8 seconds.",
    )
    ids["wrong"] = original.remember("Release 2.0 ships in March.", "release-timeline")
    ids["right"] = original.remember(
        "Release 2.0 ships in April.", "release-timeline", origin="user_asserted"
    )
    original.deprecate(ids["wrong"], ids["right"], reason="corrected", initiator="user")
    ids["derived"] = original.remember(
        "Large uploads fail on slow networks because of the 30 second timeout.",
        "kmp-networking",
        derived_from=[ids["design"]],
        confidence=0.8,
        valid_from=original.now_ms - DAY_MS,
        valid_until=original.now_ms + 30 * DAY_MS,
    )
    ids["screenshot"] = original.remember(
        "Settings screen layout",
        "ui-settings",
        image_mime_type="image/png",
        image_summary="A settings screen with a dark mode toggle.",
    )
    ids["parked"] = original.remember("Old sync protocol notes.", "sync", branch_state="merged")
    ids["draft3"] = original.remember(
        "Draft: the settings widget uses Compose.", "ui-settings", draft=True
    )
    if not every_era:
        return ids
    first = original.auto_id()
    original.client.collection(MEMORY_COLLECTION).document(first).set(
        first_release_document(
            original.embed,
            "Use MVI for the Android screens.",
            "android",
            timestamp=1_741_000_000_000,
            modality="text_image",
        )
    )
    ids["first-release"] = first
    flat = original.auto_id()
    original.client.collection(MEMORY_COLLECTION).document(flat).set(
        {
            "content": "The staging project is metacortex-staging.",
            "module_name": "ops",
            "branch_state": "active",
            "modality": "text",
            "embedding": Vector(original.embed("The staging project is metacortex-staging.")),
            "created_at": datetime(2025, 12, 1, 9, 30, tzinfo=UTC),
            "origin": "user_asserted",
        }
    )
    ids["top-level"] = flat
    return ids


def as_the_original_had_it(data: dict[str, Any]) -> dict[str, Any]:
    """A stored document of the original's as this server's wire metadata: topic,
    state, links and times read from the original's own fields."""
    meta = data.get("metadata") or {
        "module_name": data["module_name"],
        "branch_state": data["branch_state"],
        "modality": data["modality"],
        "created_at": int(data["created_at"].timestamp() * 1000),
        "provenance": {"origin": data["origin"]},
    }
    created: int = meta["created_at"] if "created_at" in meta else meta["timestamp"]
    provenance = meta.get("provenance") or {"origin": "legacy_import"}
    return {
        # The original had no spaces and named no authors: the default space, unattributed.
        "space": "default",
        "topic": meta["module_name"],
        "branch_state": meta["branch_state"],
        "modality": "mixed" if meta["modality"] == "text_image" else meta["modality"],
        "created_at": iso(created),
        "updated_at": iso(meta.get("updated_at", created)),
        "artifact_refs": meta.get("artifact_refs", []),
        "valid_from": iso(meta["valid_from"]) if "valid_from" in meta else None,
        "valid_until": iso(meta["valid_until"]) if "valid_until" in meta else None,
        "superseded_by": meta.get("superseded_by"),
        "supersession_reason": meta.get("supersession_reason"),
        "initiator": meta.get("initiator"),
        "provenance": {
            "origin": provenance["origin"],
            "source_session": provenance.get("source_session"),
            "derived_from": provenance.get("derived_from", []),
            "confidence": provenance.get("confidence"),
        },
        # The original kept no time of the event: it happened when it was saved.
        "occurred_at": iso(created),
        "occurred_at_source": "saved",
        "created_by": None,
        "changed_by": None,
    }
