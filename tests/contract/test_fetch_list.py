"""fetch_context and list_context."""

from __future__ import annotations

import pytest

from metacortex.domain.records import BranchState
from metacortex.errors import InvalidArgument, NotFound
from metacortex.service import Access, MemoryService


def test_fetch_accepts_id_or_the_document_id_alias(service: MemoryService, admin: Access) -> None:
    item = service.save(admin, content="fetch me")["item"]
    assert service.fetch(admin, id=item["id"])["item"] == item
    assert service.fetch(admin, document_id=item["id"])["item"] == item
    assert service.fetch(admin, id=item["id"], document_id=item["id"])["item"] == item


def test_fetch_refuses_two_different_ids(service: MemoryService, admin: Access) -> None:
    item = service.save(admin, content="fetch me")["item"]
    with pytest.raises(InvalidArgument, match="different"):
        service.fetch(admin, id=item["id"], document_id="other")
    with pytest.raises(InvalidArgument, match="id is required"):
        service.fetch(admin)


def test_a_missing_record_and_an_invisible_one_give_the_same_not_found(
    service: MemoryService, admin: Access
) -> None:
    draft = service.save(admin, content="secret draft", draft=True)["item"]["id"]
    # Another credential, which reads active memories only (the one that saved a draft
    # reads it back: Access.sees).
    scoped = Access(
        frozenset({BranchState.ACTIVE}),
        BranchState.ACTIVE,
        may_write_lifecycle=False,
        principal="a-client",
    )

    with pytest.raises(NotFound) as invisible:
        service.fetch(scoped, id=draft)
    with pytest.raises(NotFound) as missing:
        service.fetch(scoped, id="doesNotExist123")

    assert invisible.value.message.replace(draft, "X") == missing.value.message.replace(
        "doesNotExist123", "X"
    )


def test_list_is_newest_first_with_summaries(service: MemoryService, admin: Access) -> None:
    ids = [service.save(admin, content=f"entry {i}\n\nbody")["item"]["id"] for i in range(3)]
    listed = service.list_memories(admin)
    assert [item["id"] for item in listed["items"]] == ids[::-1]
    assert listed["items"][0]["summary"] == "entry 2 body"
    assert listed["next_cursor"] is None
    assert listed["applied_filters"]["limit"] == 20


def test_a_cursor_walk_with_every_filter_returns_each_match_once_with_full_pages(
    service: MemoryService, admin: Access
) -> None:
    expected: list[str] = []
    for index in range(37):
        topic = "walk" if index % 3 else "elsewhere"
        origin = "user_asserted" if index % 2 else "agent_inferred"
        draft = index % 5 == 0
        item = service.save(
            admin, content=f"walk item {index}", topic=topic, origin=origin, draft=draft
        )["item"]
        if topic == "walk" and origin == "user_asserted":
            expected.append(item["id"])
    first_created = service.list_memories(
        admin, filter_topic="walk", limit=100, filter_state=["active", "wip"]
    )
    created_after = first_created["items"][-1]["metadata"]["created_at"]

    seen: list[str] = []
    cursor: str | None = None
    pages = 0
    while True:
        page = service.list_memories(
            admin,
            filter_topic="walk",
            filter_state=["active", "wip"],
            filter_origin="user_asserted",
            created_after=created_after,
            created_before="2999-01-01T00:00:00Z",
            limit=4,
            cursor=cursor,
        )
        pages += 1
        seen.extend(item["id"] for item in page["items"])
        cursor = page["next_cursor"]
        if cursor is None:
            break
        assert len(page["items"]) == 4, "no page is short while more records match"

    assert seen == expected[::-1]
    assert pages == -(-len(expected) // 4)


def test_a_cursor_from_other_filters_or_garbage_is_refused(
    service: MemoryService, admin: Access
) -> None:
    for index in range(3):
        service.save(admin, content=f"c {index}", topic="a")
    cursor = service.list_memories(admin, filter_topic="a", limit=1)["next_cursor"]
    assert cursor is not None
    with pytest.raises(InvalidArgument, match="other filters"):
        service.list_memories(admin, filter_topic="b", limit=1, cursor=cursor)
    with pytest.raises(InvalidArgument, match="cursor is not valid"):
        service.list_memories(admin, cursor="!!not-a-cursor!!")


def test_list_limits_and_time_ranges_are_checked(service: MemoryService, admin: Access) -> None:
    with pytest.raises(InvalidArgument, match="between 1 and 100"):
        service.list_memories(admin, limit=101)
    with pytest.raises(InvalidArgument, match="earlier than created_before"):
        service.list_memories(
            admin, created_after="2026-01-02T00:00:00Z", created_before="2026-01-01T00:00:00Z"
        )
