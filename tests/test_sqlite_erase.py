"""Erasure on the embedded store, checked where the text could hide: the bytes of the
database file, its WAL and shared-memory files, the FTS5 shadow tables, and the
in-memory vector index of another process on the same data directory."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Final

import pytest

from metacortex.config import Settings
from metacortex.domain.records import BranchState
from metacortex.errors import NotFound
from metacortex.providers.offline_merge import SentenceUnionMerger
from metacortex.service import Access, MemoryService
from metacortex.storage.base import MemoryFilter
from metacortex.storage.sqlite import SQLiteStore
from tests.fakes import HashingEmbedder

ADMIN: Final = Access.admin()
EVERY_STATE: Final = MemoryFilter(states=tuple(BranchState))
# Analyzed as itself (no stem, no stop word), so it is also the FTS5 term.
MARKER: Final = "zqxvmarkerkestrel"
SECOND: Final = "zqxvmarkerosprey"


def _files(database: Path) -> dict[str, bytes]:
    return {
        suffix or "db": Path(f"{database}{suffix}").read_bytes()
        for suffix in ("", "-wal", "-shm")
        if Path(f"{database}{suffix}").exists()
    }


def _occurrences(database: Path, marker: str) -> dict[str, int]:
    return {name: data.count(marker.encode()) for name, data in _files(database).items()}


def _vocabulary(database: Path) -> set[str]:
    """Every term the FTS5 index still holds, read through fts5vocab."""
    conn = sqlite3.connect(database)
    try:
        conn.execute("CREATE VIRTUAL TABLE temp.vocab USING fts5vocab(main, memory_terms, 'row')")
        return {str(row[0]) for row in conn.execute("SELECT term FROM temp.vocab")}
    finally:
        conn.close()


def _filler(service: MemoryService, count: int) -> None:
    for i in range(count):
        service.save(ADMIN, content=f"Ordinary note {i} about apples, pears and {i * 7} plums")


def test_erased_text_is_gone_from_the_database_file_its_wal_and_the_fts_shadow_tables(
    tmp_path: Path,
) -> None:
    database = tmp_path / "memories.sqlite3"
    store = SQLiteStore(database)
    service = MemoryService(store, HashingEmbedder(), merger=SentenceUnionMerger())
    _filler(service, 150)
    short = service.save(ADMIN, content=f"The locker code is {MARKER}.")["item"]["id"]
    # Long enough to spill into overflow pages; then rewritten once by a deprecation.
    long_text = f"A pasted document mentioning {SECOND}. " + "Filler sentence here. " * 800
    long = service.save(ADMIN, content=long_text)["item"]["id"]
    service.deprecate(ADMIN, id=long)
    _filler(service, 150)
    service.search(ADMIN, query="locker code")
    assert all(sum(_occurrences(database, m).values()) > 0 for m in (MARKER, SECOND))
    assert {MARKER, SECOND} <= _vocabulary(database)

    service.erase(ADMIN, ids=[short, long], erased_by="owner (test)")

    assert _occurrences(database, MARKER) == {"db": 0, "-wal": 0, "-shm": 0}
    assert _occurrences(database, SECOND) == {"db": 0, "-wal": 0, "-shm": 0}
    assert not {MARKER, SECOND} & _vocabulary(database)
    # The store is whole and still searches by keyword.
    with sqlite3.connect(database) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        assert conn.execute("INSERT INTO memory_terms (memory_terms) VALUES ('integrity-check')")
    found = service.search(ADMIN, query="ordinary note apples", limit=3)["matches"]
    assert len(found) == 3
    store.close()


def _erase_in_another_process(data_dir: Path, *ids: str) -> subprocess.CompletedProcess[str]:
    """``metacortex erase`` as an operator runs it, beside a running server."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("METACORTEX_")}
    data = str(data_dir)
    return subprocess.run(  # noqa: S603 - our own entry point
        [sys.executable, "-m", "metacortex.cli.main", "erase", *ids, "--yes", "--data-dir", data],
        cwd=data_dir,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_a_running_process_stops_returning_and_scoring_a_record_another_process_erased(
    tmp_path: Path,
) -> None:
    """Process A (this one, a server's store with its vector index loaded) searches;
    process B (`metacortex erase`) erases; A's next search neither returns nor scores
    the record, and the text is gone from the files A still has open."""
    data_dir = tmp_path / "data"
    database = Settings(_env_file=None, metacortex_data_dir=data_dir).sqlite_path  # type: ignore[call-arg]
    embedder = HashingEmbedder()
    store = SQLiteStore(database)
    service = MemoryService(store, embedder, merger=SentenceUnionMerger())
    secret = service.save(ADMIN, content=f"The safe combination is {MARKER} left")["item"]["id"]
    other = service.save(ADMIN, content="The safe is serviced every spring")["item"]["id"]
    vector = embedder.embed_query(f"The safe combination is {MARKER} left")
    assert [s.memory.id for s in store.vector_search(vector, EVERY_STATE, 1)] == [secret]
    assert service.search(ADMIN, query=f"safe {MARKER}")["matches"][0]["id"] == secret

    erased = _erase_in_another_process(data_dir, secret)

    assert erased.returncode == 0, erased.stdout + erased.stderr
    assert "erased 1 memory" in erased.stdout
    assert [s.memory.id for s in store.vector_search(vector, EVERY_STATE, 1)] == [other]
    found = service.search(ADMIN, query=f"safe combination {MARKER}", filter_state=["active"])
    assert [m["id"] for m in found["matches"]] == [other]
    with pytest.raises(NotFound, match=r"was erased on .* by owner \(metacortex erase\)"):
        service.fetch(ADMIN, id=secret)
    assert sum(_occurrences(database, MARKER).values()) == 0
    store.close()


def test_a_tombstone_that_does_not_know_the_state_is_described_only_to_who_reads_every_state(
    tmp_path: Path,
) -> None:
    """Tombstones written before the store kept the erased record's state (schema 6)."""
    database = tmp_path / "memories.sqlite3"
    store = SQLiteStore(database)
    service = MemoryService(store, HashingEmbedder(), merger=SentenceUnionMerger())
    gone = service.save(ADMIN, content="Erased before states were kept")["item"]["id"]
    service.erase(ADMIN, ids=[gone], erased_by="owner (test)")
    with sqlite3.connect(database) as conn:
        conn.execute("UPDATE erased_memories SET branch_state = NULL")
    active_only = Access(frozenset({BranchState.ACTIVE}), BranchState.ACTIVE, False)

    with pytest.raises(NotFound, match=rf"^no memory with id '{gone}'$"):
        service.fetch(active_only, id=gone)
    with pytest.raises(NotFound, match=rf"^memory '{gone}' was erased on "):
        service.fetch(ADMIN, id=gone)
    store.close()
