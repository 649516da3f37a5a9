"""Firestore-specific behaviour, on the real emulator (the shared rules live in tests/contract).

Tests using ``firestore_store_factory`` are marked ``firestore`` by the plugin.

Where a Firestore feature has a SQLite counterpart (BM25 scores, filtered
vector search, event round trips) the same data goes into both stores and the
answers must agree.
"""

from __future__ import annotations

import json
import threading
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from google.cloud import firestore

from metacortex.domain.records import (
    ALL_STATES,
    BranchState,
    Memory,
    Modality,
    Origin,
    Provenance,
    SupersessionReason,
    new_memory_id,
)
from metacortex.errors import ConfigurationError, FailedPrecondition
from metacortex.retrieval.text import query_terms, terms
from metacortex.storage.base import (
    EmbeddingIdentity,
    Event,
    InsertOutcome,
    MemoryFilter,
    MemoryStore,
    PageKey,
    StoreTransaction,
)
from metacortex.storage.firestore import FirestoreStore
from metacortex.storage.firestore_queries import (
    document_index_specs,
    firestore_index_specs,
    query_shapes,
)
from metacortex.storage.sqlite import SQLiteStore
from tests.fakes import HashingEmbedder
from tests.firestore_support import PROJECT, FirestoreStoreFactory, firestore_settings
from tests.rpc_counting import CountingClient, RpcRecorder

T0 = datetime(2026, 3, 1, 12, 0, 0, tzinfo=UTC)
EMBEDDER = HashingEmbedder(32)
IDENTITY = EMBEDDER.identity


def _memory(text: str, minutes: int = 0, **changes: Any) -> Memory:
    created = T0 + timedelta(minutes=minutes)
    memory = Memory(
        id=new_memory_id(),
        content=text,
        retrieval_text=text,
        topic="general",
        branch_state=BranchState.ACTIVE,
        modality=Modality.TEXT,
        created_at=created,
        updated_at=created,
    )
    return memory.with_changes(**changes)


def _insert(store: MemoryStore, memory: Memory) -> InsertOutcome:
    [vector] = EMBEDDER.embed_documents([memory.retrieval_text])
    return store.insert(
        memory, vector, f"fp-{memory.id}", memory.created_at - timedelta(minutes=15)
    )


def _raw(path: str) -> dict[str, Any]:
    """A stored document as Firestore holds it (the fixture points clients at the emulator)."""
    snapshot = firestore.Client(project=PROJECT).document(path).get()
    assert snapshot.exists, path
    return snapshot.to_dict() or {}


def _both(fs: FirestoreStore, tmp_path: Path) -> tuple[FirestoreStore, SQLiteStore]:
    lite = SQLiteStore(tmp_path / "twin.sqlite3")
    for store in (fs, lite):
        store.bind_embedding(IDENTITY)
    return fs, lite


# --------------------------------------------------------------- identity
def test_a_store_bound_to_one_model_refuses_another_naming_both_and_the_reembed_command(
    firestore_store_factory: FirestoreStoreFactory,
) -> None:
    firestore_store_factory().bind_embedding(EmbeddingIdentity("model-a", 768))
    second = firestore_store_factory()

    with pytest.raises(FailedPrecondition) as refused:
        second.bind_embedding(EmbeddingIdentity("model-b", 256))

    message = refused.value.message
    assert "model-a:768" in message
    assert "model-b:256" in message
    assert "`metacortex reembed`" in message
    assert "'memory_vectors'" in message
    second.bind_embedding(EmbeddingIdentity("model-b", 256), replace=True)
    firestore_store_factory().bind_embedding(EmbeddingIdentity("model-b", 256))
    with pytest.raises(FailedPrecondition):
        firestore_store_factory().bind_embedding(EmbeddingIdentity("model-a", 768))
    assert _raw("memory_vectors_meta/identity")["key"] == "model-b:256"


