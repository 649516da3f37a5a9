"""Owner sessions: a random cookie value, stored only as its sha256, with a CSRF token.

The session record lives in the store (kind ``owner_session``) with its expiry,
so every server process sees it and sign-out ends it everywhere.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass
from datetime import timedelta
from typing import Final

from metacortex.domain.records import utc_now
from metacortex.storage.base import MemoryStore

KIND: Final = "owner_session"


def digest(value: str) -> str:
    """The key a secret is stored under: its sha256, hex."""
    return hashlib.sha256(value.encode("utf-8")).hexdigest()


@dataclass(frozen=True, slots=True)
class Session:
    csrf: str

    def csrf_matches(self, presented: str | None) -> bool:
        return presented is not None and hmac.compare_digest(
            self.csrf.encode(), presented.encode("utf-8", "replace")
        )


class OwnerSessions:
    def __init__(self, store: MemoryStore, lifetime: timedelta) -> None:
        self._store = store
        self._lifetime = lifetime

    @property
    def lifetime(self) -> timedelta:
        return self._lifetime

    def create(self) -> tuple[str, Session]:
        """A new session: (cookie value, session). The cookie value is shown once."""
        value = secrets.token_urlsafe(32)
        session = Session(csrf=secrets.token_urlsafe(32))
        self._store.auth_put(
            KIND, digest(value), {"csrf": session.csrf}, utc_now() + self._lifetime
        )
        return value, session

    def get(self, value: str | None) -> Session | None:
        if not value:
            return None
        record = self._store.auth_get(KIND, digest(value))
        if record is None or not isinstance(record.get("csrf"), str):
            return None
        return Session(csrf=record["csrf"])

    def end(self, value: str | None) -> None:
        if value:
            self._store.auth_delete(KIND, digest(value))
