"""Erasure on the embedded store when something is in the way: another process reading,
another process erasing, a full disk.

Counterparts: a second process with its own SQLite connection on the same file
(``tests/sqlite_holders.py``), ``metacortex erase`` run as an operator runs it (a
fresh subprocess), and the kernel's ENOSPC on a real small file system (a tmpfs;
needs root, CI runs as root; elsewhere the test says loudly that it was skipped).
The text is looked for in the bytes of the database, its WAL and its shared memory.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Final

import numpy as np
import pytest

from metacortex.config import Settings
from metacortex.errors import StorageFull
from metacortex.providers.offline_merge import SentenceUnionMerger
from metacortex.service import Access, MemoryService
from metacortex.storage import sqlite_files
from metacortex.storage.sqlite import SQLiteStore
from tests.fakes import HashingEmbedder
from tests.filesystems import can_mount, tmpfs
from tests.sqlite_holders import READ, holding, release

ADMIN: Final = Access.admin()
# Analyzed as itself (no stem, no stop word), so it is also the FTS5 term.
MARKER: Final = "zqxvmarkerheron"
# SQLite's busy timeout in the store: the wait an erase used to impose on every writer.
BUSY_TIMEOUT_S: Final = 10.0


def _occurrences(database: Path, marker: str = MARKER) -> dict[str, int]:
    found = {}
    for suffix in ("", "-wal", "-shm"):
        path = Path(f"{database}{suffix}")
        if path.exists():
            found[suffix or "db"] = path.read_bytes().count(marker.encode())
    return found


def _service(database: Path) -> tuple[MemoryService, SQLiteStore]:
    store = SQLiteStore(database)
    return MemoryService(store, HashingEmbedder(), merger=SentenceUnionMerger()), store


def _fill(service: MemoryService, count: int) -> None:
    for i in range(count):
        service.save(ADMIN, content=f"Ordinary note {i} about apples, pears and {i * 7} plums")


def test_an_erase_while_another_process_reads_keeps_no_writer_waiting_and_scrubs_after(
    tmp_path: Path,
) -> None:
    """The reader holds a snapshot from before the erase: the WAL cannot be emptied
    until it lets go. The erase and every writer (this process and another store on the
    file) go on at once; the text leaves the files when the reader is done."""
    database = tmp_path / "memories.sqlite3"
    service, store = _service(database)
    other, other_store = _service(database)  # a second server's store on the same file
    _fill(service, 50)
    secret = service.save(ADMIN, content=f"The door code is {MARKER}.")["item"]["id"]
    _fill(service, 50)
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

        assert set(_occurrences(database).values()) == {0}
        assert Path(f"{database}-wal").stat().st_size == 0
    finally:
        other_store.close()
        store.close()


def _erase_in_another_process(data_dir: Path, *ids: str) -> subprocess.CompletedProcess[str]:
    """``metacortex erase`` as an operator runs it, beside a running server."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("METACORTEX_")}
    command = [sys.executable, "-m", "metacortex.cli.main", "erase", *ids, "--yes"]
    return subprocess.run(  # noqa: S603 - our own entry point
        [*command, "--data-dir", str(data_dir)],
        cwd=data_dir,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


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
    secret = service.save(ADMIN, content=f"The safe combination is {MARKER} left")["item"]["id"]
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


@contextlib.contextmanager
def _full(directory: Path) -> Iterator[Path]:
    """Every free byte of ``directory``'s file system taken, until the block ends."""
    filler = directory / "filler"
    with contextlib.suppress(OSError), filler.open("wb") as handle:
        while True:
            handle.write(b"\0" * 4096)
            handle.flush()
    try:
        yield filler
    finally:
        filler.unlink()


def test_erase_works_on_a_full_disk_where_saves_are_refused(small_disk: Path) -> None:
    database = small_disk / "memories.sqlite3"
    service, store = _service(database)
    try:
        _fill(service, 20)
        secret = service.save(ADMIN, content=f"The alarm code is {MARKER}. " * 40)["item"]["id"]
        _fill(service, 20)
        with _full(small_disk):
            with pytest.raises(StorageFull, match="nothing was saved"):
                service.save(ADMIN, content="One more note " * 200)

            result = service.erase(ADMIN, ids=[secret], erased_by="owner (test)")

            assert result["erased_ids"] == [secret]
            assert store.get(secret) is None
            assert list(store.tombstones([secret])) == [secret]
        # Room again: the scrub finishes (if the full disk held it up); saves work.
        assert store.scrubbed(timeout=30)
        assert set(_occurrences(database).values()) == {0}
        service.save(ADMIN, content="A save once the disk has room")
    finally:
        store.close()
    # The room the erase took was the reserve kept beside the database; it is made again
    # at the next start (or after the next erase).
    reserve = sqlite_files.reserve_path(database)
    assert not reserve.exists()
    SQLiteStore(database).close()
    assert reserve.stat().st_size == sqlite_files.RESERVE_BYTES
