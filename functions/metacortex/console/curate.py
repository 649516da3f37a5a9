"""The owner's changes to one record: correct, promote, and deprecate (a confirmation page
that finds the replacing memory by search, then the change).

Each goes through ``MemoryService`` (the tools' rules, in the same transactions) and is
recorded as an ``owner_action`` event with initiator ``owner``. Content never enters an
event: only ids, lengths and outcomes. The record's page then confirms the change with an
Undo button (``console.undoing``). A refused change shows the page it came from again,
with the error and what was typed.
"""

from __future__ import annotations

import time
from typing import Any, Final
from urllib.parse import urlencode

from starlette.requests import Request
from starlette.responses import Response

from metacortex.console.base import ConsoleBase, access_for, form_text
from metacortex.console.finding import candidates
from metacortex.console.record import record_again
from metacortex.console.undoing import keep
from metacortex.domain.records import Initiator
from metacortex.errors import MetaCortexError
from metacortex.owner import Session

REASONS: Final = ("changed", "corrected")


async def correct(console: ConsoleBase, request: Request, session: Session) -> Response:
    memory_id = request.path_params["memory_id"]
    form = await request.form()
    typed = form.get("corrected_content")
    content = typed.strip() if isinstance(typed, str) else ""
    summary = {"id": memory_id, "corrected_content_chars": len(content)}
    started = time.perf_counter()
    try:
        result, undo = await console.call(
            console.service.correct_undoable,
            access=access_for(request),
            id=memory_id,
            corrected_content=content,
            valid_from=form_text(form, "valid_from"),
            valid_until=form_text(form, "valid_until"),
        )
    except MetaCortexError as error:
        console.record_action(request, "correct", started, summary, error=error)
        kept = {"corrected_content": typed if isinstance(typed, str) else ""}
        return await record_again(console, request, session, error, kept)
    new_id = str(result["item"]["id"])
    console.record_action(
        request,
        "correct",
        started,
        summary,
        response={"id": new_id, "deprecated_id": memory_id, "write_status": result["write_status"]},
    )
    # A correction identical to a recent save points to that memory: its page confirms.
    key = await keep(console, undo, note=result.get("note"), shown_on=new_id)
    done = "corrected-contested" if result.get("contested_ids") else "corrected"
    return console.redirect(request, _done(new_id, done, key))


async def promote(console: ConsoleBase, request: Request, session: Session) -> Response:
    memory_id = request.path_params["memory_id"]
    summary = {"id": memory_id}
    started = time.perf_counter()
    try:
        result, undo = await console.call(
            console.service.promote_undoable, access=access_for(request), id=memory_id
        )
    except MetaCortexError as error:
        console.record_action(request, "promote", started, summary, error=error)
        return await record_again(console, request, session, error, {})
    console.record_action(request, "promote", started, summary, response=result)
    return console.redirect(request, _done(memory_id, "promoted", await keep(console, undo)))


async def _deprecation(
    console: ConsoleBase,
    request: Request,
    session: Session,
    fields: dict[str, str],
    *,
    error: MetaCortexError | None = None,
) -> Response:
    memory_id = request.path_params["memory_id"]
    try:
        memory = await console.call(
            console.service.memory, access=access_for(request), memory_id=memory_id
        )
        query = fields.get("q", "")
        found = await candidates(
            console, request, query, excluding=memory.id, chosen=fields.get("superseding_id")
        )
    except MetaCortexError as failure:
        return console.refused(request, session, failure, "Nothing to deprecate")
    context = {
        "title": "Deprecate",
        "memory": memory,
        "query": query,
        "candidates": found,
        "chosen": fields.get("superseding_id", ""),
        "reason": fields.get("reason") if fields.get("reason") in REASONS else "changed",
        "error": error.message if error is not None else None,
    }
    status = console.status_of(error) if error is not None else 200
    return console.render(request, session, "deprecate.html", context, status_code=status)


async def deprecate_page(console: ConsoleBase, request: Request, session: Session) -> Response:
    """The confirmation: what deprecation does, the replacement found by search, the reason;
    nothing changes until it is confirmed."""
    fields = {
        name: value.strip()
        for name in ("q", "reason", "superseding_id")
        if (value := request.query_params.get(name, "")).strip()
    }
    return await _deprecation(console, request, session, fields)


async def deprecate(console: ConsoleBase, request: Request, session: Session) -> Response:
    memory_id = request.path_params["memory_id"]
    form = await request.form()
    fields = {
        name: value
        for name in ("q", "reason", "superseding_id")
        if (value := form_text(form, name)) is not None
    }
    summary: dict[str, Any] = {
        "id": memory_id,
        "superseding_id": fields.get("superseding_id"),
        "supersession_reason": fields.get("reason") or "changed",
    }
    started = time.perf_counter()
    try:
        result, undo = await console.call(
            console.service.deprecate_undoable,
            access=access_for(request),
            id=memory_id,
            superseding_id=summary["superseding_id"],
            supersession_reason=summary["supersession_reason"],
            initiator=Initiator.USER.value,
        )
    except MetaCortexError as error:
        console.record_action(request, "deprecate", started, summary, error=error)
        return await _deprecation(console, request, session, fields, error=error)
    console.record_action(request, "deprecate", started, summary, response=result)
    done = "contested" if result.get("contested_ids") else "deprecated"
    return console.redirect(request, _done(memory_id, done, await keep(console, undo)))


def _done(memory_id: str, done: str, undo_key: str | None) -> str:
    """The record's page confirming a change, with its Undo while it lasts."""
    query = {"done": done, **({"undo": undo_key} if undo_key else {})}
    return f"/console/memories/{memory_id}?{urlencode(query)}"
