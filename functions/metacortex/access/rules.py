"""What a caller may see and write (``Access``), and the store lookups that respect it.

``Access`` is built once per caller where the caller is known (``access.profiles``:
``Profile.access`` for a credential; ``Access.admin`` for the owner's console and
commands) and handed to every use case, which asks it instead of deciding itself:
which space a call acts in and at what level (``space``), which records it may
read (``sees``), whether retiring a record is someone else's to decide
(``contested``), whether it may erase.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Final

from metacortex.access.model import FRESH, OWNER_ID, Directory, Level, check_space_key
from metacortex.domain.records import ALL_STATES, DEFAULT_SPACE, BranchState, Memory
from metacortex.errors import Forbidden, NotFound
from metacortex.storage.base import MemoryStore

_DEFAULT_ONLY: Final[Mapping[str, Level]] = MappingProxyType({DEFAULT_SPACE: Level.WRITE})
_FRESH_NAMES: Final[Mapping[str, str]] = MappingProxyType(FRESH.names())


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
    # Spaces: the effective level in each space that exists (the lowest of the person's
    # role, membership and the credential's grant, computed where the access is built:
    # ``access.profiles``); a space absent here does not exist for this caller.
    levels: Mapping[str, Level] = field(default_factory=lambda: _DEFAULT_ONLY)
    default_space: str = DEFAULT_SPACE
    # Who acts: the person's id and the credential (client id, ``oauth-<grant>``,
    # ``default`` for the admin token, ``console``, ``stdio``), recorded on what it writes.
    person: str = OWNER_ID
    # person id -> display name, to name authors in results (no store read).
    names: Mapping[str, str] = field(default_factory=lambda: _FRESH_NAMES)
    # The spaces and people as the access was built (names, descriptions, roles).
    directory: Directory = FRESH

    @classmethod
    def admin(
        cls,
        default_state: BranchState = BranchState.ACTIVE,
        spaces: Iterable[str] = (DEFAULT_SPACE,),
        *,
        principal: str = "default",
        directory: Directory | None = None,
    ) -> Access:
        """The owner's access (console, CLI): every state, lifecycle changes, erasure, and
        write in every space of ``directory`` (else only in ``spaces``)."""
        if directory is not None:
            spaces = directory.spaces
        return cls(
            frozenset(ALL_STATES),
            default_state,
            may_write_lifecycle=True,
            principal=principal,
            may_erase=True,
            levels=MappingProxyType({key: Level.WRITE for key in spaces}),
            names=MappingProxyType(directory.names()) if directory is not None else _FRESH_NAMES,
            directory=directory or FRESH,
        )

    @property
    def is_owner(self) -> bool:
        return self.person == OWNER_ID

    def space(self, requested: str | None = None, need: Level = Level.READ) -> str:
        """The one space a call acts in: ``requested``, else the default. A space this
        caller holds no grant on reads exactly as one that does not exist."""
        key = self.default_space if requested is None else check_space_key(requested)
        level = self.levels.get(key)
        if level is None:
            raise NotFound(no_space_message(key))
        if level < need:
            raise Forbidden(
                f"this credential may only read the space {key!r}, not write to it; "
                "ask the owner for write access"
            )
        return key

    def readable_spaces(self) -> list[str]:
        return sorted(self.levels)

    def sees(self, memory: Memory) -> bool:
        """Whether the caller may read ``memory`` (of a space it reads): a record in a
        state it reads, or a draft this very credential saved, which a credential that
        may save a draft reads back whatever states it reads."""
        if memory.branch_state in self.readable_states:
            return True
        author = memory.created_by
        return (
            memory.branch_state is BranchState.WIP
            and author is not None
            and (author.person, author.via) == (self.person, self.principal)
        )

    def contested(self, memory: Memory) -> bool:
        """Whether retiring ``memory`` would retire someone else's memory behind their
        back: it names an author who is not the caller, and the caller is not the owner.
        A record from before attribution names no one, so anyone with the right retires
        it as before."""
        author = memory.created_by
        return not self.is_owner and author is not None and author.person != self.person


def visible(store: MemoryStore, access: Access, memory_id: str, space: str) -> Memory:
    """The record of ``space``, when the caller may read it (``Access.sees``); else
    ``NotFound`` (saying so when the record was erased). ``space`` comes from
    ``Access.space``: a record of any other space is not found."""
    memory = store.get(memory_id, space=space)
    if memory is None or not access.sees(memory):
        raise not_found(store, access, memory_id, memory, space)
    return memory


def all_visible(
    store: MemoryStore, access: Access, memory_ids: Sequence[str], space: str
) -> list[Memory]:
    """``visible`` of each id, read in one round trip."""
    found = store.get_many(memory_ids, space=space)
    for memory_id, memory in zip(memory_ids, found, strict=True):
        if memory is None or not access.sees(memory):
            raise not_found(store, access, memory_id, memory, space)
    return [memory for memory in found if memory is not None]


def not_found(
    store: MemoryStore, access: Access, memory_id: str, memory: Memory | None, space: str
) -> NotFound:
    """The error for an id the caller cannot see. An erased record's says so (one more
    read, only on this path), but only to a caller that could have read the record (its
    state then, or every state for a tombstone that does not know it) in this space; to
    any other caller an erased record, like one in a state it may not read, is exactly an
    id that never existed."""
    if memory is None:
        tombstone = store.tombstones([memory_id], space=space).get(memory_id)
        if tombstone is not None and (
            tombstone.branch_state in access.readable_states
            if tombstone.branch_state is not None
            else access.readable_states.issuperset(ALL_STATES)
        ):
            return NotFound(f"{tombstone.describe()}; its content is gone")
    return NotFound(f"no memory with id {memory_id!r}")


def no_space_message(key: str) -> str:
    """One message for a space that does not exist and one the caller was not granted."""
    return f"no space {key!r} is available to this credential; list_spaces shows the ones that are"
