"""Erasure on every store: the record's content goes, a tombstone stays, links say so.

Each test runs against SQLite and against Firestore on the real emulator. The
SQLite file's bytes are checked in ``tests/test_sqlite_erase.py``, two processes
on one data directory there too.
"""

from __future__ import annotations

import json
import re
import sqlite3
from collections.abc import Mapping
from datetime import timedelta

import pytest
from google.cloud import firestore
from google.cloud.firestore_v1.base_query import FieldFilter

from metacortex.domain.records import BranchState
from metacortex.errors import Conflict, Forbidden, InvalidArgument, NotFound
from metacortex.kernel.events import MEMORY_EVENTS, EventRecorder
from metacortex.mcp_surface.summaries import summarize_arguments, summarize_result
from metacortex.providers.offline_merge import SentenceUnionMerger
from metacortex.service import Access, MemoryService
from metacortex.storage.base import MAX_ERASE_BATCH, MemoryFilter, MemoryStore
from metacortex.storage.firestore import FINGERPRINTS_SUFFIX, FirestoreStore
from metacortex.storage.sqlite import SQLiteStore
from tests.contract.conftest import StoreFactory
from tests.fakes import HashingEmbedder
from tests.firestore_support import PROJECT

BY = "owner (test)"
EVERY_STATE = MemoryFilter(states=tuple(BranchState))


def _save(service: MemoryService, admin: Access, content: str, **kw: object) -> str:
    return str(service.save(admin, content=content, **kw)["item"]["id"])  # type: ignore[arg-type]


def _fingerprints_pointing_at(store: MemoryStore, memory_id: str) -> int:
    """How many write fingerprints name the record, read from the backend itself."""
    if isinstance(store, SQLiteStore):
        with sqlite3.connect(store.path) as conn:
            row = conn.execute(
                "SELECT COUNT(*) FROM write_fingerprints WHERE memory_id = ?", (memory_id,)
            ).fetchone()
        return int(row[0])
    assert isinstance(store, FirestoreStore)
    collection = firestore.Client(project=PROJECT).collection(
        store.collection + FINGERPRINTS_SUFFIX
    )
    return len(list(collection.where(filter=FieldFilter("memory_id", "==", memory_id)).stream()))


def test_an_erased_record_is_gone_from_reads_searches_and_counts_and_leaves_a_tombstone(
    service: MemoryService, store: MemoryStore, embedder: HashingEmbedder, admin: Access
) -> None:
    secret = _save(service, admin, "The vault code is quetzal nine", topic="vault")
    kept = _save(service, admin, "The vault is in the basement", topic="vault")
    assert _fingerprints_pointing_at(store, secret) == 1

    result = service.erase(admin, ids=[secret], erased_by=BY)

    assert result["erased_ids"] == [secret]
    assert result["erased_count"] == 1
    assert store.get(secret) is None
    assert _fingerprints_pointing_at(store, secret) == 0
    [tombstone] = store.tombstones([secret, kept]).values()
    assert (tombstone.id, tombstone.erased_by) == (secret, BY)
    found = service.search(admin, query="vault code quetzal", filter_state=list(BranchState))
    assert [m["id"] for m in found["matches"]] == [kept]
    assert [s.memory.id for s in store.lexical_search(["quetzal"], EVERY_STATE, 10)] == []
    vector = embedder.embed_query("The vault code is quetzal nine")
    assert secret not in [s.memory.id for s in store.vector_search(vector, EVERY_STATE, 10)]
    listed = service.list_memories(admin, filter_topic="vault", filter_state=list(BranchState))
    assert [item["id"] for item in listed["items"]] == [kept]
    assert store.topic_counts() == {"vault": {BranchState.ACTIVE: 1}}


def test_fetching_an_erased_record_says_it_was_erased_as_not_found(
    service: MemoryService, admin: Access
) -> None:
    secret = _save(service, admin, "A home address that must go")
    service.erase(admin, ids=[secret], erased_by=BY)

    with pytest.raises(
        NotFound,
        match=rf"memory '{secret}' was erased on .* by {re.escape(BY)}; its content is gone",
    ):
        service.fetch(admin, id=secret)
    with pytest.raises(NotFound, match="no memory with id 'zz-never-stored'"):
        service.fetch(admin, id="zz-never-stored")


