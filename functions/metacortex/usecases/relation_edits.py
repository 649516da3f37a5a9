"""Relating two stored memories, and invalidating such a relation: the console's owner
actions on a memory's page (``console/graph.py``).

Only the caller's types (``CALLER_TYPES``: updates, extends, derives, relates_to) are
made or invalidated here: the lifecycle's (``supersedes``, ``derived_from``) follow the
memories' states (undo invalidates them) and the documents' (``part_of``, ``next``)
follow the document, so invalidating one by hand would leave the graph saying something
the memories do not. An invalidated relation stays, with who invalidated it and when;
relating the same pair with the same type again revives it (one relation per source,
type and target).
"""

from __future__ import annotations

from typing import Any

from metacortex.access.model import Level
from metacortex.access.rules import Access, all_visible, visible
from metacortex.domain import limits
from metacortex.domain.records import Attribution, utc_now
from metacortex.domain.relations import CALLER_TYPES, MAX_NOTE_CHARS, RelationType, relation_id
from metacortex.errors import InvalidArgument, NotFound
from metacortex.storage.base import MemoryStore
from metacortex.usecases.relations import between


def _caller_type(value: str, field: str) -> RelationType:
    try:
        type_ = RelationType(value)
    except ValueError:
        type_ = None
    if type_ not in CALLER_TYPES:
        allowed = ", ".join(sorted(t.value for t in CALLER_TYPES))
        raise InvalidArgument(
            f"{field} must be one of {allowed}; the others follow the memories' lifecycle "
            "and documents (undo a deprecation or consolidation to drop theirs)"
        )
    assert type_ is not None
    return type_


class RelationEditing:
    """``relate`` and ``invalidate_relation``, for a caller who writes in the space."""

    def __init__(self, store: MemoryStore) -> None:
        self._store = store

    def relate(
        self,
        access: Access,
        *,
        source_id: str,
        target_id: str,
        type: str,
        note: str = "",
        space: str | None = None,
    ) -> dict[str, Any]:
        """``source -[type]-> target`` between two memories the caller reads in a space
        it writes in; the relation as stored."""
        space_key = access.space(space, Level.WRITE)
        type_ = _caller_type(type, "type")
        why = limits.check_string(note, "note").strip()
        if len(why) > MAX_NOTE_CHARS:
            raise InvalidArgument(f"note is {len(why)} characters; the limit is {MAX_NOTE_CHARS}")
        wanted = limits.check_id(target_id.strip(), "target id")
        if wanted == source_id:
            raise InvalidArgument("a memory cannot be related to itself: give another id")
        source, target = all_visible(
            self._store, access, [limits.check_id(source_id, "source_id"), wanted], space_key
        )
        relation = between(source, target, type_, Attribution(access.person, access.principal), why)
        self._store.relate([relation])
        return {"relation": relation.to_wire()}

    def invalidate_relation(
        self,
        access: Access,
        *,
        source_id: str,
        target_id: str,
        type: str,
        space: str | None = None,
    ) -> dict[str, Any]:
        """Mark the valid relation ``source -[type]-> target`` invalid now (kept, with who
        did it); ``not_found`` when there is no such valid relation."""
        space_key = access.space(space, Level.WRITE)
        type_ = _caller_type(type, "type")
        source = visible(self._store, access, limits.check_id(source_id, "source_id"), space_key)
        target = limits.check_id(target_id, "target_id")
        wanted = relation_id(space_key, source.id, type_, target)
        done = self._store.invalidate_relations(
            [wanted], utc_now(), Attribution(access.person, access.principal), space=space_key
        )
        if not done:
            raise NotFound(
                f"no valid {type_.value} relation from {source.id} to {target}: it was "
                "invalidated already or never made; reload the memory's page"
            )
        return {"invalidated": wanted}
