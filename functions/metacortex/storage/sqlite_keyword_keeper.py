"""Keeps the SQLite store's in-memory keyword index (``sqlite_keywords``) current.

- The first keyword search loads it. A small store (under ``inline_below`` rows)
  loads it in that search, a few milliseconds; a large one on a background
  thread with its own connection, while FTS5 answers: at 100,000 memories the
  load takes a few tenths of a second, which a server start (``metacortex
  serve`` searches once to warm up) should not wait for.
- Each search first overlays what was written or erased since, from any
  connection or process, through the ``change_seq`` counter every write bumps
  (one indexed query, nothing when nothing changed).
- It is loaded again (the same way) when the overlay outgrows a tenth of the
  rows, when rows were erased (so their stems leave memory too: at once when
  the store's watcher sees the erase, ``forget_erased``), when a row
  holds a term it cannot rank exactly, or when more changed at once than an
  overlay should hold (another process restored a backup); until then the old
  index answers, or FTS5 when the old one is too far behind.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
from typing import TYPE_CHECKING, Final

from metacortex.heap import release_freed_memory
from metacortex.storage.sqlite_keywords import KeywordIndex

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

logger = logging.getLogger(__name__)

# Below this many rows (highest seq, a cheap upper bound) a load runs inline.
INLINE_BELOW: Final = 5_000
# An overlay holds at most this many rows, or a tenth of the rows if more.
_OVERLAY_MIN: Final = 2_000
_BUSY_TIMEOUT_MS: Final = 10_000


class KeywordKeeper:
    def __init__(
        self,
        path: Path,
        connection: Callable[[], sqlite3.Connection],
        inline_below: int = INLINE_BELOW,
    ) -> None:
        self._path = path
        self._connection = connection
        self._inline_below = inline_below
        self._lock = threading.Lock()
        self._index: KeywordIndex | None = None
        self._loader: threading.Thread | None = None
        self._closed = False
        self._failed = False

    def current(self) -> KeywordIndex | None:
        """The index, synced with the store; ``None`` when FTS5 has to answer (loading,
        failed, or holding a term it cannot rank exactly)."""
        conn = self._connection()
        with self._lock:
            if self._failed or self._closed:
                return None
            index = self._index
            if index is not None and not _caught_up(conn, index):
                index = self._index = None  # too far behind: load it again
            if index is None or _due(index):
                self._load(conn)
                index = self._index
            return index if index is not None and index.exact else None

    def forget_erased(self) -> None:
        """Drop the index at once if it still holds the terms of a row erased since it
        loaded (from any connection), and load it again; FTS5 answers meanwhile. The
        store's watcher calls this when it sees an erase, so the terms leave memory
        without waiting for a search."""
        conn = self._connection()
        with self._lock:
            index = self._index
            if index is None or self._failed or self._closed:
                return
            if _caught_up(conn, index) and index.erased_since_load == 0:
                return
            self._index = None
            self._load(conn)

    def wait(self) -> None:
        """Until a load running in the background has finished (tests, benchmarks)."""
        loader = self._loader
        if loader is not None:
            loader.join()

    def close(self) -> None:
        with self._lock:
            self._closed = True
            self._index = None
        self.wait()

    def _load(self, conn: sqlite3.Connection) -> None:
        if self._loader is not None and self._loader.is_alive():
            return
        highest = conn.execute("SELECT COALESCE(MAX(seq), 0) FROM memories").fetchone()[0]
        if int(highest) < self._inline_below:
            try:
                self._index = KeywordIndex.load(conn)
            except sqlite3.Error as error:
                self._give_up(error)
            return
        self._loader = threading.Thread(
            target=self._load_in_background, name="metacortex-keyword-index", daemon=True
        )
        self._loader.start()

    def _load_in_background(self) -> None:
        try:
            conn = sqlite3.connect(self._path, isolation_level=None, timeout=30)
            try:
                conn.execute(f"PRAGMA busy_timeout = {_BUSY_TIMEOUT_MS}")
                index = KeywordIndex.load(conn)
                # A row erased while it loaded: load once more rather than keep its terms.
                if not _caught_up(conn, index) or index.erased_since_load:
                    index = KeywordIndex.load(conn)
            finally:
                conn.close()
        except sqlite3.Error as error:
            with self._lock:
                if not self._closed:
                    self._give_up(error)
            return
        with self._lock:
            if not self._closed:
                self._index = index
        del index
        # The load's transient arrays and strings leave ~100 MB of freed pages in
        # glibc's arenas at 100,000 memories (measured: the server's RSS 507 MB
        # against 386 MB before the index); hand them back.
        release_freed_memory()

    def _give_up(self, error: sqlite3.Error) -> None:
        self._failed = True
        logger.warning(
            "the in-memory keyword index of %s could not be loaded (%s); keyword search "
            "asks SQLite FTS5 instead, which is slower on large stores",
            self._path,
            error,
        )


def _due(index: KeywordIndex) -> bool:
    """Whether the index should be loaded again from the table."""
    return (
        not index.exact
        or index.erased_since_load > 0
        or index.overlay_rows > max(_OVERLAY_MIN, index.rows // 10)
    )


def _caught_up(conn: sqlite3.Connection, index: KeywordIndex) -> bool:
    """Overlay what changed since the index's ``change_seq``; False when that is more
    than an overlay should hold (nothing is applied then)."""
    now = int(conn.execute("SELECT value FROM store_meta WHERE key = 'change_seq'").fetchone()[0])
    if now == index.change_seq:
        return True
    most = max(_OVERLAY_MIN, index.rows // 10)
    cursor = conn.cursor()
    cursor.row_factory = None
    # One statement: changed and erased rows from one snapshot (a seq is one or the other).
    rows = cursor.execute(
        "SELECT m.seq, t.terms, m.change_seq FROM memories m"
        " JOIN memory_terms t ON t.rowid = m.seq WHERE m.change_seq > ?"
        " UNION ALL SELECT seq, NULL, change_seq FROM erased_memories WHERE change_seq > ?"
        " LIMIT ?",
        (index.change_seq, index.change_seq, most + 1),
    ).fetchall()
    if len(rows) > most:
        return False
    newest = max((int(r[2]) for r in rows), default=now)
    changed = [(int(r[0]), str(r[1])) for r in rows if r[1] is not None]
    erased = [int(r[0]) for r in rows if r[1] is None]
    index.apply(changed, erased, max(now, newest))
    return True
