"""Relations in the console: a memory's neighbourhood on its page, and a topic's graph.

Both are pictures made here (``console/svg.py``: SVG, no script) with the same
relations listed as text beside them. A memory's page shows what ``related_context``
returns for it (``PICTURE_DEPTH`` links out, at most ``usecases.relations.MAX_NODES``
memories: the tool's bounds); the owner adds a relation there and invalidates one
(``console/relating.py``). The topic's graph page (``/console/graph?topic=``) shows a
page of ``memory://graph`` (``usecases.relations.graph``: the newest memories of the
space or topic and their relations), with a link to the next page.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from starlette.requests import Request
from starlette.responses import Response

from metacortex.console.base import ConsoleBase, access_for
from metacortex.console.svg import Edge, Node, picture
from metacortex.domain.records import Memory
from metacortex.domain.relations import CALLER_TYPES
from metacortex.domain.text import summarize
from metacortex.errors import MetaCortexError
from metacortex.owner import Session
from metacortex.service import Access

# How many links out a memory's page draws (related_context allows up to 3).
PICTURE_DEPTH: Final = 2
# The types the owner may add or invalidate, in the form's order.
OWNER_TYPES: Final = sorted(t.value for t in CALLER_TYPES)
NOTICES: Final = {
    "related": "The relation was added.",
    "unrelated": "The relation was invalidated; it is kept, marked invalid, for history.",
}


def _listed(
    edges: Sequence[Mapping[str, Any]], summaries: Mapping[str, str], linkable: set[str]
) -> list[dict[str, Any]]:
    """The relations as the text list shows them: both ends' summaries, whether each end
    has a page, and whether the owner may invalidate it."""
    return [
        {
            "source": edge["source"],
            "target": edge["target"],
            "type": edge["type"],
            "note": edge.get("note") or "",
            "source_summary": summaries.get(edge["source"], ""),
            "target_summary": summaries.get(edge["target"], ""),
            "source_linked": edge["source"] in linkable,
            "target_linked": edge["target"] in linkable,
            "editable": edge["type"] in OWNER_TYPES,
        }
        for edge in edges
    ]


def _plural(count: int, word: str, words: str) -> str:
    return f"{count} {word if count == 1 else words}"


async def relations_context(console: ConsoleBase, access: Access, memory: Memory) -> dict[str, Any]:
    """What a memory's page shows of its relations (``relations`` in its context)."""
    found = await console.call(
        console.service.related_context, access=access, id=memory.id, depth=PICTURE_DEPTH
    )
    nodes = found["nodes"]
    edges = found["edges"]
    summaries = {node["id"]: node["summary"] for node in nodes}
    others = _plural(len(nodes) - 1, "memory", "memories")
    joins = _plural(len(edges), "relation", "relations")
    description = (
        f"{others} within {PICTURE_DEPTH} links of this one, joined by {joins}. "
        "This memory is the box in the middle, in bold; "
        "each arrow points from a memory to the one it relates to and names the type. "
        "The same relations are listed as text below the picture."
    )
    svg = (
        picture(
            [Node(node["id"], node["summary"]) for node in nodes],
            [Edge(e["source"], e["target"], e["type"]) for e in edges],
            root=memory.id,
            title=f"Memories related to “{summarize(memory.content)}”",
            description=description,
            ident="neighbourhood",
        )
        if edges
        else None
    )
    linkable = {node["id"] for node in nodes if node["kind"] == "memory"}
    return {
        "picture": svg,
        "description": description,
        "edges": _listed(edges, summaries, linkable),
        "truncated": found["truncated"],
        "depth": PICTURE_DEPTH,
        "types": OWNER_TYPES,
    }


async def graph_page(console: ConsoleBase, request: Request, session: Session) -> Response:
    """A page of the space's (or topic's) graph: the picture, its relations as text, the
    memories without any, and the next page."""
    access = access_for(request)
    params = request.query_params
    topic = params.get("topic", "").strip() or None
    try:
        found = await console.call(
            console.service.graph, access=access, topic=topic, cursor=params.get("cursor")
        )
    except MetaCortexError as error:
        return console.refused(request, session, error, "No such graph")
    nodes = found["nodes"]
    edges = found["edges"]
    summaries = {node["id"]: node["summary"] for node in nodes}
    linkable = set(summaries)
    # A relation from this page to a memory on another page: that end is read too (one
    # read), so the picture and the list can name it.
    outside = list(
        dict.fromkeys(
            end
            for edge in edges
            for end in (edge["source"], edge["target"])
            if end not in summaries
        )
    )
    if outside:
        records = await console.call(
            console.service.store.get_many, memory_ids=outside, space=found["space"]
        )
        for end, record in zip(outside, records, strict=True):
            summaries[end] = summarize(record.content) if record is not None else end
            if record is not None:
                linkable.add(end)
    linked = {end for edge in edges for end in (edge["source"], edge["target"])}
    drawn = [Node(end, summaries[end]) for end in summaries if end in linked]
    where = f"the topic “{topic}”" if topic else "this space"
    related = _plural(len(drawn), "memory", "memories")
    joins = _plural(len(edges), "relation", "relations")
    description = (
        f"{related} of {where} with relations, joined by {joins}; each arrow points from a "
        "memory to the one it relates to and names the type. The same relations are listed "
        "as text below."
    )
    svg = (
        picture(
            drawn,
            [Edge(e["source"], e["target"], e["type"]) for e in edges],
            root=None,
            title=f"Relations among the memories of {where}",
            description=description,
            ident="topic-graph",
        )
        if edges
        else None
    )
    context = {
        "title": f"Graph of {topic}" if topic else "Graph",
        "topic": topic or "",
        "picture": svg,
        "description": description,
        "edges": _listed(edges, summaries, linkable),
        "alone": [node for node in nodes if node["id"] not in linked],
        "shown": len(nodes),
        "next_cursor": found["next_cursor"],
    }
    return console.render(request, session, "graph.html", context)
