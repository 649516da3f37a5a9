"""One record's page: its content, what replaced it and what it replaced, its consolidation
lineage both ways, its details (its space, who wrote it and who last changed it, with
which client; "unattributed" for a record saved before authors were kept), the curation
toolbar, and for the owner "Move to space" (``console.relocate``). Reached from a search (``q`` and
the search's filters in the link) it says why the record matched: its rank and its score
split into semantic, keyword and context parts, the query's words marked in the text.
Right after a change it confirms it, with an Undo button while the undo lasts. A refused
change renders this page again with the error and what was typed."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from starlette.requests import Request
from starlette.responses import Response

from metacortex.access.model import Level
from metacortex.console.authors import author, client_names, clients_of
from metacortex.console.base import ConsoleBase, access_for
from metacortex.console.excerpt import highlight
from metacortex.console.filtering import FIELDS, STATES
from metacortex.console.finding import candidates
from metacortex.console.graph import NOTICES as RELATION_NOTICES
from metacortex.console.graph import relations_context
from metacortex.console.present import first_line
from metacortex.console.switcher import space_labels
from metacortex.console.undoing import offered
from metacortex.console.words import merge_method
from metacortex.domain.records import Memory, to_wire_time
from metacortex.errors import MetaCortexError, NotFound
from metacortex.owner import Session
from metacortex.retrieval.text import query_terms
from metacortex.service import Access

# How far a supersession chain is followed on a record page.
CHAIN_HOPS: Final = 20
NOTICES: Final = {
    "deprecated": "The memory was deprecated.",
    # A person's change of a memory someone else wrote (usecases.lifecycle.contested).
    "contested": "Someone else wrote this memory, so it stays as it is: its author or the "
    "owner can retire it.",
    "corrected-contested": "The correction was saved. The memory it corrects was written by "
    "someone else, so it stays as it is: its author or the owner can retire it.",
    "corrected": "The correction was saved; the wrong memory is deprecated as corrected.",
    "promoted": "The draft is now active.",
    "consolidated": "The memories were merged into this one.",
    "consolidated-contested": "The memories were merged into this one. Some of them were "
    "written by someone else, so they stay active (listed below): their author or the "
    "owner can retire them.",
    "undone-deprecate": "Undone: the memory is back as it was before the deprecation.",
    "undone-promote": "Undone: the memory is a draft again.",
    "undone-correct": "Undone: this memory is back as it was; the correction is deprecated "
    "(replaced by this one) and kept for history.",
    "undone-move": "Undone: the memory is back in its topic.",
    "saved": "The memory was saved.",
    "saved-duplicate": "The same text was saved in this space a moment ago: this is that "
    "memory, kept once.",
    "moved-space": "The memory was moved to this space (same id, authors and history).",
    **RELATION_NOTICES,
}
# How many search results the page looks through to say why a record matched (the
# search page shows as many).
WHY_LIMIT: Final = 20


async def _lookup(console: ConsoleBase, access: Access, memory_id: str) -> Memory | None:
    try:
        return await console.call(console.service.memory, access=access, memory_id=memory_id)
    except NotFound:
        return None


async def _chain(
    console: ConsoleBase, access: Access, memory: Memory
) -> tuple[list[Memory], str | None]:
    """The records that replaced this one, in order, and the id where the chain leads to
    a record no longer stored (erased), if it does."""
    chain: list[Memory] = []
    seen = {memory.id}
    current = memory
    while current.superseded_by and len(chain) < CHAIN_HOPS:
        following = await _lookup(console, access, current.superseded_by)
        if following is None:
            return chain, current.superseded_by
        if following.id in seen:
            break
        chain.append(following)
        seen.add(following.id)
        current = following
    return chain, None


async def record_context(console: ConsoleBase, access: Access, memory: Memory) -> dict[str, Any]:
    """Everything the record page shows of ``memory`` (of the caller's page space)."""
    chain, broken = await _chain(console, access, memory)
    space = access.space()
    sources = [
        (source_id, await _lookup(console, access, source_id))
        for source_id in memory.provenance.derived_from
    ]
    store = console.service.store
    replaced = [
        older
        for older in await console.call(
            store.superseded_by_any, memory_ids=[memory.id], space=space
        )
        if older.id not in memory.provenance.derived_from
    ]
    gone = [source_id for source_id, source in sources if source is None]
    if broken is not None:
        gone.append(broken)
    tombstones = await console.call(store.tombstones, memory_ids=gone, space=space) if gone else {}
    clients = await client_names(console, clients_of([memory]))
    labels = space_labels(access.directory, sorted(access.levels))
    description = None
    if memory.retrieval_text != memory.content:
        marker = "[Image] "
        text = memory.retrieval_text
        description = text.split(marker, 1)[1] if marker in text else text
    return {
        "title": first_line(memory.content, 80),
        "memory": memory,
        "state": memory.branch_state.value,
        "meta": memory.metadata(),
        "chain": chain,
        "broken": broken,
        "erased": {
            memory_id: {"erased_at": to_wire_time(t.erased_at), "erased_by": t.erased_by}
            for memory_id, t in tombstones.items()
        },
        "sources": sources,
        "replaced": replaced,
        "merged_into": (
            chain[0] if chain and memory.id in chain[0].provenance.derived_from else None
        ),
        "merged_by": merge_method(memory.merge_method) if memory.merge_method else None,
        "description": description,
        "space_label": labels.get(memory.space, memory.space),
        "created_by": author(memory.created_by, access.names, clients),
        "changed_by": author(memory.changed_by, access.names, clients),
        # The owner moves a memory to any other space (``console.relocate``).
        "move_targets": [
            (key, label)
            for key, label in labels.items()
            if access.is_owner and key != space and access.levels[key] == Level.WRITE
        ],
        "content": highlight(memory.content, ()),
        # The owner's "Add a relation" finds the other memory by search (``relate_q``).
        "relate_query": "",
        "relate_candidates": [],
        "why": None,
        "contested": [],
        "kept": {},
        "relations": await relations_context(console, access, memory),
    }


async def record(console: ConsoleBase, request: Request, session: Session) -> Response:
    memory_id = request.path_params["memory_id"]
    access = access_for(request)
    try:
        memory = await console.call(console.service.memory, access=access, memory_id=memory_id)
    except MetaCortexError as error:
        return console.refused(request, session, error, "No such memory")
    context = await record_context(console, access, memory)
    params = request.query_params
    context["notice"] = NOTICES.get(params.get("done", ""))
    relate_query = params.get("relate_q", "").strip()
    if relate_query and access.is_owner:
        context["relate_query"] = relate_query
        context["relate_candidates"] = await candidates(
            console, request, relate_query, excluding=memory.id
        )
    # Sources of a consolidation that stayed active (``usecases.lifecycle.contested``).
    context["contested"] = [
        source_id
        for source_id in params.get("contested", "").split(",")
        if source_id in memory.provenance.derived_from
    ]
    undo, kept = await offered(console, params.get("undo"), memory.id)
    if undo is not None:
        context["undo"] = undo
        context["notice"] = " ".join(filter(None, [context["notice"], kept.get("note")]))
    query = params.get("q", "").strip()
    words = params.get("words", "").strip()
    if query or words:
        context["content"] = highlight(memory.content, query_terms(query or words))
    if query:
        context["why"] = await _why(console, access, memory, query, params)
    elif words:
        context["why"] = {"words": words}
    return console.render(request, session, "record.html", context)


async def _why(
    console: ConsoleBase, access: Access, memory: Memory, query: str, params: Mapping[str, str]
) -> dict[str, Any]:
    """Where the record ranks for the search it was opened from (same filters), and its
    score's parts; ``rank`` None when it is no longer among the results."""
    filters = {name: params[name] for name in FIELDS if params.get(name)}
    state = filters.get("state")
    try:
        result = await console.call(
            console.service.search,
            access=access,
            query=query,
            limit=WHY_LIMIT,
            explain=True,
            filter_topic=filters.get("topic"),
            filter_state=None if state is None else (list(STATES) if state == "all" else state),
            filter_origin=filters.get("origin"),
            valid_at=filters.get("valid_at"),
        )
    except MetaCortexError:
        return {"query": query, "rank": None, "of": 0}
    matches = result["matches"]
    for rank, match in enumerate(matches, start=1):
        if match["id"] == memory.id:
            return {
                "query": query,
                "rank": rank,
                "of": len(matches),
                "score": match["score"],
                "breakdown": match["breakdown"],
                "relevant": match["relevance"] == "strong",
                "back": {"q": query, **filters},
            }
    return {"query": query, "rank": None, "of": len(matches), "back": {"q": query, **filters}}


async def record_again(
    console: ConsoleBase,
    request: Request,
    session: Session,
    error: MetaCortexError,
    kept: Mapping[str, str],
) -> Response:
    """The record page again after a refused change: the error, and the form as typed.
    When the record itself cannot be read any more, the refusal page instead."""
    access = access_for(request)
    memory = await _lookup(console, access, request.path_params["memory_id"])
    if memory is None:
        return console.refused(request, session, error, "The change was not made")
    context = await record_context(console, access, memory)
    context.update(error=error.message, kept=dict(kept))
    return console.render(
        request, session, "record.html", context, status_code=console.status_of(error)
    )
