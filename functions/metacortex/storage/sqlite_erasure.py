"""What ``SQLiteStore.erase`` does to the database, step by step, on one connection.

1. ``erase_rows`` (one write transaction per batch): the records' rows, their
   FTS5 rows, the write fingerprints pointing at them go; a tombstone (id, when,
   by whom, the state the record was in) takes each one's place under a new
   ``change_seq``; a topic left with no memory leaves ``memory_events``
   (``event_topics``); the keyword index is marked for merging. With
   ``secure_delete`` on, every freed cell is zeroed as it goes.
2. ``merge_keyword_index`` (its own transaction): FTS5 deletes by adding an entry
   that names the terms again, and old segments keep them until merged; merging
   every segment into one drops them from the file. The mark in ``store_meta``
   survives a crash or a full disk between steps 1 and 2, and whichever process
   opens or watches the store next finishes the merge.
3. ``empty_wal``: the WAL still holds the rows as they were written. A TRUNCATE
   checkpoint copies it into the database and empties the file, but only when no
   other connection reads an older snapshot, and it waits for such readers while
   holding the write lock. So it runs without waiting (``busy_timeout`` 0): with a
   reader in the way it checkpoints what it can and reports that the WAL is not
   empty yet; the store tries again until it is (``sqlite.SQLiteStore``'s watcher).
   A second mark in ``store_meta`` (``WAL_SCRUB_PENDING``, set with the deletions,
   by a document's removal too) stays until a checkpoint emptied the WAL after it
   (``wal_scrubbed``), so a process that erased and exited while another connection
   read leaves it to whichever process opens or watches the store next.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Final

from metacortex.domain.records import DEFAULT_SPACE
from metacortex.storage import sqlite_relations
from metacortex.storage.event_topics import MEMORY_EVENTS, scrubbed
from metacortex.storage.sqlite_faults import is_busy

KEYWORD_MERGE_PENDING: Final = "keyword_merge_pending"
WAL_SCRUB_PENDING: Final = "wal_scrub_pending"


def erase_rows(
    conn: sqlite3.Connection,
    wanted: Sequence[str],
    erased_by: str,
    erased_at_ms: int,
    space: str = DEFAULT_SPACE,
) -> list[str]:
    """Step 1, inside the caller's write transaction; the ids that were stored in
    ``space``. A topic's name leaves the events once no space holds it."""
    marks = ",".join("?" * len(wanted))
    rows = conn.execute(
        "SELECT id, seq, module_name, branch_state FROM memories"
        f" WHERE id IN ({marks}) AND space = ?",
        [*wanted, space],
    ).fetchall()
    found = {str(row[0]): (int(row[1]), str(row[2]), str(row[3])) for row in rows}
    erased = [memory_id for memory_id in wanted if memory_id in found]
    if not erased:
        return []
    change = int(
        conn.execute(
            "UPDATE store_meta SET value = CAST(value AS INTEGER) + 1"
            " WHERE key = 'change_seq' RETURNING value"
        ).fetchone()[0]
    )
    seqs = [(found[memory_id][0],) for memory_id in erased]
    marks = ",".join("?" * len(erased))
    conn.executemany("DELETE FROM memory_terms WHERE rowid = ?", seqs)
    conn.executemany("DELETE FROM memories WHERE seq = ?", seqs)
    conn.execute(f"DELETE FROM write_fingerprints WHERE memory_id IN ({marks})", erased)
    # A restored backup may bring an erased id back; erasing it again replaces the old
    # tombstone.
    conn.executemany(
        "INSERT OR REPLACE INTO erased_memories"
        " (id, seq, erased_at, erased_by, change_seq, branch_state, space)"
        " VALUES (?, ?, ?, ?, ?, ?, ?)",
        [(i, found[i][0], erased_at_ms, erased_by, change, found[i][2], space) for i in erased],
    )
    # Relations touching an erased memory hold its summary: they go with it.
    sqlite_relations.erase_touching(conn, space, erased)
    topics = {found[memory_id][1] for memory_id in erased}
    scrub_event_topics(conn, [topic for topic in sorted(topics) if not _holds(conn, topic)])
    conn.execute(
        "INSERT OR REPLACE INTO store_meta (key, value) VALUES (?, '1')", (KEYWORD_MERGE_PENDING,)
    )
    mark_wal_scrub(conn)
    return erased


def mark_wal_scrub(conn: sqlite3.Connection) -> None:
    """Inside a write transaction that deleted text: the WAL must be emptied after it."""
    conn.execute(
        "INSERT OR REPLACE INTO store_meta (key, value) VALUES (?, '1')", (WAL_SCRUB_PENDING,)
    )


def _holds(conn: sqlite3.Connection, topic: str) -> bool:
    row = conn.execute("SELECT 1 FROM memories WHERE module_name = ? LIMIT 1", (topic,))
    return row.fetchone() is not None


