"""The embedded store's files on disk: private modes, a writable directory, a full disk.

Every memory is in these files, so they are private whatever the umask: the
data directory is created 0700 and the database 0600 before SQLite opens it
(SQLite gives ``-wal`` and ``-shm`` the database file's mode). Existing ones
that are looser are left as the operator set them, with a warning at start.
A directory the server cannot write to is refused at start, because SQLite
would open it and then fail on every write. A full disk is ``StorageFull``; a
small reserve file beside the database gives an erase, which is how an owner
frees space, the room even a delete needs (``keep_reserve``, ``release_reserve``).
"""

from __future__ import annotations

import errno
import logging
import os
import shutil
import sqlite3
import stat
import uuid
from pathlib import Path
from typing import Final

from metacortex.errors import ConfigurationError, StorageFull

DIRECTORY_MODE: Final = 0o700
FILE_MODE: Final = 0o600
# The files SQLite keeps beside the database in WAL mode.
SIDE_FILES: Final = ("-wal", "-shm")
# Room kept beside the database for one thing only: an erase on a full disk (erasing
# is how an owner frees space, and even a delete has to be written first). Measured
# (WAL bytes of one erase transaction): 100 records of 2,000 characters ~1.0 MB, of
# 20,000 ~6.4 MB; a batch that does not fit is erased one record at a time.
RESERVE_SUFFIX: Final = "-reserve"
RESERVE_BYTES: Final = 1024 * 1024
# The reserve is made (again) only while the disk has this much free, so that it never
# takes the last room a save needs.
_RESERVE_ONLY_ABOVE: Final = 8 * RESERVE_BYTES
_SQLITE_FULL: Final = 13
_SQLITE_IOERR: Final = 10
# Less room than this, and an I/O error of SQLite's is the disk being full.
_LOW_ROOM: Final = RESERVE_BYTES
_NOT_WRITABLE: Final = (errno.EACCES, errno.EPERM, errno.EROFS)

logger = logging.getLogger("metacortex.storage")


def prepare(database: Path) -> bool:
    """Create the directory and database file privately; refuse a read-only directory.
    True when the database file was created here (a new store)."""
    directory = database.parent
    make_private_directory(directory)
    require_writable(directory, database)
    try:
        descriptor = os.open(database, os.O_WRONLY | os.O_CREAT | os.O_EXCL, FILE_MODE)
    except FileExistsError:
        created = False
    else:
        os.fchmod(descriptor, FILE_MODE)  # umask-independent
        os.close(descriptor)
        created = True
    warn_if_loose(directory, [database, *(Path(f"{database}{s}") for s in SIDE_FILES)])
    return created


def reserve_path(database: Path) -> Path:
    return Path(f"{database}{RESERVE_SUFFIX}")


def keep_reserve(database: Path) -> bool:
    """Make sure the erase reserve exists beside ``database`` (allocated, not sparse);
    False when the disk has no room for it now (tried again after the next erase)."""
    path = reserve_path(database)
    try:
        if path.stat().st_size >= RESERVE_BYTES:
            return True
    except FileNotFoundError:
        pass
    try:
        disk = os.statvfs(database.parent)
        if disk.f_bavail * disk.f_frsize < _RESERVE_ONLY_ABOVE:
            return False
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW, FILE_MODE)
    except OSError as error:
        logger.debug("no erase reserve beside %s: %s", database, error.strerror)
        return False
    try:
        os.fchmod(descriptor, FILE_MODE)
        os.posix_fallocate(descriptor, 0, RESERVE_BYTES)
        return True
    except OSError as error:
        # Never a partial reserve that takes space without being one.
        os.ftruncate(descriptor, 0)
        logger.debug("no room for the erase reserve beside %s: %s", database, error.strerror)
        return False
    finally:
        os.close(descriptor)


def release_reserve(database: Path) -> bool:
    """Delete the erase reserve, so that an erase on a full disk has room; False when
    there was none to release."""
    path = reserve_path(database)
    try:
        released = path.stat().st_size > 0
        path.unlink()
    except FileNotFoundError:
        return False
    return released


def warn_if_loose(directory: Path, files: list[Path]) -> None:
    """Log a warning for the directory or any existing file other users may read."""
    for path, wanted in [(directory, DIRECTORY_MODE), *((f, FILE_MODE) for f in files)]:
        try:
            mode = stat.S_IMODE(path.stat().st_mode)
        except FileNotFoundError:
            continue
        if mode & 0o077:
            logger.warning(
                "%s has mode %s: other local users may read the memories in it; run chmod %s %s",
                path,
                oct(mode),
                oct(wanted)[2:],
                path,
            )


def make_private_directory(directory: Path) -> None:
    """Create the data directory 0700 (umask-independent) unless it exists."""
    if directory.exists():
        return
    try:
        directory.mkdir(parents=True, mode=DIRECTORY_MODE, exist_ok=True)
        directory.chmod(DIRECTORY_MODE)  # mkdir's mode is filtered by the umask
    except OSError as error:
        if error.errno not in (*_NOT_WRITABLE, errno.ENOSPC):
            raise
        raise ConfigurationError(
            f"cannot create the data directory {directory}: {error.strerror}. Create it "
            "yourself, writable by the user running the server, or choose another directory "
            "with METACORTEX_DATA_DIR or --data-dir"
        ) from None


def require_writable(directory: Path, database: Path | None = None) -> None:
    """Refuse, with what to do about it, a data directory (or database) the server cannot write."""
    probe = directory / f".metacortex-write-probe-{uuid.uuid4().hex}"
    try:
        os.close(os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL, FILE_MODE))
        probe.unlink()
        if database is not None and database.exists():
            os.close(os.open(database, os.O_RDWR))
    except OSError as error:
        if error.errno not in (*_NOT_WRITABLE, errno.ENOSPC):
            raise
        what = {
            errno.EROFS: "is on a read-only file system",
            errno.ENOSPC: "is on a full disk",
        }.get(error.errno, "is not writable")
        if error.errno == errno.ENOSPC:
            raise ConfigurationError(
                f"the data directory {directory} {what}: free space on it, or choose another "
                "directory with METACORTEX_DATA_DIR or --data-dir"
            ) from None
        target = directory if error.filename == str(probe) else database
        raise ConfigurationError(
            f"the data directory {directory} {what} ({target}: {error.strerror}). MetaCortex "
            "writes its database, its WAL and its lock files there. Make it writable by the "
            f"user running the server (e.g. chmod u+w {target}), or choose another directory "
            "with METACORTEX_DATA_DIR or --data-dir"
        ) from None


def is_full(error: sqlite3.Error) -> bool:
    """SQLITE_FULL: the disk (or the database's page limit) has no room left."""
    code = getattr(error, "sqlite_errorcode", None)
    return isinstance(code, int) and code & 0xFF == _SQLITE_FULL


def out_of_room(database: Path, error: sqlite3.Error) -> bool:
    """``is_full``, or an I/O error while the disk holding the database has less than
    ``_LOW_ROOM`` free: where SQLite sizes its shared-memory file (``-shm``, 32 KiB at
    a connection's first read) a full disk is "disk I/O error", not SQLITE_FULL."""
    if is_full(error):
        return True
    code = getattr(error, "sqlite_errorcode", None)
    primary = code & 0xFF if isinstance(code, int) else None
    return primary == _SQLITE_IOERR and free_bytes(database.parent) < _LOW_ROOM


def free_bytes(directory: Path) -> int:
    try:
        return shutil.disk_usage(directory).free
    except OSError:
        return _LOW_ROOM  # cannot tell: not called full for that


def full_at_open(database: Path) -> ConfigurationError:
    """The one line for a store that cannot be opened (created, upgraded) on a full disk."""
    free = free_bytes(database.parent)
    return ConfigurationError(
        f"the disk holding {database} is full ({free // 1024:,} KiB free): the memory store "
        "cannot be opened there. Free space on that disk, or choose another directory with "
        "METACORTEX_DATA_DIR or --data-dir"
    )


def full_error(database: Path, *, erased: int | None = None) -> StorageFull:
    """``erased``: an erase was refused after that many of its batch (see ``reserve``)."""
    logger.error(
        "the memory store %s is full (no space left on its disk): writes fail until space is freed",
        database,
    )
    if erased is not None:
        done = f"{erased} of this batch were erased first" if erased else "nothing was erased"
        return StorageFull(
            "the disk holding the memory store is too full even to erase (an erase is "
            "written before it frees anything, and the room kept for it is used up); "
            f"{done}. Free some space on that disk, then erase again."
        )
    return StorageFull(
        "the server's memory store is full (no space left on its disk); nothing was "
        "saved. Retrying will not help until the operator frees disk space."
    )
