"""The home page: memories newest first (paged both ways, with where you are in the total),
the topics with their counts, the filters; one clear state when the store is empty."""

from __future__ import annotations

from typing import Any, Final
from urllib.parse import urlencode

from starlette.requests import Request
from starlette.responses import Response

from metacortex.console.base import ADMIN, ConsoleBase
from metacortex.console.filtering import Filters, form_context, read_filters
from metacortex.domain.records import ALL_STATES, BranchState, Memory
from metacortex.errors import MetaCortexError
from metacortex.owner import Session

PAGE_SIZE: Final = 25
STATE_WORDS: Final = {
    "active": "active",
    "wip": "draft",
    "merged": "merged",
    "deprecated": "deprecated",
}


def row(memory: Memory) -> dict[str, Any]:
    """What a listing shows of a record."""
    return {
        "id": memory.id,
        "content": memory.content,
        "topic": memory.topic,
        "state": memory.branch_state.value,
        "created_at": memory.created_at,
        "origin": memory.provenance.origin.value if memory.provenance.origin else None,
        "image": memory.modality.value != "text",
        "score": None,
        "breakdown": None,
    }


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
    counts = await console.call(service.store.topic_counts)
    if not counts:
        return console.render(request, session, "browse.html", {"title": "Memories", "empty": True})
    filters = read_filters(request, counts)
    here = console.url(request, "/console")
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
        "older_url": None,
        "newer_url": None,
        "newest_url": None,
        "topic": filters.topic,
        "topic_total": sum(counts[filters.topic].values()) if filters.topic else 0,
        **form_context(filters, counts),
    }
    if filters.topic is not None and filters.topic != filters.given.get("topic"):
        context["notice"] = f"Showing topic “{filters.topic}” (topic names match in any case)."
    if filters.unknown_topic is not None:
        return console.render(request, session, "browse.html", context)
    cursor = request.query_params.get("cursor") or None
    newer = request.query_params.get("newer") == "1"
    try:
        page = await console.call(
            service.page,
            access=ADMIN,
            limit=PAGE_SIZE,
            cursor=cursor,
            newer=newer,
            **filters.service_arguments(),
        )
    except MetaCortexError as error:
        context["error"] = error.message
        return console.render(request, session, "browse.html", context, status_code=400)
    start = _start(request) if page.newer_cursor is not None else 1
    shown = len(page.memories)
    links = filters.link_arguments()
    context.update(
        items=[row(memory) for memory in page.memories],
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
    return console.render(request, session, "browse.html", context)
