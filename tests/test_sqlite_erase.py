"""Erasure on the embedded store, checked where the text could hide: the bytes of the
database file, its WAL and shared-memory files, the FTS5 shadow tables, and the
in-memory vector index of another process on the same data directory; and when
something is in the way: another process reading, another process erasing, a full
disk."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Final

import numpy as np
import pytest

from metacortex.config import Settings
from metacortex.documents.isolation import shut_down
from metacortex.domain.records import BranchState
from metacortex.errors import NotFound, StorageFull
from metacortex.providers.offline_merge import SentenceUnionMerger
from metacortex.retrieval import text as text_analysis
from metacortex.service import Access, MemoryService
from metacortex.storage import sqlite_files
from metacortex.storage.base import MemoryFilter
from metacortex.storage.sqlite import SQLiteStore
from tests.fakes import HashingEmbedder
from tests.filesystems import can_mount, filled, tmpfs
from tests.sqlite_holders import READ, holding, release

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


def test_an_erased_documents_text_leaves_the_database_file_and_its_wal_at_once(
    tmp_path: Path,
) -> None:
    """Issue 37: the passages were scrubbed, but the document's extracted text (deleted
    after them) stayed in the database file until later writes checkpointed it."""
    database = tmp_path / "memories.sqlite3"
    service, store = _service(database)
    try:
        _filler(service, 50)
        text = f"# Keys\n\nThe spare key is under the {MARKER} pot.\n\n" + "Filler. " * 400
        document = service.create_document(ADMIN, content=text, media_type="text/markdown")
        _filler(service, 50)
        assert sum(_occurrences(database, MARKER).values()) > 0

        service.erase_document(ADMIN, id=document["document"]["id"], erased_by="owner (test)")

        assert store.scrubbed(timeout=0)  # nothing left to wait for: no reader in the way
        assert _occurrences(database, MARKER) == {"db": 0, "-wal": 0, "-shm": 0}
    finally:
        store.close()
        shut_down()


def test_an_erase_drops_the_texts_this_process_kept_for_ranking_at_once(tmp_path: Path) -> None:
    """Ranking keeps recent candidates' texts (``retrieval.text.term_frequencies``, as
    cache keys): an erased record's text must not wait there for eviction."""
    service, store = _service(tmp_path / "memories.sqlite3")
    try:
        secret = service.save(ADMIN, content=f"The alarm code is {MARKER} nine")["item"]["id"]
        service.save(ADMIN, content="The alarm is tested every spring")
        assert service.search(ADMIN, query="alarm code")["matches"]
        assert text_analysis.term_frequencies.cache_info().currsize > 0

        service.erase(ADMIN, ids=[secret], erased_by="owner (test)")

        assert text_analysis.term_frequencies.cache_info().currsize == 0
        assert text_analysis._stem.cache_info().currsize == 0
    finally:
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


# ------------------------------------------------------ when something is in the way
# Counterparts: a second process with its own SQLite connection on the same file
# (tests/sqlite_holders.py), `metacortex erase` run as an operator runs it, and the
# kernel's ENOSPC on a real small file system (a tmpfs; needs root, CI runs as root;
# elsewhere the test says loudly that it was skipped).
# SQLite's busy timeout in the store: the wait an erase used to impose on every writer.
BUSY_TIMEOUT_S: Final = 10.0


def _service(database: Path) -> tuple[MemoryService, SQLiteStore]:
    store = SQLiteStore(database)
    return MemoryService(store, HashingEmbedder(), merger=SentenceUnionMerger()), store


def test_an_erase_while_another_process_reads_keeps_no_writer_waiting_and_scrubs_after(
    tmp_path: Path,
) -> None:
    """The reader holds a snapshot from before the erase: the WAL cannot be emptied
    until it lets go. The erase and every writer (this process and another store on the
    file) go on at once; the text leaves the files when the reader is done."""
    database = tmp_path / "memories.sqlite3"
    service, store = _service(database)
    other, other_store = _service(database)  # a second server's store on the same file
    _filler(service, 50)
    secret = service.save(ADMIN, content=f"The door code is {MARKER}.")["item"]["id"]
    _filler(service, 50)
    try:
        with holding(database, READ) as reader:
            started = time.monotonic()
            service.erase(ADMIN, ids=[secret], erased_by="owner (test)")
            erased_in = time.monotonic() - started
            other.save(ADMIN, content="Saved by the other server while the reader reads")
            service.save(ADMIN, content="Saved here while the reader reads")
            writes_done_in = time.monotonic() - started

            assert erased_in < BUSY_TIMEOUT_S / 2
            assert writes_done_in < BUSY_TIMEOUT_S / 2
            # The reader's snapshot still needs the old pages: not scrubbed yet.
            assert not store.scrubbed(timeout=0)
            assert store.get(secret) is None
            release(reader)
            assert store.scrubbed(timeout=30)

        assert set(_occurrences(database, MARKER).values()) == {0}
        assert Path(f"{database}-wal").stat().st_size == 0
    finally:
        other_store.close()
        store.close()


