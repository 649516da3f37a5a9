"""Relating two stored memories and invalidating the relation (the console owner's actions,
``usecases/relation_edits.py``) on every store: the caller's types only, kept when
invalidated, revived when made again, never across a space, refused to a reader."""

from __future__ import annotations

import pytest

from metacortex.access.model import Level
from metacortex.errors import Forbidden, InvalidArgument, NotFound
from metacortex.service import Access, MemoryService
from metacortex.storage.base import MemoryStore
from tests.contract.test_spaces import Team


def _save(service: MemoryService, access: Access, content: str, space: str = "default") -> str:
    return str(service.save(access, content=content, space=space)["item"]["id"])


def test_a_relation_made_between_stored_memories_shows_on_both_and_is_kept_when_invalidated(
    service: MemoryService, admin: Access, store: MemoryStore
) -> None:
    plan = _save(service, admin, "The kitchen plan has an island")
    budget = _save(service, admin, "The kitchen budget is 18,000 euros")

    made = service.relate(
        admin, source_id=budget, target_id=plan, type="relates_to", note="its cost"
    )
    shown = service.fetch(admin, id=plan)["item"]["related"]
    service.invalidate_relation(admin, source_id=budget, target_id=plan, type="relates_to")
    after = service.fetch(admin, id=plan)["item"]["related"]
    kept = store.relations_of([plan], include_invalid=True)
    service.relate(admin, source_id=budget, target_id=plan, type="relates_to")
    revived = service.fetch(admin, id=plan)["item"]["related"]

    assert made["relation"]["valid"] is True
    assert shown == [
        {
            "id": budget,
            "type": "relates_to",
            "direction": "incoming",
            "note": "its cost",
            "summary": "The kitchen budget is 18,000 euros",
            "hops": 1,
        }
    ]
    assert after == []
    assert [(r.source, r.valid) for r in kept] == [(budget, False)]
    assert [n["id"] for n in revived] == [budget]


def test_lifecycle_types_self_relations_and_unknown_ids_are_refused_with_what_to_do(
    service: MemoryService, admin: Access, store: MemoryStore
) -> None:
    old = _save(service, admin, "The office opens at eight")
    new = _save(service, admin, "The office opens at nine")
    service.deprecate(admin, id=old, superseding_id=new)

    with pytest.raises(InvalidArgument, match="follow the memories' lifecycle"):
        service.invalidate_relation(admin, source_id=new, target_id=old, type="supersedes")
    with pytest.raises(InvalidArgument, match="follow the memories' lifecycle"):
        service.relate(admin, source_id=new, target_id=old, type="derived_from")
    with pytest.raises(InvalidArgument, match="cannot be related to itself"):
        service.relate(admin, source_id=new, target_id=new, type="extends")
    with pytest.raises(NotFound):
        service.relate(admin, source_id=new, target_id="0" * 26, type="extends")
    with pytest.raises(NotFound, match="no valid extends relation"):
        service.invalidate_relation(admin, source_id=new, target_id=old, type="extends")
    with pytest.raises(InvalidArgument, match="note is 281 characters"):
        service.relate(admin, source_id=new, target_id=old, type="extends", note="x" * 281)

    assert [r.type.value for r in store.relations_of([new])] == ["supersedes"]


def test_a_relation_never_crosses_a_space_and_a_reader_makes_none(
    service: MemoryService, store: MemoryStore
) -> None:
    team = Team(store)
    owner = team.owner()
    home = _save(service, owner, "The family plan", "family")
    office = _save(service, owner, "The work plan", "work")
    other = _save(service, owner, "The family budget", "family")
    ben = team.access(team.ben, {"family": Level.READ}, "family")

    with pytest.raises(NotFound):
        service.relate(owner, source_id=home, target_id=office, type="relates_to", space="family")
    with pytest.raises(Forbidden):
        service.relate(ben, source_id=home, target_id=other, type="relates_to", space="family")

    assert store.relations_of([home, other], space="family") == []
