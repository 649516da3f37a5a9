"""The address a command prints for the server: where ``serve`` answered last.

``metacortex serve`` writes its base URL (``http://127.0.0.1:8765``) to
``<data dir>/server-url`` once it listens. The commands that print an address
for that server read it back: ``owner set-passphrase`` says where to sign in,
``client add`` and ``client snippets`` print connections to it. So a server
started with ``--port 9000`` (or ``--port 0``) is named as it is, not as the
default bind. It is a hint for printing, and one command reads it to connect:
``smoke``, whose default endpoint is the admin endpoint at this address (the data
directory's admin token still goes only to a loopback host, ``cli/endpoint_token.py``).
Nothing reads it to authorize.
"""

from __future__ import annotations

import contextlib
import os
from typing import Final

from metacortex.config import Settings

FILE_NAME: Final = "server-url"


def record(settings: Settings, url: str) -> None:
    """Keep ``url`` as the data directory's server address (0600, replaced atomically)."""
    path = settings.metacortex_data_dir / FILE_NAME
    partial = path.with_name(f".{FILE_NAME}.{os.getpid()}")
    descriptor = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
            handle.write(url + "\n")
        os.replace(partial, path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            partial.unlink()


def server_url(settings: Settings, given: str | None = None) -> str:
    """The server's base URL as the user reaches it: ``given`` (a ``--url``), else
    ``METACORTEX_PUBLIC_URL``, else what ``serve`` recorded in the data directory,
    else ``MCP_BASE_URL`` without its ``/mcp`` (by default the default bind)."""
    for candidate in (given, settings.metacortex_public_url, recorded(settings)):
        if candidate:
            return candidate.rstrip("/")
    base = settings.mcp_base_url.rstrip("/")
    return base.removesuffix("/mcp")


def recorded(settings: Settings) -> str | None:
    """The base URL ``serve`` last recorded in the data directory, or None."""
    path = settings.metacortex_data_dir / FILE_NAME
    try:
        text = path.read_text(encoding="utf-8").strip()
    except (FileNotFoundError, NotADirectoryError, PermissionError, UnicodeDecodeError):
        return None
    return text if text.startswith(("http://", "https://")) and " " not in text else None
