"""Round trips of every service operation on Firestore, pinned: a regression fails here.

Every RPC goes through a gRPC client interceptor on the store's channel
(``tests/rpc_counting.py``) on the real emulator. Each response is held until
``HOLD_S`` after the latest RPC start (a simulated network round trip): RPCs
issued together then always overlap and RPCs issued one after another never
do, so the sequential depth
(RPCs that overlap count as one level) does not depend on the emulator's speed.
The test asserts RPC counts and depths only, never durations.

Budgets (issue 9; figures per corpus size in docs/benchmarks.md):
search depth <= 4 (with the conversational-context step and `related`), save <= 3
sequential RPCs after the embedding (the dedupe pre-check included),
consolidating 10 drafts depth <= 4, deprecate depth <= 3; erase (issue 21):
one read, a transaction of three round trips, one lineage query (depth 5); each MCP
resource and the context prompt (issue 22): one round trip. Spaces (issue 30): a
search and a save in a space other than ``default`` cost exactly what they cost in
``default`` (each space is its own collection, docs/firestore.md "Spaces"), and
``list_spaces`` counts each space with one aggregation, reading no document. Typo
tolerance (issue 32): a clean query costs what it did; a misspelled word no record
holds costs one aggregation and one query per search more, in the same round trips.
A whole ``search_context`` MCP call as a client sees it (issue 39 §5: the credential's
check and the events write included) costs at most 5 round trips and 250 billable reads,
with ``related`` two hops out (issue 40).
A ``keyword`` alone (issue 40): the keyword search and the relations, depth 3, at most
50 records read.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import timedelta
from typing import Any, Final

import httpx2
import pytest
from pydantic import SecretStr

from metacortex.access.client_directory import ClientDirectory
from metacortex.access.model import DEFAULT_SPACE
from metacortex.access.profiles import load_profiles
from metacortex.access.registry import Registry
from metacortex.auth.tokens import REFRESH, Exchanged, Presenter, TokenStore
from metacortex.clients import ClientManager
from metacortex.config import Settings
from metacortex.domain.records import BranchState, Memory
from metacortex.domain.relations import RelationType
from metacortex.errors import NotFound
from metacortex.mcp_surface import context_prompt, resources
from metacortex.providers.offline_merge import SentenceUnionMerger
from metacortex.server.app import create_app
from metacortex.service import Access, MemoryService, ServiceOptions
from metacortex.storage.base import MemoryFilter, Neighbours
from metacortex.storage.firestore import FirestoreStore
from metacortex.usecases.relations import between
from tests.fakes import HashingEmbedder
from tests.firestore_support import PROJECT, FirestoreStoreFactory
from tests.mcp_counting import served
from tests.rpc_counting import CountingClient, RpcRecorder, Tally

pytestmark = pytest.mark.firestore

# Simulated round trip (see the module docstring): responses are held until this
# long after the latest RPC start, so the ~40 neighbour queries issued together
# overlap however slowly a busy machine issues them.
HOLD_S: Final = 0.4
# A space besides ``default``, made with the owner's Registry where a test uses it.
TEAM: Final = "team"
ADMIN: Final = Access.admin(spaces=(DEFAULT_SPACE, TEAM))
WORDS: Final = (
    "deploy release branch hotfix rollback canary metrics alert pager oncall "
    "schema migration index backup restore quota budget latency cache token"
).split()


@contextmanager
def _seeded(
    notes: int, topics: int, space: str = DEFAULT_SPACE
) -> Iterator[tuple[MemoryService, RpcRecorder]]:
    """A fresh store of ``notes`` notes over ``topics`` topics in ``space`` (made with
    the owner's Registry unless it is ``default``), its RPCs counted and held."""
    recorder = RpcRecorder()
    store = FirestoreStore(CountingClient(recorder, project=PROJECT), "memory_vectors")
    service = MemoryService(store, HashingEmbedder(32), merger=SentenceUnionMerger())
    if space != DEFAULT_SPACE:
        Registry(store).add_space(space)
    for i in range(notes):
        words = " ".join(WORDS[(i * k) % len(WORDS)] for k in (1, 3, 7))
        service.save(ADMIN, content=f"Note {i}: {words}.", topic=f"ops-{i % topics}", space=space)
    recorder.hold_s = HOLD_S
    try:
        yield service, recorder
    finally:
        store.close()


@pytest.fixture
def space() -> str:
    """The space a fixture seeds (a test parametrized on ``space`` overrides it)."""
    return DEFAULT_SPACE


@pytest.fixture
def counted(
    firestore_store_factory: FirestoreStoreFactory, space: str
) -> Iterator[tuple[MemoryService, RpcRecorder]]:
    firestore_store_factory()  # wipes the emulator database and points the client at it
    with _seeded(60, 3, space) as seeded:
        yield seeded


@pytest.fixture
def counted_large(
    firestore_store_factory: FirestoreStoreFactory, space: str
) -> Iterator[tuple[MemoryService, RpcRecorder]]:
    """Two topics of 150 notes: more than a search's candidate pool (100), so the
    vector query cannot return every record the keyword search needs."""
    firestore_store_factory()
    with _seeded(300, 2, space) as seeded:
        yield seeded


def _cost(recorder: RpcRecorder, operation: Callable[[], Any]) -> Tally:
    _, tally = recorder.measure(operation)
    return tally


@pytest.mark.parametrize("space", [DEFAULT_SPACE, TEAM])
def test_search_takes_four_round_trips_with_a_topic_or_without_in_any_space(
    counted_large: tuple[MemoryService, RpcRecorder], space: str
) -> None:
    service, recorder = counted_large

    scoped = _cost(
        recorder,
        lambda: service.search(
            ADMIN, query="backup restore quota notes", filter_topic="ops-1", space=space
        ),
    )
    everywhere = _cost(
        recorder, lambda: service.search(ADMIN, query="backup restore quota notes", space=space)
    )

    # 1: find_nearest (which also reads the query terms' frequencies), N and length,
    # each term's count (and with a topic, its count inside the topic), all at once;
    # 2: the keyword candidates not already returned by find_nearest (here the
    # common term "notes": its 150 records outnumber the pool), 50 records at most
    # (issue 39 §5); 3: the neighbours of the 20 best, at once, beside the relations
    # of the 60 best candidates and of their other ends (issue 40: `related` two hops
    # out, one array_contains_any query per 30 ids); 4: the neighbours of candidates
    # context lifted into the top 20, beside the relations of the neighbours step 3
    # found and of a result none of those reads held (without a topic that was a
    # fifth round trip before issue 39 §5).
    assert (scoped.depth, everywhere.depth) == (4, 4), (scoped.row(), everywhere.row())
    assert scoped.kinds == {"RunQuery(find_nearest)": 1, "RunAggregationQuery": 9, "RunQuery": 47}
    assert everywhere.kinds == {
        "RunQuery(find_nearest)": 1,
        "RunAggregationQuery": 5,
        "RunQuery": 51,
    }


@pytest.mark.parametrize("topic", [{"filter_topic": "ops-1"}, {}], ids=["topic", "no topic"])
def test_one_search_context_call_as_a_client_sees_it_is_five_round_trips_and_250_reads_at_most(
    counted_large: tuple[MemoryService, RpcRecorder], topic: dict[str, str]
) -> None:
    """Issue 39 §5: the whole MCP call (the official SDK's ``Client`` over loopback
    HTTP to the real app: the admin credential's check, the search, the
    ``memory_events`` write its answer queues), not only ``service.search``."""
    service, recorder = counted_large

    with served(service, recorder) as calls:
        answer, tally = calls.call(
            "search_context", {"query": "backup restore quota notes", **topic}
        )

    assert answer["matches"]
    # 1: find_nearest with the term statistics; 2: the keyword candidates; 3: the
    # neighbours of the best candidates, with the relations of the likeliest page (and
    # one hop further) beside them; 4 (without a topic): the neighbours of candidates
    # context lifted; then the events write (the answer does not wait for it).
    assert tally.depth <= 5, tally.row()
    assert tally.billable_reads <= 250, tally.row()
    assert tally.kinds["Commit"] == 1  # the call's memory_events record


def test_a_misspelled_word_costs_one_aggregation_and_one_query_more_and_no_round_trip(
    counted_large: tuple[MemoryService, RpcRecorder],
) -> None:
    service, recorder = counted_large
    exact = MemoryService(
        service.store,
        HashingEmbedder(32),
        merger=SentenceUnionMerger(),
        options=ServiceOptions(typo_tolerance=False),
    )
    query = "backup restore qouta notes"  # "qouta": no record holds it; "quota" is near

    forgiving = _cost(recorder, lambda: service.search(ADMIN, query=query, filter_topic="ops-1"))
    plain = _cost(recorder, lambda: exact.search(ADMIN, query=query, filter_topic="ops-1"))

    # The statistics of step 1 show that no record holds "qouta"; the find_nearest of
    # the same step read its records' whole term maps, where "quota" is near. Step 2
    # then also counts "quota" in the space (its IDF) and reads the records of the
    # topic holding it, beside the queries it already made: same depth (four with the
    # page's relations, as above). Nothing is corrected before embedding: Firestore
    # holds no vocabulary to correct against, so no second embedding or find_nearest.
    assert forgiving.depth == plain.depth == 4
    assert forgiving.kinds == {
        **plain.kinds,
        "RunAggregationQuery": plain.kinds["RunAggregationQuery"] + 1,
        "RunQuery": plain.kinds["RunQuery"] + 1,
    }


def test_a_keyword_alone_is_the_keyword_search_and_the_relations_with_bounded_reads(
    counted_large: tuple[MemoryService, RpcRecorder],
) -> None:
    service, recorder = counted_large

    two_terms = _cost(recorder, lambda: service.search(ADMIN, keyword="Note 17"))
    one_term = _cost(recorder, lambda: service.search(ADMIN, keyword="quota"))

    # No embedding and no find_nearest: 1: N and length, each term's count, at once;
    # 2: the records holding the rare term ("17": one) and the 20 shortest holding the
    # common one ("note": all 300), at once; 3: the relations of the page's results.
    # At most firestore_lexical.RARE_BUDGET (50) records are read whatever the corpus
    # size (common terms' within COMMON_BUDGET, 20); the literal check reads nothing.
    assert two_terms.depth == one_term.depth == 3
    assert two_terms.kinds == {"RunAggregationQuery": 3, "RunQuery": 3}
    assert two_terms.documents == 21
    # "quota" (30 of the 300 notes) is within the budget: its records, read at once.
    assert one_term.kinds == {"RunAggregationQuery": 2, "RunQuery": 2}
    assert one_term.documents == 30


def test_related_two_hops_away_is_read_beside_conversational_context(
    counted: tuple[MemoryService, RpcRecorder],
) -> None:
    """Issue 40 §4: the links two hops from a search's results are read ahead (the
    likeliest page's relations, then their other ends'), beside conversational
    context's neighbour reads, so a page with both hops costs the round trips a page of
    one hop did (issue 32)."""
    service, recorder = counted
    owner = service.save(ADMIN, content="Dana owns rehearsals.", topic="people")["item"]["id"]
    plan = service.save(ADMIN, content="Kestrel migration plan.", topic="ops-1")["item"]["id"]
    link = [{"id": plan, "type": "extends", "note": "first step"}]
    step = service.save(
        ADMIN, content="Rehearse the Kestrel cutover.", topic="ops-1", relations=link
    )["item"]["id"]
    # A link from another topic (which a topic's search reads no record of) to ``step``.
    source, target = service.store.get_many([owner, step])
    assert source is not None
    assert target is not None
    service.store.relate([between(source, target, RelationType.RELATES_TO, None)])

    found, tally = recorder.measure(
        lambda: service.search(ADMIN, query="kestrel migration plan", filter_topic="ops-1")
    )

    by_id = {match["id"]: match["related"] for match in found["matches"]}
    assert [(entry["id"], entry["hops"]) for entry in by_id[plan]] == [(step, 1), (owner, 2)]
    # 1: find_nearest and the term statistics (the topic's 22 notes are all among its
    # results: no keyword read); 2: the neighbours of the best candidates, beside the
    # relations of the 22 (one query); 3: the relations of their other ends (the
    # two hops, one query), where one hop read the page's relations after ranking.
    assert tally.depth == 3, tally.row()
    assert tally.kinds == {"RunQuery(find_nearest)": 1, "RunAggregationQuery": 7, "RunQuery": 42}


@pytest.mark.parametrize("space", [DEFAULT_SPACE, TEAM])
def test_save_is_the_dedupe_check_then_a_transaction_of_three_round_trips_in_any_space(
    counted: tuple[MemoryService, RpcRecorder], space: str
) -> None:
    service, recorder = counted

    tally = _cost(
        recorder, lambda: service.save(ADMIN, content="A new fact.", topic="ops-9", space=space)
    )

    # fingerprint read; then BeginTransaction, the transactional read, Commit.
    assert tally.depth == tally.rpcs == 4
    assert tally.kinds == {"BatchGetDocuments": 2, "BeginTransaction": 1, "Commit": 1}


def test_a_save_and_its_relations_are_one_commit(
    counted: tuple[MemoryService, RpcRecorder],
) -> None:
    """Issue 38: the memory and the relations it asserts are written in one transaction
    (they were a transaction and then a batch: a crash between left a memory without its
    links, and cost a round trip more)."""
    service, recorder = counted
    target = service.save(ADMIN, content="The runbook for the staging database.")["item"]["id"]

    tally = _cost(
        recorder,
        lambda: service.save(
            ADMIN,
            content="The runbook now covers failover too.",
            relations=[{"id": target, "type": "extends"}],
        ),
    )

    # The related memory and the fingerprint read; then BeginTransaction, the
    # transactional read, and one Commit holding the memory and its relation.
    assert tally.kinds == {"BatchGetDocuments": 3, "BeginTransaction": 1, "Commit": 1}
    assert len(service.fetch(ADMIN, id=target)["item"]["related"]) == 1


def test_consolidating_ten_drafts_reads_them_together_in_four_round_trips(
    counted: tuple[MemoryService, RpcRecorder],
) -> None:
    service, recorder = counted
    drafts = [
        service.save(ADMIN, content=f"Draft {i}.", topic="drafts", draft=True)["item"]["id"]
        for i in range(10)
    ]

    tally = _cost(recorder, lambda: service.consolidate(ADMIN, topic="drafts", source_ids=drafts))

    # the 10 sources in one BatchGet; then BeginTransaction, one BatchGet of all 10, the
    # relations touching the sources whose state changes (one query: their copy of the
    # state is kept current, issue 32), Commit.
    assert tally.depth == tally.rpcs == 5
    assert tally.kinds == {
        "BatchGetDocuments": 2,
        "BeginTransaction": 1,
        "RunQuery": 1,
        "Commit": 1,
    }
    assert tally.documents == 20


def test_deprecate_reads_both_records_in_one_round_trip(
    counted: tuple[MemoryService, RpcRecorder],
) -> None:
    service, recorder = counted
    old, new = (
        service.save(ADMIN, content=f"Fact {k}.", topic="facts")["item"]["id"] for k in ("a", "b")
    )

    tally = _cost(recorder, lambda: service.deprecate(ADMIN, id=old, superseding_id=new))

    # BeginTransaction; both records at once; the relations touching the deprecated one
    # (their copy of its state, issue 32); Commit (with the new supersedes relation).
    assert tally.depth == tally.rpcs == 4
    assert tally.kinds == {
        "BatchGetDocuments": 1,
        "BeginTransaction": 1,
        "RunQuery": 1,
        "Commit": 1,
    }
    assert tally.documents == 2


def test_list_spaces_counts_each_space_with_one_aggregation_and_reads_no_document(
    firestore_store_factory: FirestoreStoreFactory,
) -> None:
    firestore_store_factory()
    recorder = RpcRecorder()
    store = FirestoreStore(CountingClient(recorder, project=PROJECT), "memory_vectors")
    try:
        service = MemoryService(store, HashingEmbedder(32), merger=SentenceUnionMerger())
        registry = Registry(store)
        for key in (TEAM, "family", "project", "archive"):
            registry.add_space(key)
        owner = Access.admin(directory=registry.directory())
        for i in range(3):
            service.save(owner, content=f"Team note {i}.", topic="ops", space=TEAM)
        service.save(owner, content="A default note.", topic="ops")
        recorder.hold_s = HOLD_S

        listed, tally = recorder.measure(lambda: service.list_spaces(owner))
    finally:
        store.close()

    counts = {space["key"]: space["memories"] for space in listed["spaces"]}
    assert counts == {"archive": 0, "default": 1, "family": 0, "project": 0, TEAM: 3}
    # One count() per space (its own collection); no document read. The counts are
    # issued one after another today (depth 5): never more than one level per space.
    assert tally.kinds == {"RunAggregationQuery": 5}
    assert tally.documents == 0
    assert tally.depth <= 5


def test_fetch_and_list_are_one_round_trip_each_and_one_for_their_relations(
    counted: tuple[MemoryService, RpcRecorder],
) -> None:
    service, recorder = counted
    some_id = service.list_memories(ADMIN, limit=1)["items"][0]["id"]

    fetched = _cost(recorder, lambda: service.fetch(ADMIN, id=some_id))
    listed = _cost(recorder, lambda: service.list_memories(ADMIN, filter_topic="ops-1", limit=10))

    assert (fetched.depth, fetched.kinds) == (2, {"BatchGetDocuments": 1, "RunQuery": 1})
    assert (listed.depth, listed.kinds) == (2, {"RunQuery": 2})
    assert listed.documents == 11  # a page of 10 and one more to know whether more follow


def test_each_resource_and_the_context_prompt_is_one_round_trip(
    counted: tuple[MemoryService, RpcRecorder],
) -> None:
    """memory://topics, memory://recent, memory://{id} and the context prompt (issue 22)."""
    service, recorder = counted
    admin = load_profiles(Settings(_env_file=None)).admin  # type: ignore[call-arg]
    some_id = service.list_memories(ADMIN, limit=1)["items"][0]["id"]

    topics = _cost(recorder, lambda: resources.read(service, admin, "memory://topics"))
    recent = _cost(recorder, lambda: resources.read(service, admin, "memory://recent"))
    one = _cost(recorder, lambda: resources.read(service, admin, f"memory://{some_id}"))
    prompt = _cost(recorder, lambda: context_prompt.render(service, admin, {"topic": "ops-1"}))

    # topics: one projection of two fields over the collection (every record once)
    assert (topics.depth, topics.kinds, topics.documents) == (1, {"RunQuery": 1}, 60)
    # recent: a page of 20 and one more to know whether more follow
    assert (recent.depth, recent.kinds, recent.documents) == (1, {"RunQuery": 1}, 21)
    # memory://{id} is fetch_context: the record, then its relations
    assert (one.depth, one.kinds, one.documents) == (
        2,
        {"BatchGetDocuments": 1, "RunQuery": 1},
        1,
    )
    # the prompt reads at most 51 records of its topic (here all 20 of them)
    assert (prompt.depth, prompt.kinds, prompt.documents) == (1, {"RunQuery": 1}, 20)


def test_neighbour_reads_stop_at_records_the_search_already_holds(
    counted: tuple[MemoryService, RpcRecorder],
) -> None:
    service, recorder = counted
    store = service.store
    where = MemoryFilter(states=(BranchState.ACTIVE,), topic="ops-1")
    topic = store.list_page(where, 100, None, oldest_first=True)  # 20 records, in write order
    run = topic[5:15]  # ten anchors side by side
    spread = topic[5:15:3]  # four anchors, two records apart

    docs: dict[str, int] = {}
    for name, anchors, held in (
        ("run", run, []),
        ("run, all held", run, topic),
        ("spread", spread, []),
        ("spread, all held", spread, topic),
    ):
        exact = store.neighbours(anchors, where, 2)

        def look_up(a: list[Memory] = anchors, h: list[Memory] = held) -> dict[str, Neighbours]:
            return store.neighbours(a, where, 2, h)

        found, tally = recorder.measure(look_up)
        assert found == exact
        assert tally.depth == 1
        docs[name] = tally.documents

    # Two records each side of every anchor were read before (40 and 16). Now a
    # query stops at the next anchor (whose own query reads on from there) or at
    # the second record held beyond its anchor: reads stop where the records in
    # hand begin, and only the ends of a run of anchors read anything.
    assert docs == {"run": 4, "run, all held": 2, "spread": 16, "spread, all held": 8}


def test_erase_is_a_read_a_transaction_of_three_round_trips_the_topic_check_and_the_lineage(
    counted: tuple[MemoryService, RpcRecorder],
) -> None:
    service, recorder = counted
    ids = [
        service.save(ADMIN, content=f"Secret {k}.", topic="secrets")["item"]["id"] for k in "abc"
    ]

    tally = _cost(recorder, lambda: service.erase(ADMIN, ids=ids, erased_by="owner"))

    # the 3 records in one BatchGet; BeginTransaction; the 3 records (BatchGet), the
    # fingerprints pointing at them and the relations touching them (a RunQuery each)
    # together; Commit; whether their topic
    # still holds a record (one query per topic); it does not, so the events naming it
    # (one `in` query per place a topic sits, 3 at once); then the records consolidated
    # from them (one array_contains_any query).
    assert tally.depth == 7
    assert tally.kinds == {
        "BatchGetDocuments": 2,
        "BeginTransaction": 1,
        "RunQuery": 7,
        "Commit": 1,
    }
    assert tally.documents == 9  # 3 records twice, 3 fingerprints


def test_fetching_an_erased_record_reads_its_tombstone_in_one_more_round_trip(
    counted: tuple[MemoryService, RpcRecorder],
) -> None:
    service, recorder = counted
    gone = service.save(ADMIN, content="Gone soon.", topic="secrets")["item"]["id"]
    service.erase(ADMIN, ids=[gone], erased_by="owner")

    def fetch() -> None:
        with pytest.raises(NotFound, match="was erased on"):
            service.fetch(ADMIN, id=gone)

    tally = _cost(recorder, fetch)

    assert (tally.depth, tally.kinds) == (2, {"BatchGetDocuments": 2})
    assert tally.documents == 1  # the tombstone


def test_the_console_counts_in_one_aggregation_and_finds_what_a_record_replaced_in_one_query(
    counted: tuple[MemoryService, RpcRecorder],
) -> None:
    service, recorder = counted
    store = service.store
    old, new = (
        service.save(ADMIN, content=f"Standup at {when}.", topic="ops-1")["item"]["id"]
        for when in ("9:00", "9:30")
    )
    service.deprecate(ADMIN, id=old, superseding_id=new)

    counted_topic = _cost(
        recorder,
        lambda: store.count_memories(MemoryFilter(states=(BranchState.ACTIVE,), topic="ops-1")),
    )
    replaced = _cost(recorder, lambda: store.superseded_by_any([new]))

    assert (counted_topic.depth, counted_topic.kinds) == (1, {"RunAggregationQuery": 1})
    assert counted_topic.documents == 0  # an aggregation reads no document
    assert (replaced.depth, replaced.kinds) == (1, {"RunQuery": 1})
    assert replaced.documents == 1


def test_a_refresh_spends_its_token_in_one_transaction_after_writing_the_new_pair(
    firestore_store_factory: FirestoreStoreFactory,
) -> None:
    """The token endpoint's refresh on Firestore (issue 19 item 4): the server reads the
    refresh token's binding and its grant, then ``exchange`` writes the new pair and the
    grant's new expiry and spends the old token, with the sealed answer for a repeat,
    in one transaction. A repeat inside the grace window also deletes its own unused
    pair (two transactional deletes) and checks the grant is still there."""
    firestore_store_factory()
    recorder = RpcRecorder()
    store = FirestoreStore(CountingClient(recorder, project=PROJECT), "memory_vectors")
    tokens = TokenStore(store, timedelta(minutes=60), timedelta(days=30))
    try:
        grant_id = tokens.create_grant({"client_id": "c", "preset": "read"})
        first = tokens.issue(grant_id, "c", "https://m.example/mcp", ("memory:read",), refresh=True)
        assert first.refresh_token is not None
        token = first.refresh_token

        def refresh() -> Exchanged:
            binding = tokens.refresh_binding(token)
            grant = tokens.grant(grant_id)
            assert binding is not None
            assert grant is not None
            presenter = Presenter("ip:203.0.113.7", "client")
            return tokens.exchange(
                REFRESH, token, binding, ("memory:read",), refresh=True, presenter=presenter
            )

        used, tally = recorder.measure(refresh)
        repeated, repeat_tally = recorder.measure(refresh)
    finally:
        store.close()

    assert (used.outcome, repeated.outcome) == ("issued", "repeated")
    # binding, grant; access token, refresh token, grant expiry; BeginTransaction, read, Commit.
    assert tally.depth == tally.rpcs == 8
    assert tally.kinds == {"BatchGetDocuments": 3, "Commit": 4, "BeginTransaction": 1}
    assert repeat_tally.kinds == {"BatchGetDocuments": 6, "Commit": 6, "BeginTransaction": 3}


# ------------------------------------------------------- stored client profiles
def _client_settings(refresh: float) -> Settings:
    return Settings(  # type: ignore[call-arg]
        _env_file=None,
        mcp_admin_token=SecretStr("admin-" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6"),
        metacortex_client_refresh_seconds=refresh,
    )


def test_stored_clients_cost_no_read_within_the_bound_then_one_marker_read_per_check(
    firestore_store_factory: FirestoreStoreFactory,
) -> None:
    """Issue 21 §2: a process checks the stored clients at most once per
    ``METACORTEX_CLIENT_REFRESH_SECONDS``: one document read (the change marker), and
    only when the marker moved three queries: the clients, the spaces and the people
    (issue 30: every credential's levels are computed with them). The clock is driven
    by hand."""
    firestore_store_factory()
    recorder = RpcRecorder()
    store = FirestoreStore(CountingClient(recorder, project=PROJECT), "memory_vectors")
    try:
        settings = _client_settings(10.0)
        now = [0.0]
        directory = ClientDirectory(load_profiles(settings), settings, clock=lambda: now[0])
        manager = ClientManager(store, settings)
        manager.create("agent")
        _, attach = recorder.measure(lambda: directory.attach(store))
        now[0] = 9.9
        _, within = recorder.measure(lambda: [directory.refresh() for _ in range(50)])
        now[0] = 10.0
        _, unchanged = recorder.measure(directory.refresh)
        manager.pause("agent")
        now[0] = 20.0
        _, changed = recorder.measure(directory.refresh)
        _, paused = recorder.measure(lambda: manager.pause("agent"))
    finally:
        store.close()

    assert attach.kinds == {"BatchGetDocuments": 1, "RunQuery": 3}
    assert within.rpcs == 0
    assert (unchanged.kinds, unchanged.billable_reads) == ({"BatchGetDocuments": 1}, 1)
    assert changed.kinds == {"BatchGetDocuments": 1, "RunQuery": 3}
    # The marker, the one stored client, and one read each for the two empty queries
    # (Firestore bills a query that finds nothing as one read).
    assert changed.billable_reads == 4
    # Pausing: the atomic update (BeginTransaction, read, Commit), then the marker write.
    assert paused.kinds == {"BeginTransaction": 1, "BatchGetDocuments": 1, "Commit": 2}


@pytest.mark.anyio
@pytest.mark.parametrize(("refresh", "reads"), [(3600.0, 0), (0.0, 5)])
async def test_requests_at_a_stored_client_add_no_firestore_read_within_the_bound(
    firestore_store_factory: FirestoreStoreFactory, refresh: float, reads: int
) -> None:
    """Five ``tools/list`` requests at a stored client's endpoint through the real app
    (guard, directory, MCP transport) on the emulator: no store RPC at all while the
    directory is fresh; with the bound set to 0, one marker read per request."""
    firestore_store_factory()
    recorder = RpcRecorder()
    store = FirestoreStore(CountingClient(recorder, project=PROJECT), "memory_vectors")
    try:
        settings = _client_settings(refresh)
        token = ClientManager(store, settings).create("agent").token
        service = MemoryService(store, HashingEmbedder(32), merger=SentenceUnionMerger())
        app = create_app(settings, service)
        async with (
            app.router.lifespan_context(app),
            httpx2.AsyncClient(
                transport=httpx2.ASGITransport(app=app), base_url="http://localhost"
            ) as http,
        ):
            recorder.reset()
            for number in range(5):
                answer = await http.post(
                    "/clients/agent/mcp",
                    headers={
                        "authorization": f"Bearer {token}",
                        "content-type": "application/json",
                        "accept": "application/json, text/event-stream",
                        "mcp-protocol-version": "2025-11-25",
                    },
                    json={"jsonrpc": "2.0", "id": number, "method": "tools/list"},
                )
                assert answer.status_code == 200, answer.text
            tally = recorder.tally()
    finally:
        store.close()

    assert tally.kinds == ({"BatchGetDocuments": reads} if reads else {})
    assert tally.billable_reads == reads


# ------------------------------------------------------------------ documents (issue 31)
def _garden_of(paragraphs: int, edit: int | None = None) -> str:
    """Markdown of one section per paragraph of about 600 characters: one passage each."""
    sections = []
    for number in range(paragraphs):
        changed = " It was replanted in spring." if number == edit else ""
        body = f"Bed {number} holds {WORDS[number % len(WORDS)]} plants. " * 20
        sections.append(f"## Bed {number}\n\n{body.strip()}{changed}\n")
    return "# Garden beds\n\n" + "\n".join(sections)


@pytest.mark.timeout(360)  # 7,000 writes to the emulator: about 100 s on a loaded 2-core box
def test_a_document_of_a_thousand_passages_is_written_in_batches_between_two_transactions(
    firestore_store_factory: FirestoreStoreFactory,
) -> None:
    """Issues 31 and 32: a new document costs the two key reads (same bytes? same
    source?), the claim transaction, one Commit per 500 writes (the passages, their
    ``part_of`` and ``next`` relations, the text's and bytes' parts) and the publishing
    transaction. A new version with one passage changed adds the previous version's
    passages (one query) and their relations (one query per 30 passages, all at once),
    the undo log (one commit before the changes), the changes (records and relations)
    and the log's removal."""
    firestore_store_factory()
    recorder = RpcRecorder()
    store = FirestoreStore(CountingClient(recorder, project=PROJECT), "memory_vectors")
    try:
        service = MemoryService(store, HashingEmbedder(32), merger=SentenceUnionMerger())
        first, created = recorder.measure(
            lambda: service.create_document(
                ADMIN, content=_garden_of(1000), media_type="text/markdown", source="beds.md"
            )
        )
        _, replaced = recorder.measure(
            lambda: service.create_document(
                ADMIN,
                content=_garden_of(1000, edit=7),
                media_type="text/markdown",
                source="beds.md",
            )
        )
    finally:
        from metacortex.documents.isolation import shut_down

        shut_down()
        store.close()
    passages = first["passages"]["added"]
    assert passages == 1000
    # Two key reads; the claim (BeginTransaction, the keys, Commit); the batches of 500
    # writes: 1,000 passages, their 1,000 part_of and 999 next relations, two parts (text,
    # bytes); the publishing transaction. The relations cost 2 writes a passage (less one)
    # and, at 500 writes a commit, 4 of the 9 commits.
    relations = passages + passages - 1
    assert created.kinds == {"BatchGetDocuments": 4, "BeginTransaction": 2, "Commit": 9}
    assert created.writes == passages + relations + 2 + 3 + 3  # parts; claim; publish
    assert created.billable_reads == 3
    # A new version with one passage edited: 999 kept, 1 retired, 1 added. The previous
    # version's passages (one query) and their relations (34 queries of 30 passages at
    # once; a next relation is read by both its ends' queries when they fall in two), and
    # inside the store the records it changes as they are (two reads of 500) for the undo
    # log, committed with the new passage and parts before the 1,000 record changes and
    # the relation changes: every kept passage's part_of moves to the new version (999
    # invalidated, 999 new), the retired one's part_of and two next are invalidated, the
    # new one gets part_of and two next (2,004 writes); publishing; the log's removal.
    assert replaced.kinds == {
        "BatchGetDocuments": 7,
        "BeginTransaction": 2,
        "Commit": 11,
        "RunQuery": 36,
    }
    assert 2 * passages + relations + 13 <= replaced.billable_reads <= 2 * passages + 2 * relations
    assert passages + 2_004 + 11 <= replaced.writes <= passages + 2_004 + 30
