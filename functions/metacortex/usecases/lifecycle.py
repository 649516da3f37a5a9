"""A record's lifecycle: deprecate (with supersession), promote a draft, correct, move to
another topic; the owner's changes come with how to undo them (``usecases/undo.py``)."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from metacortex.access.model import Level
from metacortex.access.rules import Access, visible
from metacortex.domain import limits
from metacortex.domain.fingerprint import normalize_content
from metacortex.domain.records import (
    Attribution,
    BranchState,
    Initiator,
    Memory,
    Origin,
    SupersessionReason,
    utc_now,
)
from metacortex.domain.relations import RelationType
from metacortex.errors import Conflict, FailedPrecondition, Forbidden, InvalidArgument, NotFound
from metacortex.storage.base import MemoryStore, StoreTransaction
from metacortex.usecases.arguments import parse_enum
from metacortex.usecases.relations import between
from metacortex.usecases.save import Saving
from metacortex.usecases.undo import Step, StepKind, Undo, version_of

_MAX_CHAIN_HOPS = 1_000


class Lifecycle:
    """``deprecate_context``; the console's promote and correct (``correct_memory``)."""

    def __init__(self, store: MemoryStore, saving: Saving, dedupe_window: timedelta) -> None:
        self._store = store
        self._saving = saving
        self._window = dedupe_window

    def deprecate(
        self,
        access: Access,
        *,
        id: str,
        superseding_id: str | None = None,
        supersession_reason: str | None = None,
        initiator: str | None = None,
        space: str | None = None,
    ) -> dict[str, Any]:
        """``deprecate_context``."""
        return self.deprecate_undoable(
            access,
            id=id,
            superseding_id=superseding_id,
            supersession_reason=supersession_reason,
            initiator=initiator,
            space=space,
        )[0]

    def deprecate_undoable(
        self,
        access: Access,
        *,
        id: str,
        superseding_id: str | None = None,
        supersession_reason: str | None = None,
        initiator: str | None = None,
        space: str | None = None,
    ) -> tuple[dict[str, Any], Undo | None]:
        """The deprecation and how to undo it (None: it changed nothing). Someone else's
        memory is not retired unless the caller is the owner (``Access.contested``)."""
        space_key = access.space(space, Level.WRITE)
        target_id = limits.check_id(id)
        replacement_id = (
            limits.check_id(superseding_id, "superseding_id") if superseding_id else None
        )
        reason = parse_enum(SupersessionReason, supersession_reason, "supersession_reason")
        reason = reason or SupersessionReason.CHANGED
        who = parse_enum(Initiator, initiator, "initiator")
        if replacement_id == target_id:
            raise InvalidArgument(self._itself())

        def apply(txn: StoreTransaction) -> tuple[dict[str, Any], Undo | None]:
            # Both records in one read; the chain beyond the replacement only when it has one.
            target, replacement = txn.get_many([target_id, replacement_id or target_id])
            if target is None or target.branch_state not in access.readable_states:
                raise NotFound(f"no memory with id {target_id!r}")
            if replacement_id is not None:
                if replacement is None or replacement.branch_state not in access.readable_states:
                    raise NotFound(f"superseding memory {replacement_id!r} does not exist")
                _refuse_cycle(txn, target_id, replacement)
            if target.branch_state is BranchState.DEPRECATED:
                if (target.superseded_by, target.supersession_reason) == (replacement_id, reason):
                    return _deprecation_result(target, BranchState.DEPRECATED), None
                raise Conflict(
                    f"memory {target_id!r} is already deprecated "
                    f"(superseded_by={target.superseded_by!r}, reason="
                    f"{target.supersession_reason.value if target.supersession_reason else None!r})"
                    "; deprecating it differently is not allowed"
                )
            by = Attribution(access.person, access.principal)
            if access.contested(target):
                # The relation is recorded (its author sees the proposal); the memory stays.
                if replacement is not None and replacement_id is not None:
                    txn.relate(
                        between(
                            replacement,
                            target,
                            RelationType.SUPERSEDES,
                            by,
                            "proposed; the author or the owner decides",
                        )
                    )
                return _contested_result(target, replacement_id), None
            now = utc_now()
            valid_until = target.valid_until
            if reason is SupersessionReason.CHANGED and (valid_until is None or valid_until > now):
                valid_until = now
                if target.valid_from is not None and target.valid_from > now:
                    valid_until = target.valid_from
            updated = target.with_changes(
                branch_state=BranchState.DEPRECATED,
                superseded_by=replacement_id,
                supersession_reason=reason,
                initiator=who or target.initiator,
                valid_until=valid_until,
                updated_at=now,
                changed_by=Attribution(access.person, access.principal),
            )
            txn.put(updated)
            if replacement is not None and replacement_id is not None:
                txn.relate(between(replacement, updated, RelationType.SUPERSEDES, by, reason.value))
            step = Step(
                StepKind.REINSTATE,
                target.id,
                version_of(updated),
                state=target.branch_state,
                valid_until=target.valid_until,
                initiator=target.initiator,
            )
            undo = Undo("deprecate", (step,), now, space_key)
            return _deprecation_result(updated, target.branch_state), undo

        return self._store.transaction(apply, space=space_key)

    def promote(self, access: Access, *, id: str, space: str | None = None) -> dict[str, Any]:
        """A draft (``wip``) becomes ``active``; promoting an active record changes nothing."""
        return self.promote_undoable(access, id=id, space=space)[0]

    def promote_undoable(
        self, access: Access, *, id: str, space: str | None = None
    ) -> tuple[dict[str, Any], Undo | None]:
        """The promotion and how to undo it (None: it changed nothing)."""
        space_key = access.space(space, Level.WRITE)
        target_id = limits.check_id(id)
        if not access.may_write_lifecycle:
            raise Forbidden("this endpoint may not change a memory's branch_state")

        def apply(txn: StoreTransaction) -> tuple[dict[str, Any], Undo | None]:
            target = txn.get(target_id)
            if target is None or target.branch_state not in access.readable_states:
                raise NotFound(f"no memory with id {target_id!r}")
            previous = target.branch_state
            undo = None
            if previous is BranchState.WIP:
                now = utc_now()
                target = target.with_changes(
                    branch_state=BranchState.ACTIVE,
                    updated_at=now,
                    changed_by=Attribution(access.person, access.principal),
                )
                txn.put(target)
                step = Step(StepKind.DEMOTE, target.id, version_of(target))
                undo = Undo("promote", (step,), now, space_key)
            elif previous is not BranchState.ACTIVE:
                raise FailedPrecondition(
                    f"memory {target_id!r} is {previous.value!r}; only a draft (wip) is promoted"
                )
            result = {
                "item": {"id": target.id, "branch_state": target.branch_state.value},
                "previous_state": previous.value,
            }
            return result, undo

        return self._store.transaction(apply, space=space_key)

    def move(
        self, access: Access, *, id: str, topic: str, space: str | None = None
    ) -> tuple[dict[str, Any], Undo | None]:
        """The record, same id and history, in another topic (the console's "move to
        topic"); the same topic changes nothing (no undo)."""
        space_key = access.space(space, Level.WRITE)
        target_id = limits.check_id(id)
        name = limits.check_topic(topic)
        if not access.may_write_lifecycle:
            raise Forbidden("this endpoint may not move a memory to another topic")

        def apply(txn: StoreTransaction) -> tuple[dict[str, Any], Undo | None]:
            target = txn.get(target_id)
            if target is None or target.branch_state not in access.readable_states:
                raise NotFound(f"no memory with id {target_id!r}")
            result = {"item": {"id": target.id, "topic": name}, "previous_topic": target.topic}
            if target.topic == name:
                return result, None
            now = utc_now()
            moved = target.with_changes(topic=name, updated_at=now)
            txn.put(moved)
            step = Step(StepKind.MOVE, target.id, version_of(moved), topic=target.topic)
            return result, Undo("move", (step,), now, space_key)

        return self._store.transaction(apply, space=space_key)

    def correct(
        self,
        access: Access,
        *,
        id: str,
        corrected_content: str,
        topic: str | None = None,
        valid_from: str | datetime | None = None,
        valid_until: str | datetime | None = None,
        space: str | None = None,
    ) -> dict[str, Any]:
        """The ``correct_memory`` flow: save the right memory (user-asserted), then deprecate
        the wrong one with reason ``corrected`` and the new one as its replacement
        (unless someone else wrote it: then it stays, and ``contested_ids`` says so)."""
        return self.correct_undoable(
            access,
            id=id,
            corrected_content=corrected_content,
            topic=topic,
            valid_from=valid_from,
            valid_until=valid_until,
            space=space,
        )[0]

    def correct_undoable(
        self,
        access: Access,
        *,
        id: str,
        corrected_content: str,
        topic: str | None = None,
        valid_from: str | datetime | None = None,
        valid_until: str | datetime | None = None,
        space: str | None = None,
    ) -> tuple[dict[str, Any], Undo]:
        """The correction and how to undo it: the original reinstated and, when the
        correction created a memory, that memory retired (one that existed already stays)."""
        space_key = access.space(space, Level.WRITE)
        wrong = visible(self._store, access, limits.check_id(id), space_key)
        if wrong.branch_state is BranchState.DEPRECATED:
            raise Conflict(f"memory {wrong.id!r} is already deprecated; correct its replacement")
        if not corrected_content.strip():
            raise InvalidArgument("corrected_content is required")
        if _unchanged(wrong, corrected_content, topic, valid_from, valid_until):
            raise InvalidArgument(
                "the corrected text is the same as the memory's (spacing aside), so there is "
                "nothing to correct: change the text, or deprecate the memory instead"
            )
        saved = self._saving.save_as_given(
            access,
            content=corrected_content,
            topic=topic or wrong.topic,
            valid_from=valid_from,
            valid_until=valid_until,
            origin=Origin.USER_ASSERTED.value,
            space=space_key,
        )
        new_id = str(saved["item"]["id"])
        deprecated, reinstate = self.deprecate_undoable(
            access,
            id=wrong.id,
            superseding_id=new_id,
            supersession_reason=SupersessionReason.CORRECTED.value,
            initiator=Initiator.USER.value,
            space=space_key,
        )
        result = {
            "item": saved["item"],
            "write_status": saved["write_status"],
            "deprecated": deprecated,
        }
        if "contested_ids" in deprecated:
            result["contested_ids"] = deprecated["contested_ids"]
            result["message"] = deprecated["message"]
        steps = reinstate.steps if reinstate is not None else ()
        if saved["write_status"] == "duplicate":
            result["note"] = (
                f"This text was already saved as memory {new_id!r} in the last "
                f"{_duration(self._window)} (identical saves within the dedupe window are "
                "stored once), so the corrected memory now points to it."
            )
        else:
            retire = Step(StepKind.RETIRE, new_id, version_of(saved["item"]), replaced_by=wrong.id)
            steps = (*steps, retire)
        made_at = reinstate.made_at if reinstate is not None else utc_now()
        return result, Undo("correct", steps, made_at, space_key)

    def _itself(self) -> str:
        """Why a memory cannot supersede itself, with the usual way it happens: the
        corrected text, saved unchanged, came back as the same memory (dedupe)."""
        message = "a memory cannot supersede itself"
        if self._window <= timedelta(0):
            return message
        return (
            f"{message}: superseding_id is the memory being deprecated. If save_context "
            "returned this id for the corrected text, that text is identical to one saved "
            f"in the last {_duration(self._window)} (the same memory comes back instead of "
            "a new one): change the text, or deprecate it with no superseding_id"
        )


