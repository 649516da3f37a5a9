"""deprecate_context and consolidate_context: lifecycle rules, each in one transaction."""

from __future__ import annotations

import threading

import pytest

from metacortex.domain.records import BranchState
from metacortex.errors import (
    Conflict,
    FailedPrecondition,
    InvalidArgument,
    MetaCortexError,
    NotFound,
    Unavailable,
)
from metacortex.providers.offline_merge import SentenceUnionMerger
from metacortex.service import Access, MemoryService
from metacortex.storage.base import MemoryStore
from tests.contract.conftest import StoreFactory
from tests.fakes import FailingOnceMerger, HashingEmbedder

ALL = ["active", "wip", "merged", "deprecated"]


def _save(service: MemoryService, admin: Access, content: str, **kw: object) -> str:
    return str(service.save(admin, content=content, **kw)["item"]["id"])  # type: ignore[arg-type]


def test_deprecating_records_the_replacement_and_closes_validity(
    service: MemoryService, admin: Access
) -> None:
    old = _save(service, admin, "Team lunch is Thursday")
    new = _save(service, admin, "Team lunch is Friday")

    result = service.deprecate(admin, id=old, superseding_id=new, initiator="user")

    assert result == {
        "item": {
            "id": old,
            "branch_state": "deprecated",
            "superseded_by": new,
            "supersession_reason": "changed",
        },
        "previous_state": "active",
    }
    meta = service.fetch(admin, id=old)["item"]["metadata"]
    assert meta["valid_until"] is not None
    assert meta["initiator"] == "user"
    assert [m["id"] for m in service.search(admin, query="team lunch")["matches"]] == [new]


def test_a_corrected_deprecation_keeps_validity_but_leaves_valid_at_searches(
    service: MemoryService, admin: Access
) -> None:
    wrong = _save(service, admin, "The CEO is Alice")
    right = _save(service, admin, "The CEO is Bob")
    service.deprecate(admin, id=wrong, superseding_id=right, supersession_reason="corrected")
    assert service.fetch(admin, id=wrong)["item"]["metadata"]["valid_until"] is None


def test_repeating_the_identical_deprecation_changes_nothing(
    service: MemoryService, admin: Access
) -> None:
    old = _save(service, admin, "v1")
    new = _save(service, admin, "v2")
    service.deprecate(admin, id=old, superseding_id=new)
    before = service.fetch(admin, id=old)["item"]

    again = service.deprecate(admin, id=old, superseding_id=new)

    assert again["previous_state"] == "deprecated"
    assert again["item"]["superseded_by"] == new
    assert service.fetch(admin, id=old)["item"] == before


def test_a_different_deprecation_of_a_deprecated_record_is_a_conflict(
    service: MemoryService, admin: Access
) -> None:
    old = _save(service, admin, "v1")
    new = _save(service, admin, "v2")
    other = _save(service, admin, "v3")
    service.deprecate(admin, id=old, superseding_id=new)
    with pytest.raises(Conflict, match="already deprecated"):
        service.deprecate(admin, id=old, superseding_id=other)
    with pytest.raises(Conflict, match="already deprecated"):
        service.deprecate(admin, id=old, superseding_id=new, supersession_reason="corrected")


def test_a_record_cannot_supersede_itself_and_the_replacement_must_exist(
    service: MemoryService, admin: Access
) -> None:
    memory = _save(service, admin, "solo")
    with pytest.raises(InvalidArgument, match="itself"):
        service.deprecate(admin, id=memory, superseding_id=memory)
    with pytest.raises(NotFound, match="superseding memory"):
        service.deprecate(admin, id=memory, superseding_id="missingReplacement")
    with pytest.raises(NotFound):
        service.deprecate(admin, id="missingTarget")
    assert service.fetch(admin, id=memory)["item"]["metadata"]["branch_state"] == "active"


