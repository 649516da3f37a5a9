"""What the owner's console asks of every store and of the service (SQLite and Firestore):
topic counts, events since an instant, explained search, promote, correct, consolidation
preview."""

from __future__ import annotations

from datetime import timedelta

import pytest

from metacortex.domain.records import BranchState, utc_now
from metacortex.errors import Conflict, FailedPrecondition
from metacortex.service import Access, MemoryService
from metacortex.storage.base import Event, MemoryStore


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
