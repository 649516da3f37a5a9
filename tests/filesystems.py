"""Real small or read-only file systems for storage fault tests.

A tmpfs mount needs root (CI runs as root). Without it the caller falls back
or skips, and says so loudly.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


def _tool(name: str) -> str | None:
    return shutil.which(name)


def can_mount() -> bool:
    return os.geteuid() == 0 and _tool("mount") is not None and _tool("umount") is not None


def _run(argv: list[str], *, check: bool = True) -> None:
    subprocess.run(argv, check=check, capture_output=True)  # noqa: S603 - fixed argv, no shell


@contextmanager
def tmpfs(mount_point: Path, *, size_kib: int = 1024, read_only: bool = False) -> Iterator[Path]:
    """A fresh tmpfs of ``size_kib`` at ``mount_point`` (remounted read-only if asked)."""
    mount, umount = _tool("mount"), _tool("umount")
    assert mount is not None
    assert umount is not None
    mount_point.mkdir(parents=True, exist_ok=True)
    _run([mount, "-t", "tmpfs", "-o", f"size={size_kib}k,mode=0700", "tmpfs", str(mount_point)])
    try:
        if read_only:
            _run([mount, "-o", "remount,ro", str(mount_point)])
        yield mount_point
    finally:
        _run([umount, "-l", str(mount_point)], check=False)


@contextmanager
def filled(directory: Path, *, leave: int = 0) -> Iterator[Path]:
    """Every free byte of ``directory``'s file system but ``leave`` taken by one file,
    until the block ends (a full disk, for real)."""
    filler = directory / "filler"
    with contextlib.suppress(OSError), filler.open("wb") as handle:
        if leave:
            room = shutil.disk_usage(directory).free - leave
            handle.write(b"\0" * max(room, 0))
            handle.flush()
        else:
            while True:
                handle.write(b"\0" * 4096)
                handle.flush()
    try:
        yield filler
    finally:
        filler.unlink()
