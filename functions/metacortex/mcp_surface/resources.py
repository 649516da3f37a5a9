"""MCP resources: ``memory://spaces``, ``memory://topics``, ``memory://recent`` and the
template ``memory://{id}``.

What an agent (or the person driving it) can attach at the start of a session
without calling a tool. Each follows the caller's profile exactly as the tools do:

- a profile with a reading tool (the tool catalogue's group ``reading``:
  ``search_context``, ``fetch_context``, ``list_context``) gets ``memory://topics``:
  every topic with its count per state, counting and naming only the states the
  profile may read;
- and, when it may read ``active`` memories, ``memory://recent``: the newest
  active memories, with their content only where ``fetch_context`` is allowed
  (otherwise the summary ``list_context`` shows);
- ``memory://{id}`` is ``fetch_context`` as a resource: offered only where that
  tool is, with its visibility rules and errors (an erased memory says so);
- ``memory://spaces``: the spaces the credential holds, as ``list_spaces`` says.

Each reads one space: the credential's default, or ``?space=KEY`` after the URI
(``memory://topics?space=work``); a space not granted reads as a missing one.

A resource the profile is not offered is an unknown resource. Errors are JSON-RPC
errors, as resources have no ``isError`` result: a memory that is not found (or
not visible) and a malformed URI are ``-32602`` (invalid params) with
``data.uri``, as the SDK's own ``MCPServer`` answers an unknown resource; a store
failure is ``-32603``. Every read becomes one ``memory_events`` record
(``event_type: "resource_read"``).
"""

from __future__ import annotations

import json
import logging
import time
from dataclasses import dataclass
from functools import partial
from typing import Any, Final, NoReturn
from urllib.parse import unquote

import anyio.to_thread
import mcp_types as types
from mcp.shared.exceptions import MCPError

from metacortex import tool_catalogue
from metacortex.access.profiles import Profile
from metacortex.apps import views
from metacortex.domain.records import BranchState
from metacortex.domain.text import summarize
from metacortex.errors import InvalidArgument, MetaCortexError, Unavailable
from metacortex.kernel.runtime import Runtime
from metacortex.mcp_surface.recording import record_request
from metacortex.service import MemoryService
from metacortex.tool_catalogue import Group

SCHEME: Final = "memory://"
TOPICS_URI: Final = "memory://topics"
RECENT_URI: Final = "memory://recent"
SPACES_URI: Final = "memory://spaces"
GRAPH_URI: Final = "memory://graph"
MEMORY_TEMPLATE: Final = "memory://{id}"
RECENT_COUNT: Final = 20
JSON_TYPE: Final = "application/json"
BODY_TOOL: Final = "fetch_context"
_MAX_LOGGED_URI: Final = 128

TOPICS: Final = types.Resource(
    uri=TOPICS_URI,
    name="topics",
    title="Memory topics",
    description=(
        "Every topic in the memory with how many memories it holds in each lifecycle state "
        "this endpoint may read. Use a topic as filter_topic in search_context or list_context."
    ),
    mime_type=JSON_TYPE,
)
RECENT: Final = types.Resource(
    uri=RECENT_URI,
    name="recent",
    title="Recent memories",
    description=(
        f"The {RECENT_COUNT} most recently saved active memories, newest first: what to know "
        "at the start of a session. Each has its content where this endpoint offers "
        "fetch_context, else a summary."
    ),
    mime_type=JSON_TYPE,
)
SPACES: Final = types.Resource(
    uri=SPACES_URI,
    name="spaces",
    title="Your spaces",
    description=(
        "The spaces this credential may read or write, with the default one: add "
        "?space=KEY to memory://topics, memory://recent or memory://<id> to read another."
    ),
    mime_type=JSON_TYPE,
)
GRAPH: Final = types.Resource(
    uri=GRAPH_URI,
    name="graph",
    title="Memory graph",
    description=(
        "How memories link: a page of the newest memories as nodes and the links among and "
        "from them (supersedes, derived_from, updates, extends, derives, relates_to, a "
        "document's passages) as edges. Narrow it with ?space=KEY&topic=T; pass the page's "
        "next_cursor as &cursor= for the next."
    ),
    mime_type=JSON_TYPE,
)
MEMORY: Final = types.ResourceTemplate(
    uri_template=MEMORY_TEMPLATE,
    name="memory",
    title="One memory",
    description=(
        "One memory in full (content and metadata) by its id, as fetch_context returns it, "
        "e.g. memory://01hq3v6kz8m2x4c7d9f0g1h2j3. Ids come from search_context, "
        "list_context and memory://recent."
    ),
    mime_type=JSON_TYPE,
)


