"""After an erase: finish scrubbing the files, and forget what memory holds, in every process.

An erase commits the deletions first (``sqlite_erasure.erase_rows``); what is
left is done here without ever making a writer wait:

- the scrub: the keyword index merged and the WAL emptied (``sqlite_erasure``),
  each without waiting for another connection's lock. A reader that started
  before the erase keeps the WAL (and the database pages it still reads) as they
  were until it finishes; so does a full disk. The scrub is then tried again on
  every tick of the watcher below, until it is done (a full disk: after a
  doubling pause, up to a minute, instead of every second).
- the watcher: a thread (``sqlite_watcher.Ticker``, every ``WATCH_SECONDS``)
  that asks SQLite whether any other connection committed (``PRAGMA
  data_version``: the shared-memory file, no disk access) and, only then,
  whether anything was erased (an index lookup). When something was, by any
  process, this process forgets it at once (``forget``: the vector mirror's rows,
  a keyword index holding their terms) and scrubs too, since the process that
  erased may have found the WAL held by this one's readers and ended since.

It runs in a process once the process holds records in memory (the first
search loads them) or has a scrub left to finish; ``metacortex erase`` and the
other one-shot commands try a last time when they close the store.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Final

from metacortex.storage import sqlite_files
from metacortex.storage.sqlite_erasure import empty_wal, merge_keyword_index, wal_scrubbed
from metacortex.storage.sqlite_locks import describe_holders
from metacortex.storage.sqlite_watcher import Ticker

WATCH_SECONDS: Final = 1.0
_MAX_PAUSE_S: Final = 60.0

logger = logging.getLogger(__name__)


def highest_erasure(conn: sqlite3.Connection) -> int:
    """The change_seq of the latest erase (0 when none): one lookup in an index."""
    row = conn.execute("SELECT COALESCE(MAX(change_seq), 0) FROM erased_memories").fetchone()
    return int(row[0])


class Scrubber:
    def __init__(
        self,
        path: Path,
        connection: Callable[[], sqlite3.Connection],
        forget: Callable[[], None],
        busy_timeout_ms: int,
    ) -> None:
        """``connection``: the calling thread's connection to the store; ``forget``: drop
        from this process's memory every record erased so far."""
        self._path = path
        self._wal = path.with_name(path.name + "-wal")
        self._connection = connection
        self._forget = forget
        self._busy_timeout_ms = busy_timeout_ms
        self._lock = threading.Lock()  # one scrub at a time
        self._changed = threading.Condition()
        self._pending = False
        self._requests = 0
        self._forgotten = 0  # the highest erasure change_seq forgotten here
        self._data_version = -1
        self._pause = 0.0
        self._not_before = 0.0
        self._ticker = Ticker(self._tick, WATCH_SECONDS, "metacortex-store-watcher")

    def opened(self, conn: sqlite3.Connection, *, unfinished: bool) -> None:
        """At the store's open: what was erased before needs no forgetting; an erase
        whose scrub never finished (a crash, a full disk, a reader in the way until the
        process that erased had ended) is finished now."""
        self._forgotten = highest_erasure(conn)
        if unfinished:
            self.scrub()

    def watch(self) -> None:
        """Start watching for erasures from elsewhere (records are in memory now)."""
        self._ticker.start()

    def erased(self) -> bool:
        """This process just erased: forget, then scrub; True when the scrub is done."""
        self._forget_now(self._connection())
        return self.scrub()

    def scrub(self) -> bool:
        with self._changed:
            self._pending = True
            self._requests += 1
            self._pause, self._not_before = 0.0, 0.0
        return self._try()

    def _try(self) -> bool:
        if not self._lock.acquire(blocking=False):
            self._ticker.start()  # another thread is at it; the next tick makes sure
            return False
        try:
            with self._changed:
                request = self._requests
            conn = self._connection()
            failed = False
            try:
                done = (
                    merge_keyword_index(conn, self._busy_timeout_ms)
                    and empty_wal(conn, self._busy_timeout_ms)
                    and wal_scrubbed(conn, self._wal, self._busy_timeout_ms)
                )
            except sqlite3.OperationalError as error:
                logger.debug("scrubbing %s after an erase waits: %s", self._path, error)
                done, failed = False, True  # a full disk, most likely: pause
            with self._changed:
                # An erase that asked while this ran needs a scrub after its own commit.
                self._pending = not done or self._requests != request
                if failed:
                    self._pause = min(_MAX_PAUSE_S, max(WATCH_SECONDS, 2 * self._pause))
                    self._not_before = time.monotonic() + self._pause
                self._changed.notify_all()
                pending = self._pending
        finally:
            self._lock.release()
        if pending:
            self._ticker.start()
        else:
            sqlite_files.keep_reserve(self._path)  # released if the disk was full
        return not pending

    def _forget_now(self, conn: sqlite3.Connection) -> None:
        highest = highest_erasure(conn)
        self._forget()
        with self._changed:
            self._forgotten = max(self._forgotten, highest)
            self._changed.notify_all()

    def _tick(self) -> None:
        conn = self._connection()
        version = int(conn.execute("PRAGMA data_version").fetchone()[0])
        if version != self._data_version:
            self._data_version = version
            if highest_erasure(conn) > self._forgotten:
                self._forget_now(conn)
                self.scrub()  # that erase's WAL may have waited for this process's readers
                return
        if self._pending and time.monotonic() >= self._not_before:
            self._try()

    def forgotten(self, timeout: float) -> bool:
        """Wait until this process holds nothing in memory of any record erased so far,
        by any process; False if ``timeout`` seconds pass first."""
        highest = highest_erasure(self._connection())
        with self._changed:
            return self._changed.wait_for(lambda: self._forgotten >= highest, timeout)

    def done(self, timeout: float) -> bool:
        """Wait until no scrub is left to do here; False if ``timeout`` seconds pass first."""
        with self._changed:
            return self._changed.wait_for(lambda: not self._pending, timeout)

    @property
    def pending(self) -> bool:
        return self._pending

    def close(self) -> None:
        """Stop watching; a scrub left to do is tried once more, and said if it stays."""
        self._ticker.close()
        if self._pending and not self._try():
            who = describe_holders(self._path, "reader") or "another connection"
            logger.warning(
                "after an erase, %s-wal may still hold the erased text: %s keeps a read "
                "transaction open on %s (or its disk is full). It is emptied once that "
                "reader has finished, within a second by any MetaCortex server on this "
                "store, or when the last connection to the database closes",
                self._path,
                who,
                self._path,
            )
