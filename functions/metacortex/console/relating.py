"""The owner's relation changes on a memory's page: add a relation from it, invalidate one
of its relations (``usecases/relation_edits.py``: the caller's types only).

Only the owner is offered them and only the owner may post them (a person gets the page
again with a refusal). Each is recorded as an ``owner_action`` event (``relate``,
``invalidate_relation``) with the ids, the type and the note's length, never its text.
A refused change shows the memory's page again with the error and what was typed.
"""

from __future__ import annotations

import time
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from metacortex.console.base import ConsoleBase, access_for, form_text
from metacortex.console.record import record_again
from metacortex.errors import Forbidden, MetaCortexError
from metacortex.owner import Session

_OWNER_ONLY = (
    "Only the owner adds or invalidates relations in the console; a client you use can "
    "relate memories it saves (save_context's relations)."
)


async def relate(console: ConsoleBase, request: Request, session: Session) -> Response:
    memory_id = request.path_params["memory_id"]
    form = await request.form()
    fields = {name: form_text(form, name) or "" for name in ("target_id", "type", "note")}
    summary: dict[str, Any] = {
        "id": memory_id,
        "target_id": fields["target_id"],
        "type": fields["type"],
        "note_chars": len(fields["note"]),
    }
    return await _change(
        console,
        request,
        session,
        "relate",
        summary,
        fields,
        console.service.relate,
        source_id=memory_id,
        target_id=fields["target_id"],
        type=fields["type"],
        note=fields["note"],
    )


async def invalidate(console: ConsoleBase, request: Request, session: Session) -> Response:
    memory_id = request.path_params["memory_id"]
    form = await request.form()
    ends = {name: form_text(form, name) or "" for name in ("source_id", "type", "target_id")}
    return await _change(
        console,
        request,
        session,
        "invalidate_relation",
        {"id": memory_id, **ends},
        {},
        console.service.invalidate_relation,
        **ends,
    )


async def _change(
    console: ConsoleBase,
    request: Request,
    session: Session,
    action: str,
    summary: dict[str, Any],
    kept: dict[str, str],
    change: Any,
    **arguments: str,
) -> Response:
    """Make the change as the owner, record it, and show the memory's page confirming
    it (or again with the error)."""
    memory_id = request.path_params["memory_id"]
    access = access_for(request)
    started = time.perf_counter()
    try:
        if not access.is_owner:
            raise Forbidden(_OWNER_ONLY)
        result = await console.call(change, access=access, **arguments)
    except MetaCortexError as error:
        console.record_action(request, action, started, summary, error=error)
        return await record_again(console, request, session, error, kept)
    console.record_action(request, action, started, summary, response=result)
    done = "related" if action == "relate" else "unrelated"
    return console.redirect(request, f"/console/memories/{memory_id}?done={done}#relations")
