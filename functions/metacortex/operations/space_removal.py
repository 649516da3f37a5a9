"""Remove a space: only empty (or with its memories and documents erased for good), and taken out of
every person's membership and every credential's grants first, so that nothing
names it afterwards and a space made later with the same key inherits nothing.

The owner's API behind ``metacortex space remove`` (and the console)::

    removal = SpaceRemoval(store, settings)
    plan = removal.plan("work")     # what it holds and who holds it; nothing changes
    removal.remove("work", erase_count=plan.memories, erase_documents=plan.documents,
                   erased_by="owner (...)")

Refused, changing nothing, while a stored client or an OAuth grant holds only that
space (it would hold nothing: the refusal names the command that grants it another
or removes it) and, without ``erase_count``, while the space holds memories or
documents (a document without text has no passage, and counts all the same). With
``erase_count`` and ``erase_documents`` (the counts the owner confirmed) its documents
are erased whole (every version: record, text, bytes, passages; as
``usecases/document_erase`` does, so an erase cut short is finished by running the
command again) and its memories for good, in batches, as ``metacortex erase`` does (a
tombstone stays for each, in that space); different counts now erase nothing. A space
made later with the same key starts empty. Clients defined in ``MCP_CLIENT_PROFILES_JSON``
cannot be changed here: they are named in the result, to take the space out of
that variable.

If a memory is saved to the space while it is being removed (a credential's grant
takes up to ``METACORTEX_CLIENT_REFRESH_SECONDS`` to end, the owner's never), the
space is made again, without members or grants, and the removal is refused: run it
again. Run again after any failure half-way, it finishes the job.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final

from metacortex.access.model import DEFAULT_SPACE, Person, Space
from metacortex.access.registry import Registry
from metacortex.auth.tokens import GRANT
from metacortex.clients.manage import ClientManager, ClientView, fallback_space
from metacortex.config import Settings
from metacortex.domain.records import ALL_STATES, utc_now
from metacortex.errors import Conflict, FailedPrecondition
from metacortex.operations.walk import all_memories
from metacortex.storage.base import MAX_ERASE_BATCH, MemoryFilter, MemoryStore
from metacortex.usecases import document_erase

_PAGE: Final = 500


@dataclass(frozen=True, slots=True)
class RemovalPlan:
    space: Space
    memories: int
    # Document versions (every state): they go with the space, whole.
    documents: int
    members: tuple[Person, ...]
    # Client endpoints granted the space (the environment's too) and OAuth grant ids.
    clients: tuple[ClientView, ...]
    grants: tuple[str, ...]
    # What must be done before it can go, one sentence each (empty: nothing).
    blockers: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class RemovedSpace:
    space: Space
    erased: int
    erased_documents: int
    # The people who were members, and the stored clients changed (with their levels now).
    members: tuple[Person, ...]
    clients: tuple[ClientView, ...]
    grants: tuple[str, ...]
    # Clients of MCP_CLIENT_PROFILES_JSON that still name it.
    environment: tuple[str, ...]


class SpaceRemoval:
    def __init__(self, store: MemoryStore, settings: Settings) -> None:
        self._store = store
        self._registry = Registry(store)
        self._clients = ClientManager(store, settings)

    def plan(self, key: str) -> RemovalPlan:
        """What removing the space would take with it; nothing changes."""
        space = self._registry.space(key)
        if key == DEFAULT_SPACE:
            raise FailedPrecondition(
                "the default space cannot be removed: it holds what calls without a space "
                "write, and everything saved before spaces existed"
            )
        clients = tuple(self._clients.holding(key))
        grants = self._grants_holding(key)
        blockers = [
            f"client {view.id!r} holds only the space {key!r}: grant it another "
            f"(`metacortex client grant {view.id} KEY --default`) or remove it "
            f"(`metacortex client remove {view.id}`)"
            for view in clients
            if view.source == "store" and set(view.grants) == {key}
        ]
        blockers += [
            f"the OAuth grant {grant_id} holds only the space {key!r}: revoke it "
            f"(`metacortex oauth grants revoke {grant_id}`)"
            for grant_id, data in grants.items()
            if set(data["spaces"]) == {key}
        ]
        return RemovalPlan(
            space=space,
            memories=self._count(key),
            documents=self._store.count_documents(space=key),
            members=tuple(self._registry.members(key)),
            clients=clients,
            grants=tuple(grants),
            blockers=tuple(blockers),
        )

    def remove(
        self,
        key: str,
        *,
        erased_by: str,
        erase_count: int | None = None,
        erase_documents: int = 0,
        progress: Callable[[int], None] | None = None,
    ) -> RemovedSpace:
        """Remove the space (see the module's note); ``erase_count``: the number of
        memories the owner confirmed erasing with it, None to refuse if it holds any
        memory or document; ``erase_documents``: the document versions confirmed."""
        plan = self.plan(key)
        refused = refusal(plan, erase=erase_count is not None)
        if refused is not None:
            raise refused
        erased, documents = (0, 0)
        if erase_count is not None and (erase_count or erase_documents or plan.documents):
            erased, documents = self._erase(key, erase_count, erase_documents, erased_by, progress)
        clients = self._clients.drop_space(key)
        grants = self._drop_from_grants(key)
        self._registry.remove_space(key)  # memberships, then the record
        arrived = self._count(key) + self._store.count_documents(space=key)
        if arrived:
            self._registry.add_space(key, plan.space.name, plan.space.description)
            raise Conflict(
                f"{_things(arrived, 'memory or document', 'memories or documents')} saved "
                f"to the space {key!r} while it was being removed, so it was kept (now "
                "without members or grants); run the command again"
            )
        return RemovedSpace(
            space=plan.space,
            erased=erased,
            erased_documents=documents,
            members=plan.members,
            clients=tuple(clients),
            grants=grants,
            environment=tuple(v.id for v in plan.clients if v.source == "environment"),
        )

    # ------------------------------------------------------------------ memories
    def _count(self, key: str) -> int:
        return self._store.count_memories(MemoryFilter(states=ALL_STATES, space=key))

    def _erase(
        self,
        key: str,
        expected: int,
        expected_documents: int,
        erased_by: str,
        progress: Callable[[int], None] | None,
    ) -> tuple[int, int]:
        """Erase every document (whole) and memory of the space: (memories, versions)."""
        ids = [memory.id for page in all_memories(self._store, _PAGE, key) for memory in page]
        documents = self._store.document_versions(space=key)
        if (len(ids), len(documents)) != (expected, expected_documents):
            confirmed = (
                _holding(expected, expected_documents)
                if documents or expected_documents
                else str(expected)
            )
            raise Conflict(
                f"the space {key!r} now holds {_holding(len(ids), len(documents))}, not the "
                f"{confirmed} you confirmed; nothing was erased. Review it and confirm again."
            )
        erased_at = utc_now()
        # Documents first (marked, their passages erased, then their records, text and
        # bytes), so that a run cut short leaves them for the next run to find.
        passages = document_erase.erase_versions(
            self._store, documents, erased_by, erased_at, key, progress
        )
        erased = len(passages)
        rest = [memory_id for memory_id in ids if memory_id not in set(passages)]
        for start in range(0, len(rest), MAX_ERASE_BATCH):
            batch = rest[start : start + MAX_ERASE_BATCH]
            erased += len(self._store.erase(batch, erased_by, erased_at, space=key))
            if progress is not None:
                progress(erased)
        return erased, len(documents)

    # ------------------------------------------------------------ OAuth grants
    def _grants_holding(self, key: str) -> dict[str, dict[str, Any]]:
        """The OAuth grants chosen the space on the consent page, by id."""
        return {
            grant_id: data
            for grant_id, data in self._store.auth_list(GRANT)
            if isinstance(data.get("spaces"), dict) and key in data["spaces"]
        }

    def _drop_from_grants(self, key: str) -> tuple[str, ...]:
        changed: list[str] = []
        for grant_id, data in self._grants_holding(key).items():
            rest = {k: v for k, v in data["spaces"].items() if k != key}
            if not rest:
                continue  # refused by the plan; revoked meanwhile or changed: leave it
            default = data.get("default_space")
            if default == key or default not in rest:
                default = fallback_space(rest)
            # Atomic: a grant revoked meanwhile stays revoked; its expiry is kept.
            if self._store.auth_update(GRANT, grant_id, {"spaces": rest, "default_space": default}):
                changed.append(grant_id)
        return tuple(changed)


def refusal(plan: RemovalPlan, *, erase: bool) -> FailedPrecondition | None:
    """Why the space of ``plan`` cannot be removed (with its memories erased or not), or
    None: asked before the owner is asked to confirm anything."""
    key = plan.space.key
    if plan.blockers:
        return FailedPrecondition(f"the space {key!r} was not removed: " + "; ".join(plan.blockers))
    if (plan.memories or plan.documents) and not erase:
        return FailedPrecondition(
            f"the space {key!r} holds {holdings(plan)}, and only an empty space is "
            f"removed; to erase them for good with it, run `metacortex space remove {key} "
            "--erase`"
        )
    return None


def holdings(plan: RemovalPlan) -> str:
    """What the space holds, in words: "3 memories", "3 memories and 1 document"."""
    return _holding(plan.memories, plan.documents)


def _holding(memories: int, documents: int) -> str:
    if not documents:
        return _memories(memories)
    if not memories:
        return _documents(documents)
    return f"{_memories(memories)} and {_documents(documents)}"


def _things(count: int, one: str, many: str) -> str:
    return f"{count} {one if count == 1 else many}"


def _memories(count: int) -> str:
    return _things(count, "memory", "memories")


def _documents(count: int) -> str:
    return _things(count, "document", "documents")
