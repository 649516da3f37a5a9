"""Sessions: a random cookie value, stored only as its sha256, with a CSRF token and
whose session it is (the owner, or a person signed in with their email).

The session record lives in the store (kind ``owner_session``, the name from when
only the owner signed in) with its expiry, so every server process sees it and
sign-out ends it everywhere. A record without ``person`` is the owner's. Whether a
person's session still opens anything (the person deactivated or removed) is
decided where it is read (``owner.base.OwnerBase.caller``), each time.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass
from datetime import timedelta
from typing import Final

from metacortex.access.model import OWNER_ID
from metacortex.domain.records import utc_now
from metacortex.storage.base import MemoryStore

KIND: Final = "owner_session"


def digest(value: str) -> str:
    """The key a secret is stored under: its sha256, hex."""
    return hashlib.sha256(value.encode("utf-8")).hexdigest()


@dataclass(frozen=True, slots=True)
class Session:
    csrf: str
    # The person signed in: ``owner``, or a person's id (``access.model.Person.id``).
    person: str = OWNER_ID

    @property
    def is_owner(self) -> bool:
        return self.person == OWNER_ID

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

    def create(self, person: str = OWNER_ID) -> tuple[str, Session]:
        """A new session of ``person``: (cookie value, session). The cookie value is
        shown once."""
        value = secrets.token_urlsafe(32)
        session = Session(csrf=secrets.token_urlsafe(32), person=person)
        record = {"csrf": session.csrf, **({} if person == OWNER_ID else {"person": person})}
        self._store.auth_put(KIND, digest(value), record, utc_now() + self._lifetime)
        return value, session

    def get(self, value: str | None) -> Session | None:
        if not value:
            return None
        record = self._store.auth_get(KIND, digest(value))
        if record is None or not isinstance(record.get("csrf"), str):
            return None
        person = record.get("person", OWNER_ID)
        return Session(csrf=record["csrf"], person=person) if isinstance(person, str) else None

    def end(self, value: str | None) -> None:
        if value:
            self._store.auth_delete(KIND, digest(value))

    def end_all_of(self, person: str) -> int:
        """End every session of a person (their passphrase was set anew); how many."""
        ended = 0
        for key, record in self._store.auth_list(KIND):
            if record.get("person") == person and self._store.auth_delete(KIND, key):
                ended += 1
        return ended
