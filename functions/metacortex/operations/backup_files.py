"""The files of a portable backup: written private and hashed, read back only when whole.

Every file of a backup is NDJSON: one canonical JSON object per line (sorted keys, no
spaces, UTF-8), each line ended by ``\\n``. The manifest names each file with how many
lines it holds and its sha256; a restore checks both for every file before it writes
anything. Lines are split on ``\\n`` alone: JSON leaves U+2028, U+2029 and U+0085 in a
string unescaped, and ``str.splitlines`` would cut a record there.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
from collections.abc import Iterator, Mapping
from pathlib import Path
from types import TracebackType
from typing import Any, Final, TextIO

from metacortex.storage import sqlite_files

_READ_CHUNK: Final = 1024 * 1024


class BackupError(Exception):
    """An archive that cannot be restored; the message says why and what to do."""


def canonical(value: Mapping[str, Any]) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def private_text(path: Path) -> TextIO:
    """A file only its owner can read (0600 whatever the umask): backups hold every memory.

    Never through a symbolic link: one planted where the archive goes would otherwise
    have the backup overwrite whatever it points at."""
    try:
        descriptor = os.open(
            path,
            os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW,
            sqlite_files.FILE_MODE,
        )
    except OSError as error:
        if error.errno == errno.ELOOP:
            raise BackupError(
                f"{path} is a symbolic link: a backup never writes through one. Remove it, "
                "or choose another folder"
            ) from None
        raise
    os.fchmod(descriptor, sqlite_files.FILE_MODE)
    return os.fdopen(descriptor, "w", encoding="utf-8", newline="\n")


class LineWriter:
    """One NDJSON file of a backup, written line by line with its count and sha256."""

    def __init__(self, path: Path) -> None:
        self.name = path.name
        self.count = 0
        self._digest = hashlib.sha256()
        self._out = private_text(path)

    def write(self, record: Mapping[str, Any]) -> None:
        line = canonical(record) + "\n"
        self._out.write(line)
        self._digest.update(line.encode("utf-8"))
        self.count += 1

    @property
    def sha256(self) -> str:
        return self._digest.hexdigest()

    def entry(self) -> dict[str, Any]:
        """How the manifest names the file."""
        return {"file": self.name, "count": self.count, "sha256": self.sha256}

    def __enter__(self) -> LineWriter:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self._out.close()


def backup_file(directory: Path, name: Any, what: str) -> Path:
    """A file the manifest names (its ``what``): one IN the backup folder, never elsewhere."""
    if (
        not isinstance(name, str)
        or not name
        or name in (".", "..")
        or Path(name).name != name
        or "\\" in name
    ):
        raise BackupError(
            f"the manifest's {what} {name!r} is not a file name in {directory}: a backup's "
            "files live beside its manifest"
        )
    path = directory / name
    if path.is_symlink() or not path.is_file():
        raise BackupError(f"{path} is not a regular file in the backup folder")
    return path


def raw_lines(path: Path) -> Iterator[bytes]:
    """The file's lines as bytes, split on ``\\n`` alone (without it); a last line without
    one counts too."""
    with path.open("rb") as stream:
        for raw in stream:
            yield raw[:-1] if raw.endswith(b"\n") else raw


def checked_file(path: Path, count: Any, sha256: Any) -> Path:
    """``path`` when it has the lines and the sha256 its manifest gives, else ``BackupError``
    (read through once, in chunks: a file of documents may be large)."""
    digest = hashlib.sha256()
    lines = 0
    last = b"\n"
    with path.open("rb") as stream:
        while chunk := stream.read(_READ_CHUNK):
            digest.update(chunk)
            lines += chunk.count(b"\n")
            last = chunk[-1:]
    lines += last != b"\n"
    if digest.hexdigest() != sha256:
        raise BackupError(f"{path} does not match the sha256 in its manifest: it was changed")
    if lines != count:
        raise BackupError(f"{path} has {lines} records; its manifest says {count}")
    return path


def text_lines(path: Path) -> Iterator[str]:
    """The file's lines as text; ``BackupError`` at the first that is not UTF-8."""
    for number, raw in enumerate(raw_lines(path), start=1):
        try:
            yield raw.decode("utf-8")
        except UnicodeDecodeError:
            raise BackupError(f"{path} line {number} is not UTF-8 text") from None


def named_file(
    directory: Path, manifest: Mapping[str, Any], key: str, required: bool
) -> Path | None:
    """The checked file of the manifest's ``key`` entry (``{file, count, sha256}``); None
    when the manifest has none and need not (a backup made before that file existed)."""
    entry = manifest.get(key)
    if entry is None and not required:
        return None
    if not isinstance(entry, Mapping):
        raise BackupError(
            f"the manifest in {directory} names no {key} file ({{file, count, sha256}}): "
            "a backup of this version always has one. Take the backup again"
        )
    path = backup_file(directory, entry.get("file"), f"{key} file")
    return checked_file(path, entry.get("count"), entry.get("sha256"))
