"""The owner's changes: deprecate, correct, promote, consolidate (preview, then confirm).

Each goes through ``MemoryService`` (the tools' rules, in the same transactions)
and is recorded as an ``owner_action`` event with initiator ``owner``. Content
never enters an event: only ids, lengths and outcomes.
"""

from __future__ import annotations

import time
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from metacortex.console.base import ADMIN, ConsoleBase, form_text
from metacortex.domain.records import BranchState, Initiator
from metacortex.errors import InvalidArgument, MetaCortexError
from metacortex.owner import Session


async def deprecate(console: ConsoleBase, request: Request, session: Session) -> Response:
    memory_id = request.path_params["memory_id"]
    form = await request.form()
    summary: dict[str, Any] = {
        "id": memory_id,
        "superseding_id": form_text(form, "superseding_id"),
        "supersession_reason": form_text(form, "reason") or "changed",
    }
    started = time.perf_counter()
    try:
        result = await console.call(
            console.service.deprecate,
            access=ADMIN,
            id=memory_id,
            superseding_id=summary["superseding_id"],
            supersession_reason=summary["supersession_reason"],
            initiator=Initiator.USER.value,
        )
    except MetaCortexError as error:
        console.record_action("deprecate", started, summary, error=error)
        return console.refused(request, session, error, "The memory was not deprecated")
    console.record_action("deprecate", started, summary, response=result)
    return console.redirect(request, f"/console/memories/{memory_id}?done=deprecated")


async def correct(console: ConsoleBase, request: Request, session: Session) -> Response:
    memory_id = request.path_params["memory_id"]
    form = await request.form()
    content = form_text(form, "corrected_content") or ""
    summary = {"id": memory_id, "corrected_content_chars": len(content)}
    started = time.perf_counter()
    try:
        result = await console.call(
            console.service.correct,
            access=ADMIN,
            id=memory_id,
            corrected_content=content,
            valid_from=form_text(form, "valid_from"),
            valid_until=form_text(form, "valid_until"),
        )
    except MetaCortexError as error:
        console.record_action("correct", started, summary, error=error)
        return console.refused(request, session, error, "The memory was not corrected")
    new_id = str(result["item"]["id"])
    console.record_action(
        "correct", started, summary, response={"id": new_id, "deprecated_id": memory_id}
    )
    return console.redirect(request, f"/console/memories/{new_id}?done=corrected")


async def promote(console: ConsoleBase, request: Request, session: Session) -> Response:
    memory_id = request.path_params["memory_id"]
    summary = {"id": memory_id}
    started = time.perf_counter()
    try:
        result = await console.call(console.service.promote, access=ADMIN, id=memory_id)
    except MetaCortexError as error:
        console.record_action("promote", started, summary, error=error)
        return console.refused(request, session, error, "The draft was not promoted")
    console.record_action("promote", started, summary, response=result)
    return console.redirect(request, f"/console/memories/{memory_id}?done=promoted")


async def consolidate_page(console: ConsoleBase, request: Request, session: Session) -> Response:
    counts = await console.call(console.service.store.topic_counts)
    drafts = [
        (name, by_state[BranchState.WIP])
        for name, by_state in counts.items()
        if by_state.get(BranchState.WIP)
    ]
    return console.render(
        request,
        session,
        "consolidate.html",
        {
            "title": "Consolidate drafts",
            "drafts": drafts,
            "topic": request.query_params.get("topic", ""),
            "preview": None,
        },
    )


async def consolidate_preview(console: ConsoleBase, request: Request, session: Session) -> Response:
    form = await request.form()
    topic = form_text(form, "topic") or ""
    try:
        preview = await console.call(
            console.service.preview_consolidation, access=ADMIN, topic=topic
        )
    except MetaCortexError as error:
        return console.refused(request, session, error, "Nothing to consolidate")
    return console.render(
        request,
        session,
        "consolidate.html",
        {"title": "Consolidate drafts", "drafts": [], "topic": topic, "preview": preview},
    )


async def consolidate_confirm(console: ConsoleBase, request: Request, session: Session) -> Response:
    form = await request.form()
    topic = form_text(form, "topic") or ""
    source_ids = [value for value in form.getlist("source_id") if isinstance(value, str)]
    summary = {"topic": topic, "source_ids": source_ids}
    started = time.perf_counter()
    try:
        if len(source_ids) < 2:
            raise InvalidArgument("preview the consolidation first; no sources were confirmed")
        result = await console.call(
            console.service.consolidate, access=ADMIN, topic=topic, source_ids=source_ids
        )
    except MetaCortexError as error:
        console.record_action("consolidate", started, summary, error=error)
        return console.refused(request, session, error, "The drafts were not consolidated")
    merged_id = str(result["item"]["merged_id"])
    console.record_action(
        "consolidate",
        started,
        summary,
        response={"merged_id": merged_id, "deprecated_ids": result["deprecated_ids"]},
    )
    return console.redirect(request, f"/console/memories/{merged_id}?done=consolidated")
