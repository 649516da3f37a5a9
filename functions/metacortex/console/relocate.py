"""The owner's "Move to space" on a memory's page: the record, same id, content,
authors and lineage, goes to another space (``usecases.space_move``, which needs write
on both spaces); recorded as an ``owner_action`` event (``move_to_space``) in the space
it left, naming the one it went to. The page then shows it in its new space."""

from __future__ import annotations

import time
from urllib.parse import urlencode

from starlette.requests import Request
from starlette.responses import Response

from metacortex.console.base import ConsoleBase, access_for, form_text
from metacortex.console.record import record_again
from metacortex.errors import MetaCortexError
from metacortex.owner import Session


async def move_to_space(console: ConsoleBase, request: Request, session: Session) -> Response:
    memory_id = request.path_params["memory_id"]
    access = access_for(request)
    to_space = form_text(await request.form(), "to_space") or ""
    summary = {"id": memory_id, "from_space": access.default_space, "to_space": to_space}
    started = time.perf_counter()
    try:
        result = await console.call(
            console.service.move_to_space, access=access, id=memory_id, to_space=to_space
        )
    except MetaCortexError as error:
        console.record_action(request, "move_to_space", started, summary, error=error)
        return await record_again(console, request, session, error, {})
    console.record_action(request, "move_to_space", started, summary, response=result["item"])
    query = urlencode({"space": to_space, "done": "moved-space"})
    return console.redirect(request, f"/console/memories/{memory_id}?{query}")
