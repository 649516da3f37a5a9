"""The one marker every change of who may do what rewrites.

A change of a stored client (``clients.manage``), a space or a person
(``access.registry``) rewrites one small record (kind ``client_profiles``, key
``changed``) with a fresh random version, after the change itself: a server
process that reads the marker before listing them can keep its copy for as long
as the marker stays the same (``access.client_directory``).
"""

from __future__ import annotations

import secrets
from typing import Final

from metacortex.domain.records import to_wire_time, utc_now
from metacortex.storage.base import MemoryStore

MARKER_KIND: Final = "client_profiles"
MARKER_KEY: Final = "changed"


def read_marker(store: MemoryStore) -> str | None:
    """The current version of the stored set; None when nothing was ever stored."""
    data = store.auth_get(MARKER_KIND, MARKER_KEY)
    version = None if data is None else data.get("version")
    return version if isinstance(version, str) else None


def mark_changed(store: MemoryStore) -> None:
    """Written after every change of a stored client, a space or a person (see the
    module's note on order)."""
    store.auth_put(
        MARKER_KIND,
        MARKER_KEY,
        {"version": secrets.token_hex(16), "at": to_wire_time(utc_now())},
        None,
    )
