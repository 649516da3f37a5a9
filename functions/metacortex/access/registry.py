"""Spaces and people kept in the store, and the owner's API over them.

Both live as small ``auth_state`` records (``storage.base``: ``auth_*``), no
expiry, like stored clients:

- kind ``space``, key the space key: ``{"name", "description", "created_at"}``.
  The ``default`` space needs no record: it always exists (so a store from
  before spaces needs no migration); a record only renames it.
- kind ``person``, key the person id: ``{"email", "name", "role", "active",
  "spaces": {key: "read"|"write"}, "created_at", "changed_at"}``; kind
  ``person_email``, key the email: ``{"id"}``, created first and atomically, so
  two people never share an email. The owner is implicit (id ``owner``); a
  record of it only names it.

Every change rewrites the marker the client directory watches
(``access.marker``), so deactivating a person, changing a role or
removing a space reaches every server process within
``METACORTEX_CLIENT_REFRESH_SECONDS``, as pausing a client does.
"""

from __future__ import annotations

import secrets
from collections.abc import Mapping
from dataclasses import replace
from typing import Any, Final

from metacortex.access.marker import mark_changed
from metacortex.access.model import (
    DEFAULT_SPACE,
    DEFAULT_SPACE_RECORD,
    MAX_PERSON_NAME_CHARS,
    MAX_SPACE_DESCRIPTION_CHARS,
    MAX_SPACE_NAME_CHARS,
    OWNER,
    OWNER_ID,
    Directory,
    Level,
    Person,
    Role,
    Space,
    check_email,
    check_name,
    check_space_key,
)
from metacortex.domain.records import to_wire_time, utc_now
from metacortex.errors import Conflict, FailedPrecondition, InvalidArgument, NotFound
from metacortex.storage.base import MemoryStore

SPACE_KIND: Final = "space"
PERSON_KIND: Final = "person"
EMAIL_KIND: Final = "person_email"
_OWNER_EVERYWHERE: Final = "the owner is a member of every space, at write; that does not change"


def read_directory(store: MemoryStore) -> Directory:
    """Every space (``default`` always among them) and person (the owner always)."""
    spaces = {DEFAULT_SPACE: DEFAULT_SPACE_RECORD}
    for key, data in store.auth_list(SPACE_KIND):
        spaces[key] = _decode_space(key, data)
    people = {OWNER_ID: OWNER}
    for key, data in store.auth_list(PERSON_KIND):
        person = _decode_person(key, data)
        if person is not None:
            people[key] = person
    return Directory(spaces, people)


def _decode_space(key: str, data: Mapping[str, Any]) -> Space:
    default = DEFAULT_SPACE_RECORD if key == DEFAULT_SPACE else None
    name = data.get("name")
    description = data.get("description")
    created = data.get("created_at")
    return Space(
        key,
        name if isinstance(name, str) and name else (default.name if default else key),
        description if isinstance(description, str) else (default.description if default else ""),
        created if isinstance(created, str) else None,
    )


def _decode_person(key: str, data: Mapping[str, Any]) -> Person | None:
    try:
        role = Role(str(data.get("role")))
    except ValueError:
        return None
    if key == OWNER_ID:
        role = Role.OWNER
    elif role is Role.OWNER:
        return None  # one owner only: a record claiming it is ignored
    raw_spaces = data.get("spaces")
    levels: dict[str, Level] = {}
    if isinstance(raw_spaces, dict):
        for space, level in raw_spaces.items():
            if (
                isinstance(space, str)
                and isinstance(level, str)
                and level.upper() in Level.__members__
            ):
                levels[space] = Level[level.upper()]
    email = data.get("email")
    name = data.get("name")
    created = data.get("created_at")
    return Person(
        id=key,
        email=email if isinstance(email, str) else None,
        name=name if isinstance(name, str) and name else (email if isinstance(email, str) else key),
        role=role,
        active=data.get("active") is not False,
        spaces=levels,
        created_at=created if isinstance(created, str) else None,
    )


def _person_record(person: Person) -> dict[str, Any]:
    now = to_wire_time(utc_now())
    return {
        "email": person.email,
        "name": person.name,
        "role": person.role.value,
        "active": person.active,
        "spaces": {key: level.word for key, level in sorted(person.spaces.items())},
        "created_at": person.created_at or now,
        "changed_at": now,
    }