def test_superseding_a_memory_with_itself_explains_the_dedupe_window(
    service: MemoryService, admin: Access
) -> None:
    """An agent that saves the corrected text, unchanged, gets the same id back (the dedupe
    window) and then deprecates the memory with itself: the refusal says why."""
    memory = _save(service, admin, "The office opens at 9.")
    again = _save(service, admin, "The office opens at 9.")
    assert again == memory
    with pytest.raises(InvalidArgument) as refused:
        service.deprecate(admin, id=memory, superseding_id=again)
    message = refused.value.message
    assert "cannot supersede itself" in message
    assert "identical to one saved in the last 15 minutes" in message
    assert "change the text" in message


def test_a_correction_that_does_not_change_the_text_is_refused_and_changes_nothing(
    service: MemoryService, admin: Access
) -> None:
    agent = _save(service, admin, "The office opens at 9.", topic="office")
    owner = _save(service, admin, "Lunch is at noon.", topic="office", origin="user_asserted")
    for memory, same in (
        (agent, "The office opens at 9."),
        (owner, "  Lunch is at\nnoon.  "),  # only the spacing differs
    ):
        with pytest.raises(InvalidArgument, match="the corrected text is the same as"):
            service.correct(admin, id=memory, corrected_content=same)
    assert service.store.topic_counts()["office"] == {BranchState.ACTIVE: 2}


def test_a_correction_into_another_topic_is_not_refused_as_unchanged(
    service: MemoryService, admin: Access
) -> None:
    memory = _save(service, admin, "The office opens at 9.", topic="office")
    moved = service.correct(
        admin, id=memory, corrected_content="The office opens at 9.", topic="work"
    )
    assert moved["write_status"] == "created"
    replaced = service.fetch(admin, id=memory)["item"]["metadata"]
    assert replaced["superseded_by"] == moved["item"]["id"]


def test_a_correction_identical_to_a_recent_save_points_at_it_and_says_so(
    service: MemoryService, admin: Access
) -> None:
    right = _save(service, admin, "The office opens at 9.", topic="office", origin="user_asserted")
    wrong = _save(service, admin, "The office opens at 10.", topic="office")

    result = service.correct(admin, id=wrong, corrected_content="The office opens at 9.")

    assert result["item"]["id"] == right
    assert result["write_status"] == "duplicate"
    assert result["note"] == (
        "This text was already saved as memory " + repr(right) + " in the last 15 minutes "
        "(identical saves within the dedupe window are stored once), so the corrected "
        "memory now points to it."
    )
    assert service.fetch(admin, id=wrong)["item"]["metadata"]["superseded_by"] == right


def test_a_supersession_chain_that_would_loop_back_is_a_conflict(
    service: MemoryService, admin: Access
) -> None:
    a = _save(service, admin, "a")
    b = _save(service, admin, "b")
    c = _save(service, admin, "c")
    service.deprecate(admin, id=b, superseding_id=c)
    service.deprecate(admin, id=c, superseding_id=a)  # chain: b -> c -> a
    with pytest.raises(Conflict, match="loop"):
        service.deprecate(admin, id=a, superseding_id=b)
    assert service.fetch(admin, id=a)["item"]["metadata"]["branch_state"] == "active"


def test_consolidating_explicit_sources_merges_them_and_carries_provenance(
    service: MemoryService, admin: Access
) -> None:
    first = _save(service, admin, "Ship on Monday. Tests must pass.", artifact_refs=["gs://b/1"])
    second = _save(
        service, admin, "Tests must pass. Notify #release.", artifact_refs=["gs://b/2", "gs://b/1"]
    )

    result = service.consolidate(admin, source_ids=[first, second])

    merged_id = result["item"]["merged_id"]
    assert result["item"]["merged_content"] == "Ship on Monday. Tests must pass. Notify #release."
    assert result["item"]["branch_state"] == "active"
    assert result["item"]["topic"] == "general"
    assert result["deprecated_ids"] == [first, second]
    assert result["source_count"] == 2
    merged = service.fetch(admin, id=merged_id)["item"]["metadata"]
    assert merged["provenance"]["derived_from"] == [first, second]
    assert merged["artifact_refs"] == ["gs://b/1", "gs://b/2"]
    assert merged["merge_method"] == "offline_sentence_merge"
    for source in (first, second):
        meta = service.fetch(admin, id=source)["item"]["metadata"]
        assert (meta["branch_state"], meta["superseded_by"]) == ("deprecated", merged_id)