# ------------------------------------------------------------------ writes
def test_concurrent_inserts_of_one_fingerprint_create_exactly_one_record(
    firestore_store_factory: FirestoreStoreFactory,
) -> None:
    stores = [firestore_store_factory(), firestore_store_factory()]
    candidates = [_memory("the same retried write") for _ in range(6)]
    [vector] = EMBEDDER.embed_documents(["the same retried write"])
    barrier = threading.Barrier(len(candidates))
    outcomes: list[InsertOutcome] = []
    lock = threading.Lock()

    def insert(index: int) -> None:
        barrier.wait(timeout=10)
        outcome = stores[index % 2].insert(
            candidates[index], vector, "one-fingerprint", T0 - timedelta(minutes=15)
        )
        with lock:
            outcomes.append(outcome)

    threads = [threading.Thread(target=insert, args=(i,)) for i in range(len(candidates))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)

    assert len(outcomes) == len(candidates)
    assert [o.created for o in outcomes].count(True) == 1
    assert len({o.memory.id for o in outcomes}) == 1
    stored = stores[0].list_page(MemoryFilter(states=ALL_STATES), 100, None)
    assert [m.id for m in stored] == [outcomes[0].memory.id]


def test_a_put_without_a_vector_keeps_the_stored_one_and_a_new_record_needs_one(
    firestore_store_factory: FirestoreStoreFactory,
) -> None:
    store = firestore_store_factory()
    store.bind_embedding(IDENTITY)
    memory = _memory("vector keeper note")
    _insert(store, memory)
    query = EMBEDDER.embed_query("vector keeper note")
    before = store.vector_search(query, MemoryFilter(states=ALL_STATES), 1)

    def deprecate(txn: StoreTransaction) -> None:
        current = txn.get(memory.id)
        assert current is not None
        txn.put(current.with_changes(branch_state=BranchState.DEPRECATED))

    store.transaction(deprecate)
    after = store.vector_search(query, MemoryFilter(states=ALL_STATES), 1)

    assert after[0].memory.branch_state is BranchState.DEPRECATED
    assert after[0].score == pytest.approx(before[0].score)
    with pytest.raises(ValueError, match="needs an embedding"):
        store.transaction(lambda txn: txn.put(_memory("brand new, no vector")))


def test_reserved_document_ids_are_simply_missing(
    firestore_store_factory: FirestoreStoreFactory,
) -> None:
    store = firestore_store_factory()
    assert store.get("__reserved__") is None
    assert store.transaction(lambda txn: txn.get("__reserved__")) is None


# -------------------------------------------------------------- timestamps
def test_timestamps_round_trip_exactly_as_plain_millisecond_utc_datetimes(
    firestore_store_factory: FirestoreStoreFactory,
) -> None:
    store = firestore_store_factory()
    store.bind_embedding(IDENTITY)
    memory = _memory(
        "timestamp probe",
        valid_from=datetime(1900, 1, 1, tzinfo=UTC),
        valid_until=datetime(2999, 12, 31, 23, 59, 59, 999_000, tzinfo=UTC),
        provenance=Provenance(origin=Origin.LEGACY_IMPORT, derived_from=("a", "b")),
    ).with_changes(created_at=T0 + timedelta(milliseconds=7), updated_at=T0 + timedelta(days=1))
    _insert(store, memory)
    sub_millisecond = _memory("microseconds").with_changes(
        created_at=T0 + timedelta(microseconds=1_999)
    )
    _insert(store, sub_millisecond)

    fetched = store.get(memory.id)

    # A record given no time happened when it was saved: the store writes that time
    # (``occurred_at`` is always written, for the listing by when memories happened).
    assert fetched == memory.with_changes(occurred=memory.occurrence)
    assert fetched is not None
    for value in (fetched.created_at, fetched.updated_at, fetched.valid_from, fetched.valid_until):
        assert type(value) is datetime
        assert value is not None
        assert value.tzinfo == UTC
    truncated = store.get(sub_millisecond.id)
    assert truncated is not None
    assert truncated.created_at == T0 + timedelta(milliseconds=1)


