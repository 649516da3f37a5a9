"""On SQLite a misspelled query is corrected before it is embedded (issue 32), against
the space's whole vocabulary (storage/sqlite_spelling.py), on a real SQLite file: the
semantic side finds what the query meant, a clean query is embedded as written, and
another space's words are never a correction."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from metacortex.access.registry import Registry
from metacortex.providers.local import MiniLMEmbedder
from metacortex.providers.offline_merge import SentenceUnionMerger
from metacortex.retrieval.text import query_terms, respelled
from metacortex.service import Access, MemoryService, ServiceOptions
from metacortex.storage.sqlite import SQLiteStore
from tests.contract.test_typos import NOISE, PARCELS
from tests.fakes import HashingEmbedder


def _spelled(store: SQLiteStore, query: str, space: str = "default") -> str:
    """What a search with typo tolerance embeds when the model knows no word."""
    return respelled(query, store.spelling_corrections(query_terms(query), space))


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
    assert _spelled(store, "When do we Recieve parcles?", "default") == (
        "When do we receive parcels?"
    )


def test_a_query_whose_words_the_space_holds_is_embedded_as_written(
    store: SQLiteStore,
) -> None:
    _seeded(store, HashingEmbedder())

    for query in ("When do we receive parcels?", "nightly backups", "lunch at noon 2024"):
        assert _spelled(store, query, "default") == query


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

    assert _spelled(store, "quarterly budgte", "work") == "quarterly budgte"
    assert _spelled(store, "quarterly budgte", "default") == "quarterly budget"


def test_a_word_the_model_reads_whole_is_embedded_as_written_though_no_memory_holds_it(
    store: SQLiteStore,
) -> None:
    # The real local model (MiniLM's WordPiece vocabulary): "status" is a word of it,
    # "statsu" is not; the store holds only "statue", one edit from both.
    model = MiniLMEmbedder.load()
    forgiving = MemoryService(store, model, merger=SentenceUnionMerger())
    plain = MemoryService(
        store, model, merger=SentenceUnionMerger(), options=ServiceOptions(typo_tolerance=False)
    )
    target = forgiving.save(Access.admin(), content="A marble statue stands in the square")
    forgiving.save(Access.admin(), content="The parcels arrive on Mondays")

    def similarity(service: MemoryService, query: str) -> float:
        [match] = [
            m
            for m in service.search(Access.admin(), query=query)["matches"]
            if m["id"] == target["item"]["id"]
        ]
        return float(match["similarity"])

    assert model.knows("status")
    assert not model.knows("statsu")
    assert similarity(forgiving, "status") == similarity(plain, "status")
    # The misspelling the model does not know is corrected to the memory's word.
    assert similarity(forgiving, "statsu") > similarity(plain, "statsu")


def _local(store: SQLiteStore, *, dense_weight: float = 0.4) -> MemoryService:
    options = ServiceOptions(dense_weight=dense_weight)
    return MemoryService(
        store, MiniLMEmbedder.load(), merger=SentenceUnionMerger(), options=options
    )


def test_a_typo_in_a_word_s_ending_is_corrected_to_the_real_word_whose_stem_the_space_holds(
    store: SQLiteStore,
) -> None:
    # The real local model's vocabulary: "plannirng" is one edit from its word
    # "planning"; their stems ("plannirng", "plan") are five apart, so the store's
    # stems alone never find it.
    service = _local(store)
    service.save(Access.admin(), content="We are planning a trip to Lisbon in May")
    service.save(Access.admin(), content="The parcels arrive on Mondays")
    model = MiniLMEmbedder.load()

    assert "planning" in model.words_near("plannirng")
    corrected = store.spelling_corrections(["plannirng"], "default", model.words_near)
    assert corrected == {"plannirng": "planning"}
    assert store.spelling_corrections(["plannirng"], "default") == {}


def test_the_real_word_meant_wins_over_a_stem_as_near_to_the_typo(store: SQLiteStore) -> None:
    # "idetity" is read as the stem "idet", one edit from both "idea" (more records
    # hold it) and "ident" (identity); as a word it is one edit from "identity" only.
    service = _local(store)
    service.save(Access.admin(), content="Her idea was a new logo")
    service.save(Access.admin(), content="Another idea: a blue logo")
    target = service.save(Access.admin(), content="She spoke about her identity and her roots")

    def meant(term: str) -> dict[str, int]:
        assert term == "idet"
        return MiniLMEmbedder.load().words_near("idetity")

    assert store.spelling_corrections(["idet"], "default") == {"idet": "idea"}
    assert store.spelling_corrections(["idet"], "default", meant) == {"idet": "identity"}
    found = service.search(Access.admin(), query="her idetity")["matches"]
    assert found[0]["id"] == target["item"]["id"]


def test_a_corrected_word_is_searched_as_a_keyword_beside_the_typed_one(
    store: SQLiteStore,
) -> None:
    # Keywords alone (dense weight 0): the typed word matches no record and expands
    # only to terms near its own stem; the corrected word matches the memory.
    service = _local(store, dense_weight=0.0)
    target = service.save(Access.admin(), content="We are planning a trip to Lisbon in May")
    service.save(Access.admin(), content="The parcels arrive on Mondays")

    [match] = [
        m
        for m in service.search(Access.admin(), query="plannirng", explain=True)["matches"]
        if m["id"] == target["item"]["id"]
    ]
    assert match["breakdown"]["keyword"] > 0
