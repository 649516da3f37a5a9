"""What the documents pages' tests share: a live console (OAuth off, SQLite) whose upload
limit is small enough to pass with a real file."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Final

from tests.console.support import ConsoleLive, console_server

LIMIT: Final = 64 * 1024


@contextmanager
def documents_console(directory: Path) -> Iterator[ConsoleLive]:
    """The console with ``METACORTEX_DOCUMENT_MAX_BYTES`` at ``LIMIT`` and people's
    changes read at once."""
    with console_server(
        directory,
        oauth=False,
        metacortex_document_max_bytes=LIMIT,
        metacortex_client_refresh_seconds=0,
    ) as running:
        yield running
