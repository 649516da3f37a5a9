"""Add a memory by hand: its text, topic and space, and a relation to a memory found by
search (``console.finding``), saved through ``service.save``, the use case behind
``save_context`` (the same checks, duplicate window, time reading and relations).

One form, posted: "Find" searches the chosen space for the memory to link and shows the
form again as typed; "Save" saves and opens the new memory's page. Offered where the
caller may write (the owner everywhere; a writer in their write spaces); recorded as an
``owner_action`` event (``add_memory``) with lengths and ids, never the text."""

from __future__ import annotations

import time
from typing import Any, Final

from starlette.requests import Request
from starlette.responses import Response

from metacortex.access.model import Level
from metacortex.console.base import READ_ONLY, ConsoleBase, access_for, form_text
from metacortex.console.finding import candidates
from metacortex.console.graph import OWNER_TYPES
from metacortex.console.switcher import space_labels
from metacortex.domain import limits
from metacortex.errors import Forbidden, InvalidArgument, MetaCortexError
from metacortex.owner import Session

PATH: Final = "/console/new"
_FIELDS: Final = ("content", "topic", "space", "q", "related", "type", "note")


def writable(request: Request) -> list[str]:
    """The spaces the caller may add memories to, by key."""
    return sorted(key for key, level in access_for(request).levels.items() if level == Level.WRITE)


async def add_page(console: ConsoleBase, request: Request, session: Session) -> Response:
    return await _form(console, request, session, {})


async def add(console: ConsoleBase, request: Request, session: Session) -> Response:
    form = await request.form()
    fields = {name: form_text(form, name) or "" for name in _FIELDS}
    if form.get("action") == "find":
        return await _form(console, request, session, fields)
    access = access_for(request)
    space = fields["space"] or access.default_space
    relations = (
        [{"id": fields["related"], "type": fields["type"] or "relates_to", "note": fields["note"]}]
        if fields["related"]
        else None
    )
    summary: dict[str, Any] = {
        "space": space,
        "content_chars": len(fields["content"]),
        "topic": fields["topic"] or None,
        "relations": [fields["related"]] if relations else [],
    }
    started = time.perf_counter()
    try:
        if space not in writable(request):
            raise Forbidden(READ_ONLY)
        if not fields["content"]:
            raise InvalidArgument("Write the memory's text first: nothing was saved.")
        result = await console.call(
            console.service.save,
            access=access,
            content=fields["content"] or None,
            topic=fields["topic"] or None,
            space=space,
            relations=relations,
        )
    except MetaCortexError as error:
        console.record_action(request, "add_memory", started, summary, error=error, space=space)
        return await _form(console, request, session, fields, error=error)
    item = result["item"]
    console.record_action(
        request,
        "add_memory",
        started,
        summary,
        response={"id": item["id"], "write_status": result["write_status"]},
        space=space,
    )
    done = "saved-duplicate" if result["write_status"] == "duplicate" else "saved"
    return console.redirect(request, f"/console/memories/{item['id']}?space={space}&done={done}")


async def _form(
    console: ConsoleBase,
    request: Request,
    session: Session,
    fields: dict[str, str],
    *,
    error: MetaCortexError | None = None,
) -> Response:
    access = access_for(request)
    spaces = writable(request)
    if not spaces:
        return console.read_only(request, session)
    space = fields.get("space") or access.default_space
    if space not in spaces:
        space = access.default_space if access.default_space in spaces else spaces[0]
    query = fields.get("q", "")
    try:
        found = await candidates(
            console, request, query, space=space, chosen=fields.get("related") or None
        )
    except MetaCortexError as failure:
        return console.refused(request, session, failure, "Nothing to add to")
    labels = space_labels(access.directory, spaces)
    context = {
        "title": "Add a memory",
        "fields": fields,
        "space": space,
        "spaces": [(key, labels.get(key, key)) for key in spaces],
        "query": query,
        "candidates": found,
        "chosen": fields.get("related", ""),
        "types": OWNER_TYPES,
        "searched": bool(query),
        "max_content": limits.MAX_CONTENT_CHARS,
        "max_topic": limits.MAX_TOPIC_CHARS,
        "error": error.message if error is not None else None,
    }
    status = console.status_of(error) if error is not None else 200
    return console.render(request, session, "new.html", context, status_code=status)
