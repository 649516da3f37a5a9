"""Read-only pages: browse (topics, filters, keyset paging), one record, search."""

from __future__ import annotations

from typing import Any, Final
from urllib.parse import urlencode

from starlette.requests import Request
from starlette.responses import Response

from metacortex.console.base import ADMIN, ConsoleBase
from metacortex.domain.records import ALL_STATES, BranchState, Memory, Origin, to_wire_time
from metacortex.errors import MetaCortexError, NotFound
from metacortex.owner import Session

PAGE_SIZE: Final = 25
SEARCH_LIMIT: Final = 20
# How far a supersession chain is followed on a record page.
CHAIN_HOPS: Final = 20
STATES: Final = tuple(state.value for state in ALL_STATES)
ORIGINS: Final = tuple(origin.value for origin in Origin)


def _filters(request: Request) -> dict[str, str]:
    """The filter fields of a browse or search request, as given (empty ones dropped)."""
    names = ("topic", "state", "origin", "valid_at")
    return {n: v.strip() for n in names if (v := request.query_params.get(n, "")).strip()}


def _states(value: str | None) -> list[str] | str:
    if value == "all":
        return list(STATES)
    return value or BranchState.ACTIVE.value


def _row(item: dict[str, Any]) -> dict[str, Any]:
    return {"id": item["id"], "summary": item["summary"], **item["metadata"]}


async def browse(console: ConsoleBase, request: Request, session: Session) -> Response:
    filters = _filters(request)
    cursor = request.query_params.get("cursor") or None
    service = console.service
    counts = await console.call(service.store.topic_counts)
    topics = [
        {
            "name": name,
            "counts": [(state, by_state.get(BranchState(state), 0)) for state in STATES],
            "total": sum(by_state.values()),
        }
        for name, by_state in counts.items()
    ]
    context: dict[str, Any] = {
        "title": "Memories",
        "topics": topics,
        "filters": filters,
        "states": STATES,
        "origins": ORIGINS,
        "items": [],
        "next_url": None,
        "first_url": None,
        "topic_total": 0,
    }
    try:
        page = await console.call(
            service.list_memories,
            access=ADMIN,
            filter_topic=filters.get("topic"),
            filter_state=_states(filters.get("state")),
            filter_origin=filters.get("origin"),
            valid_at=filters.get("valid_at"),
            limit=PAGE_SIZE,
            cursor=cursor,
        )
    except MetaCortexError as error:
        context["error"] = error.message
        return console.render(request, session, "browse.html", context, status_code=400)
    context["items"] = [_row(item) for item in page["items"]]
    if page["next_cursor"]:
        query = urlencode({**filters, "cursor": page["next_cursor"]})
        context["next_url"] = console.url(request, "/console") + "?" + query
    context["first_url"] = (
        console.url(request, "/console") + ("?" + urlencode(filters) if filters else "")
        if cursor
        else None
    )
    context["topic_total"] = next(
        (topic["total"] for topic in topics if topic["name"] == filters.get("topic")), 0
    )
    return console.render(request, session, "browse.html", context)


async def _lookup(console: ConsoleBase, memory_id: str) -> Memory | None:
    try:
        return await console.call(console.service.memory, access=ADMIN, memory_id=memory_id)
    except NotFound:
        return None


async def record(console: ConsoleBase, request: Request, session: Session) -> Response:
    memory_id = request.path_params["memory_id"]
    try:
        memory = await console.call(console.service.memory, access=ADMIN, memory_id=memory_id)
    except MetaCortexError as error:
        return console.refused(request, session, error, "No such memory")
    chain: list[Memory] = []
    seen = {memory.id}
    current = memory
    broken: str | None = None  # where the chain leads to a record no longer stored
    while current.superseded_by and len(chain) < CHAIN_HOPS:
        following = await _lookup(console, current.superseded_by)
        if following is None:
            broken = current.superseded_by
            break
        if following.id in seen:
            break
        chain.append(following)
        seen.add(following.id)
        current = following
    sources = [
        (source_id, await _lookup(console, source_id))
        for source_id in memory.provenance.derived_from
    ]
    gone = [source_id for source_id, source in sources if source is None]
    if broken is not None:
        gone.append(broken)
    tombstones = (
        await console.call(console.service.store.tombstones, memory_ids=gone) if gone else {}
    )
    erased = {
        memory_id: {"erased_at": to_wire_time(t.erased_at), "erased_by": t.erased_by}
        for memory_id, t in tombstones.items()
    }
    merged_into = chain[0] if chain and memory.id in chain[0].provenance.derived_from else None
    description = None
    if memory.retrieval_text != memory.content:
        marker = "[Image] "
        text = memory.retrieval_text
        description = text.split(marker, 1)[1] if marker in text else text
    context = {
        "title": f"Memory {memory.id}",
        "memory": memory,
        "meta": memory.metadata(),
        "chain": chain,
        "broken": broken,
        "erased": erased,
        "sources": sources,
        "merged_into": merged_into,
        "description": description,
        "notice": _NOTICES.get(request.query_params.get("done", "")),
    }
    return console.render(request, session, "record.html", context)


_NOTICES: Final = {
    "deprecated": "The memory was deprecated.",
    "corrected": "The correction was saved; the wrong memory is deprecated as corrected.",
    "promoted": "The draft is now active.",
    "consolidated": "The drafts were merged into this memory.",
}


async def search(console: ConsoleBase, request: Request, session: Session) -> Response:
    filters = _filters(request)
    query = request.query_params.get("q", "").strip()
    context: dict[str, Any] = {
        "title": "Search",
        "query": query,
        "filters": filters,
        "states": STATES,
        "origins": ORIGINS,
        "matches": None,
    }
    if query:
        try:
            result = await console.call(
                console.service.search,
                access=ADMIN,
                query=query,
                filter_topic=filters.get("topic"),
                filter_state=_states(filters.get("state")),
                filter_origin=filters.get("origin"),
                valid_at=filters.get("valid_at"),
                limit=SEARCH_LIMIT,
                explain=True,
            )
        except MetaCortexError as error:
            context["error"] = error.message
            return console.render(request, session, "search.html", context, status_code=400)
        context["matches"] = result["matches"]
    return console.render(request, session, "search.html", context)
