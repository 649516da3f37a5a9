"""The embedded server's admin token: generated once, kept in the data directory.

``MCP_ADMIN_TOKEN`` wins when set. Otherwise the first ``metacortex serve``
creates a strong token in ``<data dir>/admin-token`` (mode 0600, created
exclusively so two starts cannot race) and shows it once; later starts reuse
it and only say where it is.
"""

from __future__ import annotations

import errno
import os
import stat
from dataclasses import dataclass
from pathlib import Path

from pydantic import SecretStr

from metacortex.access.profiles import new_token, token_weakness
from metacortex.config import Settings
from metacortex.errors import ConfigurationError
from metacortex.storage.sqlite_files import make_private_directory, require_writable


@dataclass(frozen=True, slots=True)
class AdminToken:
    settings: Settings  # with mcp_admin_token filled in
    path: Path | None  # where it is stored; None when it came from the environment
    created: bool  # True only on the run that generated it
    value: str


def ensure_admin_token(settings: Settings) -> AdminToken:
    if settings.mcp_admin_token is not None:
        return AdminToken(settings, None, False, settings.mcp_admin_token.get_secret_value())
    path = settings.admin_token_path
    token = _create(path)
    created = token is not None
    if token is None:
        token = _read(path)
        weakness = token_weakness(token)
        if weakness is not None:
            raise ConfigurationError(
                f"the admin token stored in {path} {weakness}; delete the file to generate a "
                "new one"
            )
    updated = settings.model_copy(update={"mcp_admin_token": SecretStr(token)})
    return AdminToken(updated, path, created, token)


def stored_admin_token(settings: Settings) -> str | None:
    """The token ``serve`` generated into the data directory, if any (never creates one)."""
    path = settings.admin_token_path
    if not path.is_file():
        return None
    return _read(path) or None


def _read(path: Path) -> str:
    mode = stat.S_IMODE(path.stat().st_mode)
    if mode & 0o077:
        # Someone loosened it; the token is a credential, so put it back.
        path.chmod(0o600)
    return path.read_text(encoding="utf-8").strip()


def _create(path: Path) -> str | None:
    """A new token written exclusively to ``path``, or None when the file exists."""
    make_private_directory(path.parent)
    if not path.exists():
        require_writable(path.parent)
    token = new_token()
    try:
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return None
    try:
        with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
            handle.write(token + "\n")
    except OSError as error:
        path.unlink(missing_ok=True)  # never an empty or partial token left behind
        if error.errno == errno.ENOSPC:
            raise ConfigurationError(
                f"the disk holding {path} is full: the admin token cannot be written. Free "
                "space on that disk, or choose another directory with METACORTEX_DATA_DIR or "
                "--data-dir"
            ) from None
        raise
    return token