def test_an_erase_whose_process_ended_while_a_reader_held_the_wal_is_scrubbed_at_the_next_open(
    tmp_path: Path,
) -> None:
    """Issue 37: ``metacortex erase`` exits while another connection reads; once that
    read ends, nothing had checkpointed the WAL (later writes did, eventually). Now the
    mark it leaves makes the next process to open the store finish the scrub."""
    data_dir = tmp_path / "data"
    database = Settings(_env_file=None, metacortex_data_dir=data_dir).sqlite_path  # type: ignore[call-arg]
    service, store = _service(database)
    _filler(service, 30)
    secret = service.save(ADMIN, content=f"The gate code is {MARKER}.")["item"]["id"]
    store.close()
    # A connection that stays open (so that the last one to close does not checkpoint).
    bystander = sqlite3.connect(database)
    bystander.execute("SELECT COUNT(*) FROM store_meta").fetchall()  # it opens the WAL
    try:
        with holding(database, READ) as reader:
            erased = _erase_in_another_process(data_dir, secret)
            assert erased.returncode == 0, erased.stdout + erased.stderr
            release(reader)
        assert sum(_occurrences(database, MARKER).values()) > 0  # nobody checkpointed yet

        opened = SQLiteStore(database)  # any MetaCortex process on the store
        try:
            assert opened.scrubbed(timeout=30)
        finally:
            opened.close()
        assert _occurrences(database, MARKER) == {"db": 0, "-wal": 0, "-shm": 0}
    finally:
        bystander.close()


def test_a_server_drops_what_another_process_erased_from_memory_without_a_search(
    tmp_path: Path,
) -> None:
    """Process A (a server's store, vectors and keyword index in memory) does nothing
    after process B erases: within its watcher's interval the record's vector and its
    terms are out of A's memory anyway."""
    data_dir = tmp_path / "data"
    database = Settings(_env_file=None, metacortex_data_dir=data_dir).sqlite_path  # type: ignore[call-arg]
    embedder = HashingEmbedder()
    store = SQLiteStore(database)
    service = MemoryService(store, embedder, merger=SentenceUnionMerger())
    saved = service.save(ADMIN, content=f"The safe combination is {MARKER} left")
    secret = saved["item"]["id"]
    service.save(ADMIN, content="The safe is serviced every spring")
    assert service.search(ADMIN, query=f"safe {MARKER}")["matches"][0]["id"] == secret
    [seq] = [
        row[0] for row in store._conn().execute("SELECT seq FROM memories WHERE id = ?", (secret,))
    ]
    mirror, keywords = store._mirror, store._keywords._index
    assert mirror is not None
    assert keywords is not None
    assert mirror.positions(np.array([seq]))[0] >= 0
    assert MARKER in keywords._base.term_ids
    try:
        erased = _erase_in_another_process(data_dir, secret)
        assert erased.returncode == 0, erased.stdout + erased.stderr

        assert store.erasures_forgotten(timeout=30)
        assert mirror.positions(np.array([seq]))[0] < 0
        index = store._keywords._index
        assert index is None or MARKER not in index._base.term_ids
    finally:
        store.close()


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    if not can_mount():
        pytest.skip("FULL-DISK ERASE TEST SKIPPED: needs root to mount a small tmpfs")
    with tmpfs(tmp_path / "small", size_kib=16 * 1024) as directory:
        yield directory


def test_erase_works_on_a_full_disk_where_saves_are_refused(small_disk: Path) -> None:
    database = small_disk / "memories.sqlite3"
    service, store = _service(database)
    try:
        _filler(service, 20)
        saved = service.save(ADMIN, content=f"The alarm code is {MARKER}. " * 40)
        secret = saved["item"]["id"]
        _filler(service, 20)
        with filled(small_disk):
            with pytest.raises(StorageFull, match="nothing was saved"):
                service.save(ADMIN, content="One more note " * 200)

            result = service.erase(ADMIN, ids=[secret], erased_by="owner (test)")

            assert result["erased_ids"] == [secret]
            assert store.get(secret) is None
            assert list(store.tombstones([secret])) == [secret]
        # Room again: the scrub finishes (if the full disk held it up); saves work.
        assert store.scrubbed(timeout=30)
        assert set(_occurrences(database, MARKER).values()) == {0}
        service.save(ADMIN, content="A save once the disk has room")
    finally:
        store.close()
    # The room the erase took was the reserve kept beside the database; it is made again
    # at the next start (or after the next erase).
    reserve = sqlite_files.reserve_path(database)
    assert not reserve.exists()
    SQLiteStore(database).close()
    assert reserve.stat().st_size == sqlite_files.RESERVE_BYTES
