"""The MCP tools: their model-facing definitions and thin adapters over MemoryService.

Plus the owner's ``erase_context``, offered only on the admin endpoint when the
operator turns it on (``METACORTEX_ADMIN_ERASE_TOOL``); where it is not offered
it does not exist (an unknown tool), so the agents' surface is unchanged.

Each call: check the profile may use the tool, validate the arguments with
the tool's pydantic model, run the use case in a worker thread (the service
is synchronous), and return the payload twice, as ``structuredContent`` and as
one ``TextContent`` holding the same JSON. Failures are ``isError`` results
carrying ``{"error": {"code", "message"}}``: domain errors with their own code
and message, anything unexpected as a generic ``unavailable`` (the details go
to the server log only). An unknown tool name is a JSON-RPC error (-32602), as
MCP 2025-11-25 requires. Every call becomes one ``memory_events`` record.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from functools import cache, partial
from typing import Any, Final

import anyio.to_thread
import mcp_types as types
from mcp.shared.exceptions import MCPError
from pydantic import BaseModel, ValidationError

from metacortex import tool_catalogue
from metacortex.access.profiles import Profile
from metacortex.apps import caller, views
from metacortex.cancellation import Receive, until_caller_gone
from metacortex.clients.own_default import set_own_default
from metacortex.domain import limits
from metacortex.errors import Forbidden, InvalidArgument, MetaCortexError, Unavailable
from metacortex.kernel.runtime import Runtime
from metacortex.mcp_surface import chatgpt_tools, document_schemas, schemas
from metacortex.mcp_surface.recording import record_request
from metacortex.mcp_surface.summaries import summarize_result
from metacortex.service import Access, MemoryService
from metacortex.tool_catalogue import Group

ToolRunner = Callable[[MemoryService, Access, dict[str, Any]], dict[str, Any]]
# A tool about the calling credential itself (its own record), run with its profile and
# the runtime (the settings, and the profiles this process serves).
CredentialRunner = Callable[[Runtime, MemoryService, Profile, dict[str, Any]], dict[str, Any]]
_MAX_LOGGED_NAME: Final = 64
# The tombstone's "by whom" for records erased through the tool.
ERASED_BY_TOOL: Final = "the admin endpoint (erase_context)"


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """What a model reads about a tool and the code that runs it; everything else about
    it (its group, scope, whether it only reads, who is granted it) is its entry in the
    tool catalogue (``metacortex.tool_catalogue``), under the same name."""

    name: str
    title: str
    description: str
    input_model: type[schemas.ToolInput]
    output_model: type[BaseModel]
    run: ToolRunner
    on_credential: CredentialRunner | None = None
    # Long work (a document read and embedded): ``run`` gets a ``cancellation`` argument,
    # cancelled when the caller disconnects or cancels the request (``cancellation.py``).
    cancellable: bool = False
    # The hints of a tool that changes something (the catalogue says which do).
    idempotent: bool = False
    destructive: bool = False

    @property
    def annotations(self) -> types.ToolAnnotations:
        entry = tool_catalogue.entry(self.name)
        if entry is None:
            raise LookupError(f"the tool {self.name!r} is not in the tool catalogue")
        if entry.read_only:
            return types.ToolAnnotations(
                title=self.title, read_only_hint=True, open_world_hint=False
            )
        return types.ToolAnnotations(
            title=self.title,
            read_only_hint=False,
            destructive_hint=self.destructive,
            idempotent_hint=self.idempotent,
            open_world_hint=False,
        )

    def definition(self) -> types.Tool:
        return types.Tool(
            name=self.name,
            title=self.title,
            description=self.description,
            input_schema=schemas.input_schema(self.input_model),
            output_schema=schemas.output_schema(self.output_model),
            annotations=self.annotations,
            _meta=views.tool_meta(self.name),
        )


def _runs_on_the_credential(
    service: MemoryService, access: Access, args: dict[str, Any]
) -> dict[str, Any]:
    raise AssertionError("a credential tool runs through ToolSpec.on_credential")


def _set_default_space(
    runtime: Runtime, service: MemoryService, profile: Profile, key: str
) -> dict[str, Any]:
    """The credential's default becomes ``key`` (``clients/own_default.py``); this process
    re-reads its profiles at the next request, so that request acts there already."""
    previous = set_own_default(service.store, runtime.settings, profile, key)
    runtime.clients.expire()
    spaces = service.list_spaces(replace(profile.access, default_space=key))
    return {**spaces, "previous_default_space": previous}


_SAVE_EXAMPLE: Final = (
    'Example: {"content": "The staging database moved to db-staging-2 on '
    '2026-03-01.", "topic": "infra", "origin": "user_asserted"}'
)
# Said only by servers where fact extraction is on (METACORTEX_EXTRACTION=gemini).
_EXTRACTION_NOTE: Final = (
    "On this server a model also splits the saved text into atomic facts: each fact is "
    "saved as a memory of its own (derived from the text, which is kept whole) and linked "
    "to similar memories of the space (updates, extends, derives, relates_to); the answer "
    "lists them under facts and relations. A memory of someone else that the text updates "
    "stays active (contested_ids). Nothing is retired: deprecate_context does that.\n"
)

_SPECS: Final = (
    ToolSpec(
        name="save_context",
        title="Save a memory",
        description=(
            "Save a durable memory (a fact, decision, preference or finding) so later "
            "conversations can find it. Use it when the user tells you something worth "
            "remembering or asks you to remember it; search_context first so you do not save "
            "what is already stored. Write content that stands on its own. An identical retry "
            "within 15 minutes returns the first record (write_status 'duplicate'). Use "
            "draft=true for work-in-progress notes that consolidate_context merges later. "
            f"An image may be at most {limits.MAX_IMAGE_BYTES // 1024} KiB "
            f"({limits.MAX_IMAGE_BASE64_CHARS:,} base64 characters): the whole request must "
            f"fit the {limits.DEFAULT_MAX_BODY_BYTES // (1024 * 1024)} MiB body limit.\n"
            + _SAVE_EXAMPLE
        ),
        input_model=schemas.SaveContextInput,
        output_model=schemas.SaveContextOutput,
        # Not idempotent in general: outside the dedupe window the same call saves again.
        idempotent=False,
        run=lambda service, access, args: service.save(access, **args),
    ),
    ToolSpec(
        name="search_context",
        title="Search memories",
        description=(
            "Find saved memories by meaning and by exact keywords. Use it before answering "
            "anything that may depend on what was saved earlier (the user's preferences, "
            "project facts, past decisions) and before saving, to avoid duplicates. Returns up "
            "to `limit` matches, best first, each with a short summary and a 0-1 score; call "
            "fetch_context with a match's id for the full text. No match is an empty list, "
            "not an error. keyword finds a ticket number, version or code exactly as written, "
            "alone or beside query.\n"
            'Example: {"query": "which database does staging use?", "filter_topic": "infra"}\n'
            'Example: {"keyword": "INC-4821"}'
        ),
        input_model=schemas.SearchContextInput,
        output_model=schemas.SearchContextOutput,
        run=lambda service, access, args: service.search(access, **args),
    ),
    ToolSpec(
        name="fetch_context",
        title="Fetch a memory",
        description=(
            "Get one memory in full (content and metadata) by its id, as returned by "
            "search_context or list_context. Use it when a search summary is not enough; "
            "neighbours (1-3) also brings the memories around it (for a document's passage, "
            "the passages before and after it).\n"
            'Example: {"id": "01hq3v6kz8m2x4c7d9f0g1h2j3"}'
        ),
        input_model=schemas.FetchContextInput,
        output_model=schemas.FetchContextOutput,
        run=lambda service, access, args: service.fetch(access, **args),
    ),
    ToolSpec(
        name="list_context",
        title="List memories",
        description=(
            "Browse memories newest first, filtered by topic, lifecycle state, origin and "
            "creation time. Use it to review what is stored (e.g. the drafts of a topic); to "
            "answer a question, search_context is better. When next_cursor is not null, pass "
            "it back as cursor, with the same filters, for the next page.\n"
            'Example: {"filter_topic": "infra", "filter_state": "wip", "limit": 20}'
        ),
        input_model=schemas.ListContextInput,
        output_model=schemas.ListContextOutput,
        run=lambda service, access, args: service.list_memories(access, **args),
    ),
    ToolSpec(
        name="deprecate_context",
        title="Deprecate a memory",
        description=(
            "Retire a memory that is outdated or wrong; it is kept for history but no longer "
            "returned by normal searches. Use supersession_reason 'changed' when the fact "
            "changed over time, or 'corrected' when it was never true. When a newer memory "
            "replaces it, save that one first and pass its id as superseding_id. Repeating "
            "the same call changes nothing. A memory someone else wrote stays as it is (its "
            "id comes back in contested_ids): its author or the owner retires it.\n"
            'Example: {"id": "01hq3v6kz8m2x4c7d9f0g1h2j3", "superseding_id": '
            '"01hr0a1b2c3d4e5f6g7h8j9k0m", "supersession_reason": "corrected"}'
        ),
        input_model=schemas.DeprecateContextInput,
        output_model=schemas.DeprecateContextOutput,
        idempotent=True,
        run=lambda service, access, args: service.deprecate(access, **args),
    ),
    ToolSpec(
        name="promote_context",
        title="Promote a draft",
        description=(
            "Make a draft (wip) memory active, so normal searches return it. Use it when the "
            "user confirms a draft saved with draft=true is right as it stands; to merge "
            "drafts into one memory use consolidate_context instead. Promoting an active "
            "memory changes nothing.\n"
            'Example: {"id": "01hq3v6kz8m2x4c7d9f0g1h2j3"}'
        ),
        input_model=schemas.PromoteContextInput,
        output_model=schemas.PromoteContextOutput,
        idempotent=True,
        run=lambda service, access, args: service.promote(access, **args),
    ),
    ToolSpec(
        name="consolidate_context",
        title="Consolidate memories",
        description=(
            "Merge several draft (wip) or active memories into a single new active memory "
            "that keeps every distinct fact, and deprecate the sources (superseded by the "
            "merged one). Without source_ids it merges the topic's wip drafts, oldest "
            "first. Named source_ids may come from any topic; the merged memory gets "
            "`topic`. Sources already deprecated or merged are refused (conflict). Needs "
            "at least two sources. Re-running the same call returns the same merged memory "
            "instead of merging again.\n"
            'Example: {"topic": "project-x"} or {"topic": "project-x", "source_ids": '
            '["01ha...", "01hb..."]}'
        ),
        input_model=schemas.ConsolidateContextInput,
        output_model=schemas.ConsolidateContextOutput,
        idempotent=True,
        run=lambda service, access, args: service.consolidate(access, **args),
    ),
    ToolSpec(
        name="related_context",
        title="Follow linked memories",
        description=(
            "Show the memories linked to one memory: what replaced it or what it replaced "
            "(supersedes), what it was merged from (derived_from), what updates, extends or "
            "derives from it, a document's neighbouring passages, up to 3 links away. Use "
            "it when a result's `related` list hints at more context, or to trace how a "
            "fact changed over time.\n"
            'Example: {"id": "01hq3v6kz8m2x4c7d9f0g1h2j3", "depth": 2}'
        ),
        input_model=schemas.RelatedContextInput,
        output_model=schemas.RelatedContextOutput,
        run=lambda service, access, args: service.related_context(access, **args),
    ),
    ToolSpec(
        name="list_spaces",
        title="List your spaces",
        description=(
            "List the spaces you can use: memory is kept in spaces (e.g. 'family', "
            "'work'), each shared by some people, and every other tool acts in one of them "
            "(its space argument, or your default space). Shows each space's key, what you "
            "may do there (read, or write) and how many memories it holds. Use it when the "
            "user mentions a group or project, to pick the right space.\n"
            "Example: {}"
        ),
        input_model=schemas.NoInput,
        output_model=schemas.ListSpacesOutput,
        run=lambda service, access, args: service.list_spaces(access),
    ),
    ToolSpec(
        name="who_am_i",
        title="Who am I",
        description=(
            "Tell who you act as: the person this credential belongs to, their role "
            "(owner, writer or reader), the credential, and the spaces it may read or "
            "write, with the default space.\n"
            "Example: {}"
        ),
        input_model=schemas.NoInput,
        output_model=schemas.WhoAmIOutput,
        run=lambda service, access, args: service.who_am_i(access),
    ),
    ToolSpec(
        name="set_default_space",
        title="Change your default space",
        description=(
            "Make one of your spaces the default: every call that names no space acts "
            "there from now on, for this credential. Meant for the spaces view, where the "
            "person chooses; do not call it on your own: to act in another space once, pass "
            "its space argument instead.\n"
            'Example: {"space": "work"}'
        ),
        input_model=schemas.SetDefaultSpaceInput,
        output_model=schemas.SetDefaultSpaceOutput,
        idempotent=True,
        run=_runs_on_the_credential,
        on_credential=lambda runtime, service, profile, args: _set_default_space(
            runtime, service, profile, args["space"]
        ),
    ),
    ToolSpec(
        name="create_document",
        title="Add a document",
        description=(
            "Add a document (notes, a Markdown or text file, a CSV table, a web page's HTML, "
            "a PDF or a Word file) to memory: it is kept whole and cut into passages that "
            "search_context finds, each citing the document's title, section and page. Use it "
            "when the user gives you a file or long text to remember or to answer from. Give "
            "text as content, or a file as content_base64 with media_type. Giving the same "
            "file again changes nothing (write_status 'duplicate'); a changed file with the "
            "same source replaces the earlier version, keeping the passages that did not "
            "change. A scanned PDF is read by OCR where the server offers it, else kept with "
            "no text to search (no_text says which). Files over "
            f"{document_schemas.MAX_DOCUMENT_BYTES_BY_TOOL // 1024} KiB do not fit a tool "
            "call: ask the user to run `metacortex ingest` on them.\n"
            'Example: {"content": "# Trip plan\\n\\nWe fly to Lisbon on 3 May.", '
            '"media_type": "text/markdown", "source": "notes/trip.md", "topic": "travel"}'
        ),
        input_model=document_schemas.CreateDocumentInput,
        output_model=document_schemas.CreateDocumentOutput,
        # The same file again is a duplicate; a changed one makes a new version.
        idempotent=True,
        run=lambda service, access, args: service.create_document(access, **args),
        cancellable=True,
    ),
    ToolSpec(
        name="list_documents",
        title="List documents",
        description=(
            "List the documents kept in a space, newest first: title, source, type, pages, "
            "passages and who added them. Use it to see which files memory holds, or to find "
            "a document's id for get_document. When next_cursor is not null, pass it back as "
            "cursor for the next page.\n"
            'Example: {"limit": 20}'
        ),
        input_model=document_schemas.ListDocumentsInput,
        output_model=document_schemas.ListDocumentsOutput,
        run=lambda service, access, args: service.list_documents(access, **args),
    ),
    ToolSpec(
        name="get_document",
        title="Read a document",
        description=(
            "Read a document's details and its extracted text, a slice at a time (10,000 "
            "characters by default): to read on, call again with offset set to next_offset; "
            "to jump, pass a PDF page or the start of a passage's citation. Use it when "
            "search_context's passages are not enough, e.g. to read a whole section.\n"
            'Example: {"id": "01hq3v6kz8m2x4c7d9f0g1h2j3", "page": 12}'
        ),
        input_model=document_schemas.GetDocumentInput,
        output_model=document_schemas.GetDocumentOutput,
        run=lambda service, access, args: service.get_document(access, **args),
    ),
)
_OWNER_SPECS: Final = (
    ToolSpec(
        name="erase_context",
        title="Erase memories",
        description=(
            "Erase memories for good: their content, embedding and index entries are "
            "destroyed and only a tombstone (id, time) stays. Only for the owner's "
            "housekeeping (e.g. removing a test memory); to retire an outdated or wrong "
            "memory use deprecate_context, which keeps its history. Returns the ids erased "
            "and the memories consolidated from their text, which are not erased.\n"
            'Example: {"ids": ["01hq3v6kz8m2x4c7d9f0g1h2j3"]}'
        ),
        input_model=schemas.EraseContextInput,
        output_model=schemas.EraseContextOutput,
        idempotent=True,
        destructive=True,
        run=lambda service, access, args: service.erase(
            access, ids=args["ids"], erased_by=ERASED_BY_TOOL, space=args.get("space")
        ),
    ),
)
# By name; every one in the catalogue, in its order (a tool added in one place only fails
# here, at import).
TOOLS: Final[dict[str, ToolSpec]] = {spec.name: spec for spec in _SPECS}
assert tuple(TOOLS) == tool_catalogue.model_tools()
OWNER_TOOLS: Final[dict[str, ToolSpec]] = {spec.name: spec for spec in _OWNER_SPECS}
assert tuple(OWNER_TOOLS) == tool_catalogue.in_group(Group.OWNER)


@cache
def _definition(spec: ToolSpec) -> types.Tool:
    """The spec's definition, made once (copied before it is handed out)."""
    return spec.definition()


