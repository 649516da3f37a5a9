"""A credential changing its own default space: the ``set_default_space`` tool.

The default space is part of a credential's grants, so it changes where the grants
are kept (``Profile.source``):

- a stored client: its record's ``defaultSpace`` (``ClientManager.set_default``),
  then the marker every server process watches: this process re-reads at its next
  request, every other one within ``METACORTEX_CLIENT_REFRESH_SECONDS``
  (``access.client_directory``);
- an OAuth grant: the grant record's ``default_space``; every request reads its grant
  record already (``auth.resource``), so every instance acts there at once;
- the admin token (and ``metacortex stdio`` without ``--client``) and the
  clients of ``MCP_CLIENT_PROFILES_JSON`` keep theirs in the server's configuration,
  which no call changes: refused, saying where the operator changes it.

Only among the spaces the credential holds now: a space it holds no grant on is
exactly a space that does not exist (``Access.space``), at any level (a default it
may only read is allowed, as on the consent page).
"""

from __future__ import annotations

from typing import Final

from metacortex.access.model import DEFAULT_SPACE, Level
from metacortex.access.profiles import Profile
from metacortex.clients.grants import PREFIX, set_grant_default
from metacortex.clients.manage import ENVIRONMENT, ClientManager
from metacortex.config import Settings
from metacortex.errors import FailedPrecondition
from metacortex.storage.base import MemoryStore

ADMIN_REFUSAL: Final = (
    "the admin token (and `metacortex stdio` without --client) always acts in the space "
    f"{DEFAULT_SPACE!r} unless a call names another: pass space on each call, or connect "
    "with a client credential whose default the owner sets "
    "(`metacortex client add ID --space KEY --default-space KEY`, or "
    "`metacortex client grant ID KEY --default`)"
)


def set_own_default(store: MemoryStore, settings: Settings, profile: Profile, key: str) -> str:
    """Make ``key`` the calling credential's default space; its previous default.
    NotFound for a space it does not hold; FailedPrecondition where no call may change
    it (the message says how the operator does)."""
    access = profile.access
    access.space(key, Level.READ)
    previous = access.default_space
    if profile.source == "admin":
        raise FailedPrecondition(ADMIN_REFUSAL)
    if profile.source == "environment":
        raise FailedPrecondition(
            f"client {profile.id!r} is defined in {ENVIRONMENT}: its default space is that "
            "entry's defaultSpace, which the operator changes there (then restarts the server)"
        )
    if key == previous:
        return previous
    if profile.source == "grant":
        set_grant_default(store, profile.id.removeprefix(PREFIX), key)
    else:
        ClientManager(store, settings).set_default(profile.id, key)
    return previous
