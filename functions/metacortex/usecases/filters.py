"""Read filters as callers give them and as results report them back."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from metacortex.access.rules import Access
from metacortex.domain.records import BranchState, to_wire_time
from metacortex.errors import Forbidden
from metacortex.storage.base import MemoryFilter
from metacortex.usecases.arguments import parse_enum


def read_states(
    access: Access, filter_state: str | Sequence[str] | None
) -> tuple[BranchState, ...]:
    """The states a read asks for (the profile's default when none), each one readable."""
    if filter_state is None or filter_state == [] or filter_state == ():
        requested: list[BranchState] = [access.default_state]
    else:
        raw = [filter_state] if isinstance(filter_state, str) else list(filter_state)
        requested = []
        for value in raw:
            state = parse_enum(BranchState, value, "filter_state")
            assert state is not None
            if state not in requested:
                requested.append(state)
    for state in requested:
        if state not in access.readable_states:
            raise Forbidden(f"this endpoint may not read memories in state {state.value!r}")
    return tuple(requested)


def applied_filters(where: MemoryFilter) -> dict[str, Any]:
    applied: dict[str, Any] = {
        "space": where.space,
        "topic": where.topic,
        "states": [state.value for state in where.states],
        "origin": where.origin.value if where.origin else None,
    }
    if where.valid_at is not None:
        applied["valid_at"] = to_wire_time(where.valid_at)
    if where.created_after is not None:
        applied["created_after"] = to_wire_time(where.created_after)
    if where.created_before is not None:
        applied["created_before"] = to_wire_time(where.created_before)
    # When the memories happened (occurred_at): the search and list arguments' names.
    if where.occurred_after is not None:
        applied["after"] = to_wire_time(where.occurred_after)
    if where.occurred_before is not None:
        applied["before"] = to_wire_time(where.occurred_before)
    return applied


def reported(applied: dict[str, Any], where: MemoryFilter, count: int) -> dict[str, Any]:
    """applied_filters as returned: the original MetaCortex's keys first (``filter_topic``;
    ``filter_state`` a string when one state applies, as the original returns it), then ours.
    """
    states = [state.value for state in where.states]
    original = {
        "filter_topic": where.topic,
        "filter_state": states[0] if len(states) == 1 else states,
    }
    return original | applied | {"limit": count}