_EXTRACTING_SAVE: Final = replace(
    TOOLS["save_context"],
    description=TOOLS["save_context"].description.replace(
        _SAVE_EXAMPLE, _EXTRACTION_NOTE + _SAVE_EXAMPLE
    ),
    output_model=schemas.SaveContextExtractedOutput,
).definition()


def tool_definitions(profile: Profile, *, extraction: bool = False) -> list[types.Tool]:
    """The profile's tools, exactly as tools/list presents them; ``extraction``: the
    server splits saved texts into facts (save_context says so, only then)."""
    definitions = [
        _EXTRACTING_SAVE
        if extraction and name == "save_context"
        else _definition(TOOLS.get(name) or OWNER_TOOLS[name])
        for name in profile.tools
    ]
    return [definition.model_copy(deep=True) for definition in definitions] + [
        chatgpt_tools.DEFINITIONS[name].model_copy(deep=True) for name in profile.chatgpt_tools
    ]


def input_schema_of(name: str) -> dict[str, Any] | None:
    spec = TOOLS.get(name) or OWNER_TOOLS.get(name)
    definition = _definition(spec) if spec is not None else chatgpt_tools.DEFINITIONS.get(name)
    return dict(definition.input_schema) if definition is not None else None


async def call_tool(
    runtime: Runtime,
    profile: Profile,
    name: str,
    arguments: Mapping[str, Any] | None,
    protocol_version: str | None = None,
    receive: Receive | None = None,
) -> types.CallToolResult:
    """``receive``: the HTTP request's (its body read), whose ``http.disconnect`` stops a
    cancellable tool's work; None over stdio, where a cancelled request stops it."""
    started = time.perf_counter()
    raw = dict(arguments or {})
    if name in profile.chatgpt_tools:
        return await _call_chatgpt_tool(runtime, profile, name, raw, started, protocol_version)
    if name not in TOOLS and not (name in OWNER_TOOLS and name in profile.allowed_tools):
        # MCP 2025-11-25: an unknown tool is a protocol error (-32602), not a tool result.
        # An owner's tool the endpoint does not offer is unknown there too.
        unknown = InvalidArgument(
            f"unknown tool {name[:_MAX_LOGGED_NAME]!r}; this endpoint offers: "
            + ", ".join(profile.tools)
        )
        _record(
            runtime,
            profile,
            name,
            {},
            started,
            protocol_version,
            error=unknown.to_payload()["error"],
        )
        raise MCPError(types.INVALID_PARAMS, unknown.message)
    try:
        spec = _allowed_spec(profile, name)
        parsed = _parse(spec, raw)
        service = await runtime.ready_service()
        if spec.cancellable:
            payload = await until_caller_gone(
                lambda cancellation: spec.run(
                    service, profile.access, {**parsed, "cancellation": cancellation}
                ),
                receive,
                f"tool {spec.name}",
            )
        else:
            work = (
                partial(spec.on_credential, runtime, service, profile, parsed)
                if spec.on_credential is not None
                else partial(spec.run, service, profile.access, parsed)
            )
            payload = await anyio.to_thread.run_sync(work)
    except MetaCortexError as error:
        return _failure(runtime, profile, name, raw, error, started, protocol_version)
    except Exception:
        logging.getLogger("metacortex.server").exception(
            "tool %s failed unexpectedly", name[:_MAX_LOGGED_NAME]
        )
        unexpected = Unavailable("the memory service failed unexpectedly; try again later")
        return _failure(runtime, profile, name, raw, unexpected, started, protocol_version)
    _record(runtime, profile, spec.name, raw, started, protocol_version, payload=payload)
    text = json.dumps(payload, ensure_ascii=False, separators=(",", ":"))
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=text)],
        structured_content=payload,
        is_error=False,
        _meta=caller.result_meta(profile, spec.name),
    )


