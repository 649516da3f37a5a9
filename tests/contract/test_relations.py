"""Linked memory on every store: relations from the lifecycle and callers, read on every
result, invalidated never deleted, gone with an erased memory, never across a space
(issue 32)."""

from __future__ import annotations

from typing import Any

import pytest

from metacortex.access.model import Level
from metacortex.domain.records import ALL_STATES, BranchState
from metacortex.domain.relations import RelationType, relation_id
from metacortex.errors import InvalidArgument, NotFound
from metacortex.service import Access, MemoryService
from metacortex.storage.base import MemoryFilter, MemoryStore
from metacortex.usecases.undo import Undo
from tests.contract.test_spaces import Team

W = Level.WRITE


@pytest.fixture
def team(store: MemoryStore) -> Team:
    return Team(store)


def _save(service: MemoryService, access: Access, content: str, **kw: Any) -> str:
    return str(service.save(access, content=content, **kw)["item"]["id"])


def _related(service: MemoryService, access: Access, memory_id: str, **kw: Any) -> list[Any]:
    related: list[Any] = service.fetch(access, id=memory_id, **kw)["item"]["related"]
    return related


def test_a_replacement_supersedes_what_it_replaced_and_both_results_say_so(
    service: MemoryService, admin: Access
) -> None:
    old = _save(service, admin, "The office opens at eight")
    new = _save(service, admin, "The office opens at nine")
    service.deprecate(admin, id=old, superseding_id=new)

    assert _related(service, admin, old) == [
        {
            "id": new,
            "type": "supersedes",
            "direction": "incoming",
            "note": "changed",
            "summary": "The office opens at nine",
            "hops": 1,
        }
    ]
    found = service.search(admin, query="office opens", filter_state=["active", "deprecated"])
    by_id = {match["id"]: match["related"] for match in found["matches"]}
    assert by_id[new] == [
        {
            "id": old,
            "type": "supersedes",
            "direction": "outgoing",
            "note": "changed",
            "summary": "The office opens at eight",
            "hops": 1,
        }
    ]
    listed = service.list_memories(admin, filter_state=["deprecated"])["items"]
    assert [item["related"][0]["id"] for item in listed] == [new]


def test_a_reader_of_active_memories_is_not_shown_a_deprecated_neighbour(
    service: MemoryService, admin: Access
) -> None:
    old = _save(service, admin, "Parking is on level two")
    new = _save(service, admin, "Parking is on level three")
    service.deprecate(admin, id=old, superseding_id=new)
    active_only = Access(frozenset({BranchState.ACTIVE}), BranchState.ACTIVE, False)

    assert _related(service, active_only, new) == []
    assert _related(service, admin, new)[0]["id"] == old


def test_a_consolidation_derives_the_merged_memory_from_every_source(
    service: MemoryService, admin: Access
) -> None:
    sources = [_save(service, admin, f"Trip note {n}.", draft=True, topic="trip") for n in (1, 2)]
    merged = service.consolidate(admin, topic="trip")["item"]["merged_id"]

    related = _related(service, admin, merged)
    assert sorted((r["id"], r["type"], r["direction"]) for r in related) == sorted(
        (source, "derived_from", "outgoing") for source in sources
    )


def test_a_caller_links_a_new_memory_to_memories_it_can_read(
    service: MemoryService, admin: Access
) -> None:
    fact = _save(service, admin, "The API rate limit is 100 requests a minute")
    detail = service.save(
        admin,
        content="Bursts up to 20 requests are allowed on top of the limit",
        relations=[{"id": fact, "type": "extends", "note": "burst detail"}],
    )["item"]["id"]

    assert _related(service, admin, detail) == [
        {
            "id": fact,
            "type": "extends",
            "direction": "outgoing",
            "note": "burst detail",
            "summary": "The API rate limit is 100 requests a minute",
            "hops": 1,
        }
    ]
    # A retry of the same save adds nothing.
    service.save(
        admin,
        content="Bursts up to 20 requests are allowed on top of the limit",
        relations=[{"id": fact, "type": "extends", "note": "burst detail"}],
    )
    assert len(_related(service, admin, fact)) == 1


def test_a_link_to_a_memory_that_is_not_there_saves_nothing(
    service: MemoryService, admin: Access, store: MemoryStore
) -> None:
    with pytest.raises(NotFound, match="no memory with id"):
        service.save(admin, content="Orphan", relations=[{"id": "01nosuchmemory0000000000aa"}])
    with pytest.raises(InvalidArgument, match="type must be one of"):
        service.save(admin, content="Orphan", relations=[{"id": "x", "type": "supersedes"}])
    assert service.list_memories(admin)["items"] == []


