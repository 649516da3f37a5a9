"""The documents pages (``docs/DOCUMENTS.md``, "The console's documents pages"): a
space's documents with an upload form, a document's page (its metadata, its text a
page at a time, its passages with their locators, search inside it) and erasing a
document. Everything goes through the documents use cases (``usecases/documents.py``,
``usecases/document_erase.py``).

- ``GET /console/documents?space=K``: the space's current documents, newest first, paged
  by cursor; a writer of the space gets the upload form.
- ``POST /console/documents/upload``: a multipart upload (CSRF as every console form).
  ``limited_body`` counts the body as it arrives and stops reading past
  ``METACORTEX_DOCUMENT_MAX_BYTES`` (and the form's few other fields): the upload is
  refused with a 413 page saying the limit, nothing stored, before the file is read
  whole; the use case checks the file's own size again.
- ``GET /console/documents/{id}``: ``page``/``offset`` page the text, ``from`` the
  passages, ``q`` searches inside the document (its passages only).
- ``GET|POST /console/documents/{id}/erase``: what erasing takes (every version, their
  passages, their bytes), then the erase, for an access that may erase (the owner).
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Final
from urllib.parse import urlencode

from starlette.datastructures import UploadFile
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import Message, Receive

from metacortex.cancellation import until_caller_gone
from metacortex.console.base import ConsoleBase, access_for, form_text
from metacortex.domain.records import Memory
from metacortex.errors import DocumentRefused, Forbidden, InvalidArgument, MetaCortexError
from metacortex.owner import Session

ERASED_BY: Final = "owner (console)"
UPLOAD_PATH: Final = "/documents/upload"
# The multipart body around the file: boundaries, part headers, title, topic, source and
# the CSRF token; more than this beyond the file's limit is refused unread.
FORM_ALLOWANCE: Final = 64 * 1024
# After refusing an upload, what is still read (and dropped) so a browser that is still
# sending sees the refusal instead of a reset connection; then the connection closes.
DRAIN_BYTES: Final = 8 * 1024 * 1024
PASSAGES_PER_PAGE: Final = 50
TEXT_CHARS: Final = 5_000
Endpoint = Callable[[Request], Awaitable[Response]]


class BodyTooLarge(Exception):
    """The request body passed ``limit`` bytes (as declared or as it arrived)."""


class _Counted:
    """The request's ``receive``, counting the body's bytes: past ``limit`` (or when the
    declared length is past it, before reading any) it raises ``BodyTooLarge``."""

    def __init__(self, receive: Receive, limit: int, declared: int | None) -> None:
        self._receive = receive
        self._limit = limit
        self._declared = declared
        self._seen = 0
        self.ended = False  # the body's last message was read

    async def __call__(self) -> Message:
        if self._declared is not None and self._declared > self._limit:
            raise BodyTooLarge
        message = await self._receive()
        if message["type"] == "http.request":
            self._seen += len(message.get("body", b""))
            self.ended = not message.get("more_body", False)
            if self._seen > self._limit:
                raise BodyTooLarge
        return message

    async def drain(self) -> None:
        """Read and drop what is left of the body, up to ``DRAIN_BYTES``."""
        if self.ended or (self._declared is not None and self._declared > DRAIN_BYTES):
            return  # nothing left, or too much to wait for: refuse at once
        drained = 0
        while drained <= DRAIN_BYTES:
            message = await self._receive()
            if message["type"] != "http.request":
                return
            drained += len(message.get("body", b""))
            if not message.get("more_body", False):
                return


def limited_body(
    console: ConsoleBase,
    endpoint: Endpoint,
    setting: str = "metacortex_document_max_bytes",
    advice: str = "Split the document, or ask the operator to raise the limit.",
) -> Endpoint:
    """``endpoint`` (the console's page check and the upload) reading at most the upload
    limit (the ``setting``'s bytes): past it, a 413 page and nothing stored."""

    async def limited(request: Request) -> Response:
        limit: int = getattr(console.settings, setting)
        length = request.headers.get("content-length", "")
        counted = _Counted(
            request.receive, limit + FORM_ALLOWANCE, int(length) if length.isdigit() else None
        )
        try:
            return await endpoint(Request(request.scope, counted))
        except BodyTooLarge:
            await counted.drain()
        caller = await console.owner.caller(request)
        assert caller is not None  # the page check read no body before it found one
        refusal = DocumentRefused(
            "too_large",
            f"The file is larger than this server's limit of {_size(limit)} "
            f"({setting.upper()}); nothing was stored. {advice}",
        )
        return console.render(
            request,
            caller.session,
            "refused.html",
            {"title": "The file is too large", "error": refusal.message, "code": refusal.code},
            status_code=413,
        )

    return limited


# ------------------------------------------------------------------- pages
def _link(console: ConsoleBase, request: Request, path: str, **query: Any) -> str:
    kept = {name: str(value) for name, value in query.items() if value not in (None, "")}
    return console.url(request, path, **kept)


def _size(size: int) -> str:
    for unit, scale in (("MB", 1024 * 1024), ("KB", 1024)):
        if size >= scale:
            return f"{size / scale:.1f} {unit}".replace(".0 ", " ")
    return f"{size} bytes"


def _common(console: ConsoleBase, request: Request) -> dict[str, Any]:
    access = access_for(request)
    space = access.space()
    return {
        "space": space,
        "spaces": [
            {"key": key, "href": _link(console, request, "/console/documents", space=key)}
            for key in sorted(access.levels)
        ],
        "may_erase": access.may_erase,
        "size_of": _size,
        "max_size": _size(console.settings.metacortex_document_max_bytes),
    }


async def documents_page(console: ConsoleBase, request: Request, session: Session) -> Response:
    access = access_for(request)
    context = _common(console, request)
    space = context["space"]
    cursor = request.query_params.get("cursor") or None
    try:
        listed = await console.call(
            console.service.list_documents, access=access, space=space, cursor=cursor
        )
    except MetaCortexError as error:
        return console.refused(request, session, error, "No documents to show")
    for document in listed["documents"]:
        document["href"] = _link(
            console, request, f"/console/documents/{document['id']}", space=space
        )
    after = listed["next_cursor"]
    return console.render(
        request,
        session,
        "documents.html",
        {
            **context,
            "title": "Documents",
            "documents": listed["documents"],
            "next_href": _link(console, request, "/console/documents", space=space, cursor=after)
            if after
            else None,
            "upload_action": _link(console, request, "/console" + UPLOAD_PATH, space=space),
            "import_action": _link(console, request, "/console/documents/import", space=space),
            "max_import_size": _size(console.settings.metacortex_import_max_json_bytes),
        },
    )


async def upload(console: ConsoleBase, request: Request, session: Session) -> Response:
    access = access_for(request)
    space = access.space()
    form = await request.form()
    file = form.get("file")
    started = time.perf_counter()
    summary: dict[str, Any] = {"via": "console"}
    try:
        if not isinstance(file, UploadFile) or not file.filename:
            raise InvalidArgument("choose a file to upload")
        try:
            data = await file.read()
        finally:
            await form.close()  # its spooled file
        source = form_text(form, "source") or file.filename
        summary["size"] = len(data)
        media_type = _media_type(file.filename, file.content_type)
        title, topic = form_text(form, "title"), form_text(form, "topic")
        # Stopped if the browser goes away (a closed tab, a timeout): nothing is kept.
        result = await until_caller_gone(
            lambda cancellation: console.service.create_document(
                access,
                data=data,
                media_type=media_type,
                title=title,
                source=source,
                topic=topic,
                space=space,
                cancellation=cancellation,
            ),
            request.receive,
            "the console's document upload",
        )
    except MetaCortexError as error:
        console.record_action(request, "create_document", started, summary, error=error)
        return console.refused(request, session, error, "The document was not added")
    document = result["document"]
    console.record_action(
        request,
        "create_document",
        started,
        summary,
        response={"id": document["id"], "status": result["write_status"], **result["passages"]},
    )
    return console.redirect(
        request,
        f"/console/documents/{document['id']}?"
        + urlencode({"space": space, "added": result["write_status"]}),
    )


def _media_type(filename: str, sent: str | None) -> str | None:
    """The type the file's extension names, else what the browser sent (unless it only
    said "some bytes")."""
    from metacortex.documents import media_type_for_path

    by_name = media_type_for_path(filename)
    if by_name is not None:
        return by_name
    return sent if sent and sent != "application/octet-stream" else None


_ADDED: Final = {
    "created": "Document added: its passages are searchable now.",
    "replaced": "New version added: unchanged passages were kept, changed ones replaced.",
    "duplicate": "This file was already here: nothing was added.",
}


async def document_page(console: ConsoleBase, request: Request, session: Session) -> Response:
    access = access_for(request)
    context = _common(console, request)
    space = context["space"]
    document_id = request.path_params["document_id"]
    params = request.query_params
    query = params.get("q", "").strip()
    try:
        page = _number(params.get("page"), "page")
        offset = _number(params.get("offset"), "offset")
        first = _number(params.get("from"), "from") or 0
        text = await console.call(
            console.service.get_document,
            access=access,
            id=document_id,
            page=page,
            offset=offset,
            limit_chars=TEXT_CHARS,
            space=space,
        )
        document, passages = await console.call(
            console.service.document_passages, access=access, id=document_id, space=space
        )
        found = None
        if query:
            _, found = await console.call(
                console.service.search_document,
                access=access,
                id=document_id,
                query=query,
                space=space,
            )
    except MetaCortexError as error:
        return console.refused(request, session, error, "No such document")
    here = f"/console/documents/{document_id}"
    shown = document.to_wire(access.names)
    text_links = _text_links(console, request, here, space, text, shown["page_count"])
    window = passages[first : first + PASSAGES_PER_PAGE]
    more = first + PASSAGES_PER_PAGE < len(passages)
    return console.render(
        request,
        session,
        "document.html",
        {
            **context,
            "title": document.title,
            "document": shown,
            "text": text,
            "text_links": text_links,
            "passages": [_passage(console, request, p) for p in window],
            "passage_total": len(passages),
            "passage_first": first,
            "passages_next": _link(
                console, request, here, space=space, **{"from": first + len(window)}
            )
            if more
            else None,
            "passages_previous": _link(
                console, request, here, space=space, **{"from": max(0, first - PASSAGES_PER_PAGE)}
            )
            if first
            else None,
            "query": query,
            "found": None
            if found is None
            else [{**_passage(console, request, p), "score": score} for p, score in found],
            "search_action": console.url(request, here),
            "erase_href": _link(console, request, here + "/erase", space=space),
            "documents_href": _link(console, request, "/console/documents", space=space),
            "notice": _ADDED.get(params.get("added", "")),
        },
    )


def _number(value: str | None, name: str) -> int | None:
    if value is None or value == "":
        return None
    if not value.isdigit():
        raise InvalidArgument(f"{name} must be a whole number, got {value!r}")
    return int(value)


def _text_links(
    console: ConsoleBase,
    request: Request,
    here: str,
    space: str,
    text: Mapping[str, Any],
    pages: int | None,
) -> dict[str, str | None]:
    """Where the previous and next slices of the text start (by page for a PDF)."""
    current = text.get("page")
    if pages and current:
        return {
            "previous": _link(console, request, here, space=space, page=current - 1)
            if current > 1
            else None,
            "next": _link(console, request, here, space=space, page=current + 1)
            if current < pages
            else None,
        }
    start = int(text["offset"])
    following = text.get("next_offset")
    return {
        "previous": _link(console, request, here, space=space, offset=max(0, start - TEXT_CHARS))
        if start
        else None,
        "next": _link(console, request, here, space=space, offset=following) if following else None,
    }


def _passage(console: ConsoleBase, request: Request, passage: Memory) -> dict[str, Any]:
    ref = passage.document
    assert ref is not None
    pages = None
    if ref.page is not None:
        pages = (
            f"p. {ref.page}"
            if ref.page_end in (None, ref.page)
            else f"pp. {ref.page}–{ref.page_end}"
        )
    return {
        "id": passage.id,
        "href": console.url(request, f"/console/memories/{passage.id}"),
        "content": passage.content,
        "state": passage.branch_state.value,
        # The innermost heading names it (the outer ones repeat on every passage).
        "heading": ref.section[-1] if ref.section else "",
        "section": " › ".join(ref.section),
        "pages": pages,
        "span": f"characters {ref.start:,}–{ref.end:,}",
    }


# ------------------------------------------------------------------- erase
async def erase_page(console: ConsoleBase, request: Request, session: Session) -> Response:
    access = access_for(request)
    context = _common(console, request)
    try:
        if not access.may_erase:
            raise Forbidden(
                "Only the owner erases documents. A writer may add a new version of one "
                "(upload it again with the same source)."
            )
        document = await console.call(
            console.service.document,
            access=access,
            document_id=request.path_params["document_id"],
            space=context["space"],
        )
    except MetaCortexError as error:
        return console.refused(request, session, error, "No such document")
    return console.render(
        request,
        session,
        "documents_erase.html",
        {
            **context,
            "title": f"Erase “{document.title}”?",
            "document": document.to_wire(access.names),
            "action": _link(
                console, request, f"/console/documents/{document.id}/erase", space=context["space"]
            ),
            "back": _link(
                console, request, f"/console/documents/{document.id}", space=context["space"]
            ),
        },
    )


async def erase_confirm(console: ConsoleBase, request: Request, session: Session) -> Response:
    access = access_for(request)
    context = _common(console, request)
    document_id = request.path_params["document_id"]
    started = time.perf_counter()
    summary = {"via": "console", "document_id": document_id}
    try:
        result = await console.call(
            console.service.erase_document,
            access=access,
            id=document_id,
            erased_by=ERASED_BY,
            space=context["space"],
        )
    except MetaCortexError as error:
        console.record_action(request, "erase_document", started, summary, error=error)
        return console.refused(request, session, error, "Nothing was erased")
    console.record_action(
        request,
        "erase_document",
        started,
        summary,
        response={
            "erased_document_ids": result["erased_document_ids"],
            "erased_passage_count": result["erased_passage_count"],
        },
    )
    return console.render(
        request,
        session,
        "documents_erase.html",
        {
            **context,
            "title": "Document erased",
            "result": result,
            "back": _link(console, request, "/console/documents", space=context["space"]),
        },
    )