async def _call_chatgpt_tool(
    runtime: Runtime,
    profile: Profile,
    name: str,
    raw: dict[str, Any],
    started: float,
    protocol_version: str | None,
) -> types.CallToolResult:
    """``search``/``fetch`` in ChatGPT's shapes: one text item holding the JSON."""
    try:
        try:
            parsed = chatgpt_tools.INPUTS[name].model_validate(raw).model_dump(exclude_none=True)
        except ValidationError as error:
            raise InvalidArgument(_validation_message(error, chatgpt_tools.INPUTS[name])) from None
        service = await runtime.ready_service()
        runner = chatgpt_tools.RUNNERS[name]
        public_url = runtime.settings.metacortex_public_url
        payload = await anyio.to_thread.run_sync(
            partial(runner, service, profile.access, parsed, public_url)
        )
    except MetaCortexError as error:
        return _failure(runtime, profile, name, raw, error, started, protocol_version)
    except Exception:
        logging.getLogger("metacortex.server").exception("tool %s failed unexpectedly", name)
        unexpected = Unavailable("the memory service failed unexpectedly; try again later")
        return _failure(runtime, profile, name, raw, unexpected, started, protocol_version)
    _record(runtime, profile, name, raw, started, protocol_version)
    text = json.dumps(payload, ensure_ascii=False, separators=(",", ":"))
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)])


