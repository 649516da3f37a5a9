"""Undoing the owner's lifecycle changes for a while after they were made.

A deprecation, a promotion, a correction or a move to another topic returns an
``Undo``: for each record it touched, how to put it back and the version of the
record the change left. ``Undoing.undo`` applies every step in one store
transaction, and only while

- the undo is recent (``UNDO_WINDOW``, 15 minutes after the change), and
- no step's record changed since (its ``version``, a digest of the whole record,
  is still the one the change left): an agent's later deprecation, another
  correction, a move or a consolidation is never silently reverted; nothing is
  undone then and the error names the record.

What each step does:

- ``reinstate``: a deprecated record goes back to the state it had (active, draft,
  merged), with no replacement and its validity as it was (a ``changed``
  deprecation had closed it);
- ``demote``: a promoted record is a draft again;
- ``retire``: a correction the undo takes back is deprecated as ``corrected``,
  superseded by the original it had replaced (reinstated by the same undo, so the
  supersession graph has no loop and keeps both records for history);
- ``move``: a record goes back to the topic it was in.

The console keeps an ``Undo`` (``to_data``) for as long as it may be used and shows
its button on the page that confirms the change.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Any, Final

from metacortex.access.model import Level
from metacortex.access.rules import Access
from metacortex.domain import limits
from metacortex.domain.records import (
    DEFAULT_SPACE,
    Attribution,
    BranchState,
    Initiator,
    Memory,
    SupersessionReason,
    to_wire_time,
    utc_now,
)
from metacortex.domain.relations import RelationType, relation_id
from metacortex.errors import Conflict, FailedPrecondition, Forbidden, InvalidArgument
from metacortex.storage.base import MemoryStore, StoreTransaction
from metacortex.usecases.relations import between

UNDO_WINDOW: Final = timedelta(minutes=15)
ACTIONS: Final = ("deprecate", "promote", "correct", "move")


class StepKind(StrEnum):
    REINSTATE = "reinstate"
    DEMOTE = "demote"
    RETIRE = "retire"
    MOVE = "move"


@dataclass(frozen=True, slots=True)
class Step:
    """How to put one record back; ``version``: ``version_of`` the record the change left."""

    kind: StepKind
    id: str
    version: str
    state: BranchState | None = None  # reinstate: the state before the deprecation
    valid_until: datetime | None = None  # reinstate: the validity end before it
    initiator: Initiator | None = None  # reinstate: the initiator before it
    topic: str | None = None  # move: the topic before
    replaced_by: str | None = None  # retire: the original the correction gives way to

    def to_data(self) -> dict[str, Any]:
        return {
            "kind": self.kind.value,
            "id": self.id,
            "version": self.version,
            "state": self.state.value if self.state else None,
            "valid_until": to_wire_time(self.valid_until) if self.valid_until else None,
            "initiator": self.initiator.value if self.initiator else None,
            "topic": self.topic,
            "replaced_by": self.replaced_by,
        }

    @classmethod
    def from_data(cls, data: Mapping[str, Any]) -> Step:
        def instant(name: str) -> datetime | None:
            return limits.parse_instant(data.get(name), name)

        return cls(
            kind=StepKind(data["kind"]),
            id=limits.check_id(str(data["id"])),
            version=str(data["version"]),
            state=BranchState(data["state"]) if data.get("state") else None,
            valid_until=instant("valid_until"),
            initiator=Initiator(data["initiator"]) if data.get("initiator") else None,
            topic=data.get("topic"),
            replaced_by=data.get("replaced_by"),
        )


@dataclass(frozen=True, slots=True)
class Undo:
    """What one change (or several of one kind, from a selection) did, to take it back."""

    action: str
    steps: tuple[Step, ...]
    made_at: datetime
    space: str = DEFAULT_SPACE

    @property
    def ids(self) -> list[str]:
        """The records the change was made to (a correction's original, not the correction)."""
        return [step.id for step in self.steps if step.kind is not StepKind.RETIRE]

    @property
    def until(self) -> datetime:
        return self.made_at + UNDO_WINDOW

    def to_data(self) -> dict[str, Any]:
        return {
            "action": self.action,
            "space": self.space,
            "made_at": to_wire_time(self.made_at),
            "steps": [step.to_data() for step in self.steps],
        }

    @classmethod
    def from_data(cls, data: Mapping[str, Any]) -> Undo:
        made_at = limits.parse_instant(data.get("made_at"), "made_at")
        action = data.get("action")
        if made_at is None or action not in ACTIONS:
            raise InvalidArgument("this undo is not one the console made")
        steps = tuple(Step.from_data(step) for step in data.get("steps") or ())
        space = data.get("space")
        return cls(str(action), steps, made_at, space if isinstance(space, str) else DEFAULT_SPACE)

    @classmethod
    def combine(cls, undos: Iterable[Undo]) -> Undo | None:
        """One undo for the changes made to a selection (the earliest time counts)."""
        kept = list(undos)
        if not kept:
            return None
        steps = tuple(step for undo in kept for step in undo.steps)
        return replace(kept[0], steps=steps, made_at=min(undo.made_at for undo in kept))


class Undoing:
    """``undo``: every step of an ``Undo`` in one transaction, or none of them."""

    def __init__(self, store: MemoryStore) -> None:
        self._store = store

    def undo(self, access: Access, undo: Undo) -> dict[str, Any]:
        space_key = access.space(undo.space, Level.WRITE)
        if not access.may_write_lifecycle:
            raise Forbidden("this endpoint may not change a memory's branch_state")
        now = utc_now()
        if now > undo.until:
            raise FailedPrecondition(
                f"the {undo.action} can be undone for {int(UNDO_WINDOW.total_seconds() // 60)} "
                f"minutes and was made at {to_wire_time(undo.made_at)}; change the memory "
                "from its page instead"
            )
        reinstated = {step.id for step in undo.steps if step.kind is StepKind.REINSTATE}
        for step in undo.steps:
            if step.kind is StepKind.RETIRE and step.replaced_by not in reinstated:
                raise InvalidArgument("a correction is retired only with its original reinstated")

        def apply(txn: StoreTransaction) -> dict[str, Any]:
            records = txn.get_many([step.id for step in undo.steps])
            for step, record in zip(undo.steps, records, strict=True):
                if record is None or version_of(record) != step.version:
                    raise Conflict(
                        f"memory {step.id!r} changed after the {undo.action} (or is gone), so "
                        "nothing was undone; open it to change it by hand"
                    )
            by = Attribution(access.person, access.principal)
            present = {record.id: record for record in records if record is not None}
            for step, record in zip(undo.steps, records, strict=True):
                assert record is not None
                txn.put(_put_back(step, record, now))
                if step.kind is StepKind.REINSTATE and record.superseded_by is not None:
                    # What the deprecation asserted is no longer true.
                    replaced = relation_id(
                        space_key, record.superseded_by, RelationType.SUPERSEDES, record.id
                    )
                    txn.invalidate_relation(replaced, now, by)
                if step.kind is StepKind.RETIRE and step.replaced_by in present:
                    original = present[step.replaced_by]
                    txn.relate(between(original, record, RelationType.SUPERSEDES, by, "undone"))
            return {"undone": undo.action, "ids": undo.ids}

        return self._store.transaction(apply, space=space_key)


def version_of(memory: Memory | Mapping[str, Any]) -> str:
    """A digest of everything a record holds (its wire form, authors by id only, since
    names are the caller's view): any later change, even in the same millisecond, gives
    another one."""
    item = memory.to_item() if isinstance(memory, Memory) else memory
    item = {key: value for key, value in item.items() if key != "related"}  # not the record
    meta = item.get("metadata")
    if isinstance(meta, Mapping):
        item = {
            **item,
            "metadata": {
                key: (
                    {k: v for k, v in value.items() if k != "name"}
                    if key in ("created_by", "changed_by") and isinstance(value, Mapping)
                    else value
                )
                for key, value in meta.items()
            },
        }
    encoded = json.dumps(item, sort_keys=True, ensure_ascii=False).encode()
    return hashlib.sha256(encoded).hexdigest()[:32]


def _put_back(step: Step, record: Memory, now: datetime) -> Memory:
    if step.kind is StepKind.REINSTATE:
        return record.with_changes(
            branch_state=step.state or BranchState.ACTIVE,
            superseded_by=None,
            supersession_reason=None,
            valid_until=step.valid_until,
            initiator=step.initiator,
            updated_at=now,
        )
    if step.kind is StepKind.DEMOTE:
        return record.with_changes(branch_state=BranchState.WIP, updated_at=now)
    if step.kind is StepKind.RETIRE:
        return record.with_changes(
            branch_state=BranchState.DEPRECATED,
            superseded_by=step.replaced_by,
            supersession_reason=SupersessionReason.CORRECTED,
            initiator=Initiator.USER,
            updated_at=now,
        )
    return record.with_changes(topic=limits.check_topic(step.topic or ""), updated_at=now)