def test_a_caller_that_could_never_read_an_erased_record_is_told_only_no_memory_with_id(
    service: MemoryService, admin: Access
) -> None:
    """A scoped endpoint that reads active memories only learns nothing from a draft's
    (wip) tombstone: the same words as an id that never existed. What it could read
    still says erased."""
    draft = _save(service, admin, "A draft the reader never saw", draft=True)
    active = _save(service, admin, "A note the reader could read")
    service.erase(admin, ids=[draft, active], erased_by=BY)
    reader = Access(frozenset({BranchState.ACTIVE}), BranchState.ACTIVE, may_write_lifecycle=False)
    never = "0" * len(draft)

    with pytest.raises(NotFound) as hidden:
        service.fetch(reader, id=draft)
    with pytest.raises(NotFound) as missing:
        service.fetch(reader, id=never)

    assert hidden.value.message == f"no memory with id {draft!r}"
    assert hidden.value.message.replace(draft, never) == missing.value.message
    with pytest.raises(NotFound, match=rf"memory '{active}' was erased on .* by {re.escape(BY)}"):
        service.fetch(reader, id=active)
    with pytest.raises(NotFound, match=rf"memory '{draft}' was erased on"):
        service.fetch(admin, id=draft)


def _recorded(
    recorder: EventRecorder, tool: str, arguments: Mapping[str, object], result: object
) -> None:
    """A tool call's event, summarized as the server summarizes it."""
    recorder.tool_call(
        client_id="default",
        tool_name=tool,
        status="ok",
        latency_ms=1.0,
        request_summary=summarize_arguments(arguments),
        response_summary=summarize_result(tool, result) if isinstance(result, dict) else None,
    )


def test_an_erase_that_empties_a_topic_takes_its_name_out_of_memory_events(
    service: MemoryService, store: MemoryStore, admin: Access
) -> None:
    """The events keep a topic verbatim where a tool took or returned one (save, search,
    list, consolidate, the context prompt); a topic the erase left empty goes from all of
    them, a topic that still holds memories stays (the store shows it anyway)."""
    recorder = EventRecorder(retention=timedelta(days=1), retrieval_logging=False)
    recorder.start(store)
    try:
        for topic in ("alice-divorce", "garden"):
            content = f"Notes about {topic}"
            saved = service.save(admin, content=content, topic=topic)
            _recorded(recorder, "save_context", {"content": content, "topic": topic}, saved)
            found = service.search(admin, query="notes", filter_topic=topic)
            _recorded(recorder, "search_context", {"query": "notes", "filter_topic": topic}, found)
            _recorded(recorder, "list_context", {"filter_topic": topic}, None)
            _recorded(recorder, "consolidate_context", {"topic": topic}, None)
            recorder.mcp_request(
                event_type="prompt_get",
                client_id="default",
                name="context",
                status="ok",
                latency_ms=1.0,
                request_summary=summarize_arguments({"topic": topic}),
            )
        kept = _save(service, admin, "More about the garden", topic="garden")
        recorder.flush()
        assert json.dumps(store.read_events(MEMORY_EVENTS)).count('"alice-divorce"') == 6

        service.erase(admin, topic="alice-divorce", expected_count=1, erased_by=BY)
        service.erase(admin, ids=[kept], erased_by=BY)  # "garden" still holds one
    finally:
        recorder.close()

    events = store.read_events(MEMORY_EVENTS)
    text = json.dumps(events)
    assert "alice-divorce" not in text
    assert text.count('"[erased]"') == 6
    assert text.count('"garden"') == 6
    saves = [e for e in events if e["tool_name"] == "save_context"]
    assert [e["request"]["topic"] for e in saves] == ["[erased]", "garden"]
    assert [e["response"]["topic"] for e in saves] == ["[erased]", "garden"]


