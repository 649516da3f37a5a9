"""Consolidation in the console: a topic's drafts, or memories chosen on the browse page
(any topic, active or draft), previewed, then confirmed.

The preview (``MemoryService.preview_consolidation``) writes nothing. On it the owner can
untick a source (the preview is then made again without it) and edit the merged text;
confirming passes exactly the previewed ``source_ids`` to ``consolidate_context``'s code,
with the edited text when it was edited (the record then says the owner wrote it). A
refused confirmation shows the preview again with the error and the text as typed.
"""

from __future__ import annotations

import time
from collections import Counter
from typing import Any, Final
from urllib.parse import urlencode

from starlette.datastructures import FormData
from starlette.requests import Request
from starlette.responses import Response

from metacortex.console.base import ConsoleBase, access_for, form_text
from metacortex.console.filtering import topic_names
from metacortex.domain.fingerprint import normalize_content
from metacortex.domain.records import BranchState
from metacortex.errors import InvalidArgument, MetaCortexError
from metacortex.owner import Session

TITLE: Final = "Consolidate"


def _strings(form: FormData, name: str) -> list[str]:
    return [value.strip() for value in form.getlist(name) if isinstance(value, str) and value]


async def consolidate_page(console: ConsoleBase, request: Request, session: Session) -> Response:
    """Without ids: the topics with drafts to pick from. With ids (the browse page's
    selection): their preview, into the topic most of them share."""
    if not console.may_write(request):
        return console.read_only(request, session)
    ids = [value for value in request.query_params.getlist("id") if value.strip()]
    if not ids:
        return await _picker(console, request, session)
    try:
        if len(ids) < 2:
            raise InvalidArgument("tick at least two memories to consolidate them")
        records = await console.call(
            console.service.store.get_many, memory_ids=ids, space=access_for(request).space()
        )
        topics = Counter(record.topic for record in records if record is not None)
        topic = request.query_params.get("topic", "").strip() or (
            topics.most_common(1)[0][0] if topics else ""
        )
        return await _preview(console, request, session, topic, ids)
    except MetaCortexError as error:
        return await _picker(console, request, session, error=error)


async def _picker(
    console: ConsoleBase,
    request: Request,
    session: Session,
    *,
    error: MetaCortexError | None = None,
) -> Response:
    counts = await console.call(
        console.service.store.topic_counts, space=access_for(request).space()
    )
    drafts = [
        (name, by_state[BranchState.WIP])
        for name, by_state in counts.items()
        if by_state.get(BranchState.WIP)
    ]
    context = {
        "title": TITLE,
        "drafts": drafts,
        "topic": request.query_params.get("topic", ""),
        "preview": None,
        "error": error.message if error is not None else None,
    }
    status = console.status_of(error) if error is not None else 200
    return console.render(request, session, "consolidate.html", context, status_code=status)


async def _preview(
    console: ConsoleBase,
    request: Request,
    session: Session,
    topic: str,
    source_ids: list[str],
    *,
    typed: str | None = None,
    notice: str | None = None,
    error: MetaCortexError | None = None,
) -> Response:
    """The preview page; ``typed``: the owner's edited text, kept instead of the merge."""
    service = console.service
    access = access_for(request)
    preview = await console.call(
        service.preview_consolidation, access=access, topic=topic, source_ids=source_ids or None
    )
    counts = await console.call(service.store.topic_counts, space=access.space())
    context: dict[str, Any] = {
        "title": TITLE,
        "preview": preview,
        "text": typed if typed is not None else preview["merged_content"],
        "edited": typed is not None,
        "topic_names": topic_names(counts),
        "notice": notice,
        "error": error.message if error is not None else None,
    }
    status = console.status_of(error) if error is not None else 200
    return console.render(request, session, "consolidate.html", context, status_code=status)


def _edited(form: FormData) -> str | None:
    """The merged text as typed when it differs from the preview's (else None)."""
    typed = form.get("merged_content")
    proposed = form.get("proposed_content")
    if not isinstance(typed, str):
        return None
    if isinstance(proposed, str) and normalize_content(typed) == normalize_content(proposed):
        return None
    return typed


async def consolidate_preview(console: ConsoleBase, request: Request, session: Session) -> Response:
    """A topic's drafts (from the picker), or the ticked sources again (Update preview)."""
    if not console.may_write(request):
        return console.read_only(request, session)
    form = await request.form()
    topic = form_text(form, "topic") or ""
    source_ids = _strings(form, "source_id")
    try:
        if _strings(form, "previewed_id") and len(source_ids) < 2:
            raise InvalidArgument("keep at least two sources ticked to consolidate them")
        return await _preview(console, request, session, topic, source_ids, typed=_edited(form))
    except MetaCortexError as error:
        return console.refused(request, session, error, "Nothing to consolidate")


async def consolidate_confirm(console: ConsoleBase, request: Request, session: Session) -> Response:
    form = await request.form()
    topic = form_text(form, "topic") or ""
    source_ids = _strings(form, "source_id")
    typed = _edited(form)
    if set(source_ids) != set(_strings(form, "previewed_id")):
        try:
            return await _preview(
                console,
                request,
                session,
                topic,
                source_ids,
                typed=typed,
                notice="The sources changed, so nothing was merged yet: check the merged "
                "text below, then confirm."
                + (" Your edited text was kept." if typed is not None else ""),
            )
        except MetaCortexError as error:
            return console.refused(request, session, error, "Nothing to consolidate")
    summary = {
        "topic": topic,
        "source_ids": source_ids,
        "edited": typed is not None,
        "merged_content_chars": len(typed) if typed is not None else None,
    }
    started = time.perf_counter()
    try:
        if len(source_ids) < 2:
            raise InvalidArgument("keep at least two sources ticked to consolidate them")
        result = await console.call(
            console.service.consolidate,
            access=access_for(request),
            topic=topic,
            source_ids=source_ids,
            merged_content=typed,
        )
    except MetaCortexError as error:
        console.record_action(request, "consolidate", started, summary, error=error)
        try:
            return await _preview(
                console, request, session, topic, source_ids, typed=typed, error=error
            )
        except MetaCortexError:
            return console.refused(request, session, error, "Nothing was consolidated")
    merged_id = str(result["item"]["merged_id"])
    console.record_action(
        request,
        "consolidate",
        started,
        summary,
        response={"merged_id": merged_id, "deprecated_ids": result["deprecated_ids"]},
    )
    contested = [str(memory_id) for memory_id in result.get("contested_ids") or []]
    if contested:  # someone else's sources: merged, left active (docs/SPACES.md)
        query = urlencode({"done": "consolidated-contested", "contested": ",".join(contested)})
        return console.redirect(request, f"/console/memories/{merged_id}?{query}")
    return console.redirect(request, f"/console/memories/{merged_id}?done=consolidated")