def test_rerunning_a_finished_consolidation_returns_it_without_a_second_record(
    service: MemoryService, admin: Access
) -> None:
    ids = [_save(service, admin, f"fact {i}.") for i in range(3)]
    first = service.consolidate(admin, source_ids=ids)
    again = service.consolidate(admin, source_ids=ids)
    assert again == first
    active = service.list_memories(admin)["items"]
    assert [item["id"] for item in active] == [first["item"]["merged_id"]]


def test_without_ids_the_topic_wip_queue_is_merged_oldest_first(
    service: MemoryService, admin: Access
) -> None:
    drafts = [
        _save(service, admin, f"Draft point {i}.", topic="plan", draft=True) for i in range(3)
    ]
    _save(service, admin, "Active note.", topic="plan")
    _save(service, admin, "Other topic draft.", topic="elsewhere", draft=True)

    result = service.consolidate(admin, topic="plan")

    assert result["deprecated_ids"] == drafts
    assert result["item"]["merged_content"] == "Draft point 0. Draft point 1. Draft point 2."
    assert service.list_memories(admin, filter_topic="plan", filter_state="wip")["items"] == []


def test_fewer_than_two_sources_is_a_failed_precondition(
    service: MemoryService, admin: Access
) -> None:
    _save(service, admin, "lonely draft", topic="solo", draft=True)
    with pytest.raises(FailedPrecondition, match="at least two"):
        service.consolidate(admin, topic="solo")
    with pytest.raises(FailedPrecondition, match="at least two"):
        service.consolidate(admin, topic="empty")


def test_consolidation_refuses_duplicate_missing_or_retired_sources(
    service: MemoryService, admin: Access
) -> None:
    a = _save(service, admin, "a.")
    b = _save(service, admin, "b.")
    with pytest.raises(InvalidArgument, match="unique"):
        service.consolidate(admin, source_ids=[a, a])
    with pytest.raises(NotFound):
        service.consolidate(admin, source_ids=[a, "missingSource"])
    service.deprecate(admin, id=b)
    with pytest.raises(Conflict, match="deprecated"):
        service.consolidate(admin, source_ids=[a, b])


def test_named_sources_from_any_topic_merge_into_the_calls_topic(
    service: MemoryService, admin: Access
) -> None:
    """The original merges source_ids "regardless of their current state" and topic;
    here active and draft sources of any topic merge, and the result takes `topic`."""
    here = _save(service, admin, "The build runs on Fridays.", topic="ops")
    elsewhere = service.save(
        admin, content="The deploy needs two approvals.", topic="release", draft=True
    )["item"]["id"]
    result = service.consolidate(admin, topic="ops", source_ids=[here, elsewhere])
    assert result["item"]["topic"] == "ops"
    assert sorted(result["deprecated_ids"]) == sorted([here, elsewhere])
    merged = service.fetch(admin, id=result["item"]["merged_id"])["item"]
    assert merged["metadata"]["topic"] == "ops"
    for source in (here, elsewhere):
        retired = service.fetch(admin, id=source)["item"]["metadata"]
        assert retired["branch_state"] == "deprecated"
        assert retired["superseded_by"] == merged["id"]


def test_a_failed_merge_changes_nothing_and_the_same_call_then_completes(
    store: MemoryStore, embedder: HashingEmbedder, admin: Access
) -> None:
    service = MemoryService(store, embedder, merger=FailingOnceMerger())
    ids = [service.save(admin, content=f"part {i}", draft=True)["item"]["id"] for i in range(2)]

    with pytest.raises(Unavailable):
        service.consolidate(admin, source_ids=ids)
    assert {m["id"] for m in service.list_memories(admin, filter_state="wip")["items"]} == set(ids)

    result = service.consolidate(admin, source_ids=ids)
    assert result["source_count"] == 2
    assert len(service.list_memories(admin, filter_state=ALL)["items"]) == 3


