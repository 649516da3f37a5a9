"""One test process at a time fills a folder of ``.cache`` (npm packages, a venv).

The suite runs in several processes (pytest-xdist, ``make test``): two of them reaching
the same missing install would both write into the same folder, and one could use the
other's half-written files. ``locked(folder)`` holds an exclusive ``flock`` on a file
beside the folder for the check-and-install.
"""

from __future__ import annotations

import fcntl
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def locked(folder: Path) -> Iterator[None]:
    folder.parent.mkdir(parents=True, exist_ok=True)
    with (folder.parent / f".{folder.name}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield
