"""The home page: memories newest first (paged both ways, with where you are in the total),
or those containing the words typed in its keyword box (best match first, the words
marked); the topics with their counts, the filters, and a selection (select all) to
deprecate, promote, move, consolidate or erase; one clear state when the store is empty."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Final
from urllib.parse import urlencode

from starlette.requests import Request
from starlette.responses import Response

from metacortex.console.base import ConsoleBase, access_for
from metacortex.console.excerpt import excerpt
from metacortex.console.filtering import Filters, form_context, read_filters
from metacortex.domain.records import ALL_STATES, BranchState, Memory
from metacortex.errors import MetaCortexError
from metacortex.owner import Session
from metacortex.retrieval.text import query_terms

PAGE_SIZE: Final = 25
# The keyword box lists at most this many memories (the best keyword matches).
MAX_WORD_MATCHES: Final = 100
STATE_WORDS: Final = {
    "active": "active",
    "wip": "draft",
    "merged": "merged",
    "deprecated": "deprecated",
}


def row(memory: Memory, href: str, matched: Iterable[str] = (), **extra: Any) -> dict[str, Any]:
    """What a listing shows of a record: a title and a preview with the ``matched`` terms
    marked, its facts, and the link to its page (``href``)."""
    return {
        "id": memory.id,
        "href": href,
        "content": memory.content,
        "excerpt": excerpt(memory.content, matched),
        "topic": memory.topic,
        "state": memory.branch_state.value,
        "created_at": memory.created_at,
        "origin": memory.provenance.origin.value if memory.provenance.origin else None,
        "image": memory.modality.value != "text",
        "score": None,
        "breakdown": None,
        **extra,
    }


def record_link(console: ConsoleBase, request: Request, memory_id: str, **query: str) -> str:
    """A record's page; ``query`` (a search's ``q`` and filters, or ``words``) lets that
    page say why the record was found."""
    kept = {name: value for name, value in query.items() if value}
    url = console.url(request, f"/console/memories/{memory_id}")
    return url + ("?" + urlencode(kept) if kept else "")


def count_words(state: str, count: int) -> str:
    """ "3 active", "1 draft", "2 drafts", "4 deprecated"."""
    if state == BranchState.WIP.value:
        return f"{count} draft" if count == 1 else f"{count} drafts"
    return f"{count} {state}"


def _start(request: Request) -> int:
    value = request.query_params.get("start", "1")
    return max(1, int(value)) if value.isdigit() and len(value) < 10 else 1


def _topics(counts: dict[str, dict[BranchState, int]], current: str | None) -> list[dict[str, Any]]:
    return [
        {
            "name": name,
            "total": sum(by_state.values()),
            "counts": [
                (state.value, count_words(state.value, by_state[state]))
                for state in ALL_STATES
                if by_state.get(state)
            ],
            "current": name == current,
        }
        for name, by_state in counts.items()
    ]


def _what(filters: Filters) -> str:
    """The listing's noun phrase: "active memories", "memories in every state"."""
    state = filters.state
    if isinstance(state, list):
        return "memories in every state"
    return f"{STATE_WORDS.get(state, state)} memories"


async def browse(console: ConsoleBase, request: Request, session: Session) -> Response:
    service = console.service
    space = access_for(request).space()
    counts = await console.call(service.store.topic_counts, space=space)
    if not counts:
        return console.render(request, session, "browse.html", {"title": "Memories", "empty": True})
    filters = read_filters(request, counts)
    here = console.url(request, "/console")
    query = _here_query(request)
    context: dict[str, Any] = {
        "title": "Memories",
        "empty": False,
        "topics": _topics(counts, filters.topic),
        "all_total": sum(sum(by_state.values()) for by_state in counts.values()),
        "drafts": sum(by_state.get(BranchState.WIP, 0) for by_state in counts.values()),
        "items": [],
        "total": 0,
        "start": 1,
        "what": _what(filters),
        "words": filters.words,
        "capped": False,
        "older_url": None,
        "newer_url": None,
        "newest_url": None,
        "all_selected": request.query_params.get("select") == "all",
        "select_all_url": here + "?" + urlencode({**query, "select": "all"}),
        "clear_url": here + ("?" + urlencode(query) if query else ""),
        "topic": filters.topic,
        "topic_total": sum(counts[filters.topic].values()) if filters.topic else 0,
        **form_context(filters, counts),
    }
    if filters.topic is not None and filters.topic != filters.given.get("topic"):
        context["notice"] = f"Showing topic “{filters.topic}” (topic names match in any case)."
    if filters.unknown_topic is not None:
        return console.render(request, session, "browse.html", context)
    try:
        if filters.words:
            await _word_matches(console, request, filters, context)
        else:
            await _newest_first(console, request, filters, context)
    except MetaCortexError as error:
        context["error"] = error.message
        return console.render(request, session, "browse.html", context, status_code=400)
    return console.render(request, session, "browse.html", context)


async def _newest_first(
    console: ConsoleBase, request: Request, filters: Filters, context: dict[str, Any]
) -> None:
    here = console.url(request, "/console")
    cursor = request.query_params.get("cursor") or None
    newer = request.query_params.get("newer") == "1"
    page = await console.call(
        console.service.page,
        access=access_for(request),
        limit=PAGE_SIZE,
        cursor=cursor,
        newer=newer,
        **filters.service_arguments(),
    )
    start = _start(request) if page.newer_cursor is not None else 1
    shown = len(page.memories)
    links = filters.link_arguments()
    context.update(
        items=[row(memory, record_link(console, request, memory.id)) for memory in page.memories],
        total=page.total,
        start=start,
        end=start + shown - 1,
    )
    if page.older_cursor:
        query = {**links, "cursor": page.older_cursor, "start": str(start + shown)}
        context["older_url"] = here + "?" + urlencode(query)
    if page.newer_cursor:
        query = {
            **links,
            "cursor": page.newer_cursor,
            "newer": "1",
            "start": str(max(1, start - PAGE_SIZE)),
        }
        context["newer_url"] = here + "?" + urlencode(query)
        if start > PAGE_SIZE + 1:
            context["newest_url"] = here + ("?" + urlencode(links) if links else "")


async def _word_matches(
    console: ConsoleBase, request: Request, filters: Filters, context: dict[str, Any]
) -> None:
    """The keyword box: the memories containing the words, best match first, 25 a page
    (by position: the matches are read again for each page, at most 100)."""
    words = filters.words or ""
    found = await console.call(
        console.service.matching,
        access=access_for(request),
        words=words,
        limit=MAX_WORD_MATCHES,
        **filters.service_arguments(),
    )
    matched = query_terms(words)
    start = min(_start(request), max(1, len(found)))
    shown = found[start - 1 : start - 1 + PAGE_SIZE]
    here = console.url(request, "/console")
    links = filters.link_arguments()
    context.update(
        items=[
            row(memory, record_link(console, request, memory.id, words=words), matched)
            for memory in shown
        ],
        total=len(found),
        capped=len(found) >= MAX_WORD_MATCHES,
        start=start,
        end=start + len(shown) - 1,
    )
    if start - 1 + PAGE_SIZE < len(found):
        context["older_url"] = here + "?" + urlencode({**links, "start": str(start + PAGE_SIZE)})
    if start > 1:
        earlier = {**links, "start": str(max(1, start - PAGE_SIZE))}
        context["newer_url"] = here + "?" + urlencode(earlier)


def _here_query(request: Request) -> dict[str, str]:
    """This page's query without the selection switch."""
    return {name: value for name, value in request.query_params.items() if name != "select"}