def reads(profile: Profile) -> bool:
    """Whether the profile may read memories at all (one of the catalogue's reading
    tools)."""
    return bool(profile.allowed_tools & set(tool_catalogue.in_group(Group.READING)))


def reads_bodies(profile: Profile) -> bool:
    """Whether the profile may see a memory's content (``fetch_context``)."""
    return BODY_TOOL in profile.allowed_tools


def reads_recent(profile: Profile) -> bool:
    """Whether the profile may read the newest active memories."""
    return reads(profile) and BranchState.ACTIVE in profile.readable_states


def resources_for(profile: Profile) -> list[types.Resource]:
    """What ``resources/list`` shows this profile."""
    offered = [SPACES, TOPICS, GRAPH] if reads(profile) else []
    offered += [RECENT] if reads_recent(profile) else []
    return [resource.model_copy(deep=True) for resource in offered]


def templates_for(profile: Profile) -> list[types.ResourceTemplate]:
    """What ``resources/templates/list`` shows this profile."""
    return [MEMORY.model_copy(deep=True)] if reads_bodies(profile) else []


class UnknownResource(Exception):
    """A URI this server has no resource for, or one the profile is not offered."""


@dataclass(frozen=True, slots=True)
class Read:
    kind: str  # the resource's name: spaces, topics, recent, memory
    payload: dict[str, Any]
    summary: dict[str, Any]  # ids and counts for the event, never a body


def read(service: MemoryService, profile: Profile, uri: str) -> Read:
    """The resource at ``uri`` as ``profile`` may see it (synchronous: store reads).

    UnknownResource for a URI the profile is not offered; domain errors as the
    matching tool raises them."""
    base, params = _params(uri)
    space = params.get("space")
    if base == GRAPH_URI and reads(profile):
        _only(params, {"space", "topic", "cursor"})
        found = service.graph(
            profile.access, space=space, topic=params.get("topic"), cursor=params.get("cursor")
        )
        summary = {"node_count": len(found["nodes"]), "edge_count": len(found["edges"])}
        return Read("graph", found, summary)
    _only(params, {"space"})
    if base == SPACES_URI and space is None and reads(profile):
        listed = service.list_spaces(profile.access)
        return Read("spaces", listed, {"space_count": len(listed["spaces"])})
    if base == TOPICS_URI and reads(profile):
        return _topics(service, profile, space)
    if base == RECENT_URI and reads_recent(profile):
        return _recent(service, profile, space)
    if (
        base.startswith(SCHEME)
        and base not in (TOPICS_URI, RECENT_URI, SPACES_URI, GRAPH_URI)
        and reads_bodies(profile)
    ):
        memory_id = base[len(SCHEME) :]
        if not memory_id:
            raise InvalidArgument("a memory URI is memory://<id>; the id is missing")
        payload = service.fetch(profile.access, id=memory_id, space=space)
        item = payload["item"]
        summary = {"id": item["id"], "branch_state": item["metadata"]["branch_state"]}
        return Read("memory", item, summary)
    raise UnknownResource(uri)


def _params(uri: str) -> tuple[str, dict[str, str]]:
    """(the URI without its query, its parameters: each once, with a value)."""
    base, _, query = uri.partition("?")
    params: dict[str, str] = {}
    for pair in query.split("&") if query else ():
        key, _, value = pair.partition("=")
        if not key or not value or key in params:
            raise InvalidArgument(
                f"a resource URI's parameters are key=value pairs; got {pair[:60]!r}"
            )
        params[key] = unquote(value)
    return base, params


def _only(params: dict[str, str], allowed: set[str]) -> None:
    unknown = sorted(set(params) - allowed)
    if unknown:
        raise InvalidArgument(
            f"unknown parameter {unknown[0][:40]!r}; this resource takes: "
            + ", ".join(sorted(allowed))
        )


def _topics(service: MemoryService, profile: Profile, space: str | None) -> Read:
    topics = service.topics(profile.access, space=space)
    payload = {
        "space": profile.access.space(space),
        "topics": [
            {
                "topic": entry.topic,
                "counts": {state.value: count for state, count in entry.counts.items()},
                "total": entry.total,
            }
            for entry in topics
        ],
        "readable_states": sorted(state.value for state in profile.readable_states),
    }
    return Read("topics", payload, {"topic_count": len(topics)})