# --------------------------------------------------------------------- TTL
def test_fingerprints_and_events_carry_ttl_fields_and_every_document_a_schema_version(
    firestore_store_factory: FirestoreStoreFactory,
) -> None:
    store = firestore_store_factory()
    store.bind_embedding(IDENTITY)
    memory = _memory("ttl probe")
    [vector] = EMBEDDER.embed_documents(["ttl probe"])
    store.insert(memory, vector, "ttl-fingerprint", memory.created_at - timedelta(minutes=15))
    store.record_events(
        [
            Event("memory_events", T0, T0 + timedelta(days=90), {"tool_name": "save_context"}),
            Event("retrieval_query_events", T0, None, {"query": "q"}),
        ]
    )

    fingerprint = _raw("memory_vectors_write_fingerprints/ttl-fingerprint")
    assert fingerprint["memory_id"] == memory.id
    assert fingerprint["written_at"] == memory.created_at
    assert fingerprint["expires_at"] == memory.created_at + timedelta(minutes=15)
    record = _raw(f"memory_vectors/{memory.id}")
    assert record["schema_version"] == 1
    assert record["module_name"] == "general"
    assert "topic" not in record
    client = firestore.Client(project=PROJECT)
    [audit] = [s.to_dict() or {} for s in client.collection("memory_events").stream()]
    [query_event] = [
        s.to_dict() or {} for s in client.collection("retrieval_query_events").stream()
    ]
    assert audit["expires_at"] == T0 + timedelta(days=90)
    assert query_event["expires_at"] is None
    assert audit["schema_version"] == query_event["schema_version"] == 1


def test_event_fields_read_back_as_the_sqlite_store_reads_them(
    firestore_store_factory: FirestoreStoreFactory, tmp_path: Path
) -> None:
    fs, lite = _both(firestore_store_factory(), tmp_path)
    fields: list[dict[str, Any]] = [
        {"ranked": [["id-1", 0.5], ["id-2", 0.25]], "when": T0, "nested": {"ok": True}},
        {"tool_name": "search_context", "latency_ms": 12, "scores": [0.1, 0.2], "none": None},
    ]
    events = [Event("retrieval_query_events", T0, None, f) for f in fields]
    for store in (fs, lite):
        store.record_events(events)

    assert fs.read_events("retrieval_query_events") == lite.read_events("retrieval_query_events")
    assert fs.read_events("retrieval_query_events")[0]["ranked"] == [["id-1", 0.5], ["id-2", 0.25]]
    assert len(fs.read_events("retrieval_query_events", limit=1)) == 1


# --------------------------------------------------------------- term index
def test_corpus_statistics_follow_inserts_and_retrieval_text_changes(
    firestore_store_factory: FirestoreStoreFactory,
) -> None:
    store = firestore_store_factory()
    store.bind_embedding(IDENTITY)
    texts = ["Kafka brokers rebalance often", "Kafka topics and kafka partitions", "Lunch menu"]
    memories = [_memory(text, minutes=i) for i, text in enumerate(texts)]
    for memory in memories:
        _insert(store, memory)
    words = ["kafka", "lunch", "partit", "brokers", "absent"]
    wanted = query_terms(" ".join(words))

    stats = store.corpus_statistics(wanted)
    streams = [terms(text) for text in texts]
    assert stats.doc_count == 3
    assert stats.term_total == sum(len(stream) for stream in streams)
    assert dict(stats.doc_freqs) == {t: sum(t in s for s in streams) for t in wanted}
    stored = _raw(f"memory_vectors/{memories[1].id}")
    assert stored["term_freqs"] == {"kafka": 2, "topic": 1, "partit": 1}
    assert stored["term_count"] == 4
    assert sorted(stored["terms"]) == ["kafka", "partit", "topic"]

    changed = memories[2].with_changes(retrieval_text="Kafka lunch and learn, lunch again")
    store.transaction(lambda txn: txn.put(changed))

    after = store.corpus_statistics(wanted)
    streams[2] = terms(changed.retrieval_text)
    assert after.doc_count == 3
    assert after.term_total == sum(len(stream) for stream in streams)
    assert dict(after.doc_freqs) == {t: sum(t in s for s in streams) for t in wanted}
    assert after.doc_freqs["kafka"] == 3


