"""The search page: the tools' hybrid search, each result's score split into its parts.

Search always returns its best candidates, even for words no memory holds. Results whose
score is under the relevance floor (``activity.RELEVANCE_FLOOR``, 0.40: no search for
made-up words reached it on LoCoMo) are shown apart as weak matches and not counted as
results, so "nothing relevant" reads as such.
"""

from __future__ import annotations

from typing import Any, Final

from starlette.requests import Request
from starlette.responses import Response

from metacortex.console.activity import RELEVANCE_FLOOR
from metacortex.console.base import ConsoleBase, access_for
from metacortex.console.browse import record_link, row
from metacortex.console.filtering import form_context, read_filters
from metacortex.errors import MetaCortexError
from metacortex.owner import Session
from metacortex.retrieval.text import query_terms

SEARCH_LIMIT: Final = 20


async def search(console: ConsoleBase, request: Request, session: Session) -> Response:
    service = console.service
    access = access_for(request)
    space = access.space()
    counts = await console.call(service.store.topic_counts, space=space)
    filters = read_filters(request, counts)
    query = request.query_params.get("q", "").strip()
    context: dict[str, Any] = {
        "title": "Search",
        "query": query,
        "matches": None,
        "weak": [],
        "floor": RELEVANCE_FLOOR,
        "empty": not counts,
        **form_context(filters, counts),
    }
    if not query or filters.unknown_topic is not None:
        return console.render(request, session, "search.html", context)
    try:
        result = await console.call(
            service.search,
            access=access,
            query=query,
            limit=SEARCH_LIMIT,
            explain=True,
            **filters.service_arguments(),
        )
    except MetaCortexError as error:
        context["error"] = error.message
        return console.render(request, session, "search.html", context, status_code=400)
    matches = result["matches"]
    # The whole records, read together: a result's heading is its content's first line.
    records = await console.call(
        service.store.get_many,
        memory_ids=[str(match["id"]) for match in matches],
        space=space,
    )
    matched = query_terms(query)
    found = {"q": query, **filters.link_arguments()}
    rows = [
        row(
            record,
            record_link(console, request, record.id, **found),
            matched,
            score=match["score"],
            breakdown=match["breakdown"],
        )
        for match, record in zip(matches, records, strict=True)
        if record is not None
    ]
    context["matches"] = [item for item in rows if item["score"] >= RELEVANCE_FLOOR]
    context["weak"] = [item for item in rows if item["score"] < RELEVANCE_FLOOR]
    return console.render(request, session, "search.html", context)
