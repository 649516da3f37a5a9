"""Changes to a selection: deprecate, promote or move to a topic the memories ticked on the
browse page (select all takes the page).

``GET /console/bulk?action=deprecate|promote|move&id=...`` lists the selection and asks
for what the change needs (the reason, the topic) and changes nothing; its form (CSRF)
posts to ``POST /console/bulk``, which makes the change to each memory through
``MemoryService`` (the tools' rules, one transaction per memory), then lists what changed
and what was refused and why, with one Undo for everything that changed
(``console.undoing``). Recorded as one ``owner_action`` event per action with the ids.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, Final

from starlette.datastructures import FormData
from starlette.requests import Request
from starlette.responses import Response

from metacortex.console.base import ConsoleBase, access_for, form_text, text
from metacortex.console.filtering import topic_names
from metacortex.console.undoing import keep, offered
from metacortex.domain import limits
from metacortex.domain.records import Initiator
from metacortex.errors import InvalidArgument, MetaCortexError
from metacortex.owner import Session
from metacortex.service import Access
from metacortex.usecases.undo import Undo

ACTIONS: Final = {
    "deprecate": ("Deprecate", "deprecated"),
    "promote": ("Promote", "promoted"),
    "move": ("Move", "moved"),
}
REASONS: Final = ("changed", "corrected")
# A selection is at most a page of the listing; this bounds a forged one.
MAX_SELECTION: Final = 100

# One memory's change by id (keyword ``memory_id``): its result and how to undo it.
Change = Callable[..., tuple[dict[str, Any], Undo | None]]


def _ids(values: list[Any]) -> list[str]:
    ids = list(dict.fromkeys(v.strip() for v in values if isinstance(v, str) and v.strip()))
    if not ids:
        raise InvalidArgument("tick the memories to change first")
    if len(ids) > MAX_SELECTION:
        raise InvalidArgument(f"choose at most {MAX_SELECTION} memories at a time")
    return ids


def _action(value: str | None) -> str:
    if value not in ACTIONS:
        raise InvalidArgument("choose deprecate, promote or move for the selection")
    return value


async def bulk_page(console: ConsoleBase, request: Request, session: Session) -> Response:
    """The confirmation: the selection and what the change needs; nothing changes yet."""
    try:
        action = _action(request.query_params.get("action"))
        ids = _ids(request.query_params.getlist("id"))
    except MetaCortexError as error:
        return console.refused(request, session, error, "Nothing to change")
    return await _confirmation(console, request, session, action, ids)


async def _confirmation(
    console: ConsoleBase,
    request: Request,
    session: Session,
    action: str,
    ids: list[str],
    *,
    typed: dict[str, str] | None = None,
    error: MetaCortexError | None = None,
) -> Response:
    """The confirmation page; again after a refused topic, with the error and what was
    typed."""
    space = access_for(request).space()
    store = console.service.store
    records = [r for r in await console.call(store.get_many, memory_ids=ids, space=space) if r]
    counts = await console.call(store.topic_counts, space=space)
    verb, _ = ACTIONS[action]
    return console.render(
        request,
        session,
        "bulk.html",
        {
            "title": f"{verb} {_memories(len(records))}?",
            "stage": "confirm",
            "action": action,
            "records": records,
            "missing": len(ids) - len(records),
            "drafts": sum(record.branch_state.value == "wip" for record in records),
            "topic_names": topic_names(counts),
            "typed": typed or {},
            "error": error.message if error is not None else None,
        },
        status_code=console.status_of(error) if error is not None else 200,
    )


async def bulk_apply(console: ConsoleBase, request: Request, session: Session) -> Response:
    form = await request.form()
    try:
        action = _action(form_text(form, "action"))
        ids = _ids(form.getlist("id"))
    except MetaCortexError as error:
        return console.refused(request, session, error, "Nothing was changed")
    try:
        change = _change(console, access_for(request), action, form)
    except MetaCortexError as error:
        typed = {"topic": text(form.get("topic")) or ""}
        return await _confirmation(console, request, session, action, ids, typed=typed, error=error)
    started = time.perf_counter()
    done: list[str] = []
    undos: list[Undo] = []
    failed: list[tuple[str, str]] = []
    for memory_id in ids:
        try:
            result, undo = await console.call(change, memory_id=memory_id)
        except MetaCortexError as error:
            failed.append((memory_id, error.message))
            continue
        if result.get("contested_ids"):  # someone else's memory: it stays as it is
            failed.append((memory_id, str(result["message"])))
            continue
        done.append(memory_id)
        if undo is not None:
            undos.append(undo)
    summary = {"ids": ids, "bulk": True, **_options(action, form)}
    console.record_action(
        request,
        action,
        started,
        summary,
        response={"changed_ids": done, "refused_ids": [i for i, _ in failed]},
    )
    key = await keep(console, Undo.combine(undos))
    button, _ = await offered(console, key)
    changed_ids = [memory_id for undo in undos for memory_id in undo.ids]
    found = await console.call(
        console.service.store.get_many,
        memory_ids=changed_ids,
        space=access_for(request).space(),
    )
    records = [record for record in found if record is not None]
    past = ACTIONS[action][1]
    changed = len(undos)
    return console.render(
        request,
        session,
        "bulk.html",
        {
            "title": f"{past.capitalize()}: {_memories(changed)}",
            "stage": "done",
            "action": action,
            "records": records,
            "failed": failed,
            "notice": _outcome(past, changed, len(done) - changed, len(failed)),
            "undo": button,
        },
    )


def _change(console: ConsoleBase, access: Access, action: str, form: FormData) -> Change:
    service = console.service
    if action == "deprecate":
        reason = form_text(form, "reason") or "changed"
        if reason not in REASONS:
            raise InvalidArgument("the reason is changed or corrected")
        return lambda memory_id: service.deprecate_undoable(
            access, id=memory_id, supersession_reason=reason, initiator=Initiator.USER.value
        )
    if action == "promote":
        return lambda memory_id: service.promote_undoable(access, id=memory_id)
    typed = form_text(form, "topic")
    if typed is None:
        raise InvalidArgument("give the topic to move the memories to")
    topic = limits.check_topic(typed)  # once, before any memory moves
    return lambda memory_id: service.move(access, id=memory_id, topic=topic)


def _options(action: str, form: FormData) -> dict[str, Any]:
    if action == "deprecate":
        return {"supersession_reason": form_text(form, "reason") or "changed"}
    if action == "move":
        return {"topic": form_text(form, "topic")}
    return {}


def _outcome(past: str, changed: int, unchanged: int, failed: int) -> str:
    parts = [f"{_memories(changed)} {past}."]
    if unchanged:
        parts.append(f"{_memories(unchanged)} already were, and stay as they are.")
    if failed:
        parts.append(f"{_memories(failed)} refused: see why below.")
    return " ".join(parts)


def _memories(count: int) -> str:
    return f"{count} memory" if count == 1 else f"{count} memories"