def _bm25_corpus() -> list[Memory]:
    rng = np.random.default_rng(7)
    vocabulary = (
        "deploy release kafka broker lunch garden invoice tax rocket orbit python rust "
        "database index vector search memory agent token budget travel visa"
    ).split()
    memories: list[Memory] = []
    for index in range(36):
        words = rng.choice(vocabulary, size=int(rng.integers(3, 14)))
        state = ALL_STATES[index % 4]
        memories.append(
            _memory(
                " ".join(words) + (" zephyr" if index == 5 else ""),
                minutes=index,
                branch_state=state,
                topic="ops" if index % 3 else "home",
            )
        )
    return memories


@pytest.mark.parametrize(
    ("query", "where"),
    [
        ("kafka broker", MemoryFilter(states=(BranchState.ACTIVE,))),
        ("zephyr deploy release kafka", MemoryFilter(states=ALL_STATES)),
        # 12 terms over 4 states: term groups of 7 (30 disjunctions), rarest first.
        (
            "zephyr rocket orbit python rust database index vector search memory agent token",
            MemoryFilter(states=ALL_STATES, topic="ops"),
        ),
        ("lunch garden tax", MemoryFilter(states=(BranchState.WIP, BranchState.MERGED))),
    ],
)
def test_bm25_scores_and_order_match_sqlite_fts5(
    firestore_store_factory: FirestoreStoreFactory,
    tmp_path: Path,
    query: str,
    where: MemoryFilter,
) -> None:
    firestore_store_factory()  # a fresh emulator database
    # Keyword budgets that hold every record this corpus's queries read (36 at most):
    # what is compared here is the scoring (a search's budget, 50 records, is a
    # bound; the next test shows it).
    wide = FirestoreStore(
        firestore.Client(project=PROJECT), "memory_vectors", lexical_budget=100, common_budget=50
    )
    fs, lite = _both(wide, tmp_path)
    for memory in _bm25_corpus():
        _insert(fs, memory)
        _insert(lite, memory)
    wanted = query_terms(query)

    for limit in (3, 50):
        ours = fs.lexical_search(wanted, where, limit)
        theirs = lite.lexical_search(wanted, where, limit)
        assert [hit.memory.id for hit in ours] == [hit.memory.id for hit in theirs]
        assert [hit.score for hit in ours] == pytest.approx([hit.score for hit in theirs])
        assert all(where.matches(hit.memory) for hit in ours)


def _counted_twins(
    tmp_path: Path, lexical_budget: int
) -> tuple[RpcRecorder, FirestoreStore, SQLiteStore]:
    """A Firestore store whose RPCs are counted, and an empty SQLite twin to compare with."""
    recorder = RpcRecorder()
    client = CountingClient(recorder, project=PROJECT)
    fs = FirestoreStore(client, "memory_vectors", lexical_budget=lexical_budget)
    return recorder, fs, SQLiteStore(tmp_path / "lite.sqlite3")


def test_rare_terms_are_read_in_full_and_common_ones_only_within_what_they_leave_of_the_budget(
    firestore_store_factory: FirestoreStoreFactory, tmp_path: Path
) -> None:
    recorder, fs, lite = _counted_twins(tmp_path, lexical_budget=7)
    corpus = [
        _memory(f"common filler {i}", minutes=i, branch_state=ALL_STATES[i % 4]) for i in range(30)
    ]
    corpus += [
        _memory(f"{word} common", minutes=30)
        for word in "alpha bravo charlie delta echo foxtrot".split()
    ]
    corpus.append(_memory("needle needle", minutes=40))
    for memory in corpus:
        _insert(fs, memory)
        _insert(lite, memory)
    where = MemoryFilter(states=ALL_STATES)
    wanted = query_terms("needle alpha bravo charlie delta echo foxtrot common")

    ours, tally = recorder.measure(lambda: fs.lexical_search(wanted, where, 7))

    theirs = lite.lexical_search(wanted, where, 7)
    assert ours[0].memory.id == corpus[-1].id
    assert {h.memory.id for h in ours} == {h.memory.id for h in theirs}
    assert [h.score for h in ours] == pytest.approx([h.score for h in theirs])
    # Statistics, then the 7 records of the rare terms (their frequencies add up to 7,
    # within a budget of 7 records). Nothing is left for `common` (37 records, worth at
    # most idf * (k1 + 1) ~ 2e-6 each), so it is never queried.
    assert tally.kinds.get("RunQuery") == 1
    assert tally.documents == 7

    # Only common terms: for each, the shortest records holding it, together within
    # the budget (7 whatever the limit, 4 a term rounded up), in one round trip. Every
    # record read is scored exactly as SQLite scores it, and records holding both terms
    # come first; which of the 30 equally scored ones are read is not SQLite's choice.
    common, tally = recorder.measure(
        lambda: fs.lexical_search(query_terms("common filler"), where, 10)
    )
    assert len(common) == 8
    assert tally.kinds.get("RunQuery") == 2
    assert tally.documents == 8
    exact = {
        h.memory.id: h.score for h in lite.lexical_search(query_terms("common filler"), where, 50)
    }
    assert [h.score for h in common] == pytest.approx([exact[h.memory.id] for h in common])
    both = [h for h in common if "filler" in h.memory.content]
    assert len(both) == 4
    assert common[:4] == both
    lite.close()
    fs.close()


