"""People who sign in, for the tests of invitations, sign-in, the console and consent:
a household on the live server's store, and a person's browser over plain HTTP (cookies,
forms, CSRF tokens), going through the real pages."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

import httpx2

from metacortex.access.model import Level, Person, Role
from metacortex.access.registry import Registry
from metacortex.owner.invitations import INVITE_PATH, invite
from metacortex.owner.passphrase import set_person_passphrase
from metacortex.storage.base import MemoryStore
from tests.oauth_support import hidden

ANN_PASSPHRASE: Final = "ann's own long passphrase 7"
BEN_PASSPHRASE: Final = "ben reads the family space 3"


@dataclass
class Household:
    """Spaces ``family`` and ``work`` beside ``default``; Ann writes in family and reads
    work, Ben is a reader in family; neither is a member of ``default``."""

    store: MemoryStore
    registry: Registry
    ann: Person
    ben: Person

    @classmethod
    def on(cls, store: MemoryStore) -> Household:
        registry = Registry(store)
        registry.add_space("family", "Family")
        registry.add_space("work", "Work")
        ann = registry.add_person(
            "ann@example.com", "Ann", Role.WRITER, {"family": Level.WRITE, "work": Level.READ}
        )
        ben = registry.add_person("ben@example.com", "Ben", Role.READER, {"family": Level.WRITE})
        return cls(store, registry, ann, ben)

    @classmethod
    def signed_up(cls, store: MemoryStore) -> Household:
        """The household, Ann and Ben having chosen their passphrases."""
        household = cls.on(store)
        set_person_passphrase(store, household.ann.id, ANN_PASSPHRASE)
        set_person_passphrase(store, household.ben.id, BEN_PASSPHRASE)
        return household

    def invitation(self, person: Person, days: int = 7) -> str:
        """A fresh invitation's path (``/owner/invite/<token>``), as the command makes it."""
        token, _ = invite(self.store, person, days)
        return f"{INVITE_PATH}/{token}"


class PersonBrowser:
    """One person's browser without a browser: cookies, forms, CSRF tokens."""

    def __init__(self, url: str) -> None:
        self.http = httpx2.Client(base_url=url, timeout=30, follow_redirects=False)

    def close(self) -> None:
        self.http.close()

    def accept(self, path: str, passphrase: str, repeat: str | None = None) -> httpx2.Response:
        """Open an invitation link and choose a passphrase on its page."""
        page = self.http.get(path)
        assert page.status_code == 200, page.text
        return self.http.post(
            path,
            data={
                "csrf": hidden(page.text, "csrf"),
                "passphrase": passphrase,
                "repeat": passphrase if repeat is None else repeat,
            },
        )

    def sign_in(self, email: str, passphrase: str, next_url: str = "") -> httpx2.Response:
        return sign_in_as(self.http, email, passphrase, next_url)

    def signed_in(self) -> bool:
        """Whether the console opens (a signed-in caller's page, not the sign-in form)."""
        page = self.http.get("/console")
        return page.status_code == 200 and 'name="passphrase"' not in page.text


def sign_in_as(
    http: httpx2.Client, email: str, passphrase: str, next_url: str = ""
) -> httpx2.Response:
    """A person's sign-in on the sign-in page, with ``http``'s cookies."""
    page = http.get("/owner/sign-in", params={"next": next_url} if next_url else None)
    return http.post(
        "/owner/sign-in",
        data={
            "csrf": hidden(page.text, "csrf"),
            "next": next_url,
            "email": email,
            "passphrase": passphrase,
        },
    )
