"""The owner's registry of spaces and people on every store (issue 30 §4, command line):
a role change never makes a second owner or loses the person, the owner's own
membership is not the registry's to change, and a removed space leaves no
membership behind for a later space of the same key to inherit."""

from __future__ import annotations

import pytest

from metacortex.access.model import OWNER_ID, Level, Role
from metacortex.access.registry import Registry
from metacortex.errors import FailedPrecondition, InvalidArgument
from metacortex.storage.base import MemoryStore

W, R = Level.WRITE, Level.READ


def test_making_a_person_the_owner_is_refused_and_the_person_stays(store: MemoryStore) -> None:
    registry = Registry(store)
    ann = registry.add_person("ann@example.com", "Ann", Role.WRITER)

    with pytest.raises(InvalidArgument, match="one owner"):
        registry.change_person(ann.email or "", role=Role.OWNER)

    assert registry.person("ann@example.com").role is Role.WRITER


def test_the_owners_membership_is_every_space_and_is_not_changed_by_a_grant(
    store: MemoryStore,
) -> None:
    registry = Registry(store)
    registry.add_space("work")

    with pytest.raises(FailedPrecondition, match="member of every space"):
        registry.grant(OWNER_ID, "work", R)
    with pytest.raises(FailedPrecondition, match="member of every space"):
        registry.ungrant(OWNER_ID, "work")

    assert store.auth_list("person") == []


def test_a_space_removed_and_made_again_gives_its_old_members_nothing(
    store: MemoryStore,
) -> None:
    registry = Registry(store)
    registry.add_space("work")
    registry.add_space("home")
    registry.add_person("ann@example.com", "Ann", Role.WRITER, {"work": W, "home": R})

    registry.remove_space("work")
    registry.add_space("work")

    assert dict(registry.person("ann@example.com").spaces) == {"home": R}
    assert registry.members("work") == []


def test_granting_a_space_that_does_not_exist_names_the_command_that_makes_it(
    store: MemoryStore,
) -> None:
    registry = Registry(store)
    registry.add_person("ann@example.com", "Ann", Role.WRITER)

    with pytest.raises(Exception, match="`metacortex space add work`"):
        registry.grant("ann@example.com", "work", W)
