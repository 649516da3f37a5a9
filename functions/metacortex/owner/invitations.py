"""Invitations: a one-time link with which a person sets their own passphrase.

``metacortex person invite EMAIL`` (``cli/invite.py``) makes one for a person the
owner added: a random 256-bit token shown once, in the link
``<public base>/owner/invite/<token>``. The store keeps only the token's sha256
(kind ``invitation``) with the person's id, when the link stops working
(``valid_until``, ``METACORTEX_INVITATION_DAYS`` from now unless ``--days`` says
otherwise) and, once it was used, when (``used_at``).

The record outlives its link by ``KEPT_AFTER``, so a link opened late says plainly
that it expired or was used, rather than "unknown". Using it is one atomic step
(``auth_consume``): of two uses of one link, exactly one sets a passphrase. A new
invitation of the same person replaces the earlier unused one (``replaced_at``):
the older link says so.
"""

from __future__ import annotations

import re
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Final

from metacortex.access.model import Person
from metacortex.domain.records import to_wire_time, utc_now
from metacortex.errors import FailedPrecondition, NotFound
from metacortex.owner.sessions import digest
from metacortex.storage.base import MemoryStore

KIND: Final = "invitation"
# The link: ``<public base>/owner/invite/<token>`` (owner/invitation_pages.py).
INVITE_PATH: Final = "/owner/invite"
KEPT_AFTER: Final = timedelta(days=30)
MAX_DAYS: Final = 90
# What secrets.token_urlsafe(32) gives: anything else is not looked up in the store.
TOKEN_SHAPE: Final = re.compile(r"[A-Za-z0-9_-]{43}")
UNKNOWN: Final = (
    "This invitation link is not valid. Check that it was copied whole, or ask the "
    "owner for a new one."
)


class InvitationGone(FailedPrecondition):
    """The link was valid once: it expired, was used, or a newer one replaced it."""


@dataclass(frozen=True, slots=True)
class Invitation:
    person: str
    email: str
    valid_until: datetime


def invite(store: MemoryStore, person: Person, days: int) -> tuple[str, Invitation]:
    """A new invitation of ``person``, valid ``days`` days: (token, invitation). The
    token is shown once; an earlier unused invitation of the person stops working."""
    now = utc_now()
    for key, data in store.auth_list(KIND):
        if data.get("person") == person.id and not _spent(data):
            store.auth_update(KIND, key, {"replaced_at": to_wire_time(now)})
    token = secrets.token_urlsafe(32)
    invitation = Invitation(person.id, person.email or "", now + timedelta(days=days))
    record = {
        "person": person.id,
        "email": invitation.email,
        "valid_until": to_wire_time(invitation.valid_until),
        "created_at": to_wire_time(now),
    }
    store.auth_put(KIND, digest(token), record, invitation.valid_until + KEPT_AFTER)
    return token, invitation


def look_up(store: MemoryStore, token: str) -> Invitation:
    """The invitation ``token`` opens, while it can be used; NotFound or
    InvitationGone saying why not. Changes nothing."""
    data = store.auth_get(KIND, digest(token)) if TOKEN_SHAPE.fullmatch(token) else None
    return _usable(data)


def use(store: MemoryStore, token: str) -> Invitation:
    """Spend the invitation (once, atomically); the invitation, or why it cannot be
    used. A link that expired is refused before it is spent."""
    invitation = look_up(store, token)
    taken = store.auth_consume(KIND, digest(token), {"used_at": to_wire_time(utc_now())})
    if taken is None:
        raise NotFound(UNKNOWN)
    data, first = taken
    if not first:
        raise InvitationGone(_gone_message(data))
    return invitation


def _spent(data: dict[str, Any]) -> bool:
    return bool(data.get("used_at") or data.get("replaced_at"))


def _usable(data: dict[str, Any] | None) -> Invitation:
    if data is None or not isinstance(data.get("person"), str):
        raise NotFound(UNKNOWN)
    if _spent(data):
        raise InvitationGone(_gone_message(data))
    valid_until = _instant(data.get("valid_until"))
    if valid_until is None or valid_until <= utc_now():
        raise InvitationGone(
            "This invitation link expired"
            + (f" on {valid_until:%Y-%m-%d %H:%M} UTC" if valid_until is not None else "")
            + ". Ask the owner for a new one (metacortex person invite)."
        )
    return Invitation(str(data["person"]), str(data.get("email") or ""), valid_until)


def _instant(value: object) -> datetime | None:
    try:
        return datetime.fromisoformat(value) if isinstance(value, str) else None
    except ValueError:
        return None


def _gone_message(data: dict[str, Any]) -> str:
    if data.get("replaced_at"):
        return (
            "A newer invitation replaced this link. Use the newest link the owner sent you, "
            "or ask for a new one."
        )
    return (
        "This invitation link was already used: it sets a passphrase once. Sign in with "
        "your email and that passphrase, or ask the owner for a new link if you forgot it."
    )
