"""The search page: the tools' hybrid search, each result's score split into its parts.

Search always returns its best candidates, even for words no memory holds. Results the
search judges weak (``relevance``: neither close in meaning nor holding most of the
query's keywords, ``retrieval/relevance.py``, the judgement the tools give a model) are
shown apart as weak matches and not counted as results, so "nothing relevant" reads as
such.

The owner's "All spaces" searches each space (at most ``listing.MAX_SPACES``, side by
side) and keeps the best ``SEARCH_LIMIT`` of all their results by score. Each space's
scores are normalized within that space, so the order across spaces is approximate;
the page says so.
"""

from __future__ import annotations

from typing import Any, Final

import anyio
from starlette.requests import Request
from starlette.responses import Response

from metacortex.console.base import ConsoleBase, access_for
from metacortex.console.browse import listed_spaces, rows, topic_counts
from metacortex.console.filtering import form_context, read_filters
from metacortex.console.switcher import all_spaces
from metacortex.domain.records import Memory
from metacortex.errors import MetaCortexError
from metacortex.owner import Session
from metacortex.retrieval.text import query_terms

SEARCH_LIMIT: Final = 20


async def search(console: ConsoleBase, request: Request, session: Session) -> Response:
    service = console.service
    access = access_for(request)
    spaces, left_out = listed_spaces(request)
    counts = await topic_counts(console, spaces)
    filters = read_filters(request, counts)
    query = request.query_params.get("q", "").strip()
    several = all_spaces(request)
    context: dict[str, Any] = {
        "title": "Search",
        "query": query,
        "matches": None,
        "weak": [],
        "empty": not counts,
        "several": several,
        "spaces_read": len(spaces),
        "left_out": left_out,
        **form_context(filters, counts),
    }
    if not query or filters.unknown_topic is not None:
        return console.render(request, session, "search.html", context)
    found: list[tuple[dict[str, Any], str]] = []
    refused: list[MetaCortexError] = []

    async def one(space: str) -> None:
        try:
            result = await console.call(
                service.search,
                access=access,
                query=query,
                limit=SEARCH_LIMIT,
                explain=True,
                space=space,
                **filters.service_arguments(),
            )
        except MetaCortexError as error:
            refused.append(error)
            return
        found.extend((match, space) for match in result["matches"])

    async with anyio.create_task_group() as group:
        for space in spaces:
            group.start_soon(one, space)
    if refused:
        context["error"] = refused[0].message
        return console.render(request, session, "search.html", context, status_code=400)
    # Each space's scores are its own (normalized per query in each space): merged by
    # score, the best SEARCH_LIMIT of them all.
    found.sort(key=lambda pair: -float(pair[0]["score"]))
    found = found[:SEARCH_LIMIT]
    # The whole records, read together (per space): a result's heading is its content's
    # first line.
    records: dict[str, Memory] = {}
    for space in spaces:
        ids = [str(match["id"]) for match, where in found if where == space]
        if ids:
            got = await console.call(service.store.get_many, memory_ids=ids, space=space)
            records.update((record.id, record) for record in got if record is not None)
    scores = {
        str(match["id"]): {
            "score": match["score"],
            "breakdown": match["breakdown"],
            "relevance": match["relevance"],
        }
        for match, _ in found
    }
    shown = [records[str(match["id"])] for match, _ in found if str(match["id"]) in records]
    rows_ = await rows(
        console,
        request,
        shown,
        query_terms(query),
        {"q": query, **filters.link_arguments()},
        scores,
    )
    context["matches"] = [item for item in rows_ if item["relevance"] == "strong"]
    context["weak"] = [item for item in rows_ if item["relevance"] != "strong"]
    return console.render(request, session, "search.html", context)