def test_the_same_text_saved_again_after_erasure_is_a_new_record_not_a_duplicate(
    service: MemoryService, admin: Access
) -> None:
    """The write fingerprint went with the record: it neither dedupes nor confirms the text."""
    first = _save(service, admin, "A password that was pasted by mistake")
    assert service.save(admin, content="A password that was pasted by mistake")["write_status"] == (
        "duplicate"
    )
    service.erase(admin, ids=[first], erased_by=BY)

    again = service.save(admin, content="A password that was pasted by mistake")

    assert again["write_status"] == "created"
    assert again["item"]["id"] != first


def test_a_supersession_link_to_an_erased_record_resolves_to_its_tombstone(
    service: MemoryService, store: MemoryStore, admin: Access
) -> None:
    old = _save(service, admin, "The office is on floor 3")
    new = _save(service, admin, "The office is on floor 4, next to Dana's desk")
    service.deprecate(admin, id=old, superseding_id=new)

    service.erase(admin, ids=[new], erased_by=BY)

    record = service.memory(admin, old)
    assert record.superseded_by == new
    assert list(store.tombstones([record.superseded_by])) == [new]


def test_erasing_a_consolidation_source_lists_every_record_built_from_its_text(
    service: MemoryService, admin: Access
) -> None:
    a = _save(service, admin, "Carol's phone number is 555 0101.", topic="people", draft=True)
    b = _save(service, admin, "Carol prefers email.", topic="people", draft=True)
    merged = service.consolidate(admin, topic="people")["item"]["merged_id"]
    c = _save(service, admin, "Carol works on Tuesdays.", topic="people")
    twice = service.consolidate(admin, topic="people", source_ids=[merged, c])["item"]["merged_id"]

    plan = service.plan_erase(admin, ids=[a])
    result = service.erase(admin, ids=[a], erased_by=BY)

    expected = [(merged, [a]), (twice, [merged])]
    assert [(d["id"], d["from"]) for d in plan["derived"]] == expected
    assert [(d["id"], d["from"]) for d in result["derived"]] == expected
    assert service.memory(admin, merged).provenance.derived_from == (a, b)
    # Erasing both merges too leaves nothing built on the erased text.
    assert service.erase(admin, ids=[a, merged, twice], erased_by=BY)["derived"] == []


def test_a_plan_counts_what_would_be_erased_and_changes_nothing(
    service: MemoryService, store: MemoryStore, admin: Access
) -> None:
    ids = [_save(service, admin, f"Note {i} about the launch", topic="launch") for i in range(3)]
    service.deprecate(admin, id=ids[0])
    _save(service, admin, "A draft about the launch", topic="launch", draft=True)
    _save(service, admin, "Elsewhere", topic="other")

    by_topic = service.plan_erase(admin, topic="launch")
    by_ids = service.plan_erase(admin, ids=[ids[2], ids[1], ids[2]])

    assert by_topic["count"] == 4  # every state
    assert by_topic["topic"] == "launch"
    assert set(by_topic["ids"]) >= set(ids)
    assert (by_ids["count"], by_ids["ids"]) == (2, [ids[2], ids[1]])
    assert [r["id"] for r in by_ids["records"]] == [ids[2], ids[1]]
    assert all(store.get(memory_id) is not None for memory_id in ids)


def test_a_topic_is_erased_in_batches_and_progress_is_reported_after_each(
    service: MemoryService, store: MemoryStore, admin: Access
) -> None:
    count = MAX_ERASE_BATCH + 5
    for i in range(count):
        _save(service, admin, f"Scratch note {i}", topic="scratch")
    _save(service, admin, "Keep me", topic="keep")
    seen: list[int] = []

    result = service.erase(
        admin, topic="scratch", expected_count=count, erased_by=BY, progress=seen.append
    )

    assert result["erased_count"] == count
    assert seen == [MAX_ERASE_BATCH, count]
    assert list(store.topic_counts()) == ["keep"]
    assert len(store.tombstones(result["erased_ids"])) == count


def test_a_topic_whose_count_changed_since_the_confirmation_is_not_erased(
    service: MemoryService, store: MemoryStore, admin: Access
) -> None:
    _save(service, admin, "One", topic="t")
    confirmed = service.plan_erase(admin, topic="t")["count"]
    _save(service, admin, "Two, saved after the owner looked", topic="t")

    with pytest.raises(Conflict, match="now holds 2 memories to erase, not the 1 you confirmed"):
        service.erase(admin, topic="t", expected_count=confirmed, erased_by=BY)

    assert store.topic_counts() == {"t": {BranchState.ACTIVE: 2}}


