"""Erase: one memory (its record page), a selection or a topic (the browse page).

``GET /console/erase?id=...&id=...`` or ``?topic=T`` shows what would be erased
(the count, the records, the consolidated records built from their text) and
changes nothing; its form (CSRF) posts exactly that selection, with the count
for a topic, to ``POST /console/erase``, which erases it through
``MemoryService.erase`` and shows what was erased and what kept text from it.
Recorded as an ``owner_action`` event with ids and counts, never content.
"""

from __future__ import annotations

import time
from typing import Any, Final

from starlette.requests import Request
from starlette.responses import Response

from metacortex.console.base import ConsoleBase, access_for, form_text
from metacortex.errors import InvalidArgument, MetaCortexError
from metacortex.owner import Session
from metacortex.usecases.erase import event_summary

ERASED_BY: Final = "owner (console)"


def _selection(ids: list[str], topic: str | None) -> dict[str, Any]:
    return {"ids": ids} if ids else {"topic": topic}


async def erase_page(console: ConsoleBase, request: Request, session: Session) -> Response:
    ids = [value.strip() for value in request.query_params.getlist("id") if value.strip()]
    topic = request.query_params.get("topic", "").strip() or None
    try:
        if not ids and topic is None:
            raise InvalidArgument("choose the memories to erase first")
        plan = await console.call(
            console.service.plan_erase, access=access_for(request), ids=ids, topic=topic
        )
    except MetaCortexError as error:
        return console.refused(request, session, error, "Nothing to erase")
    return console.render(
        request, session, "erase.html", {"title": _title(plan["count"]), "plan": plan}
    )


async def erase_confirm(console: ConsoleBase, request: Request, session: Session) -> Response:
    form = await request.form()
    ids = [value for value in form.getlist("id") if isinstance(value, str) and value]
    topic = form_text(form, "topic")
    summary: dict[str, Any] = {
        "via": "console",
        "selection": "ids" if ids else "topic",
        "count": form_text(form, "count"),
    }
    started = time.perf_counter()
    try:
        count = _count(form_text(form, "count"))
        result = await console.call(
            console.service.erase,
            access=access_for(request),
            erased_by=ERASED_BY,
            expected_count=count,
            **_selection(ids, topic),
        )
    except MetaCortexError as error:
        console.record_action(request, "erase", started, summary, error=error)
        return console.refused(request, session, error, "Nothing was erased")
    console.record_action(request, "erase", started, summary, response=event_summary(result))
    count_erased = result["erased_count"]
    return console.render(
        request,
        session,
        "erase.html",
        {
            "title": "Erased",
            "plan": None,
            "result": result,
            "notice": f"{_memories(count_erased)} erased; a tombstone stays for each.",
        },
    )


def _count(value: str | None) -> int:
    if value is None or not value.isdigit():
        raise InvalidArgument("the confirmation carries no count; open the confirmation again")
    return int(value)


def _title(count: int) -> str:
    return f"Erase {_memories(count)}?" if count else "Already erased"


def _memories(count: int) -> str:
    return f"{count} memory" if count == 1 else f"{count} memories"
