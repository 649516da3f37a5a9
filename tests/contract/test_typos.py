"""Keyword search forgives typos on every store (issue 32): a query term no record of
the space holds is expanded to near terms of the semantic candidates, weighted below
an exact match; a query whose terms the space holds ranks exactly as without it."""

from __future__ import annotations

from collections.abc import Sequence

from metacortex.access.registry import Registry
from metacortex.domain.records import ALL_STATES
from metacortex.providers.offline_merge import SentenceUnionMerger
from metacortex.retrieval.text import query_terms
from metacortex.service import Access, MemoryService, ServiceOptions
from metacortex.storage.base import MemoryFilter, MemoryStore
from tests.fakes import HashingEmbedder

NOISE = (
    "The team lunch moved to Thursday at noon",
    "Backups run nightly and are kept for thirty days",
    "The staging cluster was upgraded last week",
    "Invoices are approved by the finance lead",
    "Standup notes go into the shared folder",
    "The office closes early before public holidays",
)


PARCELS = "We receive the parcels on Mondays"


def _service(store: MemoryStore, *, typos: bool = True) -> MemoryService:
    return MemoryService(
        store,
        HashingEmbedder(),
        merger=SentenceUnionMerger(),
        options=ServiceOptions(typo_tolerance=typos),
    )


def _seed(service: MemoryService, admin: Access, space: str = "default") -> None:
    for content in NOISE:
        service.save(admin, content=content, space=space)


def _parcels(store: MemoryStore, admin: Access) -> tuple[MemoryService, str]:
    """A forgiving service over the noise and a memory saying "receive", and its id."""
    service = _service(store)
    _seed(service, admin)
    return service, service.save(admin, content=PARCELS)["item"]["id"]


def _keyword(
    service: MemoryService, admin: Access, query: str, space: str = "default"
) -> dict[str, float]:
    """Record id -> the keyword part of its score, for every match of ``query``."""
    matches = service.search(admin, query=query, explain=True, limit=20, space=space)["matches"]
    return {m["id"]: m["breakdown"]["keyword"] for m in matches}


def _lexical(store: MemoryStore, query: str, space: str = "default") -> dict[str, float]:
    """Record id -> BM25 score of the store's keyword list for ``query``, typos forgiven."""
    where = MemoryFilter(states=ALL_STATES, space=space)
    vector = HashingEmbedder().embed_query(query)
    _, lexical = store.hybrid_search(vector, query_terms(query), where, 20, typos=True)
    return {hit.memory.id: hit.score for hit in lexical}


def test_recieve_finds_the_memory_that_says_receive(store: MemoryStore, admin: Access) -> None:
    service, target = _parcels(store, admin)

    found = _keyword(service, admin, "when do we recieve parcles")

    assert found[target] > 0
    assert max(found, key=lambda memory_id: found[memory_id]) == target
    # Without typo tolerance neither misspelled word matches anything.
    assert not any(_keyword(_service(store, typos=False), admin, "recieve parcles").values())


def test_a_misspelling_scores_below_the_exact_word_in_the_same_record(
    store: MemoryStore, admin: Access
) -> None:
    _, target = _parcels(store, admin)

    assert 0 < _lexical(store, "recieve")[target] < _lexical(store, "receive")[target]


def test_a_word_some_memory_holds_is_not_expanded_so_the_exact_match_ranks_first(
    store: MemoryStore, admin: Access
) -> None:
    service, near = _parcels(store, admin)
    exact = service.save(admin, content="Note to self: I always recieve late")["item"]["id"]

    scores = _lexical(store, "recieve")

    assert list(scores) == [exact]
    assert near not in scores


def test_the_vocabulary_is_the_spaces_own(store: MemoryStore, admin: Access) -> None:
    Registry(store).add_space("work")
    both = Access.admin(spaces=("default", "work"))
    service = _service(store)
    _seed(service, both)
    _seed(service, both, space="work")
    # "recieve" is a word of the work space only: the default space still expands it.
    service.save(both, content="Note to self: I always recieve late", space="work")
    home = service.save(both, content=PARCELS)["item"]["id"]
    # "budget" is a word of the default space only: the work space never expands to it.
    service.save(both, content="The quarterly budget was approved")

    assert _keyword(service, both, "recieve")[home] > 0
    assert not any(_keyword(service, both, "budgte", space="work").values())
    assert _lexical(store, "budgte", space="work") == {}
    assert _lexical(store, "budgte") != {}


def test_a_query_whose_words_the_space_holds_ranks_exactly_as_without_typo_tolerance(
    store: MemoryStore, admin: Access
) -> None:
    service = _service(store)
    _seed(service, admin)
    for content in (
        PARCELS,
        "Parcels for the finance lead go to the front desk",
        "The nightly backup failed twice last week",
        "Lunch on Thursday is at the usual place",
    ):
        service.save(admin, content=content)
    plain = _service(store, typos=False)
    clean: Sequence[str] = (
        "when do we receive parcels",
        "nightly backup failed",
        "who approves invoices",
        "staging cluster upgraded",
        "lunch thursday noon",
        "finance lead front desk",
    )

    for query in clean:
        forgiving = service.search(admin, query=query, explain=True, limit=10)["matches"]
        exact = plain.search(admin, query=query, explain=True, limit=10)["matches"]
        assert forgiving == exact, query
