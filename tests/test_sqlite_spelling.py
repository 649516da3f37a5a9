"""On SQLite a misspelled query is corrected before it is embedded (issue 32), against
the space's whole vocabulary (storage/sqlite_spelling.py), on a real SQLite file: the
semantic side finds what the query meant, a clean query is embedded as written, and
another space's words are never a correction."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from metacortex.providers.offline_merge import SentenceUnionMerger
from metacortex.service import Access, MemoryService, ServiceOptions
from metacortex.spaces.registry import Registry
from metacortex.storage.sqlite import SQLiteStore
from tests.contract.test_typos import NOISE, PARCELS
from tests.fakes import HashingEmbedder


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SQLiteStore]:
    store = SQLiteStore(tmp_path / "memories.sqlite3")
    yield store
    store.close()


def _service(store: SQLiteStore, embedder: HashingEmbedder, *, typos: bool = True) -> MemoryService:
    # Dense weight 1: the ranking is the semantic list's alone.
    options = ServiceOptions(typo_tolerance=typos, dense_weight=1.0)
    return MemoryService(store, embedder, merger=SentenceUnionMerger(), options=options)


def _seeded(store: SQLiteStore, embedder: HashingEmbedder) -> str:
    service = _service(store, embedder)
    for content in NOISE:
        service.save(Access.admin(), content=content)
    return str(service.save(Access.admin(), content=PARCELS)["item"]["id"])


def test_a_misspelled_query_finds_the_memory_by_meaning_alone(store: SQLiteStore) -> None:
    embedder = HashingEmbedder()
    target = _seeded(store, embedder)
    query = "when do we recieve parcles"

    forgiving = _service(store, embedder).search(Access.admin(), query=query)["matches"]
    exact = _service(store, embedder, typos=False).search(Access.admin(), query=query)["matches"]

    assert forgiving[0]["id"] == target
    assert forgiving[0]["similarity"] > 0.8  # 2 of its 3 terms: 2 / sqrt(6)
    # As written, neither misspelled word is one the memory was embedded with.
    assert all(m["similarity"] < 0.5 for m in exact if m["id"] == target)


def test_the_correction_is_spelled_as_a_memory_of_the_space_spells_it(
    store: SQLiteStore,
) -> None:
    _seeded(store, HashingEmbedder())

    # "receive" is stored as the stem "receiv": the query gets the memory's word.
    assert store.spelled_query("When do we Recieve parcles?", "default") == (
        "When do we receive parcels?"
    )


def test_a_query_whose_words_the_space_holds_is_embedded_as_written(
    store: SQLiteStore,
) -> None:
    _seeded(store, HashingEmbedder())

    for query in ("When do we receive parcels?", "nightly backups", "lunch at noon 2024"):
        assert store.spelled_query(query, "default") == query


def test_a_search_embeds_the_query_once(store: SQLiteStore) -> None:
    embedder = HashingEmbedder()
    _seeded(store, embedder)
    before = embedder.calls

    _service(store, embedder).search(Access.admin(), query="when do we recieve parcles")

    assert embedder.calls == before + 1


def test_a_word_only_another_space_holds_is_never_a_correction(store: SQLiteStore) -> None:
    Registry(store).add_space("work")
    both = Access.admin(spaces=("default", "work"))
    service = _service(store, HashingEmbedder())
    service.save(both, content="The quarterly budget was approved")
    service.save(both, content="The quarterly report is late", space="work")

    assert store.spelled_query("quarterly budgte", "work") == "quarterly budgte"
    assert store.spelled_query("quarterly budgte", "default") == "quarterly budget"
