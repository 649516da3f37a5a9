"""Who a session is: the owner, or a person who may still sign in.

A person's session opens pages only while the person exists and is active. That is
read from the spaces and people the server process holds (``directory_of``: the
client directory's, refreshed at most every ``METACORTEX_CLIENT_REFRESH_SECONDS``),
so deactivating a person ends their sessions on every instance within that
window, as it refuses their credentials. A person that copy does not know yet
(added a moment ago on another instance) is read from the store itself.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass

import anyio.to_thread

from metacortex.access.model import (
    DEFAULT_SPACE,
    OWNER,
    OWNER_ID,
    Directory,
    Level,
    Person,
    own_levels,
)
from metacortex.access.registry import read_directory
from metacortex.owner.sessions import Session
from metacortex.storage.base import MemoryStore

DirectorySource = Callable[[], Awaitable[Directory]]


@dataclass(frozen=True, slots=True)
class Caller:
    """A signed-in session, its person, and the spaces and people as read for it."""

    session: Session
    person: Person
    directory: Directory

    @property
    def is_owner(self) -> bool:
        return self.person.is_owner

    @property
    def levels(self) -> dict[str, Level]:
        """The caller's own level in each space that exists (``access.model.own_levels``)."""
        return own_levels(self.person, self.directory.spaces)


def home_space(levels: Mapping[str, Level]) -> str:
    """The space a caller starts in: ``default`` when they have it, else the first of
    theirs by key ("" when they have none)."""
    return DEFAULT_SPACE if DEFAULT_SPACE in levels else min(levels, default="")


async def resolve(
    session: Session, directory_of: DirectorySource, store: MemoryStore
) -> Caller | None:
    """The caller behind ``session``; None when it is a person who may no longer sign in
    (deactivated, removed)."""
    directory = await directory_of()
    if session.person == OWNER_ID:
        return Caller(session, directory.person(OWNER_ID) or OWNER, directory)
    if session.person not in directory.people:
        directory = await anyio.to_thread.run_sync(read_directory, store)
    person = directory.person(session.person)
    if person is None or not person.active:
        return None
    return Caller(session, person, directory)