def _recent(service: MemoryService, profile: Profile, space: str | None) -> Read:
    access = profile.access
    recent = service.recent(access, limit=RECENT_COUNT, space=space)
    bodies = reads_bodies(profile)
    items = [
        memory.to_item(access.names)
        if bodies
        else {
            "id": memory.id,
            "summary": summarize(memory.content),
            "metadata": memory.metadata(access.names),
        }
        for memory in recent.memories
    ]
    payload = {
        "space": access.space(space),
        "items": items,
        "state": BranchState.ACTIVE.value,
        "more": recent.more,
    }
    return Read("recent", payload, {"item_count": len(items), "has_more": recent.more})


async def read_resource(
    runtime: Runtime, profile: Profile, uri: str, protocol_version: str | None = None
) -> types.ReadResourceResult:
    """``resources/read``: the JSON of the resource, or a JSON-RPC error; recorded."""
    started = time.perf_counter()
    if views.is_view_uri(uri):
        return _read_view(runtime, profile, uri, started, protocol_version)
    try:
        service = await runtime.ready_service()
        found = await anyio.to_thread.run_sync(partial(read, service, profile, uri))
    except UnknownResource:
        offered = [r.uri for r in resources_for(profile)]
        offered += [t.uri_template for t in templates_for(profile)]
        message = f"unknown resource {uri[:_MAX_LOGGED_URI]!r}; this endpoint offers: " + (
            ", ".join(offered) or "no resources"
        )
        error = {"code": "invalid_argument", "message": message}
        record_request(
            runtime,
            profile,
            "resource_read",
            "unknown",
            {"uri": uri},
            started,
            protocol_version,
            error=error,
        )
        raise MCPError(types.INVALID_PARAMS, message, {"uri": uri}) from None
    except MetaCortexError as failure:
        _fail(runtime, profile, uri, failure, started, protocol_version)
    except Exception:
        logging.getLogger("metacortex.server").exception("reading a resource failed unexpectedly")
        unexpected = Unavailable("the memory service failed unexpectedly; try again later")
        _fail(runtime, profile, uri, unexpected, started, protocol_version)
    record_request(
        runtime,
        profile,
        "resource_read",
        found.kind,
        {"uri": uri},
        started,
        protocol_version,
        response=found.summary,
    )
    if found.kind == "memory" and runtime.events is not None:
        runtime.events.fetch(client_id=profile.id, fetched_ids=[found.payload["id"]])
    text = json.dumps(found.payload, ensure_ascii=False, separators=(",", ":"))
    return types.ReadResourceResult(
        contents=[types.TextResourceContents(uri=uri, mime_type=JSON_TYPE, text=text)]
    )


def _read_view(
    runtime: Runtime, profile: Profile, uri: str, started: float, protocol_version: str | None
) -> types.ReadResourceResult:
    """A view's HTML (``metacortex.apps``): the same for every caller, it holds no memory."""
    found = views.read(uri)
    message = f"unknown view {uri[:_MAX_LOGGED_URI]!r}; the views are: {views.offered()}"
    error = {"code": "invalid_argument", "message": message} if found is None else None
    record_request(
        runtime,
        profile,
        "resource_read",
        "view",
        {"uri": uri},
        started,
        protocol_version,
        response={"uri": uri} if found is not None else None,
        error=error,
    )
    if found is None:
        raise MCPError(types.INVALID_PARAMS, message, {"uri": uri})
    return found


def _fail(
    runtime: Runtime,
    profile: Profile,
    uri: str,
    failure: MetaCortexError,
    started: float,
    protocol_version: str | None,
) -> NoReturn:
    error = failure.to_payload()["error"]
    record_request(
        runtime,
        profile,
        "resource_read",
        _kind(uri),
        {"uri": uri},
        started,
        protocol_version,
        error=error,
    )
    code = types.INTERNAL_ERROR if failure.retryable else types.INVALID_PARAMS
    raise MCPError(code, failure.message, {"uri": uri, "code": failure.code}) from None


def _kind(uri: str) -> str:
    base = uri.partition("?")[0]
    named = {TOPICS_URI: "topics", RECENT_URI: "recent", SPACES_URI: "spaces", GRAPH_URI: "graph"}
    return named.get(base, "memory")