class Registry:
    """The owner's API: spaces and people of one store (console, ``metacortex space``,
    ``metacortex person``). Every method reads what it needs; nothing is cached here."""

    def __init__(self, store: MemoryStore) -> None:
        self._store = store

    def directory(self) -> Directory:
        return read_directory(self._store)

    # -------------------------------------------------------------- spaces
    def space(self, key: str) -> Space:
        found = self.directory().spaces.get(key)
        if found is None:
            raise NotFound(f"no space {key!r}; `metacortex space list` shows the spaces")
        return found

    def add_space(self, key: str, name: str | None = None, description: str = "") -> Space:
        key = check_space_key(key.strip(), "space key")
        space = Space(
            key,
            check_name(name or key, "space name", MAX_SPACE_NAME_CHARS),
            _description(description),
            to_wire_time(utc_now()),
        )
        if key == DEFAULT_SPACE or not self._store.auth_create(
            SPACE_KIND, key, _space_record(space), None
        ):
            raise Conflict(f"a space {key!r} already exists")
        mark_changed(self._store)
        return space

    def rename_space(
        self, key: str, name: str | None = None, description: str | None = None
    ) -> Space:
        current = self.space(key)
        changed = replace(
            current,
            name=check_name(name, "space name", MAX_SPACE_NAME_CHARS) if name else current.name,
            description=_description(description)
            if description is not None
            else current.description,
        )
        # The default space has no record until it is renamed.
        self._store.auth_put(SPACE_KIND, key, _space_record(changed), None)
        mark_changed(self._store)
        return changed

    def remove_space(self, key: str) -> Space:
        """Remove an (empty) space: first from every person's membership, then its
        record, so that a space made later with the same key gives its old members
        nothing. The caller checks that it holds no memory and takes it out of the
        credentials' grants (``operations.space_removal``); re-run after a failure
        half-way, it finishes the job."""
        current = self.space(key)
        if key == DEFAULT_SPACE:
            raise FailedPrecondition("the default space cannot be removed")
        for person in self.members(key):
            spaces = {k: v for k, v in person.spaces.items() if k != key}
            self._store.auth_put(
                PERSON_KIND, person.id, _person_record(replace(person, spaces=spaces)), None
            )
        self._store.auth_delete(SPACE_KIND, key)
        mark_changed(self._store)
        return current

    def members(self, key: str) -> list[Person]:
        """The people who are members of the space (not the owner, who is of every one),
        by name."""
        people = self.directory().people.values()
        return sorted((p for p in people if key in p.spaces), key=lambda p: (p.name, p.id))

    # -------------------------------------------------------------- people
    def person(self, who: str) -> Person:
        """A person by email or id (``owner`` is the owner)."""
        directory = self.directory()
        found = directory.person(who) if "@" not in who else directory.by_email(who)
        if found is None:
            raise NotFound(f"no person {who!r}; `metacortex person list` shows the people")
        return found

    def add_person(
        self, email: str, name: str, role: Role, spaces: Mapping[str, Level] | None = None
    ) -> Person:
        if role is Role.OWNER:
            raise InvalidArgument("there is one owner; add a writer or a reader")
        address = check_email(email)
        known = self.directory()
        levels = dict(spaces or {})
        self._check_spaces(known, levels)
        person = Person(
            id="p-" + secrets.token_hex(6),
            email=address,
            name=check_name(name, "name", MAX_PERSON_NAME_CHARS),
            role=role,
            spaces=levels,
            created_at=to_wire_time(utc_now()),
        )
        if not self._store.auth_create(EMAIL_KIND, address, {"id": person.id}, None):
            raise Conflict(f"a person with the email {address!r} already exists")
        self._store.auth_put(PERSON_KIND, person.id, _person_record(person), None)
        mark_changed(self._store)
        return person

    def change_person(self, who: str, **changes: Any) -> Person:
        """Change a person's role, name, active flag or spaces (never the owner's role)."""
        current = self.person(who)
        if current.is_owner and (
            changes.get("role") not in (None, Role.OWNER) or changes.get("active") is False
        ):
            raise FailedPrecondition("the owner keeps every right and cannot be deactivated")
        if current.is_owner and "spaces" in changes:
            raise FailedPrecondition(_OWNER_EVERYWHERE)
        if not current.is_owner and changes.get("role") is Role.OWNER:
            # A second owner's record is ignored when read: the person would vanish.
            raise InvalidArgument("there is one owner; a person is a writer or a reader")
        if "name" in changes:
            changes["name"] = check_name(changes["name"], "name", MAX_PERSON_NAME_CHARS)
        if "spaces" in changes:
            self._check_spaces(self.directory(), changes["spaces"])
        changed = replace(current, **changes)
        self._store.auth_put(PERSON_KIND, current.id, _person_record(changed), None)
        mark_changed(self._store)
        return changed

    def grant(self, who: str, key: str, level: Level) -> Person:
        person = self.person(who)
        if person.is_owner:
            raise FailedPrecondition(_OWNER_EVERYWHERE)
        return self.change_person(person.id, spaces={**person.spaces, key: level})

    def ungrant(self, who: str, key: str) -> Person:
        person = self.person(who)
        if person.is_owner:
            raise FailedPrecondition(_OWNER_EVERYWHERE)
        if key not in person.spaces:
            raise NotFound(f"{person.name} is not a member of the space {key!r}")
        return self.change_person(
            person.id, spaces={k: v for k, v in person.spaces.items() if k != key}
        )

    @staticmethod
    def _check_spaces(known: Directory, levels: Mapping[str, Level]) -> None:
        for key in levels:
            if key not in known.spaces:
                raise NotFound(f"no space {key!r}; create it with `metacortex space add {key}`")


def _space_record(space: Space) -> dict[str, Any]:
    return {"name": space.name, "description": space.description, "created_at": space.created_at}


def _description(text: str | None) -> str:
    cleaned = " ".join((text or "").split())
    if len(cleaned) > MAX_SPACE_DESCRIPTION_CHARS:
        raise InvalidArgument(
            f"a space description is {len(cleaned)} characters; "
            f"the limit is {MAX_SPACE_DESCRIPTION_CHARS}"
        )
    return cleaned
