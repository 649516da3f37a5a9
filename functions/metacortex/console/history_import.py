"""The documents page's import of conversation history (``docs/importing.md``): a ChatGPT
or Claude data export uploaded, each conversation a document, as ``metacortex import``
does it.

- ``POST /console/documents/import``: a multipart upload (CSRF as every console form) of
  the export's zip file or its ``conversations.json``, with ``kind`` (``auto``: told by
  the content, ``chatgpt``, ``claude``) and an optional ``topic``. The body is counted as
  it arrives and refused past ``METACORTEX_IMPORT_MAX_JSON_BYTES`` (a 413 page, nothing
  stored); the export is checked whole before anything is written. The answer is a page
  with the summary, one line per kind of outcome. A writer of the space imports into it;
  what is written is theirs.
"""

from __future__ import annotations

import time
from typing import Any, Final

from starlette.datastructures import UploadFile
from starlette.requests import Request
from starlette.responses import Response

from metacortex.cancellation import until_caller_gone
from metacortex.console.base import ConsoleBase, access_for, form_text
from metacortex.errors import InvalidArgument, MetaCortexError
from metacortex.owner import Session

IMPORT_PATH: Final = "/documents/import"
SETTING: Final = "metacortex_import_max_json_bytes"
KINDS: Final = {"auto": None, "chatgpt": "chatgpt", "claude": "claude"}


async def import_history(console: ConsoleBase, request: Request, session: Session) -> Response:
    from metacortex.importing.limits import ImportLimits
    from metacortex.importing.run import import_export, read_upload

    access = access_for(request)
    space = access.space()
    form = await request.form()
    file = form.get("file")
    started = time.perf_counter()
    summary: dict[str, Any] = {"via": "console"}
    try:
        if not isinstance(file, UploadFile) or not file.filename:
            raise InvalidArgument("choose the export's zip file to import")
        wanted = form_text(form, "kind") or "auto"
        if wanted not in KINDS:
            raise InvalidArgument("kind must be auto, chatgpt or claude")
        topic = form_text(form, "topic")
        limits = ImportLimits.from_settings(console.settings)
        name = file.filename
        summary["kind"] = wanted

        def work(cancellation: Any) -> Any:
            export = read_upload(file.file, name, KINDS[wanted], limits)
            return export.kind, import_export(
                console.service,
                access,
                export,
                space=space,
                topic=topic,
                cancellation=cancellation,
            )

        try:
            # Stopped between conversations if the browser goes away: those done are kept.
            kind, done = await until_caller_gone(
                work, request.receive, "the console's history import"
            )
        finally:
            await form.close()  # its spooled file
    except MetaCortexError as error:
        console.record_action(request, "import", started, summary, error=error)
        return console.refused(request, session, error, "Nothing was imported")
    console.record_action(request, "import", started, summary, response=done.counts())
    return console.render(
        request,
        session,
        "import_done.html",
        {
            "title": "History imported",
            "kind": {"chatgpt": "ChatGPT", "claude": "Claude"}[kind],
            "space": space,
            "lines": done.lines(),
            "documents_href": console.url(request, "/console/documents", space=space),
        },
    )
