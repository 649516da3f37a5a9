"""How a client profile is kept in the store, and the marker that says the set changed.

A stored client is one ``auth_state`` record (``storage.base``: ``auth_*``) of kind
``client_profile``, keyed by the client id, without expiry::

    {"entry": {<an MCP_CLIENT_PROFILES_JSON entry, with token_sha256, never the token>},
     "paused": false, "created_at": "...", "created_by": "console", "changed_at": "..."}

so one validator (``access.profiles.client_profile``) reads both sources. Every
change also rewrites one marker record (kind ``client_profiles``, key ``changed``)
with a fresh random version, after the profile itself: a process that reads the
marker before listing the profiles can keep its copy for as long as the marker
stays the same (``access.client_directory``).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any, Final, Literal

from metacortex.access.marker import mark_changed, read_marker
from metacortex.access.profiles import Profile, client_profile
from metacortex.config import Settings
from metacortex.domain.records import to_wire_time, utc_now
from metacortex.errors import ConfigurationError
from metacortex.storage.base import MemoryStore

__all__ = ["KIND", "StoredClient", "decode", "mark_changed", "read_all", "read_marker", "record"]

KIND: Final = "client_profile"
Source = Literal["environment", "store"]

_log = logging.getLogger("metacortex.clients")


@dataclass(frozen=True, slots=True)
class StoredClient:
    """A stored record, read as it is: ``entry`` still to be validated."""

    id: str
    entry: Mapping[str, Any]
    paused: bool
    created_at: str | None
    created_by: str | None

    def profile(self, settings: Settings) -> Profile:
        """The profile it serves (ConfigurationError when the record is not a valid one)."""
        profile = client_profile(dict(self.entry), settings, f"stored client {self.id!r}")
        if profile.id != self.id:
            raise ConfigurationError(
                f"stored client {self.id!r}: its entry names another id ({profile.id!r})"
            )
        if profile.token_sha256 is None:
            raise ConfigurationError(f"stored client {self.id!r}: has no token digest")
        return replace(profile, paused=self.paused, source="store")


def record(entry: Mapping[str, Any], *, created_by: str) -> dict[str, Any]:
    now = to_wire_time(utc_now())
    return {
        "entry": dict(entry),
        "paused": False,
        "created_at": now,
        "created_by": created_by,
        "changed_at": now,
    }


def decode(key: str, data: Mapping[str, Any]) -> StoredClient:
    entry = data.get("entry")
    return StoredClient(
        id=key,
        entry=entry if isinstance(entry, dict) else {},
        paused=data.get("paused") is True,
        created_at=_text(data.get("created_at")),
        created_by=_text(data.get("created_by")),
    )


def _text(value: object) -> str | None:
    return value if isinstance(value, str) else None


def read_all(store: MemoryStore) -> list[StoredClient]:
    return [decode(key, data) for key, data in store.auth_list(KIND)]


def valid_profiles(
    stored: list[StoredClient], settings: Settings, environment_ids: frozenset[str]
) -> dict[str, Profile]:
    """The stored clients that can serve, by id: a record that is not a valid profile
    is logged and left out (the others still serve), and an id the environment
    defines stays the environment's."""
    profiles: dict[str, Profile] = {}
    for client in stored:
        if client.id in environment_ids:
            _log.warning(
                "stored client %r is not in effect: MCP_CLIENT_PROFILES_JSON defines the same "
                "id; remove one of them",
                client.id,
            )
            continue
        try:
            profiles[client.id] = client.profile(settings)
        except ConfigurationError as error:
            _log.error("%s; it is left out until it is removed and created again", error)
    return profiles