def scrub_event_topics(conn: sqlite3.Connection, topics: Sequence[str]) -> int:
    """Replace ``topics`` in every ``memory_events`` record naming them (a scan of the
    events' text for each name: erasing a topic is rare); how many records changed."""
    changed = 0
    for topic in topics:
        needle = json.dumps(topic, ensure_ascii=False)
        rows = conn.execute(
            "SELECT seq, fields FROM events WHERE collection = ? AND instr(fields, ?) > 0",
            (MEMORY_EVENTS, needle),
        ).fetchall()
        for seq, text in rows:
            fields = json.loads(text)
            clean = scrubbed(fields, topics)
            if clean is not fields:
                conn.execute(
                    "UPDATE events SET fields = ? WHERE seq = ?",
                    (json.dumps(clean, ensure_ascii=False), seq),
                )
                changed += 1
    return changed


def keyword_merge_pending(conn: sqlite3.Connection) -> bool:
    row = conn.execute("SELECT 1 FROM store_meta WHERE key = ?", (KEYWORD_MERGE_PENDING,))
    return row.fetchone() is not None


def scrub_pending(conn: sqlite3.Connection) -> bool:
    """Whether an erase (of this process or another, perhaps ended) left a step to do."""
    row = conn.execute(
        "SELECT 1 FROM store_meta WHERE key IN (?, ?) LIMIT 1",
        (KEYWORD_MERGE_PENDING, WAL_SCRUB_PENDING),
    )
    return row.fetchone() is not None


def merge_keyword_index(conn: sqlite3.Connection, busy_timeout_ms: int) -> bool:
    """Step 2, in its own transaction, without waiting for the write lock: one segment,
    the mark cleared. False when another connection holds the lock (try again later)."""
    if not keyword_merge_pending(conn):
        return True
    with _locked_now(conn, busy_timeout_ms) as locked:
        if locked and keyword_merge_pending(conn):
            conn.execute("INSERT INTO memory_terms (memory_terms) VALUES ('optimize')")
            conn.execute("DELETE FROM store_meta WHERE key = ?", (KEYWORD_MERGE_PENDING,))
    return locked


@contextmanager
def _locked_now(conn: sqlite3.Connection, busy_timeout_ms: int) -> Iterator[bool]:
    """A write transaction begun without waiting for the lock: False (nothing begun)
    when another connection holds it. Committed when the block ends (unless the block
    ended it), rolled back when it raises."""
    with _not_waiting(conn, busy_timeout_ms):
        try:
            conn.execute("BEGIN IMMEDIATE")
            locked = True
        except sqlite3.OperationalError as error:
            if not is_busy(error):
                raise
            locked = False
    if not locked:
        yield False
        return
    try:
        yield True
        if conn.in_transaction:
            conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise


@contextmanager
def _not_waiting(conn: sqlite3.Connection, busy_timeout_ms: int) -> Iterator[None]:
    """Without waiting for other connections' locks (``busy_timeout_ms`` put back after)."""
    conn.execute("PRAGMA busy_timeout = 0")
    try:
        yield
    finally:
        conn.execute(f"PRAGMA busy_timeout = {busy_timeout_ms}")


def empty_wal(conn: sqlite3.Connection, busy_timeout_ms: int) -> bool:
    """Step 3: checkpoint and truncate the WAL without waiting for any other connection;
    True when the WAL is now empty."""
    with _not_waiting(conn, busy_timeout_ms):
        busy, _, _ = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
    return not busy


def wal_scrubbed(conn: sqlite3.Connection, wal: Path, busy_timeout_ms: int) -> bool:
    """Step 3, done: clear ``WAL_SCRUB_PENDING`` if nothing was committed since the WAL
    was emptied (its file is still empty while this holds the write lock), without
    waiting for the lock. True when no scrub is left to do."""
    if not conn.execute("SELECT 1 FROM store_meta WHERE key = ?", (WAL_SCRUB_PENDING,)).fetchone():
        return True
    with _locked_now(conn, busy_timeout_ms) as locked:
        if not locked:
            return False
        if _size(wal) > 0:  # a commit since the checkpoint: empty it again first
            conn.execute("ROLLBACK")
            return False
        conn.execute("DELETE FROM store_meta WHERE key = ?", (WAL_SCRUB_PENDING,))
    empty_wal(conn, busy_timeout_ms)  # it holds the mark's page alone: no text
    return True


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except FileNotFoundError:
        return 0


def reuse_wal(conn: sqlite3.Connection, busy_timeout_ms: int) -> None:
    """Checkpoint without waiting, so that the next transaction writes the WAL from its
    start again instead of growing it (a full disk); failing here only costs room."""
    with _not_waiting(conn, busy_timeout_ms), suppress(sqlite3.OperationalError):
        conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
