"""A store file that cannot be used, said once: which file, what is wrong, what to do.

Commands that open the embedded store (``metacortex serve``, ``backup`` ...) meet
damaged files: garbage where the database was, a file cut short, a page
overwritten, a schema from a newer MetaCortex, a lock another process keeps, an
empty file where a store was expected. Each becomes one ``ConfigurationError``
(printed without a traceback by ``cli/main.py``) instead of SQLite's exception.

- ``check_file`` reads the first 100 bytes (the SQLite header) before SQLite
  opens the file: an empty file, one that is not SQLite's, or one shorter than
  its header says (SQLite would read the missing pages as zeros, and fail later).
- ``unusable`` turns the errors SQLite raises on a damaged or locked file into
  that message; anything else stays as it was.
- A page overwritten in the middle shows only when something reads it: ``SQLiteStore
  .check_integrity`` runs SQLite's ``quick_check`` over the whole file (``backup``
  does, before copying anything).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Final

from metacortex.errors import ConfigurationError
from metacortex.storage.sqlite_locks import describe_holders
from metacortex.storage.sqlite_schema import LATEST_VERSION

START_FRESH_FLAG: Final = "--start-fresh"
# How long a connection to the store waits for another one's lock (SQLite's busy timeout).
BUSY_TIMEOUT_MS: Final = 10_000
BUSY_TIMEOUT_S: Final = BUSY_TIMEOUT_MS / 1000
_HEADER: Final = b"SQLite format 3\x00"
_HEADER_BYTES: Final = 100
_SQLITE_BUSY: Final = 5
_SQLITE_LOCKED: Final = 6
_SQLITE_CORRUPT: Final = 11
_SQLITE_NOTADB: Final = 26


def is_empty(database: Path) -> bool:
    """A 0-byte database file with nothing in its WAL either."""
    wal = Path(f"{database}-wal")
    return database.stat().st_size == 0 and not (wal.exists() and wal.stat().st_size)


def check_file(database: Path) -> None:
    """Refuse, before SQLite opens it, a store file that is empty or plainly not whole.
    A file that does not exist yet is fine (a new store)."""
    try:
        size = database.stat().st_size
    except FileNotFoundError:
        return
    if is_empty(database):
        raise ConfigurationError(
            f"{database} is empty (0 bytes) where a MetaCortex store was expected: the "
            "memories it held are not in this file. Restore your latest backup into the "
            "data directory (move the empty file aside, then run `metacortex restore "
            f"FOLDER`), or, to start a new, empty store in it, run `metacortex serve "
            f"{START_FRESH_FLAG}`"
        )
    wal = Path(f"{database}-wal")
    wal_size = wal.stat().st_size if wal.exists() else 0
    if size == 0:
        return  # every page is still in the WAL, where SQLite reads it
    with database.open("rb") as stream:
        header = stream.read(_HEADER_BYTES)
    if not header.startswith(_HEADER):
        raise damaged(database, "is not an SQLite database (its first bytes are not SQLite's)")
    if len(header) < _HEADER_BYTES:
        raise damaged(database, f"is cut short ({size} bytes, less than SQLite's header)")
    page_size = int.from_bytes(header[16:18], "big")
    page_size = 65536 if page_size == 1 else page_size
    pages = int.from_bytes(header[28:32], "big")
    # The page count is valid only when its version stamp matches the change counter;
    # a WAL with frames may hold pages the file does not have yet (a checkpoint cut off).
    if header[92:96] == header[24:28] and not wal_size and size < pages * page_size:
        raise damaged(database, f"is cut short ({size} bytes; its header says {pages * page_size})")


def is_busy(error: sqlite3.Error) -> bool:
    """SQLITE_BUSY or SQLITE_LOCKED: a lock stayed taken for the whole busy timeout."""
    code = getattr(error, "sqlite_errorcode", None)
    return isinstance(code, int) and code & 0xFF in (_SQLITE_BUSY, _SQLITE_LOCKED)


@contextmanager
def refused_if_unusable(database: Path) -> Iterator[None]:
    """Inside: SQLite's error on a damaged or locked store becomes its one message."""
    try:
        yield
    except sqlite3.Error as error:
        raise unusable(database, error) or error from None


def unusable(database: Path, error: sqlite3.Error) -> ConfigurationError | None:
    """The message for SQLite's error on a damaged or locked store, or None for others."""
    code = getattr(error, "sqlite_errorcode", None)
    primary = code & 0xFF if isinstance(code, int) else None
    if primary == _SQLITE_NOTADB:
        return damaged(database, "is not an SQLite database (SQLite: file is not a database)")
    if primary == _SQLITE_CORRUPT:
        return damaged(database, f"is damaged (SQLite: {error})")
    if is_busy(error):
        who = describe_holders(database, "writer") or "another process"
        return ConfigurationError(
            f"{database} is locked by {who}, and stayed locked for {BUSY_TIMEOUT_S:g} "
            "seconds: stop that process, or let it finish, then run this again"
        )
    return None


def newer_schema(database: Path, version: int) -> ConfigurationError:
    return ConfigurationError(
        f"{database} was written by a newer MetaCortex (schema version {version}; this one "
        f"understands up to {LATEST_VERSION}): run the version that wrote it (upgrade this "
        "install), or point METACORTEX_DATA_DIR or --data-dir at another store. Nothing "
        "was changed in it"
    )


def damaged(database: Path, what: str) -> ConfigurationError:
    """A damaged store file: what to do, whatever the damage."""
    return ConfigurationError(
        f"the memory store {database} {what}. Stop every process using it and keep a copy "
        "of the file as it is. Then restore your latest backup (move the damaged file "
        "aside and run `metacortex restore FOLDER`, or put a `metacortex backup --full` "
        f"copy in its place), or recover what SQLite can still read: `sqlite3 {database} "
        ".recover | sqlite3 recovered.sqlite3`, check it, and move recovered.sqlite3 in its "
        "place"
    )