def test_derived_from_is_refused_exactly_as_a_relation_to_the_same_id_and_saves_nothing(
    service: MemoryService, admin: Access, store: MemoryStore, team: Team
) -> None:
    """Issue 37: ``derived_from`` took any id. Now an id that does not exist, one in
    another space, and one in a state the caller may not read get the answer
    ``relations`` gives (the same words: "not granted" reads like "missing")."""
    owner = team.owner()
    at_work = _save(service, owner, "Quarterly review on Friday", space="work")
    draft = _save(service, owner, "Half an idea about the garden", draft=True)
    erased = _save(service, owner, "A note erased since")
    service.erase(owner, ids=[erased], erased_by="owner (test)")
    # Another credential: a draft's own author reads it back (``Access.sees``).
    active_only = Access(
        frozenset({BranchState.ACTIVE}), BranchState.ACTIVE, True, principal="another-client"
    )
    cases = [
        (owner, "01nosuchmemory0000000000aa"),
        (owner, at_work),  # another space than the one written
        (active_only, draft),  # a state this caller may not read
        (active_only, erased),  # erased, by one that could not have read it anyway
        (owner, erased),  # erased, told so as relations tell it
    ]
    for access, memory_id in cases:
        with pytest.raises(NotFound) as as_relation:
            service.save(access, content="Built on it", relations=[{"id": memory_id}])
        with pytest.raises(NotFound) as as_derived:
            service.save(access, content="Built on it", derived_from=[memory_id])
        assert as_derived.value.message == as_relation.value.message
    assert [m["id"] for m in service.list_memories(admin)["items"]] == []
    assert store.count_memories(MemoryFilter(states=ALL_STATES)) == 1  # the draft alone
    saved = service.save(owner, content="Built on the draft", derived_from=[draft])["item"]
    assert saved["metadata"]["provenance"]["derived_from"] == [draft]


def test_a_link_never_crosses_a_space(service: MemoryService, team: Team) -> None:
    owner = team.owner()
    at_work = _save(service, owner, "Quarterly review on Friday", space="work")
    with pytest.raises(NotFound, match="no memory with id"):
        service.save(owner, content="Bake a cake", space="family", relations=[{"id": at_work}])


def test_undoing_a_deprecation_invalidates_its_relation_and_keeps_it(
    service: MemoryService, admin: Access, store: MemoryStore
) -> None:
    old = _save(service, admin, "Standup at ten")
    new = _save(service, admin, "Standup at half past ten")
    _, undo = service.deprecate_undoable(admin, id=old, superseding_id=new)
    assert isinstance(undo, Undo)

    service.undo(admin, undo)

    assert _related(service, admin, old) == []
    [kept] = store.relations_of([old], include_invalid=True)
    assert (kept.type, kept.valid) == (RelationType.SUPERSEDES, False)
    assert kept.id == relation_id("default", new, RelationType.SUPERSEDES, old)


def test_erasing_a_memory_leaves_no_relation_touching_it(
    service: MemoryService, admin: Access, store: MemoryStore
) -> None:
    old = _save(service, admin, "Door code 4411")
    new = _save(service, admin, "Door code 9932")
    service.deprecate(admin, id=old, superseding_id=new)

    service.erase(admin, ids=[old], erased_by="test")

    assert store.relations_of([old, new], include_invalid=True) == []
    assert _related(service, admin, new) == []


def test_a_writer_proposing_to_retire_someone_elses_memory_records_the_relation(
    service: MemoryService, team: Team
) -> None:
    ann = team.access(team.ann, {"family": W}, "family")
    cy_person = team.registry.add_person("cy@example.com", "Cy", team.ann.role, {"family": W})
    cy = team.access(cy_person, {"family": W}, "family")
    hers = _save(service, ann, "The dog eats at six")
    theirs = _save(service, cy, "The dog eats at seven")

    result = service.deprecate(cy, id=hers, superseding_id=theirs)

    assert result["contested_ids"] == [hers]
    [link] = _related(service, ann, hers)
    assert (link["id"], link["type"], link["direction"]) == (theirs, "supersedes", "incoming")
    assert "proposed" in link["note"]


def test_a_memory_shows_five_neighbours_at_most_its_replacement_first(
    service: MemoryService, admin: Access
) -> None:
    hub = _save(service, admin, "The project is called Heron")
    for n in range(7):
        service.save(admin, content=f"Heron detail number {n}", relations=[{"id": hub}])
    replacement = _save(service, admin, "The project is called Osprey")
    service.deprecate(admin, id=hub, superseding_id=replacement)

    related = _related(service, admin, hub)
    assert len(related) == 5
    assert (related[0]["id"], related[0]["type"]) == (replacement, "supersedes")


def test_related_context_walks_out_to_its_depth_and_stops_at_its_bound(
    service: MemoryService, admin: Access
) -> None:
    chain = [_save(service, admin, "Link 0 of a chain")]
    for n in range(1, 5):
        chain.append(
            service.save(admin, content=f"Link {n} of a chain", relations=[{"id": chain[-1]}])[
                "item"
            ]["id"]
        )
    near = service.related_context(admin, id=chain[0], depth=2)
    assert [node["id"] for node in near["nodes"]] == chain[:3]
    assert len(near["edges"]) == 2
    assert near["truncated"] is False
    with pytest.raises(InvalidArgument, match="depth must be between 1 and 3"):
        service.related_context(admin, id=chain[0], depth=4)

    hub = _save(service, admin, "A hub with many spokes")
    for n in range(60):
        service.save(admin, content=f"Spoke {n}", relations=[{"id": hub}])
    wide = service.related_context(admin, id=hub, depth=1)
    assert len(wide["nodes"]) == 50
    assert wide["truncated"] is True


