"""Memories saved before they kept when they happened (issue 39) read as happening when they
were saved, in every place a time is read: results, filters, the order of a listing, a
backup. Counterparts: a SQLite file written by an earlier MetaCortex (schema 5, rebuilt
from ``tests/data/pre_spaces/store.sql``; opening it applies every later migration, 10
among them, without rewriting a row) and that version's portable backup."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from metacortex.domain.records import ALL_STATES
from metacortex.operations.backup import export_portable, restore_portable
from metacortex.providers.offline_merge import SentenceUnionMerger
from metacortex.service import Access, MemoryService
from metacortex.storage.sqlite import SQLiteStore
from tests.fakes import HashingEmbedder
from tests.spaces.test_migration import FIXTURES, old_store

EVERY_STATE = [state.value for state in ALL_STATES]


@pytest.fixture
def service(tmp_path: Path) -> Iterator[MemoryService]:
    store = SQLiteStore(old_store(tmp_path) / "metacortex.sqlite3")
    yield MemoryService(store, HashingEmbedder(), merger=SentenceUnionMerger())
    store.close()


def test_an_older_store_gains_the_columns_and_keeps_its_rows_as_they_were(
    service: MemoryService, tmp_path: Path
) -> None:
    path = tmp_path / "data" / "metacortex.sqlite3"
    with sqlite3.connect(path) as conn:
        kept = conn.execute("SELECT COUNT(*), COUNT(occurred_at) FROM memories").fetchone()
    conn.close()

    assert kept[0] > 0
    assert kept[1] == 0  # no row rewritten: NULL reads as the time it was saved


def test_older_memories_happened_when_they_were_saved(
    service: MemoryService, tmp_path: Path
) -> None:
    admin = Access.admin()
    items = service.list_memories(admin, filter_state=EVERY_STATE, limit=100)["items"]

    for item in items:
        meta = item["metadata"]
        assert meta["occurred_at"] == meta["created_at"]
        assert meta["occurred_at_source"] == "saved"
    by_occurrence = service.list_memories(
        admin, filter_state=EVERY_STATE, order_by="occurred_at", limit=100
    )["items"]
    assert [item["id"] for item in by_occurrence] == [item["id"] for item in items]


def test_a_time_range_finds_older_memories_by_when_they_were_saved(
    service: MemoryService,
) -> None:
    admin = Access.admin()
    items = service.list_memories(admin, filter_state=EVERY_STATE, limit=100)["items"]
    newest = items[0]["metadata"]["created_at"]

    since = service.list_memories(admin, filter_state=EVERY_STATE, after=newest)["items"]
    found = service.search(admin, query="boiler", filter_state=EVERY_STATE, before=newest)

    latest = {item["id"] for item in items if item["metadata"]["created_at"] == newest}
    assert {item["id"] for item in since} == latest
    assert found["matches"]
    assert not latest & {match["id"] for match in found["matches"]}


def test_a_backup_keeps_when_memories_happened_and_an_older_one_restores_as_saved(
    tmp_path: Path,
) -> None:
    admin = Access.admin()
    source = SQLiteStore(tmp_path / "source.sqlite3")
    service = MemoryService(source, HashingEmbedder(), merger=SentenceUnionMerger())
    given = service.save(admin, content="Signed the lease", occurred_at="2024-W09")["item"]
    stated = service.save(admin, content="On 3 March 2024 we shipped the importer.")["item"]
    export_portable(source, tmp_path / "backup", service.embedding_key)
    source.close()

    target = SQLiteStore(tmp_path / "target.sqlite3")
    restore_portable(target, HashingEmbedder(), tmp_path / "backup")
    restore_portable(target, HashingEmbedder(), FIXTURES / "backup")
    restored = MemoryService(target, HashingEmbedder(), merger=SentenceUnionMerger())
    shown = {
        item["id"]: item["metadata"]
        for item in restored.list_memories(admin, filter_state=EVERY_STATE, limit=100)["items"]
    }
    target.close()

    assert (shown[given["id"]]["occurred_at"], shown[given["id"]]["occurred_at_source"]) == (
        "2024-W09",
        "given",
    )
    assert shown[stated["id"]]["occurred_at"] == "2024-03-03"
    assert shown[stated["id"]]["occurred_at_source"] == "stated"
    older = [meta for key, meta in shown.items() if key not in (given["id"], stated["id"])]
    assert older
    assert all(meta["occurred_at"] == meta["created_at"] for meta in older)
    assert {meta["occurred_at_source"] for meta in older} == {"saved"}
