"""Store-level rules: embedding identity, events, reopening."""

from __future__ import annotations

from datetime import timedelta

import pytest

from metacortex.domain.records import utc_now
from metacortex.errors import FailedPrecondition
from metacortex.providers.offline_merge import SentenceUnionMerger
from metacortex.service import Access, MemoryService
from metacortex.storage.base import EmbeddingIdentity, Event, MemoryStore
from tests.contract.conftest import StoreFactory
from tests.fakes import HashingEmbedder


def test_a_store_refuses_another_embedding_model_naming_both(
    store_factory: StoreFactory, admin: Access
) -> None:
    MemoryService(store_factory(), HashingEmbedder(64, "model-a"), merger=SentenceUnionMerger())
    with pytest.raises(FailedPrecondition) as refused:
        MemoryService(store_factory(), HashingEmbedder(32, "model-b"), merger=SentenceUnionMerger())
    message = refused.value.message
    assert "model-a:64" in message
    assert "model-b:32" in message
    assert "metacortex reembed" in message


def test_the_recorded_embedding_model_is_read_back_and_replaced_only_when_asked(
    store_factory: StoreFactory,
) -> None:
    store = store_factory()
    assert store.recorded_embedding() is None
    store.bind_embedding(EmbeddingIdentity("text-embedding-004", 768))
    store.bind_embedding(EmbeddingIdentity("gemini-embedding-001", 768), replace=True)
    assert store_factory().recorded_embedding() == EmbeddingIdentity("gemini-embedding-001", 768)


def test_memories_survive_reopening_the_store(store_factory: StoreFactory, admin: Access) -> None:
    first = MemoryService(store_factory(), HashingEmbedder(), merger=SentenceUnionMerger())
    saved = first.save(admin, content="durable fact about the backup rotation")["item"]
    first.store.close()

    second = MemoryService(store_factory(), HashingEmbedder(), merger=SentenceUnionMerger())

    assert second.fetch(admin, id=saved["id"])["item"] == saved
    assert second.search(admin, query="backup rotation")["matches"][0]["id"] == saved["id"]


def test_a_write_by_one_store_instance_is_searchable_through_another(
    store_factory: StoreFactory, admin: Access
) -> None:
    reader = MemoryService(store_factory(), HashingEmbedder(), merger=SentenceUnionMerger())
    assert reader.search(admin, query="shared corpus")["matches"] == []
    writer = MemoryService(store_factory(), HashingEmbedder(), merger=SentenceUnionMerger())
    saved = writer.save(admin, content="shared corpus entry")["item"]["id"]
    assert [m["id"] for m in reader.search(admin, query="shared corpus")["matches"]] == [saved]


def test_events_are_stored_per_collection_in_order(store: MemoryStore) -> None:
    now = utc_now()
    store.record_events(
        [
            Event("memory_events", now, now + timedelta(days=90), {"tool_name": "save_context"}),
            Event("retrieval_query_events", now, None, {"query": "q", "ids": ["a"]}),
            Event("memory_events", now, now + timedelta(days=90), {"tool_name": "fetch_context"}),
        ]
    )
    assert [e["tool_name"] for e in store.read_events("memory_events")] == [
        "save_context",
        "fetch_context",
    ]
    assert store.read_events("retrieval_query_events") == [{"query": "q", "ids": ["a"]}]


def test_events_can_be_read_from_an_instant_on(store: MemoryStore) -> None:
    now = utc_now()
    store.record_events(
        [
            Event("retrieval_query_events", now - timedelta(hours=30), None, {"n": 1}),
            Event("retrieval_query_events", now - timedelta(hours=2), None, {"n": 2}),
            Event("retrieval_query_events", now, None, {"n": 3}),
        ]
    )
    since = now - timedelta(hours=24)
    assert store.read_events("retrieval_query_events", since=since) == [{"n": 2}, {"n": 3}]
    assert len(store.read_events("retrieval_query_events")) == 3
