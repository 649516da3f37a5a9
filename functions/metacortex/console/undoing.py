"""Undo in the console: the page that confirms a deprecation, correction, promotion or move
(one memory or a selection) offers an Undo button for ``UNDO_WINDOW`` (15 minutes).

The change's ``Undo`` (``usecases/undo.py``: what to put back, and the version of each
record it left) is kept in the store's owner state (kind ``console_undo``) under a random
key until the window ends; the confirming page names the key, its form (CSRF) posts it
to ``POST /console/undo``, which applies it through ``MemoryService.undo`` (the service's
rules: all or nothing, refused when a record changed since) and records an
``owner_action`` event ``undo`` with the action and ids.
"""

from __future__ import annotations

import secrets
import time
from typing import Any, Final

from starlette.requests import Request
from starlette.responses import Response

from metacortex.console.base import ConsoleBase, access_for, form_text
from metacortex.errors import FailedPrecondition, MetaCortexError
from metacortex.owner import Session
from metacortex.usecases.undo import UNDO_WINDOW, Undo

KIND: Final = "console_undo"
MINUTES: Final = int(UNDO_WINDOW.total_seconds() // 60)


async def keep(console: ConsoleBase, undo: Undo | None, **extra: Any) -> str | None:
    """Keeps ``undo`` until its window ends; the key its button posts (None: no undo)."""
    if undo is None or not undo.steps:
        return None
    key = secrets.token_urlsafe(18)
    data = {"undo": undo.to_data(), **extra}
    store = console.service.store
    await console.call(store.auth_put, kind=KIND, key=key, data=data, expires_at=undo.until)
    return key


async def offered(
    console: ConsoleBase, key: str | None, memory_id: str | None = None
) -> tuple[dict[str, Any] | None, dict[str, Any]]:
    """The Undo button a page shows for ``key`` (None when it is gone or, with
    ``memory_id``, is not about that memory nor kept for its page, ``shown_on``), and
    the extra data kept with it."""
    if not key or len(key) > 64:
        return None, {}
    data = await console.call(console.service.store.auth_get, kind=KIND, key=key)
    if data is None:
        return None, {}
    undo = Undo.from_data(data["undo"])
    extra = {name: value for name, value in data.items() if name != "undo"}
    about = {step.id for step in undo.steps} | {extra.get("shown_on")}
    if memory_id is not None and memory_id not in about:
        return None, {}
    return {"key": key, "until": undo.until, "minutes": MINUTES, "action": undo.action}, extra


async def undo_action(console: ConsoleBase, request: Request, session: Session) -> Response:
    form = await request.form()
    key = form_text(form, "undo") or ""
    store = console.service.store
    started = time.perf_counter()
    data = await console.call(store.auth_get, kind=KIND, key=key) if key else None
    if data is None:
        error = FailedPrecondition(
            f"this change can no longer be undone: undo lasts {MINUTES} minutes after the "
            "change, once. Open the memory to change it by hand."
        )
        console.record_action(request, "undo", started, {"action": None}, error=error)
        return console.refused(request, session, error, "Nothing was undone")
    undo = Undo.from_data(data["undo"])
    summary = {"action": undo.action, "ids": undo.ids}
    try:
        result = await console.call(console.service.undo, access=access_for(request), undo=undo)
    except MetaCortexError as error:
        console.record_action(request, "undo", started, summary, error=error)
        return console.refused(request, session, error, "Nothing was undone")
    await console.call(store.auth_delete, kind=KIND, key=key)
    console.record_action(request, "undo", started, summary, response=result)
    ids = undo.ids
    if len(ids) == 1:
        return console.redirect(request, f"/console/memories/{ids[0]}?done=undone-{undo.action}")
    records = await console.call(store.get_many, memory_ids=ids, space=undo.space)
    return console.render(
        request,
        session,
        "bulk.html",
        {
            "title": "Undone",
            "stage": "undone",
            "action": undo.action,
            "records": [record for record in records if record is not None],
            "failed": [],
            "notice": f"Undone: {len(ids)} memories are back as they were.",
        },
    )
