"""The original bytes of documents, beside the SQLite database: one file per content.

Files are named by the sha256 of their bytes (content-addressed: two documents with the
same bytes, in any space, share one file) under ``<database name>-documents/ab/abcd...``
next to the database, private like it: folders 0700, files 0600 whatever the umask.
Nothing is ever followed through a symbolic link: every folder is opened with
``O_NOFOLLOW | O_DIRECTORY`` and every file relative to its folder's descriptor with
``O_NOFOLLOW``, so a link planted in the data directory is refused, not written through.

The store changes these files only while it holds SQLite's write lock (``sqlite_documents``):
a file is written inside the transaction that records its document and removed if that
transaction fails, and removed inside the one that deletes the last record naming it, so no
other process can see a record whose file is missing or remove a file a record is being
written for. A crash between writing a file and committing its record leaves the file
alone with no record; ``orphans`` finds such files and the store removes them at its next
start.
"""

from __future__ import annotations

import errno
import os
import re
import stat
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Final

from metacortex.errors import FailedPrecondition, StorageFull
from metacortex.storage.sqlite_files import DIRECTORY_MODE, FILE_MODE

_NAME: Final = re.compile(r"[0-9a-f]{64}")
_DIRECTORY_FLAGS: Final = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW
_CHUNK: Final = 1024 * 1024


def _linked(path: Path) -> FailedPrecondition:
    return FailedPrecondition(
        f"{path} is a symbolic link or not a regular file or folder; MetaCortex keeps "
        "documents only in real folders and files there. Remove it (the store recreates "
        "the folder) or move the data directory elsewhere"
    )


class DocumentFiles:
    """The bytes of every document of one database, by sha256."""

    def __init__(self, database: Path) -> None:
        self._root = database.parent / f"{database.name}-documents"

    @property
    def root(self) -> Path:
        return self._root

    def path(self, sha256: str) -> Path:
        return self._root / sha256[:2] / sha256

    @contextmanager
    def _folder(self, sha256: str, *, create: bool) -> Iterator[int | None]:
        """A descriptor of the file's folder (None when absent and not ``create``)."""
        if not _NAME.fullmatch(sha256):
            raise ValueError(f"not a sha256: {sha256!r}")
        root = self._open_folder(self._root, None, create)
        if root is None:
            yield None
            return
        try:
            shard = self._open_folder(Path(sha256[:2]), root, create)
            try:
                yield shard
            finally:
                if shard is not None:
                    os.close(shard)
        finally:
            os.close(root)

    def _open_folder(self, path: Path, parent: int | None, create: bool) -> int | None:
        shown = path if parent is None else self._root / path
        for _attempt in range(2):
            try:
                return os.open(path, _DIRECTORY_FLAGS, dir_fd=parent)
            except FileNotFoundError:
                if not create:
                    return None
                try:
                    os.mkdir(path, DIRECTORY_MODE, dir_fd=parent)
                    os.chmod(path, DIRECTORY_MODE, dir_fd=parent, follow_symlinks=False)
                except FileExistsError:
                    continue  # made meanwhile by another process: open it
                except OSError as error:
                    raise self._os_error(error, shown) from None
            except OSError as error:
                if error.errno in (errno.ELOOP, errno.ENOTDIR):
                    raise _linked(shown) from None
                raise
        raise _linked(shown)

    def write(self, sha256: str, data: bytes) -> bool:
        """Store ``data`` as the file of ``sha256`` (the caller computed it); True when
        this call created the file, False when it was already there."""
        with self._folder(sha256, create=True) as folder:
            assert folder is not None
            try:
                found = os.stat(sha256, dir_fd=folder, follow_symlinks=False)
            except FileNotFoundError:
                found = None
            if found is not None:
                if not stat.S_ISREG(found.st_mode):
                    raise _linked(self.path(sha256))
                if found.st_size == len(data):
                    return False
                # A file cut short (a crash while it was written) is written again.
            temporary = f".{sha256}.{os.getpid()}.partial"
            try:
                descriptor = os.open(
                    temporary,
                    os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW,
                    FILE_MODE,
                    dir_fd=folder,
                )
                try:
                    os.fchmod(descriptor, FILE_MODE)
                    view = memoryview(data)
                    for start in range(0, len(view), _CHUNK):
                        os.write(descriptor, view[start : start + _CHUNK])
                    os.fsync(descriptor)
                finally:
                    os.close(descriptor)
                os.rename(temporary, sha256, src_dir_fd=folder, dst_dir_fd=folder)
            except OSError as error:
                self._forget(temporary, folder)
                raise self._os_error(error, self.path(sha256)) from None
            return True

    def read(self, sha256: str) -> bytes | None:
        with self._folder(sha256, create=False) as folder:
            if folder is None:
                return None
            try:
                descriptor = os.open(sha256, os.O_RDONLY | os.O_NOFOLLOW, dir_fd=folder)
            except FileNotFoundError:
                return None
            except OSError as error:
                if error.errno == errno.ELOOP:
                    raise _linked(self.path(sha256)) from None
                raise
            with os.fdopen(descriptor, "rb") as file:
                return file.read()

    def remove(self, sha256: str) -> None:
        """Delete the file (a link of that name too: ``unlink`` never follows one)."""
        with self._folder(sha256, create=False) as folder:
            if folder is not None:
                self._forget(sha256, folder)

    @staticmethod
    def _forget(name: str, folder: int) -> None:
        with suppress(FileNotFoundError):
            os.unlink(name, dir_fd=folder)

    def remove_unreferenced(self, referenced: set[str]) -> int:
        """Delete every file no document record names (and partial writes a crash left):
        the store calls it holding the write lock. Returns how many went."""
        root = self._open_folder(self._root, None, create=False)
        if root is None:
            return 0
        removed = 0
        try:
            for shard_name in os.listdir(root):
                try:
                    shard = os.open(shard_name, _DIRECTORY_FLAGS, dir_fd=root)
                except OSError:
                    continue  # not a folder of ours (a link, a stray file): left alone
                try:
                    for name in os.listdir(shard):
                        if name not in referenced:
                            self._forget(name, shard)
                            removed += 1
                finally:
                    os.close(shard)
        finally:
            os.close(root)
        return removed

    @staticmethod
    def _os_error(error: OSError, path: Path) -> Exception:
        if error.errno == errno.ENOSPC:
            return StorageFull(
                f"the disk holding {path.parent} is full: the document's bytes could not be "
                "kept and nothing was added. Free some space on that disk, then add it again"
            )
        if error.errno in (errno.ELOOP, errno.ENOTDIR):
            return _linked(path)
        return error
