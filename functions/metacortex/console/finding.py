"""Finding another memory by search, for a form that links to it: the deprecation's
replacement, a new memory's relation, a relation added on a memory's page.

The search is the tools' own (``service.search``, active and draft memories of one
space); the memory already chosen stays offered when a new search does not find it."""

from __future__ import annotations

from typing import Any, Final

from starlette.requests import Request

from metacortex.console.base import ConsoleBase, access_for
from metacortex.console.browse import record_link, row
from metacortex.domain.records import BranchState

# Memories a search offers to choose from.
CANDIDATES: Final = 10


async def candidates(
    console: ConsoleBase,
    request: Request,
    query: str,
    *,
    space: str | None = None,
    excluding: str | None = None,
    chosen: str | None = None,
) -> list[dict[str, Any]]:
    """Memories of ``space`` (the page's when None) the search finds for ``query``
    (active or draft, not ``excluding``), and ``chosen``, as listing rows."""
    service = console.service
    access = access_for(request)
    space = access.space(space)
    ids: list[str] = []
    if query:
        result = await console.call(
            service.search,
            access=access,
            query=query,
            filter_state=[BranchState.ACTIVE.value, BranchState.WIP.value],
            limit=CANDIDATES + 1,
            space=space,
        )
        ids = [str(match["id"]) for match in result["matches"] if match["id"] != excluding]
        ids = ids[:CANDIDATES]
    if chosen and chosen not in ids and chosen != excluding:
        ids.insert(0, chosen)
    records = await console.call(service.store.get_many, memory_ids=ids, space=space) if ids else []
    return [
        row(record, record_link(console, request, record.id, space=space))
        for record in records
        if record is not None
    ]
