"""Known devices: a browser the owner signed in from keeps a sign-in budget of its own.

Sign-in is limited per client address and overall so that guessing is slow; but
anyone can spend those budgets, and then the owner is refused with the guesser
(behind a tunnel every request shares one address, so five wrong guesses lock
everyone out). A successful sign-in therefore also sets a device cookie. A
sign-in that presents a known one is counted against that device's own budget
(``METACORTEX_SIGN_IN_PER_MINUTE``, as an address has) instead of the address and
overall ones: an attacker cannot spend it without the
cookie, and gets no cookie without the passphrase.

The cookie value is random (256 bits) and kept in the store only as its sha256
(kind ``owner_device``), like a session; it lives ``LIFETIME`` and is renewed at
each sign-in. It grants nothing but that budget: pages still need a session.
"""

from __future__ import annotations

import re
import secrets
from datetime import timedelta
from typing import Final

from metacortex.domain.records import utc_now
from metacortex.owner.sessions import digest
from metacortex.storage.base import MemoryStore

KIND: Final = "owner_device"
LIFETIME: Final = timedelta(days=90)
# What secrets.token_urlsafe(32) gives: anything else is not looked up in the store.
_SHAPE: Final = re.compile(r"[A-Za-z0-9_-]{43}")


class OwnerDevices:
    def __init__(self, store: MemoryStore) -> None:
        self._store = store

    def recognise(self, value: str | None) -> str | None:
        """The device's key when ``value`` is a known device cookie, else None."""
        if not value or not _SHAPE.fullmatch(value):
            return None
        key = digest(value)
        return key if self._store.auth_get(KIND, key) is not None else None

    def enrol(self, value: str | None = None) -> str:
        """Remember a device for ``LIFETIME`` (renewing ``value`` when given); its cookie value."""
        value = value if value and _SHAPE.fullmatch(value) else secrets.token_urlsafe(32)
        self._store.auth_put(KIND, digest(value), {}, utc_now() + LIFETIME)
        return value