def _unchanged(
    memory: Memory,
    text: str,
    topic: str | None,
    valid_from: str | datetime | None,
    valid_until: str | datetime | None,
) -> bool:
    """Whether a correction would store what the memory already says: the same text (as
    the write fingerprint compares it), topic and validity."""
    return (
        normalize_content(text) == normalize_content(memory.content)
        and (topic is None or topic.strip() == memory.topic)
        and limits.parse_instant(valid_from, "valid_from") == memory.valid_from
        and limits.parse_instant(valid_until, "valid_until") == memory.valid_until
    )


def _duration(window: timedelta) -> str:
    """ "15 minutes", "1 minute", "90 seconds"."""
    seconds = int(window.total_seconds())
    if seconds % 60:
        return f"{seconds} seconds" if seconds != 1 else "1 second"
    minutes = seconds // 60
    return f"{minutes} minutes" if minutes != 1 else "1 minute"


def _refuse_cycle(txn: StoreTransaction, target_id: str, replacement: Memory) -> None:
    current: Memory | None = replacement
    hops = 0
    while current is not None and current.superseded_by is not None:
        if current.superseded_by == target_id:
            raise Conflict(
                f"superseding {target_id!r} with {replacement.id!r} would make a loop: "
                f"{replacement.id!r} is already superseded (directly or through a chain) "
                f"by {target_id!r}"
            )
        hops += 1
        if hops > _MAX_CHAIN_HOPS:
            raise Conflict("supersession chain is too long to check")
        current = txn.get(current.superseded_by)


def _deprecation_result(memory: Memory, previous: BranchState) -> dict[str, Any]:
    return {
        "item": {
            "id": memory.id,
            "branch_state": memory.branch_state.value,
            "superseded_by": memory.superseded_by,
            "supersession_reason": (
                memory.supersession_reason.value if memory.supersession_reason else None
            ),
        },
        "previous_state": previous.value,
    }


def _contested_result(memory: Memory, replacement_id: str | None) -> dict[str, Any]:
    replaced = f", and {replacement_id!r} was named as its replacement" if replacement_id else ""
    return {
        "item": {
            "id": memory.id,
            "branch_state": memory.branch_state.value,
            "superseded_by": memory.superseded_by,
            "supersession_reason": (
                memory.supersession_reason.value if memory.supersession_reason else None
            ),
        },
        "previous_state": memory.branch_state.value,
        "contested_ids": [memory.id],
        "message": (
            f"memory {memory.id!r} was written by someone else, so it stays "
            f"{memory.branch_state.value}{replaced}; its author or the owner can retire it"
        ),
    }
