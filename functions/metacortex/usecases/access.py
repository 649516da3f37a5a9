"""What a caller may see and write, and the lookups that respect it."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TypeVar

from metacortex.domain.records import (
    ALL_STATES,
    BranchState,
    Initiator,
    Memory,
    Origin,
    SupersessionReason,
)
from metacortex.errors import InvalidArgument, NotFound
from metacortex.storage.base import MemoryStore

E = TypeVar("E", BranchState, Origin, SupersessionReason, Initiator)


@dataclass(frozen=True, slots=True)
class Access:
    """What the calling profile may see and write; built by the server from a profile."""

    readable_states: frozenset[BranchState]
    default_state: BranchState
    may_write_lifecycle: bool
    # Who writes (the profile id): scopes the dedupe of writes the caller cannot read.
    principal: str = "default"
    # Erasure is the owner's: the console, the CLI, and the admin endpoint only when
    # the operator offers its erase tool (METACORTEX_ADMIN_ERASE_TOOL).
    may_erase: bool = False

    @classmethod
    def admin(cls, default_state: BranchState = BranchState.ACTIVE) -> Access:
        """The owner's access (console, CLI): every state, lifecycle changes, erasure."""
        return cls(frozenset(ALL_STATES), default_state, may_write_lifecycle=True, may_erase=True)


def parse_enum(enum_type: type[E], value: str | None, field_name: str) -> E | None:
    if value is None:
        return None
    try:
        return enum_type(value)
    except ValueError:
        allowed = ", ".join(member.value for member in enum_type)
        raise InvalidArgument(f"{field_name} must be one of {allowed}; got {value!r}") from None


def visible(store: MemoryStore, access: Access, memory_id: str) -> Memory:
    """The record, when it exists in a state the caller may read; else ``NotFound``
    (saying so when the record was erased)."""
    memory = store.get(memory_id)
    if memory is None or memory.branch_state not in access.readable_states:
        raise not_found(store, access, memory_id, memory)
    return memory


def all_visible(store: MemoryStore, access: Access, memory_ids: Sequence[str]) -> list[Memory]:
    """``visible`` of each id, read in one round trip."""
    found = store.get_many(memory_ids)
    for memory_id, memory in zip(memory_ids, found, strict=True):
        if memory is None or memory.branch_state not in access.readable_states:
            raise not_found(store, access, memory_id, memory)
    return [memory for memory in found if memory is not None]


def not_found(
    store: MemoryStore, access: Access, memory_id: str, memory: Memory | None
) -> NotFound:
    """The error for an id the caller cannot see. An erased record's says so (one more
    read, only on this path), but only to a caller that could have read the record (its
    state then, or every state for a tombstone that does not know it); to any other
    caller an erased record, like one in a state it may not read, is exactly an id that
    never existed."""
    if memory is None:
        tombstone = store.tombstones([memory_id]).get(memory_id)
        if tombstone is not None and (
            tombstone.branch_state in access.readable_states
            if tombstone.branch_state is not None
            else access.readable_states.issuperset(ALL_STATES)
        ):
            return NotFound(f"{tombstone.describe()}; its content is gone")
    return NotFound(f"no memory with id {memory_id!r}")
