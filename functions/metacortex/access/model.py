"""Spaces, people, levels and grants: the values shared memory is made of.

- A **space** is a named pool of memories (``default`` holds everything written
  before spaces existed). Its key is a lower-case slug and is what the tools'
  ``space`` argument names.
- A **person** has a role: ``owner`` (exactly one, implicit: every right),
  ``writer`` or ``reader``, and is a member of some spaces at a level.
- A **credential** (a client token, an OAuth grant, the stdio identity) belongs
  to one person and holds grants ``space -> read|write`` with one default.

The level a call gets in a space is the lowest of the person's role, the
person's membership and the credential's grant (``effective_levels``), computed
once where the caller's access is built (``access.profiles``), never by a tool.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import IntEnum, StrEnum
from typing import Final

from metacortex.domain.records import DEFAULT_SPACE as DEFAULT_SPACE  # re-exported
from metacortex.errors import InvalidArgument

OWNER_ID: Final = "owner"
SPACE_KEY_PATTERN: Final = re.compile(r"^[a-z0-9](?:[a-z0-9-]{0,38}[a-z0-9])?$")
MAX_SPACE_NAME_CHARS: Final = 80
MAX_SPACE_DESCRIPTION_CHARS: Final = 500
MAX_PERSON_NAME_CHARS: Final = 80
_EMAIL: Final = re.compile(r"^[^@\s]{1,64}@[^@\s]{1,190}\.[^@\s]{1,63}$")


class Level(IntEnum):
    """What a caller may do in a space; higher includes lower."""

    READ = 1
    WRITE = 2

    @property
    def word(self) -> str:
        return self.name.lower()

    @classmethod
    def parse(cls, value: str, field_name: str = "level") -> Level:
        try:
            return cls[value.strip().upper()]
        except KeyError:
            raise InvalidArgument(f"{field_name} must be read or write; got {value!r}") from None


class Role(StrEnum):
    OWNER = "owner"
    WRITER = "writer"
    READER = "reader"

    @property
    def ceiling(self) -> Level:
        """The highest level the role allows anywhere."""
        return Level.READ if self is Role.READER else Level.WRITE


@dataclass(frozen=True, slots=True)
class Space:
    key: str
    name: str
    description: str = ""
    created_at: str | None = None


DEFAULT_SPACE_RECORD: Final = Space(
    DEFAULT_SPACE,
    "Default",
    "What was saved before spaces existed, and anything not put elsewhere.",
)


@dataclass(frozen=True, slots=True)
class Person:
    id: str
    email: str | None
    name: str
    role: Role
    active: bool = True
    # Membership: the spaces this person may use at all, and at which level (the owner
    # is a member of every space at write, whatever this holds).
    spaces: Mapping[str, Level] = field(default_factory=dict)
    created_at: str | None = None

    @property
    def is_owner(self) -> bool:
        return self.role is Role.OWNER

    def level_in(self, space: str) -> Level | None:
        """The person's own level in a space (membership capped by the role), or None."""
        if self.is_owner:
            return Level.WRITE
        member = self.spaces.get(space)
        return None if member is None else min(member, self.role.ceiling)


OWNER: Final = Person(OWNER_ID, None, "Owner", Role.OWNER)


@dataclass(frozen=True, slots=True)
class Grants:
    """A credential's grants: ``space -> level`` and its default space.

    ``every_space`` is the owner's admin credential: every space that exists, at
    write (``levels`` is then ignored)."""

    levels: Mapping[str, Level]
    default: str
    every_space: bool = False

    @classmethod
    def everything(cls) -> Grants:
        return cls({}, DEFAULT_SPACE, every_space=True)

    @classmethod
    def legacy(cls) -> Grants:
        """What a credential made before spaces holds: the default space, at write."""
        return cls({DEFAULT_SPACE: Level.WRITE}, DEFAULT_SPACE)


def effective_levels(
    person: Person, grants: Grants, spaces: Mapping[str, Space]
) -> dict[str, Level]:
    """space key -> the level a call with these grants gets there: the lowest of the
    person's role, membership and the grant; only spaces that exist; an inactive
    person gets none."""
    if not person.active:
        return {}
    if grants.every_space:
        candidates: Mapping[str, Level] = {key: Level.WRITE for key in spaces}
    else:
        candidates = {key: level for key, level in grants.levels.items() if key in spaces}
    levels: dict[str, Level] = {}
    for key, granted in candidates.items():
        own = person.level_in(key)
        if own is not None:
            levels[key] = min(granted, own)
    return levels


def own_levels(person: Person, spaces: Mapping[str, Space]) -> dict[str, Level]:
    """space key -> a person's own level in each space that exists: what they may do
    signed in to the console, and the most they may give a credential. The owner writes
    in every one; anyone else has their membership capped by their role (none while
    inactive)."""
    if person.is_owner:
        return {key: Level.WRITE for key in spaces}
    return effective_levels(person, Grants(person.spaces, DEFAULT_SPACE), spaces)


def check_space_key(key: str, field_name: str = "space") -> str:
    if not isinstance(key, str) or not SPACE_KEY_PATTERN.fullmatch(key):
        raise InvalidArgument(
            f"{field_name} {key!r} is not a space key: lower-case letters, digits and "
            "hyphens, 1 to 40 characters, starting and ending with a letter or digit "
            f"(for example {suggest_space_key(str(key))!r})"
        )
    return key


def suggest_space_key(text: str) -> str:
    """The slug closest to ``text`` (``"Family Trip"`` -> ``"family-trip"``)."""
    slug = re.sub(r"[^a-z0-9]+", "-", text.strip().lower()).strip("-")[:40].strip("-")
    return slug or "team"


def check_email(email: str) -> str:
    normalized = email.strip().lower()
    if not _EMAIL.fullmatch(normalized):
        raise InvalidArgument(f"{email!r} is not an email address")
    return normalized


def check_name(name: str, field_name: str, limit: int) -> str:
    cleaned = " ".join(name.split())
    if not cleaned:
        raise InvalidArgument(f"{field_name} must not be empty")
    if len(cleaned) > limit:
        raise InvalidArgument(f"{field_name} is {len(cleaned)} characters; the limit is {limit}")
    return cleaned


def parse_grant(text: str, default_level: Level = Level.WRITE) -> tuple[str, Level]:
    """``"work"`` or ``"work:read"`` -> (key, level)."""
    key, _, level = text.partition(":")
    return check_space_key(key.strip()), (Level.parse(level) if level else default_level)


@dataclass(frozen=True, slots=True)
class Directory:
    """Every space and person, as read at one moment (what a server process caches)."""

    spaces: Mapping[str, Space]
    people: Mapping[str, Person]

    def person(self, person_id: str) -> Person | None:
        return self.people.get(person_id)

    def by_email(self, email: str) -> Person | None:
        normalized = email.strip().lower()
        return next((p for p in self.people.values() if p.email == normalized), None)

    def names(self) -> dict[str, str]:
        return {person.id: person.name for person in self.people.values()}


FRESH: Final = Directory({DEFAULT_SPACE: DEFAULT_SPACE_RECORD}, {OWNER_ID: OWNER})
