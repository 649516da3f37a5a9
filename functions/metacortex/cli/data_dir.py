"""The ``--data-dir`` option and where a command's store is, the same for every command.

``metacortex serve`` and the commands that work on its store beside it (``owner
set-passphrase``, ``smoke``, ``backup``, ``erase`` ...) resolve the data directory
one way: ``--data-dir`` when given, else ``METACORTEX_DATA_DIR``, else
``~/.local/share/metacortex``, with ``~`` expanded and made absolute
(``Settings``). A command that writes to a store says which one
(``describe_store``), so a passphrase set beside a server started with another
``--data-dir`` is not set silently where the console never looks.
"""

from __future__ import annotations

import argparse
import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final

from metacortex.config import Settings
from metacortex.storage import sqlite_faults

DATA_DIR_HELP: Final = (
    "where the embedded store and the admin token live, as for `metacortex serve` "
    "(default METACORTEX_DATA_DIR or ~/.local/share/metacortex)"
)


def add_data_dir_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--data-dir", type=Path, help=DATA_DIR_HELP)


def settings_for(args: argparse.Namespace, **overrides: Any) -> Settings:
    """The settings a command runs with: the environment, then ``--data-dir``."""
    data_dir: Path | None = getattr(args, "data_dir", None)
    if data_dir is not None:
        overrides["metacortex_data_dir"] = data_dir
    return Settings(**overrides)


def describe_store(settings: Settings) -> str:
    """The store these settings open, as an operator would look for it."""
    if settings.store_kind == "firestore":
        project = settings.google_cloud_project or "of the default credentials"
        return f"the Firestore store (project {project}, database {settings.firestore_database})"
    return f"the SQLite store in {settings.metacortex_data_dir}"


@contextlib.contextmanager
def store_errors(settings: Settings) -> Iterator[None]:
    """Around opening and first reading the configured store: SQLite's error on a
    damaged or locked file becomes one message naming the file, what is wrong and what
    to do (``storage/sqlite_faults.py``), not a traceback."""
    if settings.store_kind != "sqlite":
        yield
        return
    with sqlite_faults.refused_if_unusable(settings.sqlite_path):
        yield


def start_fresh(settings: Settings) -> str | None:
    """``--start-fresh``: an empty (0-byte) database file, which every command refuses
    (a store was expected there), is removed so that a new store is made in its place.
    A database that holds anything is never touched. What was done, to say."""
    path = settings.sqlite_path
    if settings.store_kind != "sqlite" or not path.exists():
        return None
    if sqlite_faults.is_empty(path):
        path.unlink()
        return f"starting a new, empty store in place of the empty file {path}"
    return f"{sqlite_faults.START_FRESH_FLAG} ignored: {path} is not empty; opening it as it is"
