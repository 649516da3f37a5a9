"""Reading and replacing another application's file without being led astray by it.

``metacortex init`` edits files in places a repository controls (a project's
``.mcp.json``, ``.vscode/``), so every file it touches may be hostile: a symbolic
link to ``~/.bashrc``, a directory, a FIFO, a file its owner made read-only.

- **Reading** opens without following a link (``O_NOFOLLOW``) and without
  blocking (``O_NONBLOCK``: a FIFO is refused, not waited on), then checks that
  what it opened is a regular file its owner left writable. A link is refused
  unless the caller follows links (``--follow-symlink``); inside a project
  directory a linked directory on the way is refused too.
- **Replacing** writes a temporary file created exclusively in the same
  directory, then renames it over the name: a rename replaces a link rather than
  writing through it, and another hard link to the old file keeps the old bytes.
- **The backup** is created exclusively (``O_CREAT|O_EXCL|O_NOFOLLOW``: a
  dangling link there does not create its target), or replaces an earlier backup
  that is a regular file by renaming; a name held by anything else (a link, a
  directory) is left alone and the next free ``.bak.N`` is used.
"""

from __future__ import annotations

import errno
import os
import stat
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from metacortex.appconfig.errors import Refused
from metacortex.errors import FailedPrecondition

FOLLOW_FLAG: Final = "--follow-symlink"
_NOFOLLOW: Final = getattr(os, "O_NOFOLLOW", 0)
_NONBLOCK: Final = getattr(os, "O_NONBLOCK", 0)
_MORE_BACKUPS: Final = 20  # .bak.1 … .bak.20 when .bak is taken by something else


@dataclass(frozen=True, slots=True)
class Found:
    """A regular file as read: its bytes and permission bits."""

    raw: bytes
    mode: int


def read(path: Path, *, follow_links: bool = False, project: Path | None = None) -> Found | None:
    """The file at ``path`` (None: there is none). Refused for a link (unless
    ``follow_links``), a linked directory between ``project`` and the file, anything
    but a regular file, and a read-only file."""
    if not follow_links and project is not None:
        _refuse_linked_directories(path, project)
    flags = os.O_RDONLY | _NONBLOCK | getattr(os, "O_CLOEXEC", 0)
    if not follow_links:
        flags |= _NOFOLLOW
        if not _NOFOLLOW and path.is_symlink():  # a platform without O_NOFOLLOW
            raise _link_refused(path)
    try:
        descriptor = os.open(path, flags)
    except FileNotFoundError:
        return None
    except OSError as error:
        if error.errno == errno.ELOOP and not follow_links:
            raise _link_refused(path) from None
        raise FailedPrecondition(
            f"{path} cannot be read ({error.strerror or error}); nothing was written"
        ) from None
    try:
        status = os.fstat(descriptor)
        _refuse_unusual(path, status)
        with os.fdopen(descriptor, "rb", closefd=False) as handle:
            raw = handle.read()
    finally:
        os.close(descriptor)
    return Found(raw, stat.S_IMODE(status.st_mode))


def written_path(path: Path, *, follow_links: bool) -> Path:
    """The file a write of ``path`` replaces: the name itself, or with ``follow_links``
    the file its links lead to."""
    return path.resolve() if follow_links else path


def replace(path: Path, data: bytes, mode: int) -> None:
    """Put ``data`` at ``path`` atomically with permission bits ``mode``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = _exclusive_temporary(path, data, mode)
    try:
        os.replace(temporary, path)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise


def keep_backup(path: Path, data: bytes, mode: int) -> tuple[Path, list[str]]:
    """Keep ``data`` (the file's previous bytes) beside ``path``: the backup written
    and the usual names that were passed over, in words ("x.bak is a symbolic link")."""
    skipped: list[str] = []
    for candidate in backup_names(path):
        try:
            existing = os.lstat(candidate)
        except FileNotFoundError:
            try:
                _create_exclusively(candidate, data, mode)
            except FileExistsError:  # something appeared meanwhile: never written through
                skipped.append(f"{candidate.name} appeared meanwhile")
                continue
            return candidate, skipped
        if stat.S_ISREG(existing.st_mode):
            replace(candidate, data, mode)  # an earlier backup, replaced by a rename
            return candidate, skipped
        skipped.append(f"{candidate.name} is {_kind(existing)}")
    raise Refused(
        f"no backup of {path} could be kept ({'; '.join(skipped)}); nothing was written: "
        "move those away and run again"
    )


def _kind(status: os.stat_result) -> str:
    if stat.S_ISLNK(status.st_mode):
        return "a symbolic link"
    if stat.S_ISDIR(status.st_mode):
        return "a directory"
    return "not a regular file"


def backup_names(path: Path) -> list[Path]:
    """Where the backup of ``path`` goes: ``<name>.bak``, else ``<name>.bak.1`` …"""
    first = path.with_name(path.name + ".bak")
    return [first, *(first.with_name(f"{first.name}.{n}") for n in range(1, _MORE_BACKUPS + 1))]


def next_backup(path: Path) -> Path:
    """The backup name a write of ``path`` would use now (for the preview)."""
    for candidate in backup_names(path):
        try:
            if stat.S_ISREG(os.lstat(candidate).st_mode):
                return candidate
        except FileNotFoundError:
            return candidate
    return backup_names(path)[0]


# ------------------------------------------------------------------ refusals
def _link_refused(path: Path) -> Refused:
    return Refused(
        f"{path} is a symbolic link{_target(path)}: init does not write through a link (a "
        "repository can ship one that points at any file of yours); nothing was written. "
        f"If the link is yours, run again with {FOLLOW_FLAG} to write the file it points to"
    )


def _refuse_linked_directories(path: Path, project: Path) -> None:
    try:
        inside = path.relative_to(project)
    except ValueError:
        return
    directory = project
    for part in inside.parts[:-1]:
        directory = directory / part
        if directory.is_symlink():
            raise Refused(
                f"{directory} is a symbolic link{_target(directory)}: init does not write "
                f"a project's file through a linked directory; nothing was written. If the "
                f"link is yours, run again with {FOLLOW_FLAG}"
            )


def _target(path: Path) -> str:
    try:
        return f" to {os.readlink(path)}"
    except OSError:
        return ""


def _refuse_unusual(path: Path, status: os.stat_result) -> None:
    if stat.S_ISDIR(status.st_mode):
        raise Refused(
            f"{path} is a directory: name the configuration file itself (for example "
            f"--config {path / 'mcp.json'}); nothing was written"
        )
    if not stat.S_ISREG(status.st_mode):
        raise Refused(
            f"{path} is not a regular file (a device, FIFO or socket): name the "
            "application's configuration file; nothing was written"
        )
    if not status.st_mode & 0o222 or not os.access(path, os.W_OK):
        raise Refused(
            f"{path} is read-only (mode {stat.S_IMODE(status.st_mode):04o}): init does not "
            f"replace a file made read-only; nothing was written. If it should change, make "
            f"it writable (chmod u+w {path}) and run again"
        )


# ------------------------------------------------------------------ writing
def _exclusive_temporary(path: Path, data: bytes, mode: int) -> Path:
    descriptor, name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    temporary = Path(name)
    try:
        with os.fdopen(descriptor, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(temporary, mode)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
    return temporary


def _create_exclusively(path: Path, data: bytes, mode: int) -> None:
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
    descriptor = os.open(path, flags, 0o600)
    try:
        with os.fdopen(descriptor, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
            os.fchmod(handle.fileno(), mode)
    except BaseException:
        path.unlink(missing_ok=True)
        raise
