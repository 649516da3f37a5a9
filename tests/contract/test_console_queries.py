"""What the owner's console asks of every store and of the service (SQLite and Firestore):
topic counts, counts under filters, what a record replaced, events since an instant,
explained search, promote, correct, consolidation preview."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from metacortex.domain.records import BranchState, Origin, utc_now
from metacortex.errors import Conflict, FailedPrecondition, InvalidArgument
from metacortex.service import Access, MemoryService
from metacortex.storage.base import Event, MemoryFilter, MemoryStore


def test_topic_counts_are_per_topic_and_state(service: MemoryService, admin: Access) -> None:
    service.save(admin, content="tomatoes need sun", topic="garden")
    service.save(admin, content="basil likes water", topic="garden", draft=True)
    old = service.save(admin, content="the fence is green", topic="garden")["item"]["id"]
    service.deprecate(admin, id=old)
    service.save(admin, content="invoice due friday", topic="work", draft=True)

    counts = service.store.topic_counts()

    assert counts == {
        "garden": {
            BranchState.ACTIVE: 1,
            BranchState.WIP: 1,
            BranchState.DEPRECATED: 1,
        },
        "work": {BranchState.WIP: 1},
    }


def test_events_can_be_read_from_an_instant_on(store: MemoryStore) -> None:
    now = utc_now()
    store.record_events(
        [
            Event("memory_events", now - timedelta(days=3), None, {"n": 1}),
            Event("memory_events", now - timedelta(hours=1), None, {"n": 2}),
            Event("memory_events", now, None, {"n": 3}),
        ]
    )

    recent = store.read_events("memory_events", since=now - timedelta(days=1))

    assert [event["n"] for event in recent] == [2, 3]
    assert len(store.read_events("memory_events")) == 3


def test_explained_search_splits_each_score_without_changing_the_ranking(
    service: MemoryService, admin: Access
) -> None:
    for text in (
        "the quarterly report is due in march",
        "report the broken heater to the landlord",
        "march is the month of the marathon",
        "grocery list: apples, pears",
    ):
        service.save(admin, content=text, topic="notes")

    plain = service.search(admin, query="march report", limit=4)["matches"]
    explained = service.search(admin, query="march report", limit=4, explain=True)["matches"]

    assert [m["id"] for m in explained] == [m["id"] for m in plain]
    assert [m["score"] for m in explained] == [m["score"] for m in plain]
    for match in explained:
        parts = match["breakdown"]
        assert min(parts.values()) >= 0
        assert sum(parts.values()) == pytest.approx(match["score"], abs=1e-5)
    assert explained[0]["breakdown"]["keyword"] > 0
    assert "breakdown" not in plain[0]


def test_promote_makes_a_draft_active_and_refuses_a_deprecated_memory(
    service: MemoryService, admin: Access
) -> None:
    draft = service.save(admin, content="a draft to promote", draft=True)["item"]["id"]
    gone = service.save(admin, content="an old fact")["item"]["id"]
    service.deprecate(admin, id=gone)

    promoted = service.promote(admin, id=draft)
    again = service.promote(admin, id=draft)

    assert promoted == {"item": {"id": draft, "branch_state": "active"}, "previous_state": "wip"}
    assert again["previous_state"] == "active"
    assert service.fetch(admin, id=draft)["item"]["metadata"]["branch_state"] == "active"
    with pytest.raises(FailedPrecondition, match="only a draft"):
        service.promote(admin, id=gone)


def test_correct_saves_the_right_memory_and_deprecates_the_wrong_one_as_corrected(
    service: MemoryService, admin: Access
) -> None:
    wrong = service.save(admin, content="the office opens at 10", topic="office")["item"]["id"]

    result = service.correct(admin, id=wrong, corrected_content="the office opens at 9")

    new = service.fetch(admin, id=result["item"]["id"])["item"]
    old = service.fetch(admin, id=wrong)["item"]["metadata"]
    assert new["content"] == "the office opens at 9"
    assert new["metadata"]["topic"] == "office"
    assert new["metadata"]["provenance"]["origin"] == "user_asserted"
    assert old["branch_state"] == "deprecated"
    assert old["superseded_by"] == new["id"]
    assert old["supersession_reason"] == "corrected"
    with pytest.raises(Conflict):
        service.correct(admin, id=wrong, corrected_content="again")


def test_consolidation_preview_changes_nothing_and_confirming_its_sources_merges_them(
    service: MemoryService, admin: Access
) -> None:
    ids = [
        service.save(admin, content=text, topic="trip", draft=True)["item"]["id"]
        for text in ("We fly on May 3.", "The hotel is near the station.")
    ]

    preview = service.preview_consolidation(admin, topic="trip")

    assert preview["source_ids"] == ids
    assert "May 3" in preview["merged_content"]
    assert service.store.topic_counts()["trip"] == {BranchState.WIP: 2}
    merged = service.consolidate(admin, topic="trip", source_ids=preview["source_ids"])
    assert merged["item"]["merged_content"] == preview["merged_content"]
    assert service.store.topic_counts()["trip"] == {
        BranchState.ACTIVE: 1,
        BranchState.DEPRECATED: 2,
    }
    with pytest.raises(FailedPrecondition, match="at least two"):
        service.preview_consolidation(admin, topic="trip")


def test_count_memories_agrees_with_listing_under_every_filter(
    service: MemoryService, admin: Access
) -> None:
    for number in range(7):
        service.save(admin, content=f"garden note {number}", topic="garden")
    service.save(admin, content="a garden draft", topic="garden", draft=True)
    service.save(admin, content="asserted", topic="work", origin="user_asserted")
    later = service.save(
        admin, content="valid from 2030", topic="work", valid_from="2030-01-01T00:00:00Z"
    )["item"]["id"]
    wrong = service.save(admin, content="never true", topic="work")["item"]["id"]
    service.correct(admin, id=wrong, corrected_content="true after all")
    store = service.store
    every = (BranchState.ACTIVE, BranchState.WIP, BranchState.DEPRECATED, BranchState.MERGED)
    filters = [
        MemoryFilter(states=(BranchState.ACTIVE,)),
        MemoryFilter(states=every),
        MemoryFilter(states=every, topic="garden"),
        MemoryFilter(states=(BranchState.WIP,), topic="garden"),
        MemoryFilter(states=every, origin=Origin.USER_ASSERTED),
        MemoryFilter(states=every, valid_at=utc_now()),
        MemoryFilter(states=every, topic="work", valid_at=datetime(2031, 1, 1, tzinfo=UTC)),
        MemoryFilter(states=(BranchState.ACTIVE,), topic="no-such-topic"),
    ]

    counts = [store.count_memories(where) for where in filters]

    assert counts == [len(store.list_page(where, 1000, None)) for where in filters]
    assert counts == [10, 12, 8, 1, 2, 10, 3, 0]
    assert later not in [m.id for m in store.list_page(filters[5], 1000, None)]


def test_superseded_by_any_finds_what_each_record_replaced(
    service: MemoryService, admin: Access
) -> None:
    first, second, third, other = (
        service.save(admin, content=text, topic="office")["item"]["id"]
        for text in ("opens at 10", "opens at 9", "opens at 8:30", "closed on Sunday")
    )
    service.deprecate(admin, id=first, superseding_id=second)
    service.deprecate(admin, id=second, superseding_id=third)
    fixed = service.correct(admin, id=other, corrected_content="closed on Sundays and Mondays")

    replaced = service.store.superseded_by_any([third, second, fixed["item"]["id"], "0" * 26])

    assert [m.id for m in replaced] == [first, second, other]
    assert replaced[2].supersession_reason is not None
    assert service.store.superseded_by_any([first]) == []
    assert service.store.superseded_by_any([]) == []


def test_the_console_pages_both_ways_with_the_total(service: MemoryService, admin: Access) -> None:
    ids = [
        service.save(admin, content=f"note {number}", topic="bulk")["item"]["id"]
        for number in range(12)
    ]
    newest_first = list(reversed(ids))

    first = service.page(admin, filter_topic="bulk", limit=5)
    second = service.page(admin, filter_topic="bulk", limit=5, cursor=first.older_cursor)
    third = service.page(admin, filter_topic="bulk", limit=5, cursor=second.older_cursor)
    back = service.page(admin, filter_topic="bulk", limit=5, cursor=third.newer_cursor, newer=True)
    top = service.page(admin, filter_topic="bulk", limit=5, cursor=back.newer_cursor, newer=True)

    pages = [first, second, third, back, top]
    assert [[m.id for m in p.memories] for p in pages] == [
        newest_first[0:5],
        newest_first[5:10],
        newest_first[10:12],
        newest_first[5:10],
        newest_first[0:5],
    ]
    assert [p.total for p in pages] == [12] * 5
    assert [p.newer_cursor is None for p in pages] == [True, False, False, False, True]
    assert [p.older_cursor is None for p in pages] == [False, False, True, False, False]
    listed = service.list_memories(admin, filter_topic="bulk", limit=5)
    from_tool_cursor = service.page(
        admin, filter_topic="bulk", limit=5, cursor=listed["next_cursor"]
    )
    assert [m.id for m in from_tool_cursor.memories] == newest_first[5:10]


def test_a_preview_of_chosen_memories_of_any_topic_changes_nothing_and_names_their_topics(
    service: MemoryService, admin: Access
) -> None:
    active = service.save(admin, content="The car is serviced in May.", topic="car")["item"]["id"]
    draft = service.save(admin, content="Draft: tyres in October.", topic="todo", draft=True)[
        "item"
    ]["id"]

    preview = service.preview_consolidation(admin, topic="car", source_ids=[draft, active])

    assert preview["source_ids"] == [active, draft]  # oldest first
    assert [s["topic"] for s in preview["sources"]] == ["car", "todo"]
    assert [s["branch_state"] for s in preview["sources"]] == ["active", "wip"]
    assert preview["merged_content"] == "The car is serviced in May. Tyres in October."
    assert service.store.topic_counts() == {
        "car": {BranchState.ACTIVE: 1},
        "todo": {BranchState.WIP: 1},
    }
    with pytest.raises(FailedPrecondition, match="at least two"):
        service.preview_consolidation(admin, topic="car", source_ids=[active])


def test_the_owners_edited_merge_is_stored_and_the_record_says_the_owner_wrote_it(
    service: MemoryService, admin: Access
) -> None:
    ids = [
        service.save(admin, content=text, topic="trip", draft=True)["item"]["id"]
        for text in ("Draft: we fly on May 3.", "Draft: the hotel is near the station.")
    ]

    result = service.consolidate(
        admin, topic="trip", source_ids=ids, merged_content="  We fly on May 3 (TP 1234).  "
    )

    merged = service.fetch(admin, id=result["item"]["merged_id"])["item"]
    assert merged["content"] == "We fly on May 3 (TP 1234)."
    assert merged["metadata"]["merge_method"] == "offline_sentence_merge, edited by the owner"
    assert merged["metadata"]["provenance"]["origin"] == "user_asserted"
    assert merged["metadata"]["initiator"] == "user"
    assert merged["metadata"]["provenance"]["derived_from"] == ids
    plain = service.consolidate(
        admin,
        topic="trip",
        source_ids=[
            service.save(admin, content=text, topic="trip")["item"]["id"]
            for text in ("Pack the adapter.", "Pack the charger.")
        ],
    )
    meta = service.fetch(admin, id=plain["item"]["merged_id"])["item"]["metadata"]
    assert (meta["merge_method"], meta["provenance"]["origin"]) == (
        "offline_sentence_merge",
        "agent_inferred",
    )


def test_an_empty_or_oversized_edited_merge_is_refused_and_changes_nothing(
    service: MemoryService, admin: Access
) -> None:
    ids = [
        service.save(admin, content=text, topic="trip", draft=True)["item"]["id"]
        for text in ("One.", "Two.")
    ]

    with pytest.raises(InvalidArgument, match="merged_content is empty"):
        service.consolidate(admin, topic="trip", source_ids=ids, merged_content="   ")
    with pytest.raises(InvalidArgument, match="merged_content is 20001 characters"):
        service.consolidate(admin, topic="trip", source_ids=ids, merged_content="x" * 20_001)

    assert service.store.topic_counts()["trip"] == {BranchState.WIP: 2}


def test_matching_lists_the_records_containing_the_words_best_match_first(
    service: MemoryService, admin: Access
) -> None:
    """The console's keyword box: the words as keyword search reads them (stems, no stop
    words), under the same filters, best BM25 match first."""
    both = service.save(admin, content="Invoices and the invoice run.", topic="billing")["item"]
    once = service.save(admin, content="Send the invoice on Friday.", topic="billing")["item"]
    service.save(admin, content="Lunch is at noon.", topic="billing")
    service.save(admin, content="An invoice draft.", topic="billing", draft=True)
    service.save(admin, content="The invoice of another topic.", topic="other")

    found = service.matching(admin, words="the invoices", filter_topic="billing")

    assert [memory.id for memory in found] == [both["id"], once["id"]]
    drafts = service.matching(admin, words="invoice", filter_state="wip")
    assert [memory.content for memory in drafts] == ["An invoice draft."]
    assert service.matching(admin, words="the and of") == []