def _allowed_spec(profile: Profile, name: str) -> ToolSpec:
    offered = ", ".join(profile.tools)
    spec = TOOLS.get(name) or OWNER_TOOLS[name]
    if name not in profile.allowed_tools:
        raise Forbidden(f"tool {name!r} is not available on this endpoint; it offers: {offered}")
    return spec


def _parse(spec: ToolSpec, arguments: dict[str, Any]) -> dict[str, Any]:
    try:
        model = spec.input_model.model_validate(arguments)
    except ValidationError as error:
        raise InvalidArgument(_validation_message(error, spec.input_model)) from None
    return model.model_dump(exclude_none=True)


def _validation_message(error: ValidationError, model: type[BaseModel]) -> str:
    messages: list[str] = []
    for detail in error.errors(include_url=False)[:3]:
        location = ".".join(str(part) for part in detail["loc"]) or "arguments"
        kind = detail["type"]
        if kind == "missing":
            messages.append(f"{location} is required")
        elif kind == "extra_forbidden":
            accepted = ", ".join(model.model_fields)
            messages.append(
                f"unexpected argument {location[:_MAX_LOGGED_NAME]!r}; accepted: {accepted}"
            )
        else:
            value = detail.get("input")
            shown = f" (got {value!r})" if _short_scalar(value) else ""
            messages.append(f"{location}: {detail['msg']}{shown}")
    if error.error_count() > 3:
        messages.append(f"and {error.error_count() - 3} more problems")
    return "; ".join(messages)


