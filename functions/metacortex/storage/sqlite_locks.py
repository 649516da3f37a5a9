"""Who holds an SQLite database's locks: the "by whom" of a busy or locked store.

SQLite locks with POSIX advisory locks, and Linux lists every one of them with
its owner's pid in ``/proc/locks``. In WAL mode (the store's) a writer holds byte
120 of the ``-shm`` file (``WAL_WRITE_LOCK``), a reader in a read transaction one
of bytes 123-127 (its read mark); a connection in exclusive locking mode, or one
writing in rollback-journal mode, holds the database file's own lock bytes.
Elsewhere (no ``/proc/locks``) nothing is known and the messages say less.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Final, Literal

_PROC_LOCKS: Final = Path("/proc/locks")
_WAL_WRITE_LOCK: Final = 120
_WAL_READ_MARKS: Final = range(123, 128)

Role = Literal["writer", "reader"]


@dataclass(frozen=True, slots=True)
class Holder:
    pid: int
    name: str  # the process's short name (/proc/<pid>/comm): never its arguments

    def describe(self) -> str:
        if self.pid == os.getpid():
            return "another connection in this process"
        return f"process {self.pid} ({self.name})" if self.name else f"process {self.pid}"


def holders(database: Path, role: Role) -> list[Holder]:
    """The processes holding ``database``'s write lock (``writer``) or keeping a read
    transaction open on it (``reader``), this one included; empty when unknown."""
    try:
        listing = _PROC_LOCKS.read_text(encoding="ascii", errors="replace")
    except OSError:
        return []
    shm = _identity(Path(f"{database}-shm"))
    main = _identity(database)
    found: dict[int, Holder] = {}
    for line in listing.splitlines():
        fields = line.split()
        if len(fields) < 8 or fields[1] == "->":  # a waiter, not a holder
            continue
        kind, pid, file_id, start = fields[3], fields[4], fields[5], fields[6]
        if not (pid.isdigit() and start.isdigit()):
            continue
        on_shm = file_id == shm and (
            (role == "writer" and kind == "WRITE" and int(start) == _WAL_WRITE_LOCK)
            or (role == "reader" and int(start) in _WAL_READ_MARKS)
        )
        on_main = file_id == main and role == "writer" and kind == "WRITE"
        if on_shm or on_main:
            found.setdefault(int(pid), Holder(int(pid), _name(int(pid))))
    return list(found.values())


def describe_holders(database: Path, role: Role) -> str | None:
    """``process 1234 (sqlite3)``, several joined with "and", or None when unknown."""
    found = holders(database, role)
    if not found:
        return None
    return " and ".join(holder.describe() for holder in found)


def _identity(path: Path) -> str | None:
    """The file as /proc/locks names it: ``major:minor:inode`` (device in hex)."""
    try:
        status = path.stat()
    except OSError:
        return None
    device = status.st_dev
    return f"{os.major(device):02x}:{os.minor(device):02x}:{status.st_ino}"


def _name(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/comm").read_text(encoding="utf-8", errors="replace").strip()
    except OSError:
        return ""
