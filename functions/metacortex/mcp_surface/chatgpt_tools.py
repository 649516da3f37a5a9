"""ChatGPT's data-only tool shapes, ``search`` and ``fetch``, over the same corpus.

ChatGPT's deep research and company-knowledge modes call only tools named
``search(query)`` and ``fetch(id)``: ``search`` answers one text item holding
``{"results": [{"id", "title", "url"}]}``, ``fetch`` one holding
``{"id", "title", "text", "url", "metadata"}`` (topic, state, creation time, and who
created and last changed the memory). A profile opts in with
``chatgptDataTools`` (an OAuth grant with the consent page's checkbox); the tools
then follow the profile's ``search_context`` / ``fetch_context`` rights and states
(the tool catalogue's ``stands_for``).

ChatGPT cites results by ``url`` and asks for a canonical https URL: with a public
URL configured (``METACORTEX_PUBLIC_URL``) it is the record's page in the owner's
console, else the opaque ``metacortex:memory/<id>``.
"""

from __future__ import annotations

from typing import Any, Final
from urllib.parse import quote

import mcp_types as types
from pydantic import Field

from metacortex.domain import limits
from metacortex.mcp_surface import schemas
from metacortex.service import Access, MemoryService

SEARCH: Final = "search"
FETCH: Final = "fetch"


class SearchInput(schemas.ToolInput):
    query: str = Field(min_length=1, max_length=limits.MAX_QUERY_CHARS, description="What to find.")


class FetchInput(schemas.ToolInput):
    id: str = Field(min_length=1, max_length=128, description="An id from search results.")


def record_url(public_url: str | None, memory_id: str) -> str:
    """Where a citation of the record points (see the module's note)."""
    if public_url:
        return f"{public_url.rstrip('/')}/console/memories/{quote(memory_id, safe='')}"
    return f"metacortex:memory/{memory_id}"


def _title(text: str) -> str:
    line = " ".join(text.split())
    return line if len(line) <= 80 else line[:79] + "…"


def run_search(
    service: MemoryService, access: Access, args: dict[str, Any], public_url: str | None = None
) -> dict[str, Any]:
    found = service.search(access, query=args["query"])
    return {
        "results": [
            {
                "id": match["id"],
                "title": _title(match["summary"]),
                "url": record_url(public_url, match["id"]),
            }
            for match in found["matches"]
        ]
    }


def run_fetch(
    service: MemoryService, access: Access, args: dict[str, Any], public_url: str | None = None
) -> dict[str, Any]:
    item = service.fetch(access, id=args["id"])["item"]
    metadata = item["metadata"]
    return {
        "id": item["id"],
        "title": _title(item["content"]),
        "text": item["content"],
        "url": record_url(public_url, item["id"]),
        "metadata": {
            "topic": metadata["topic"],
            "state": metadata["branch_state"],
            "created_at": metadata["created_at"],
            # Who wrote it and who last changed its state, as every other result says.
            "created_by": metadata["created_by"],
            "changed_by": metadata["changed_by"],
        }
        # A document's passage cites the document (title, page, section).
        | ({"document": metadata["document"]} if "document" in metadata else {}),
    }


DEFINITIONS: Final = {
    SEARCH: types.Tool(
        name=SEARCH,
        title="Search memories (ChatGPT shape)",
        description="Search the user's saved memories. Returns result ids, titles and URLs; "
        "call fetch with an id for the full text.",
        input_schema=schemas.input_schema(SearchInput),
        annotations=types.ToolAnnotations(read_only_hint=True, open_world_hint=False),
    ),
    FETCH: types.Tool(
        name=FETCH,
        title="Fetch a memory (ChatGPT shape)",
        description="Fetch one memory's full text by the id search returned.",
        input_schema=schemas.input_schema(FetchInput),
        annotations=types.ToolAnnotations(read_only_hint=True, open_world_hint=False),
    ),
}
INPUTS: Final[dict[str, type[schemas.ToolInput]]] = {SEARCH: SearchInput, FETCH: FetchInput}
RUNNERS: Final = {SEARCH: run_search, FETCH: run_fetch}