def test_a_selection_naming_an_unknown_id_erases_nothing(
    service: MemoryService, store: MemoryStore, admin: Access
) -> None:
    real = _save(service, admin, "Real")

    with pytest.raises(NotFound, match="no memory with id 'zz-unknown'; nothing was erased"):
        service.erase(admin, ids=[real, "zz-unknown"], erased_by=BY)

    assert store.get(real) is not None


def test_erasing_again_reports_the_ids_already_erased_and_changes_nothing(
    service: MemoryService, store: MemoryStore, admin: Access
) -> None:
    first = _save(service, admin, "First")
    second = _save(service, admin, "Second")
    service.erase(admin, ids=[first], erased_by=BY)
    [before] = store.tombstones([first]).values()

    again = service.erase(admin, ids=[first, second], erased_by="someone else")

    assert (again["erased_ids"], again["already_erased_ids"]) == ([second], [first])
    assert store.tombstones([first])[first] == before
    assert store.erase([first, "zz-never-stored"], BY, before.erased_at) == []


def test_only_an_access_that_may_erase_can_erase_and_a_request_names_one_thing(
    service: MemoryService, store: MemoryStore, admin: Access
) -> None:
    kept = _save(service, admin, "Kept")
    agent = Access(frozenset(BranchState), BranchState.ACTIVE, may_write_lifecycle=True)

    with pytest.raises(Forbidden, match="may not erase memories; deprecate them instead"):
        service.erase(agent, ids=[kept], erased_by="agent")
    with pytest.raises(InvalidArgument, match="either ids or a topic"):
        service.plan_erase(admin, ids=[kept], topic="general")
    with pytest.raises(InvalidArgument, match="one or more ids, or a topic"):
        service.plan_erase(admin)
    with pytest.raises(NotFound, match="topic 'empty' has no memories"):
        service.plan_erase(admin, topic="empty")
    assert store.get(kept) is not None


def test_another_store_instance_on_the_same_data_stops_scoring_an_erased_record(
    store_factory: StoreFactory, embedder: HashingEmbedder, admin: Access
) -> None:
    """As a second server process would: its search index was loaded before the erase."""
    reader_store = store_factory()
    reader = MemoryService(reader_store, embedder, merger=SentenceUnionMerger())
    writer = MemoryService(store_factory(), embedder, merger=SentenceUnionMerger())
    secret = _save(writer, admin, "The alarm code is heron four")
    other = _save(writer, admin, "The alarm is tested monthly")
    vector = embedder.embed_query("The alarm code is heron four")
    assert reader_store.vector_search(vector, EVERY_STATE, 1)[0].memory.id == secret

    writer.erase(admin, ids=[secret], erased_by=BY)

    # Not merely filtered out after scoring: the next best record takes the one place.
    assert [s.memory.id for s in reader_store.vector_search(vector, EVERY_STATE, 1)] == [other]
    assert [m["id"] for m in reader.search(admin, query="alarm code heron")["matches"]] == [other]


def test_a_record_saved_right_after_erasing_the_newest_is_searchable_everywhere(
    store_factory: StoreFactory, embedder: HashingEmbedder, admin: Access
) -> None:
    """The new record must not take the erased one's place in another instance's index."""
    reader_store = store_factory()
    reader_store.bind_embedding(embedder.identity)
    writer = MemoryService(store_factory(), embedder, merger=SentenceUnionMerger())
    _save(writer, admin, "An older note about boats")
    newest = _save(writer, admin, "The newest note, about trains")
    assert reader_store.vector_search(embedder.embed_query("trains"), EVERY_STATE, 1)

    writer.erase(admin, ids=[newest], erased_by=BY)
    fresh = _save(writer, admin, "A fresh note about planes")

    vector = embedder.embed_query("A fresh note about planes")
    assert reader_store.vector_search(vector, EVERY_STATE, 1)[0].memory.id == fresh
