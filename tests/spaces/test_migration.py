"""What exists from before spaces becomes the space ``default``, with no manual step
(issue 30 §1 and §6): a store, the credentials kept in it, and a portable backup.

Counterparts: a SQLite file written by MetaCortex before spaces (schema 5, the code
at commit 191bf6e; ``tests/data/pre_spaces/store.sql`` rebuilds it with plain SQL),
that version's portable backup of it (``tests/data/pre_spaces/backup/``), the
official ``mcp`` SDK's ``Client`` over the app's HTTP transport, and the Firestore
emulator for the restore.
"""

from __future__ import annotations

import shutil
import sqlite3
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, Final

import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from pydantic import SecretStr

from metacortex.access.model import DEFAULT_SPACE, Level
from metacortex.access.registry import read_directory
from metacortex.config import Settings
from metacortex.domain.records import ALL_STATES
from metacortex.errors import NotFound
from metacortex.operations.backup import restore_portable
from metacortex.providers.offline_merge import SentenceUnionMerger
from metacortex.server.app import create_app
from metacortex.service import Access, MemoryService
from metacortex.storage.base import MemoryStore
from metacortex.storage.sqlite import SQLiteStore
from metacortex.storage.sqlite_schema import LATEST_VERSION
from tests.fakes import HashingEmbedder
from tests.spaces.world import STORES
from tests.tool_results import payload

FIXTURES: Final = Path(__file__).resolve().parent.parent / "data" / "pre_spaces"
IDS: Final = {
    "boiler": "01m93e0b8b18py0xsx3e41fg72",
    "boiler_old": "01m93e0bhqbak85vekwg1abscr",
    "wifi": "01m93e0bhre83sg0c808tj09js",
    "idea_1": "01m93e0bhre83sg0c808tj09jt",
    "idea_2": "01m93e0bhse8p7hb61hgcy3hh3",
    "merged": "01m93e0bhtagwkx7jn7j2vwxzy",
    "draft": "01m93e0bhtagwkx7jn7j2vwxzz",
}
ERASED: Final = "01m93e0bhvb3wj4sgzt7z599xj"
# The credentials that version made (test data: their digests are in store.sql).
CLIENT_TOKEN: Final = "Cr6DYPuz6hRD9z2iVraTAPaoKvkp2CyAIFCKRp_5rMQ"
GRANT: Final = "1eb183e0f0792f43"
ACCESS_TOKEN: Final = "TkmZALOlzRj-dTSLe1ih2A-1bdzzBElpvvHea3aTo3Y"
ADMIN_TOKEN: Final = "admin-" + "M1g2R3a4T5e6D7s8T9o0R1e2F3r4O5m6"
BASE: Final = "http://localhost"  # the resource the old grant's token was issued for


def old_store(directory: Path) -> Path:
    """The data directory of a store from before spaces, made from the fixture's SQL."""
    data_dir = directory / "data"
    data_dir.mkdir(mode=0o700)
    path = data_dir / "metacortex.sqlite3"
    with sqlite3.connect(path) as conn:
        conn.executescript((FIXTURES / "store.sql").read_text(encoding="utf-8"))
    conn.close()
    path.chmod(0o600)
    return data_dir


@pytest.fixture
def service(tmp_path: Path) -> Iterator[MemoryService]:
    store = SQLiteStore(old_store(tmp_path) / "metacortex.sqlite3")
    yield MemoryService(store, HashingEmbedder(), merger=SentenceUnionMerger())
    store.close()


def every_memory(service: MemoryService, access: Access) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    for state in ALL_STATES:
        items += service.list_memories(access, filter_state=state.value, limit=100)["items"]
    return items


def assert_in_default_unattributed(items: list[dict[str, Any]]) -> None:
    assert sorted(item["id"] for item in items) == sorted(IDS.values())
    for item in items:
        metadata = item["metadata"]
        assert (metadata["space"], metadata["created_by"], metadata["changed_by"]) == (
            DEFAULT_SPACE,
            None,
            None,
        ), item