def _short_scalar(value: object) -> bool:
    return isinstance(value, int | float | bool) or (isinstance(value, str) and len(value) <= 40)


def _failure(
    runtime: Runtime,
    profile: Profile,
    name: str,
    arguments: dict[str, Any],
    error: MetaCortexError,
    started: float,
    protocol_version: str | None,
) -> types.CallToolResult:
    payload = error.to_payload()
    _record(runtime, profile, name, arguments, started, protocol_version, error=payload["error"])
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=json.dumps(payload, ensure_ascii=False))],
        is_error=True,
    )


def _record(
    runtime: Runtime,
    profile: Profile,
    name: str,
    arguments: dict[str, Any],
    started: float,
    protocol_version: str | None,
    *,
    payload: dict[str, Any] | None = None,
    error: dict[str, str] | None = None,
) -> None:
    """One structured log line and one memory_events record per call (plus retrieval events)."""
    record_request(
        runtime,
        profile,
        "tool_call",
        name[:_MAX_LOGGED_NAME],
        arguments,
        started,
        protocol_version,
        response=summarize_result(name, payload) if payload is not None else None,
        error=error,
    )
    events = runtime.events
    if events is None:
        return
    if payload is None:
        return
    if name == "search_context":
        events.search(
            client_id=profile.id,
            query=str(arguments.get("query") or ""),
            filters=payload["applied_filters"],
            matches=payload["matches"],
        )
    elif name == "fetch_context":
        events.fetch(client_id=profile.id, fetched_ids=[payload["item"]["id"]])