def test_a_term_common_across_topics_but_rare_in_the_searched_topic_is_read_in_full(
    firestore_store_factory: FirestoreStoreFactory, tmp_path: Path
) -> None:
    recorder, fs, lite = _counted_twins(tmp_path, lexical_budget=7)
    # Elsewhere both words are everywhere (collection-wide they are common terms);
    # in "home" six records hold "kafka", one of them long and full of it.
    corpus = [_memory(f"kafka broker ops note {i}", minutes=i, topic="ops") for i in range(40)]
    corpus += [
        _memory(f"kafka {word}", minutes=50, topic="home") for word in "ab cd ef gh ij".split()
    ]
    corpus.append(
        _memory(
            "kafka " * 6 + "the long story of how the kafka cluster at home was built and run",
            minutes=60,
            topic="home",
        )
    )
    corpus.append(_memory("broker call about the house", minutes=70, topic="home"))
    for memory in corpus:
        _insert(fs, memory)
        _insert(lite, memory)
    where = MemoryFilter(states=(BranchState.ACTIVE,), topic="home")
    wanted = query_terms("kafka broker")

    ours, tally = recorder.measure(lambda: fs.lexical_search(wanted, where, 3))

    theirs = lite.lexical_search(wanted, where, 3)
    assert [h.memory.id for h in ours] == [h.memory.id for h in theirs]
    assert corpus[-2].id in {h.memory.id for h in ours}  # the long record SQLite ranks
    assert [h.score for h in ours] == pytest.approx([h.score for h in theirs])
    # Inside "home" the two terms are held by 7 records: both rare, one query, 7 reads.
    assert tally.kinds.get("RunQuery") == 1
    assert tally.documents == 7
    lite.close()
    fs.close()


def test_keyword_search_does_not_read_again_the_rare_term_records_the_vector_query_returned(
    firestore_store_factory: FirestoreStoreFactory,
) -> None:
    recorder = RpcRecorder()
    fs = FirestoreStore(CountingClient(recorder, project=PROJECT), "memory_vectors")
    fs.bind_embedding(IDENTITY)
    corpus = [
        _memory(f"routine ops note {i} about the weekly deploy", minutes=i) for i in range(30)
    ]
    corpus += [_memory(f"zephyr rollout {word}", minutes=40) for word in ("north", "south")]
    for memory in corpus:
        _insert(fs, memory)
    where = MemoryFilter(states=(BranchState.ACTIVE,))
    wanted = query_terms("zephyr rollout deploy")
    vector = EMBEDDER.embed_query("zephyr rollout deploy")

    (dense, together), both = recorder.measure(lambda: fs.hybrid_search(vector, wanted, where, 10))
    alone, lexical = recorder.measure(lambda: fs.lexical_search(wanted, where, 10))

    # The same ranking and scores as the keyword search run on its own...
    assert [(h.memory.id, h.score) for h in together] == [(h.memory.id, h.score) for h in alone]
    held = {h.memory.id for h in dense}
    assert {m.id for m in corpus[-2:]} <= held
    # ...but the records of "zephyr" and "rollout" (2 each) came with the vector
    # query: only "deploy" (30 records) is queried, instead of all three terms.
    assert lexical.documents == 32
    assert both.documents == len(dense) + 30
    fs.close()