def test_the_graph_pages_a_spaces_memories_and_the_links_among_them(
    service: MemoryService, admin: Access
) -> None:
    first = _save(service, admin, "Graph node one", topic="g")
    second = service.save(admin, content="Graph node two", topic="g", relations=[{"id": first}])
    page = service.graph(admin, topic="g")
    assert {node["id"] for node in page["nodes"]} == {first, second["item"]["id"]}
    assert page["edges"] == [
        {"source": second["item"]["id"], "target": first, "type": "relates_to", "note": ""}
    ]
    assert page["next_cursor"] is None


def test_a_moved_memory_leaves_its_relations_behind_invalidated(
    service: MemoryService, store: MemoryStore, team: Team
) -> None:
    owner = team.owner()
    base = _save(service, owner, "Book flights", space="family")
    linked = service.save(owner, content="Book the hotel", space="family", relations=[{"id": base}])
    store.move(base, "family", "work")

    assert _related(service, owner, base, space="work") == []
    assert _related(service, owner, linked["item"]["id"], space="family") == []
    assert [r.valid for r in store.relations_of([base], space="family", include_invalid=True)] == [
        False
    ]


def test_every_relation_states_both_ends_as_they_are_now(
    service: MemoryService, admin: Access, store: MemoryStore
) -> None:
    draft = _save(service, admin, "Draft idea", draft=True)
    other = service.save(admin, content="Related idea", relations=[{"id": draft}])["item"]["id"]
    service.promote(admin, id=draft)
    [relation] = store.relations_of([draft])
    assert (relation.source, relation.source_state) == (other, "active")
    assert (relation.target, relation.target_state) == (draft, "active")


def test_a_search_result_shows_the_links_two_hops_away_with_the_memory_between(
    service: MemoryService, admin: Access
) -> None:
    """Issue 40 §4: ``related`` on a search result also holds the links of its
    neighbours (``hops`` 2, ``via`` the neighbour), each memory once at its nearest;
    the result itself and its own neighbours are not repeated two hops out."""
    plan = _save(service, admin, "Kestrel migration plan for the billing cluster")
    step = _save(
        service,
        admin,
        "Rehearse the cutover on staging",
        relations=[{"id": plan, "type": "extends", "note": "first step"}],
    )
    risk = _save(
        service,
        admin,
        "Staging lacks the production quota",
        relations=[
            {"id": step, "type": "relates_to", "note": "blocks rehearsal"},
            {"id": plan, "type": "relates_to", "note": "also a risk"},
        ],
    )
    owner = _save(
        service,
        admin,
        "Dana owns the rehearsal",
        relations=[{"id": step, "type": "relates_to", "note": "assigned"}],
    )

    found = service.search(admin, query="Kestrel migration plan billing cluster", limit=1)

    [match] = found["matches"]
    assert match["id"] == plan
    near = [entry for entry in match["related"] if entry["hops"] == 1]
    far = [entry for entry in match["related"] if entry["hops"] == 2]
    assert {entry["id"] for entry in near} == {step, risk}
    assert all("via" not in entry for entry in near)
    # ``risk`` is a neighbour already: only ``owner`` is two hops away, through ``step``.
    assert far == [
        {
            "id": owner,
            "type": "relates_to",
            "direction": "incoming",
            "note": "assigned",
            "summary": "Dana owns the rehearsal",
            "hops": 2,
            "via": step,
        }
    ]


def test_a_memory_two_hops_away_is_shown_only_when_the_one_between_is_readable(
    service: MemoryService, admin: Access
) -> None:
    old = _save(service, admin, "Backups run nightly at two")
    new = _save(service, admin, "Backups run nightly at three")
    service.deprecate(admin, id=old, superseding_id=new)
    detail = _save(
        service,
        admin,
        "The two o'clock slot clashed with the batch jobs",
        relations=[{"id": old, "type": "extends", "note": "why it moved"}],
    )
    active_only = Access(frozenset({BranchState.ACTIVE}), BranchState.ACTIVE, False)

    seen_by_admin = service.search(admin, query="Backups run nightly at three", limit=1)
    seen_by_reader = service.search(active_only, query="Backups run nightly at three", limit=1)

    [by_admin] = seen_by_admin["matches"]
    assert by_admin["id"] == new
    assert [(e["id"], e["hops"]) for e in by_admin["related"]] == [(old, 1), (detail, 2)]
    [by_reader] = seen_by_reader["matches"]
    assert by_reader["related"] == []
