"""Another process holding an SQLite database's locks, for the store's fault tests.

The counterpart is a second process with its own connection (Python's ``sqlite3``,
the same library an operator's ``sqlite3`` shell or a second server uses): it runs
the given statements (``BEGIN`` and a read: a read transaction; ``BEGIN
IMMEDIATE``: the write lock; ``PRAGMA locking_mode = EXCLUSIVE`` and ``BEGIN
EXCLUSIVE``: the whole file), says so on stdout, and keeps them until told to
let go. Waiting on its line, not on time, keeps the tests free of sleeps.
"""

from __future__ import annotations

import contextlib
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Final

READ: Final = ("BEGIN", "SELECT COUNT(*) FROM memories")
WRITE: Final = ("BEGIN IMMEDIATE", "UPDATE store_meta SET value = value WHERE key = 'change_seq'")
EXCLUSIVE: Final = ("PRAGMA locking_mode = EXCLUSIVE", "BEGIN EXCLUSIVE")

_HOLDER: Final = """
import sqlite3, sys
conn = sqlite3.connect(sys.argv[1], isolation_level=None, timeout=30)
for statement in sys.argv[2:]:
    conn.execute(statement).fetchall()
print("holding", flush=True)
sys.stdin.readline()
conn.execute("ROLLBACK")
conn.close()
"""


@contextmanager
def holding(database: Path, statements: tuple[str, ...]) -> Iterator[subprocess.Popen[str]]:
    """A process that holds what ``statements`` took on ``database`` until the block ends."""
    process = subprocess.Popen(  # noqa: S603 - our own interpreter and script
        [sys.executable, "-c", _HOLDER, str(database), *statements],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert process.stdin is not None
    assert process.stdout is not None
    try:
        assert process.stdout.readline().strip() == "holding", "the holder could not start"
        yield process
    finally:
        release(process)


def release(process: subprocess.Popen[str]) -> None:
    """Let go (the holder rolls back and exits); waits until it has."""
    assert process.stdin is not None
    if process.poll() is None:
        with contextlib.suppress(BrokenPipeError):
            process.stdin.write("\n")
            process.stdin.flush()
    process.stdin.close()
    process.wait(timeout=30)
    if process.stdout is not None:
        process.stdout.close()
