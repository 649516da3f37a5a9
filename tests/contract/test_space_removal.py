"""Removing a space and changing a client's spaces on every store (issue 30 §4): what
``metacortex space remove`` and ``client grant|ungrant`` do, through the owner's API
the console shares (``operations.space_removal``, ``clients.manage``)."""

from __future__ import annotations

import pytest
from pydantic import SecretStr

from metacortex.access.model import Level, Role
from metacortex.access.registry import Registry
from metacortex.auth.tokens import GRANT
from metacortex.clients.manage import ClientManager
from metacortex.config import Settings
from metacortex.domain.records import ALL_STATES
from metacortex.errors import Conflict, FailedPrecondition
from metacortex.operations.space_removal import SpaceRemoval
from metacortex.service import Access, MemoryService
from metacortex.storage.base import MAX_ERASE_BATCH, MemoryFilter, MemoryStore

W, R = Level.WRITE, Level.READ


def _settings() -> Settings:
    return Settings(  # type: ignore[call-arg]
        _env_file=None, mcp_admin_token=SecretStr("a" * 20 + "B" * 12 + "0123456789")
    )


def _team(store: MemoryStore) -> Registry:
    registry = Registry(store)
    registry.add_space("family")
    registry.add_space("work")
    registry.add_person("ann@example.com", "Ann", Role.WRITER, {"family": W, "work": R})
    return registry


def test_a_client_gets_a_persons_spaces_at_their_level_and_never_one_they_are_not_in(
    store: MemoryStore,
) -> None:
    _team(store)
    clients = ClientManager(store, _settings())

    created = clients.create(
        "ann-laptop",
        person="ann@example.com",
        spaces={"family": None, "work": W},
        default_space="work",
    ).client
    with pytest.raises(FailedPrecondition, match="not a member of the space 'default'"):
        clients.grant("ann-laptop", "default")

    assert created.grants == {"family": "write", "work": "write"}
    assert created.levels == {"family": "write", "work": "read"}
    assert ClientManager(store, _settings()).get("ann-laptop").levels == created.levels


def test_removing_a_space_erases_its_memories_in_batches_and_moves_defaults_elsewhere(
    store: MemoryStore, service: MemoryService
) -> None:
    registry = _team(store)
    clients = ClientManager(store, _settings())
    clients.create(
        "ann-laptop", person="ann@example.com", spaces={"family": None, "work": None},
        default_space="work",
    )  # fmt: skip
    store.auth_put(GRANT, "g1", {"spaces": {"work": "read", "family": "read"}}, None)
    owner = Access.admin(directory=registry.directory())
    count = MAX_ERASE_BATCH + 3  # more than one batch
    for number in range(count):
        service.save(owner, content=f"Work note number {number}", space="work")
    kept = service.save(owner, content="Dinner at eight", space="family")["item"]["id"]
    told: list[int] = []

    removed = SpaceRemoval(store, _settings()).remove(
        "work", erased_by="owner (test)", erase_count=count, progress=told.append
    )

    assert removed.erased == count
    assert told == [MAX_ERASE_BATCH, count]
    assert store.count_memories(MemoryFilter(states=ALL_STATES, space="work")) == 0
    assert store.get(kept, space="family") is not None
    assert [p.email for p in removed.members] == ["ann@example.com"]
    [laptop] = removed.clients
    assert (laptop.grants, laptop.default_space) == ({"family": "write"}, "family")
    assert removed.grants == ("g1",)
    assert (store.auth_get(GRANT, "g1") or {})["spaces"] == {"family": "read"}
    assert "work" not in registry.directory().spaces
    assert dict(registry.person("ann@example.com").spaces) == {"family": W}


def test_a_space_is_kept_whole_while_a_client_holds_only_it_or_the_count_confirmed_is_stale(
    store: MemoryStore, service: MemoryService
) -> None:
    registry = _team(store)
    owner = Access.admin(directory=registry.directory())
    service.save(owner, content="Standup at nine", space="work")
    clients = ClientManager(store, _settings())
    clients.create("desk", spaces={"work": None})
    removal = SpaceRemoval(store, _settings())

    with pytest.raises(FailedPrecondition, match="client 'desk' holds only the space 'work'"):
        removal.remove("work", erased_by="owner (test)", erase_count=1)
    clients.remove("desk")
    with pytest.raises(Conflict, match="now holds 1 memory, not the 2 you confirmed"):
        removal.remove("work", erased_by="owner (test)", erase_count=2)

    assert store.count_memories(MemoryFilter(states=ALL_STATES, space="work")) == 1
    assert "work" in registry.directory().spaces
    assert dict(registry.person("ann@example.com").spaces) == {"family": W, "work": R}
