"""A save and the relations it asserts land together or not at all, on a real SQLite
file whose relations table refuses writes (a trigger, as a full or damaged table
would): before, the memory stayed behind without the links its caller asked for."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Final

import pytest

from metacortex.providers.offline_merge import SentenceUnionMerger
from metacortex.service import Access, MemoryService
from metacortex.storage.sqlite import SQLiteStore
from tests.fakes import HashingEmbedder

ADMIN: Final = Access.admin()


def test_a_save_whose_relation_cannot_be_written_leaves_no_memory_behind(
    tmp_path: Path,
) -> None:
    database = tmp_path / "memory.sqlite3"
    store = SQLiteStore(database)
    service = MemoryService(store, HashingEmbedder(), merger=SentenceUnionMerger())
    target = service.save(ADMIN, content="The runbook for the staging database.")["item"]["id"]
    conn = sqlite3.connect(database)
    try:
        conn.execute(
            "CREATE TRIGGER refuse_relations BEFORE INSERT ON relations "
            "BEGIN SELECT RAISE(ABORT, 'relations refused'); END"
        )
        conn.commit()
    finally:
        conn.close()

    with pytest.raises(sqlite3.IntegrityError, match="relations refused"):
        service.save(
            ADMIN,
            content="The runbook now covers failover too.",
            relations=[{"id": target, "type": "extends"}],
        )

    assert [item["id"] for item in service.list_memories(ADMIN)["items"]] == [target]
    # Nothing of the refused save is left for a search to find.
    assert {m["id"] for m in service.search(ADMIN, query="failover")["matches"]} == {target}