def test_concurrent_identical_consolidations_produce_one_merged_record(
    store_factory: StoreFactory, admin: Access
) -> None:
    seed = MemoryService(store_factory(), HashingEmbedder(), merger=SentenceUnionMerger())
    ids = [seed.save(admin, content=f"race fact {i}.")["item"]["id"] for i in range(3)]
    services = [
        MemoryService(store_factory(), HashingEmbedder(), merger=SentenceUnionMerger())
        for _ in range(4)
    ]
    barrier = threading.Barrier(4)
    outcomes: list[object] = []

    def run(service: MemoryService) -> None:
        barrier.wait(timeout=10)
        try:
            outcomes.append(service.consolidate(admin, source_ids=ids)["item"]["merged_id"])
        except Conflict as error:
            outcomes.append(error)

    threads = [threading.Thread(target=run, args=(s,)) for s in services]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)

    merged_ids = {o for o in outcomes if isinstance(o, str)}
    assert len(outcomes) == 4
    assert len(merged_ids) == 1
    active = seed.list_memories(admin)["items"]
    assert [item["id"] for item in active] == list(merged_ids)


def test_a_merge_longer_than_the_content_limit_is_refused_and_changes_nothing(
    service: MemoryService, admin: Access
) -> None:
    ids = [_save(service, admin, f"{i} " + "x" * 12_000 + ".") for i in range(2)]
    with pytest.raises(FailedPrecondition, match="fewer sources"):
        service.consolidate(admin, source_ids=ids)
    assert len(service.list_memories(admin)["items"]) == 2


def test_rerunning_a_topic_consolidation_returns_the_same_merged_memory(
    service: MemoryService, admin: Access
) -> None:
    for i in range(3):
        _save(service, admin, f"Queue point {i}.", topic="queue", draft=True)
    first = service.consolidate(admin, topic="queue")

    again = service.consolidate(admin, topic="queue")

    assert again == first
    merged = service.list_memories(admin, filter_topic="queue")["items"]
    assert [item["id"] for item in merged] == [first["item"]["merged_id"]]


def test_a_topic_whose_last_merge_was_undone_is_not_reported_as_merged(
    service: MemoryService, admin: Access
) -> None:
    for i in range(2):
        _save(service, admin, f"Undone point {i}.", topic="undone", draft=True)
    first = service.consolidate(admin, topic="undone")
    service.deprecate(admin, id=first["item"]["merged_id"])
    with pytest.raises(FailedPrecondition, match="at least two"):
        service.consolidate(admin, topic="undone")


def test_six_concurrent_topic_consolidations_all_return_the_one_merged_memory(
    store_factory: StoreFactory, admin: Access
) -> None:
    seed = MemoryService(store_factory(), HashingEmbedder(), merger=SentenceUnionMerger())
    for i in range(4):
        seed.save(admin, content=f"race draft {i}.", topic="race", draft=True)
    services = [
        MemoryService(store_factory(), HashingEmbedder(), merger=SentenceUnionMerger())
        for _ in range(6)
    ]
    barrier = threading.Barrier(6)
    outcomes: list[object] = []

    def run(service: MemoryService) -> None:
        barrier.wait(timeout=30)
        try:
            outcomes.append(service.consolidate(admin, topic="race"))
        except MetaCortexError as error:  # collected: every caller must succeed
            outcomes.append(error)

    threads = [threading.Thread(target=run, args=(s,)) for s in services]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)

    assert len(outcomes) == 6
    assert all(isinstance(o, dict) for o in outcomes), outcomes
    assert all(o == outcomes[0] for o in outcomes)
    active = seed.list_memories(admin, filter_topic="race")["items"]
    assert [item["id"] for item in active] == [outcomes[0]["item"]["merged_id"]]  # type: ignore[index]
    # And once more, after the race.
    assert seed.consolidate(admin, topic="race") == outcomes[0]