def test_a_long_record_with_common_terms_keeps_its_keyword_rank_when_the_vector_query_holds_it(
    firestore_store_factory: FirestoreStoreFactory, tmp_path: Path
) -> None:
    recorder, fs, lite = _counted_twins(tmp_path, lexical_budget=7)
    # Both query words are common (31 records each, budget 7): the keyword lists read
    # only their shortest records, and the long record repeating both is not among them.
    corpus = [_memory(f"kafka note {i}", minutes=i) for i in range(30)]
    corpus += [_memory(f"broker memo {i}", minutes=30 + i) for i in range(30)]
    long_text = "we rebuilt the kafka cluster and then the kafka broker fleet, broker by broker"
    corpus.append(_memory(long_text, minutes=90))
    for memory in corpus:
        _insert(fs, memory)
        _insert(lite, memory)
    where = MemoryFilter(states=(BranchState.ACTIVE,))
    wanted = query_terms("kafka broker")
    vector = EMBEDDER.embed_query(long_text)  # the nearest record is the long one

    (dense, together), both = recorder.measure(lambda: fs.hybrid_search(vector, wanted, where, 10))
    alone, lexical = recorder.measure(lambda: fs.lexical_search(wanted, where, 10))

    theirs = lite.lexical_search(wanted, where, 10)
    assert dense[0].memory.id == corpus[-1].id
    assert corpus[-1].id not in {h.memory.id for h in alone}  # the bound, on its own
    # Held by the vector query, it is scored anyway: first, as FTS5 ranks it.
    assert together[0].memory.id == theirs[0].memory.id == corpus[-1].id
    exact = {h.memory.id: h.score for h in lite.lexical_search(wanted, where, 100)}
    assert [h.score for h in together] == pytest.approx([exact[h.memory.id] for h in together])
    # No read more than the two searches apart.
    assert both.documents == len(dense) + lexical.documents
    lite.close()
    fs.close()


# ----------------------------------------------------------- post-filtering
def _validity_corpus() -> tuple[list[Memory], datetime]:
    """Records near the query that are NOT valid at the instant, and a few far ones that are."""
    instant = datetime(2025, 6, 1, tzinfo=UTC)
    expired = [
        _memory(
            f"office address street number {i}",
            minutes=i,
            valid_until=datetime(2024, 1, 1, tzinfo=UTC),
        )
        for i in range(10)
    ]
    corrected = [
        _memory(
            "office address street corrected",
            minutes=20,
            branch_state=BranchState.DEPRECATED,
            supersession_reason=SupersessionReason.CORRECTED,
        )
    ]
    valid = [
        _memory(f"office relocated elsewhere {i}", minutes=30 + i, valid_from=instant)
        for i in range(3)
    ] + [_memory("unrelated garden note", minutes=40)]
    return expired + corrected + valid, instant


def test_vector_search_with_valid_at_fills_the_page_beyond_the_nearest_limit(
    firestore_store_factory: FirestoreStoreFactory, tmp_path: Path
) -> None:
    # nearest_limit=4 stands in for Firestore's 1000: the 11 closest records are
    # invalid at the instant, so over-fetching runs out and the exact scan answers.
    fs, lite = _both(firestore_store_factory(nearest_limit=4), tmp_path)
    corpus, instant = _validity_corpus()
    for memory in corpus:
        _insert(fs, memory)
        _insert(lite, memory)
    query = EMBEDDER.embed_query("office address street")
    where = MemoryFilter(states=ALL_STATES, valid_at=instant)

    for limit in (2, 4, 5, 10):
        ours = fs.vector_search(query, where, limit)
        theirs = lite.vector_search(query, where, limit)
        assert [h.memory.id for h in ours] == [h.memory.id for h in theirs]
        assert [h.score for h in ours] == pytest.approx([h.score for h in theirs], abs=1e-6)
    assert len(fs.vector_search(query, where, 4)) == 4