def test_a_store_from_before_spaces_opens_with_every_memory_in_default_and_unattributed(
    service: MemoryService,
) -> None:
    store = service.store
    assert isinstance(store, SQLiteStore)
    directory = read_directory(store)
    owner = Access.admin(directory=directory)

    assert list(directory.spaces) == [DEFAULT_SPACE]
    assert dict(owner.levels) == {DEFAULT_SPACE: Level.WRITE}
    assert_in_default_unattributed(every_memory(service, owner))
    found = service.search(owner, query="when was the boiler serviced")
    assert found["matches"][0]["id"] == IDS["boiler"]
    assert found["applied_filters"]["space"] == DEFAULT_SPACE
    old = service.fetch(owner, id=IDS["boiler_old"])["item"]["metadata"]
    assert (old["branch_state"], old["superseded_by"]) == ("deprecated", IDS["boiler"])
    merged = service.fetch(owner, id=IDS["merged"])["item"]["metadata"]
    assert merged["provenance"]["derived_from"] == [IDS["idea_1"], IDS["idea_2"]]
    with pytest.raises(NotFound, match=r"erased on .* by the owner"):
        service.fetch(owner, id=ERASED)
    assert [(s["key"], s["memories"]) for s in service.list_spaces(owner)["spaces"]] == [
        (DEFAULT_SPACE, len(IDS))
    ]
    with sqlite3.connect(store.path) as conn:
        version = conn.execute("SELECT MAX(version) FROM schema_migrations").fetchone()[0]
    conn.close()
    assert version == LATEST_VERSION


@asynccontextmanager
async def connected(app: Any, path: str, token: str) -> AsyncIterator[Client]:
    async with (
        httpx2.AsyncClient(
            transport=httpx2.ASGITransport(app=app),
            base_url=BASE,
            headers={"authorization": f"Bearer {token}"},
        ) as http,
        Client(streamable_http_client(BASE + path, http_client=http), mode="2026-07-28") as c,
    ):
        yield c


@pytest.mark.anyio
async def test_credentials_made_before_spaces_are_the_owners_with_the_default_space_at_write(
    service: MemoryService, tmp_path: Path
) -> None:
    settings = Settings(
        _env_file=None,  # type: ignore[call-arg]
        metacortex_data_dir=tmp_path / "data",
        mcp_admin_token=SecretStr(ADMIN_TOKEN),
        metacortex_oauth=True,
    )
    app = create_app(settings, service)
    answers: dict[str, dict[str, Any]] = {}
    async with app.router.lifespan_context(app):
        for name, path, token in (
            ("client", "/clients/old-laptop/mcp", CLIENT_TOKEN),
            ("grant", "/mcp", ACCESS_TOKEN),
        ):
            async with connected(app, path, token) as session:
                tools = [tool.name for tool in (await session.list_tools()).tools]
                found = payload(await session.call_tool("search_context", {"query": "wifi"}))
                saved = payload(
                    await session.call_tool("save_context", {"content": f"Saved by the {name}"})
                )
                elsewhere = await session.call_tool(
                    "search_context", {"query": "wifi", "space": "family"}
                )
            answers[name] = {"tools": tools, "found": found, "saved": saved, "other": elsewhere}

    client, grant = answers["client"], answers["grant"]
    # Their tools are what they were: the space tools are for credentials that list them.
    # An OAuth grant's tools follow its scopes' preset, which now includes the document
    # tools (read: list and get; read and save: adding too; issue 31).
    assert client["tools"] == ["save_context", "search_context", "fetch_context", "list_context"]
    assert grant["tools"] == [
        "save_context",
        "search_context",
        "fetch_context",
        "related_context",
        "set_default_space",
        "create_document",
        "list_documents",
        "get_document",
    ]
    for name, credential in (("client", "old-laptop"), ("grant", f"oauth-{GRANT}")):
        answer = answers[name]
        assert answer["found"]["matches"][0]["id"] == IDS["wifi"]
        metadata = answer["saved"]["item"]["metadata"]
        assert metadata["space"] == DEFAULT_SPACE
        assert metadata["created_by"] == {
            "person_id": "owner",
            "name": "Owner",
            "client": credential,
        }
        assert answer["other"].is_error


@pytest.fixture(params=STORES)
def fresh_store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[MemoryStore]:
    if request.param == "firestore":
        yield request.getfixturevalue("firestore_store_factory")()
        return
    store = SQLiteStore(tmp_path / "m.sqlite3")
    yield store
    store.close()


def test_a_portable_backup_made_before_spaces_restores_into_default(
    fresh_store: MemoryStore, tmp_path: Path
) -> None:
    backup = tmp_path / "backup"
    shutil.copytree(FIXTURES / "backup", backup)
    embedder = HashingEmbedder()
    service = MemoryService(fresh_store, embedder, merger=SentenceUnionMerger())

    summary = restore_portable(fresh_store, embedder, backup)

    assert (summary.restored, summary.skipped_existing, summary.refused) == (len(IDS), 0, ())
    directory = read_directory(fresh_store)
    assert list(directory.spaces) == [DEFAULT_SPACE]
    owner = Access.admin(directory=directory)
    assert_in_default_unattributed(every_memory(service, owner))
    old = service.fetch(owner, id=IDS["boiler_old"])["item"]["metadata"]
    assert old["superseded_by"] == IDS["boiler"]
    assert service.search(owner, query="guest wifi password")["matches"][0]["id"] == IDS["wifi"]
