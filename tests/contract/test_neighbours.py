"""``MemoryStore.neighbours``: the records around each anchor, whatever the caller holds."""

from __future__ import annotations

import random
from dataclasses import replace

import pytest

from metacortex.domain.records import BranchState, Memory
from metacortex.service import Access, MemoryService
from metacortex.storage.base import MemoryFilter, MemoryStore, Neighbours, PageKey

ACTIVE = MemoryFilter(states=(BranchState.ACTIVE,))


def _conversation(service: MemoryService, admin: Access) -> list[Memory]:
    """30 turns in one topic (every fifth a draft, which ACTIVE skips), 5 in another."""
    for turn in range(30):
        service.save(admin, content=f"turn {turn} of the talk", topic="talk", draft=turn % 5 == 2)
    for turn in range(5):
        service.save(admin, content=f"aside {turn}", topic="aside")
    everything = MemoryFilter(states=tuple(BranchState))
    return service.store.list_page(everything, 100, None, oldest_first=True)


def _expected(store: MemoryStore, anchor: Memory, where: MemoryFilter) -> tuple[list[str], ...]:
    scoped = replace(where, topic=anchor.topic)
    key = PageKey(anchor.created_at, anchor.id)
    older = store.list_page(scoped, 2, key)
    newer = store.list_page(scoped, 2, key, oldest_first=True)
    return [m.id for m in older], [m.id for m in newer]


def _ids(found: Neighbours) -> tuple[list[str], ...]:
    return [m.id for m in found.older], [m.id for m in found.newer]


@pytest.mark.parametrize("seed", range(6))
def test_neighbours_are_the_same_whatever_records_the_caller_already_holds(
    store: MemoryStore, service: MemoryService, admin: Access, seed: int
) -> None:
    records = _conversation(service, admin)
    active = [m for m in records if ACTIVE.matches(m)]
    rng = random.Random(seed)
    # Anchors side by side, two apart, alone, at both ends, and in the other topic.
    talk = [m for m in active if m.topic == "talk"]
    anchors = [talk[0], talk[1], talk[3], talk[5], talk[11], talk[-1], talk[-2]]
    anchors += [m for m in active if m.topic == "aside"][2:3]
    anchors += rng.sample(talk, 3)
    held = rng.sample(active, rng.randint(0, len(active)))

    found = store.neighbours(anchors, ACTIVE, 2, held)

    assert set(found) == {anchor.id for anchor in anchors}
    for anchor in anchors:
        assert _ids(found[anchor.id]) == _expected(store, anchor, ACTIVE), anchor.content
    assert {k: _ids(v) for k, v in store.neighbours(anchors, ACTIVE, 2).items()} == {
        k: _ids(v) for k, v in found.items()
    }


def test_neighbours_with_every_record_held_and_a_topic_filter(
    store: MemoryStore, service: MemoryService, admin: Access
) -> None:
    records = _conversation(service, admin)
    where = replace(ACTIVE, topic="talk")
    talk = [m for m in records if where.matches(m)]
    anchors = talk[4:12]

    found = store.neighbours(anchors, where, 2, talk)

    for anchor in anchors:
        assert _ids(found[anchor.id]) == _expected(store, anchor, where)