def test_vector_search_over_fetches_when_creation_ranges_filter_after_the_query(
    firestore_store_factory: FirestoreStoreFactory, tmp_path: Path
) -> None:
    fs, lite = _both(firestore_store_factory(), tmp_path)
    corpus, _ = _validity_corpus()
    for memory in corpus:
        _insert(fs, memory)
        _insert(lite, memory)
    query = EMBEDDER.embed_query("office address street")
    where = MemoryFilter(states=ALL_STATES, created_after=T0 + timedelta(minutes=20))

    ours = fs.vector_search(query, where, 3)

    assert [h.memory.id for h in ours] == [h.memory.id for h in lite.vector_search(query, where, 3)]
    assert all(h.memory.created_at >= T0 + timedelta(minutes=20) for h in ours)


def test_list_pages_stay_full_when_valid_at_is_checked_after_the_query(
    firestore_store_factory: FirestoreStoreFactory,
) -> None:
    store = firestore_store_factory()
    store.bind_embedding(IDENTITY)
    corpus, instant = _validity_corpus()
    for memory in corpus:
        _insert(store, memory)
    where = MemoryFilter(states=ALL_STATES, valid_at=instant)
    expected = sorted(
        (m for m in corpus if where.matches(m)), key=lambda m: (m.created_at, m.id), reverse=True
    )

    first = store.list_page(where, 3, None)
    rest = store.list_page(where, 3, _key(first[-1]))

    assert [m.id for m in first + rest] == [m.id for m in expected]
    assert len(first) == 3


def _key(memory: Memory) -> PageKey:
    return PageKey(created_at=memory.created_at, id=memory.id)


# ---------------------------------------------------------- configuration
def test_a_configured_collection_name_prefixes_every_memory_collection(
    firestore_store_factory: FirestoreStoreFactory,
) -> None:
    store = firestore_store_factory(collection="memory_vectors_eval")
    store.bind_embedding(IDENTITY)
    memory = _memory("eval corpus record")
    outcome = _insert(store, memory)

    assert outcome.created
    assert _raw(f"memory_vectors_eval/{memory.id}")["content"] == "eval corpus record"
    assert _raw(f"memory_vectors_eval_write_fingerprints/fp-{memory.id}")["memory_id"] == memory.id
    assert _raw("memory_vectors_eval_meta/identity")["key"] == IDENTITY.key()
    assert firestore_store_factory().get(memory.id) is None


def test_opening_firestore_without_credentials_names_what_to_configure(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv("FIRESTORE_EMULATOR_HOST", raising=False)
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(tmp_path / "missing.json"))

    with pytest.raises(ConfigurationError, match="GOOGLE_CLOUD_PROJECT and application default"):
        FirestoreStore.from_settings(firestore_settings())


def test_index_specs_list_one_index_per_query_shape_and_ttl_overrides() -> None:
    specs = firestore_index_specs(768)
    json.dumps(specs)  # the document is plain JSON

    indexes = specs["indexes"]
    vector = [i for i in indexes if any("vectorConfig" in f for f in i["fields"])]
    # 20, and 8 for listing by when memories happened (occurred_at, issue 39)
    assert len(query_shapes()) == 28
    # and the document queries' (issue 31): passages in order both ways, current versions
    assert len(indexes) == 28 + len(document_index_specs("memory_vectors")) == 31
    assert len(vector) == 4
    assert all(
        i["fields"][-1]
        == {"fieldPath": "embedding", "vectorConfig": {"dimension": 768, "flat": {}}}
        for i in vector
    )
    assert all(
        i["fields"][0] == {"fieldPath": "branch_state", "order": "ASCENDING"} for i in vector
    )
    ttl = {o["collectionGroup"] for o in specs["fieldOverrides"] if o.get("ttl")}
    assert ttl == {
        "memory_vectors_write_fingerprints",
        "memory_vectors_auth_state",
        "memory_events",
        "retrieval_query_events",
    }
    with pytest.raises(ValueError, match=r"1\.\.2048"):
        firestore_index_specs(4096)
