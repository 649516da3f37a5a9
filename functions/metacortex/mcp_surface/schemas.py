"""Tool input and output models: one pydantic model per shape, one JSON Schema from each.

The low-level MCP server does not validate arguments, so these models do, and
their generated schemas are what ``tools/list`` shows. Limits come from
``domain.limits`` so the schema a model reads and the rule the service
enforces cannot drift apart. Generated schemas are tidied for a model's eyes:
no ``title`` noise, ``$ref``s inlined, ``anyOf [X, null]`` folded into ``X``
(inputs: an omitted argument and ``null`` mean the same) or into a nullable
type (outputs).
"""

from __future__ import annotations

from typing import Annotated, Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from metacortex.domain import limits
from metacortex.domain.images import SUPPORTED_IMAGE_TYPES
from metacortex.storage.base import MAX_ERASE_BATCH

State = Literal["active", "wip", "merged", "deprecated"]
# What a caller may say a memory came from; ``document`` is a passage's, given only by
# create_document (filters and results name it too: ``OriginName``).
SaveOrigin = Literal["user_asserted", "agent_inferred", "legacy_import"]
OriginName = Literal["user_asserted", "agent_inferred", "legacy_import", "document"]
Reason = Literal["changed", "corrected"]
InitiatorName = Literal["user", "agent"]
ImageType = Literal["image/png", "image/jpeg", "image/webp", "image/gif"]
assert set(ImageType.__args__) == set(SUPPORTED_IMAGE_TYPES)  # type: ignore[attr-defined]

MAX_IMAGE_BASE64_CHARS: Final = limits.MAX_IMAGE_BASE64_CHARS
MAX_CURSOR_CHARS: Final = 1_000

_ID = "A memory id as returned by another tool (URL-safe characters)."
_TIME = "ISO 8601 date-time, e.g. 2026-01-31T12:00:00Z (UTC when no offset is given)."
_OCCURRED = (
    "An ISO 8601 instant (2026-01-31T12:00:00Z) or, at the precision known, a day "
    "(2026-01-31), an ISO week (2026-W05), a month (2026-01) or a year (2026); UTC."
)
_TOPIC = "Topic label: letters, digits and . _ : / - (at most 64 characters), e.g. 'project-x'."
_SPACE = (
    "The space to act in: a key from list_spaces, e.g. 'family'. Omit it for your "
    "credential's default space. Nothing is ever read from or written to another space."
)

SPACE_HELP: Final = _SPACE
Id = Annotated[str, Field(min_length=1, max_length=limits.MAX_ID_CHARS, description=_ID)]
Instant = Annotated[str, Field(max_length=64, description=_TIME)]
OccurredTime = Annotated[str, Field(max_length=64, description=_OCCURRED)]
TimeSourceName = Literal["given", "stated", "saved"]
Topic = Annotated[str, Field(max_length=limits.MAX_TOPIC_CHARS, description=_TOPIC)]
SpaceKey = Annotated[str, Field(max_length=40, description=_SPACE)]


class ToolInput(BaseModel):
    """Unknown arguments are refused (a typo should not be silently ignored); an empty
    string or null for an optional argument means it was not given."""

    model_config = ConfigDict(extra="forbid")

    @model_validator(mode="before")
    @classmethod
    def _drop_blank_optionals(cls, data: Any) -> Any:
        if isinstance(data, dict):
            for key, value in data.items():
                if key in cls.model_fields:  # unknown keys are refused by name later
                    _check_strings(value, key)
            return {
                key: value
                for key, value in data.items()
                if value is not None and not (value == "" and key not in _KEEP_EMPTY)
            }
        return data


def _check_strings(value: Any, field_name: str) -> None:
    """One rule for every string argument, however nested (raises InvalidArgument)."""
    if isinstance(value, str):
        limits.check_string(value, field_name)
    elif isinstance(value, list):
        for index, item in enumerate(value):
            _check_strings(item, f"{field_name}[{index}]")


_KEEP_EMPTY: Final = frozenset({"content", "query"})


CallerRelation = Literal["updates", "extends", "derives", "relates_to"]
RelationName = Literal[
    "supersedes",
    "derived_from",
    "part_of",
    "next",
    "updates",
    "extends",
    "derives",
    "relates_to",
]


class RelationIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: Id = Field(description="A memory of the same space you can read. " + _ID)
    type: CallerRelation = Field(
        default="relates_to",
        description="'updates': this memory changes what that one says; 'extends': adds "
        "detail to it; 'derives': is concluded from it; 'relates_to': is about the same thing.",
    )
    note: str | None = Field(default=None, max_length=280, description="Why, in a few words.")


# --------------------------------------------------------------------- inputs
class SaveContextInput(ToolInput):
    content: str | None = Field(
        default=None,
        max_length=limits.MAX_CONTENT_CHARS,
        description="The memory itself, self-contained: state the fact, decision or "
        "preference so it makes sense without this conversation. Required unless "
        "image_base64 is given.",
    )
    topic: Topic | None = Field(default=None, description=_TOPIC + " Default 'general'.")
    draft: bool | None = Field(
        default=None,
        description="true stores a work-in-progress draft (state 'wip') for "
        "consolidate_context to merge later. Do not combine with branch_state.",
    )
    branch_state: State | None = Field(
        default=None,
        description="Explicit lifecycle state (admin endpoints only). Normally omit it: "
        "memories are saved 'active'.",
    )
    valid_from: Instant | None = Field(
        default=None, description="When the fact starts being true. " + _TIME
    )
    valid_until: Instant | None = Field(
        default=None, description="When the fact stops being true (exclusive). " + _TIME
    )
    origin: SaveOrigin | None = Field(
        default=None,
        description="'user_asserted' when the user said it, 'agent_inferred' when you "
        "concluded it.",
    )
    source_session: str | None = Field(
        default=None,
        max_length=limits.MAX_SOURCE_SESSION_CHARS,
        description="An identifier of the conversation or run this came from.",
    )
    derived_from: list[Id] | None = Field(
        default=None,
        max_length=limits.MAX_DERIVED_FROM,
        description="Ids of memories this one was derived from.",
    )
    confidence: float | None = Field(
        default=None, ge=0.0, le=1.0, description="How sure you are, from 0 to 1."
    )
    image_base64: str | None = Field(
        default=None,
        max_length=MAX_IMAGE_BASE64_CHARS,
        description="An image (base64, no data: prefix) to remember; it is described "
        "as text for search and the bytes are not kept. Needs image_mime_type. At most "
        f"{limits.MAX_IMAGE_BASE64_CHARS:,} base64 characters ({limits.MAX_IMAGE_BYTES // 1024} "
        f"KiB of image bytes), so that the whole request fits the server's "
        f"{limits.DEFAULT_MAX_BODY_BYTES // (1024 * 1024)} MiB body limit; shrink larger images.",
    )
    image_mime_type: ImageType | None = Field(
        default=None, description="The image's type; required with image_base64."
    )
    artifact_refs: list[Annotated[str, Field(max_length=limits.MAX_ARTIFACT_REF_CHARS)]] | None = (
        Field(
            default=None,
            max_length=limits.MAX_ARTIFACT_REFS,
            description="URIs of the real assets this memory is about, e.g. "
            "['gs://bucket/diagram.png'].",
        )
    )
    space: SpaceKey | None = Field(default=None, description=_SPACE)
    relations: list[RelationIn] | None = Field(
        default=None,
        max_length=10,
        description="Links from this memory to others it updates, extends, derives from or "
        "relates to (shown with both memories in later results).",
    )
    occurred_at: OccurredTime | None = Field(
        default=None,
        description="When what it tells happened (or was said), if you know: "
        + _OCCURRED
        + " Omit it and the date the content states is used (e.g. 'on 3 March 2025', "
        "'yesterday'), else the time of saving.",
    )


class SearchContextInput(ToolInput):
    query: str | None = Field(
        default=None,
        min_length=1,
        max_length=limits.MAX_QUERY_CHARS,
        description="What you are looking for, in natural language; exact rare terms "
        "(names, ticket numbers, error codes) are matched too. Give query, keyword or both.",
    )
    keyword: str | None = Field(
        default=None,
        min_length=1,
        max_length=limits.MAX_KEYWORD_CHARS,
        description="Only memories holding this exactly as written, letter case aside, and "
        "not inside a longer word: a ticket number, version or code such as 'INC-4821' or "
        "'v2.3.1' ('v2.3.1' is not found in 'v2.3.10'). Alone, matches are ranked by how "
        "strongly they hold it; with query, by the query.",
    )
    filter_topic: Topic | None = Field(default=None, description="Only this topic.")
    filter_state: State | None = Field(
        default=None,
        description="Only this lifecycle state; default is the endpoint's default "
        "(normally 'active').",
    )
    limit: int | None = Field(
        default=None,
        ge=1,
        le=limits.MAX_SEARCH_LIMIT,
        description="How many matches to return (1-20); default 5.",
    )
    valid_at: Instant | None = Field(
        default=None,
        description="Only memories valid at this instant (corrected ones are dropped). " + _TIME,
    )
    filter_origin: OriginName | None = Field(default=None, description="Only this origin.")
    space: SpaceKey | None = Field(default=None, description=_SPACE)
    after: OccurredTime | None = Field(
        default=None,
        description="Only memories that happened at or after this time (their occurred_at). "
        + _OCCURRED
        + " A time named in the query ('last week', 'in March 2024') needs no argument: "
        "memories of that time rank higher.",
    )
    before: OccurredTime | None = Field(
        default=None,
        description="Only memories that happened strictly before this time (occurred_at). "
        + _OCCURRED,
    )


class FetchContextInput(ToolInput):
    id: Id | None = Field(default=None, description="The memory's id. " + _ID)
    document_id: Id | None = Field(
        default=None,
        description="Alias of id for older connectors; if both are given they must match.",
    )
    space: SpaceKey | None = Field(default=None, description=_SPACE)
    neighbours: int | None = Field(
        default=None,
        ge=0,
        le=3,
        description="Also return up to this many memories on each side (0-3): for a "
        "document's passage, the passages before and after it in the document; for another "
        "memory, the ones saved just before and after it in its topic.",
    )


class ListContextInput(ToolInput):
    filter_topic: Topic | None = Field(default=None, description="Only this topic.")
    filter_state: State | None = Field(
        default=None, description="Only this lifecycle state; default 'active'."
    )
    filter_origin: OriginName | None = Field(default=None, description="Only this origin.")
    created_after: Instant | None = Field(
        default=None, description="Created at or after this instant. " + _TIME
    )
    created_before: Instant | None = Field(
        default=None, description="Created strictly before this instant. " + _TIME
    )
    after: OccurredTime | None = Field(
        default=None,
        description="Only memories that happened at or after this time (occurred_at). " + _OCCURRED,
    )
    before: OccurredTime | None = Field(
        default=None,
        description="Only memories that happened strictly before this time (occurred_at). "
        + _OCCURRED,
    )
    order_by: Literal["created_at", "occurred_at"] | None = Field(
        default=None,
        description="'created_at' (default): newest saved first; 'occurred_at': what "
        "happened most recently first.",
    )
    limit: int | None = Field(
        default=None,
        ge=1,
        le=limits.MAX_LIST_LIMIT,
        description="Page size (1-100); default 20.",
    )
    cursor: str | None = Field(
        default=None,
        max_length=MAX_CURSOR_CHARS,
        description="next_cursor from the previous page, with the same filters.",
    )
    space: SpaceKey | None = Field(default=None, description=_SPACE)


class DeprecateContextInput(ToolInput):
    id: Id = Field(description="The memory to retire. " + _ID)
    superseding_id: Id | None = Field(
        default=None, description="The memory that replaces it (save that one first)."
    )
    supersession_reason: Reason | None = Field(
        default=None,
        description="'changed' (default): it was true but no longer is, so its validity "
        "ends now. 'corrected': it was never true, so it disappears from searches at any "
        "instant.",
    )
    initiator: InitiatorName | None = Field(
        default=None, description="Who asked for this: 'user' or 'agent'."
    )
    space: SpaceKey | None = Field(default=None, description=_SPACE)


class PromoteContextInput(ToolInput):
    id: Id = Field(description="The draft (wip) memory to make active. " + _ID)
    space: SpaceKey | None = Field(default=None, description=_SPACE)


class SetDefaultSpaceInput(ToolInput):
    space: SpaceKey = Field(
        description="The space calls without a space argument act in from now on: a key "
        "from list_spaces, e.g. 'family'."
    )


class ConsolidateContextInput(ToolInput):
    topic: Topic | None = Field(
        default=None,
        description="The topic of the merged memory, and whose wip drafts are merged when "
        "source_ids is omitted. Default 'general'.",
    )
    source_ids: list[Id] | None = Field(
        default=None,
        max_length=limits.MAX_CONSOLIDATE_SOURCES,
        description="The wip or active memories to merge (unique ids, at least two, from "
        "any topic). Omit to merge the topic's wip drafts, oldest first.",
    )
    space: SpaceKey | None = Field(default=None, description=_SPACE)


class EraseContextInput(ToolInput):
    ids: list[Id] = Field(
        min_length=1,
        max_length=MAX_ERASE_BATCH,
        description="The memories to erase for good (unique ids).",
    )
    space: SpaceKey | None = Field(default=None, description=_SPACE)


# -------------------------------------------------------------------- outputs
NullableStr = str | None


class ProvenanceOut(BaseModel):
    origin: OriginName | None
    source_session: NullableStr
    derived_from: list[str]
    confidence: float | None


class AuthorOut(BaseModel):
    person_id: str
    name: str = Field(description="The person's display name.")
    client: str = Field(
        description="The credential used: a client id, oauth-<grant>, 'default' (the admin "
        "token), 'console' or 'stdio'."
    )


class DocumentCitationOut(BaseModel):
    id: str = Field(description="The document's id (get_document reads it).")
    title: str
    page: int | None = Field(description="The PDF page it starts on; null for other formats.")
    page_end: int | None = Field(description="The last page it is printed on (PDFs).")
    section: str | None = Field(description="Its headings, outermost first: 'Part > Chapter'.")
    start: int = Field(description="Where it starts in the document's text (get_document offset).")
    end: int


class MetadataOut(BaseModel):
    space: str = Field(description="The space the memory lives in.")
    topic: str
    branch_state: State
    modality: Literal["text", "image", "mixed"]
    created_at: str = Field(description=_TIME)
    updated_at: str = Field(description=_TIME)
    artifact_refs: list[str]
    valid_from: NullableStr
    valid_until: NullableStr
    superseded_by: NullableStr
    supersession_reason: Reason | None
    initiator: InitiatorName | None
    provenance: ProvenanceOut
    merge_method: str | None = Field(
        default=None, description="How a consolidated memory was merged."
    )
    created_by: AuthorOut | None = Field(
        default=None, description="Who wrote it; null for memories from before attribution."
    )
    changed_by: AuthorOut | None = Field(
        default=None, description="Who last changed its state; null when nobody did."
    )
    document: DocumentCitationOut | None = Field(
        default=None,
        description="Present on a passage of a document (origin 'document'): cite its title "
        "and page when you use it.",
    )
    occurred_at: str = Field(
        description="When what it tells happened, at the precision known: " + _OCCURRED
    )
    occurred_at_source: TimeSourceName = Field(
        description="Where occurred_at comes from: 'given' when it was saved, 'stated' in "
        "its text, 'saved' (none known: when it was saved)."
    )


class RelatedOut(BaseModel):
    id: str
    type: RelationName
    direction: Literal["outgoing", "incoming"] = Field(
        description="outgoing: this memory -> that one (e.g. it supersedes that one); "
        "incoming: that one -> this one (e.g. that one supersedes this one: its replacement)."
    )
    note: str
    summary: str = Field(description="The other memory, at most 220 characters.")
    hops: Literal[1, 2] = Field(
        default=1,
        description="1: linked to this memory; 2: linked to the memory named by via, "
        "itself linked to this one (type, direction and note are that second link's).",
    )
    via: str | None = Field(
        default=None, description="With hops 2: the memory between (one of hops 1)."
    )


_RELATED = (
    "Up to five memories linked to this one, the most telling first (hops 1); in search "
    "results also up to five linked to those (hops 2)."
)


class ItemOut(BaseModel):
    id: str
    content: str
    metadata: MetadataOut
    related: list[RelatedOut] | None = Field(default=None, description=_RELATED)


class AppliedFiltersOut(BaseModel):
    # The original MetaCortex's keys, kept for its clients.
    filter_topic: NullableStr = Field(description="The topic filter, or null for every topic.")
    filter_state: State | list[State] = Field(
        description="The state filter: one state as a string, several as a list."
    )
    # Richer keys; always present in this server's answers.
    space: str | None = None
    topic: NullableStr = None
    states: list[State] | None = None
    origin: OriginName | None = None
    valid_at: str | None = None
    created_after: str | None = None
    created_before: str | None = None
    after: str | None = None
    before: str | None = None
    keyword: str | None = None
    order_by: Literal["created_at", "occurred_at"] | None = None
    limit: int | None = None


class SaveContextOutput(BaseModel):
    item: ItemOut
    write_status: Literal["created", "duplicate"]


class FactOut(BaseModel):
    id: str
    content: str


class ExtractedRelationOut(BaseModel):
    source: str = Field(description="The saved memory, or the fact's own memory.")
    target: str = Field(description="The similar memory it relates to.")
    type: Literal["updates", "extends", "derives", "relates_to"]
    note: str


class ExtractionOut(BaseModel):
    status: Literal["ran", "failed", "skipped"]
    model: str
    model_calls: int
    prompt_tokens: int
    output_tokens: int
    reason: str | None = Field(default=None, description="Why it failed or was skipped.")


class SaveContextExtractedOutput(SaveContextOutput):
    """save_context's answer where fact extraction is on (never offline)."""

    facts: list[FactOut] | None = Field(
        default=None,
        description="The facts saved as memories of their own (empty when the text is one "
        "fact); present when extraction ran.",
    )
    relations: list[ExtractedRelationOut] | None = Field(
        default=None,
        description="The links extraction made to similar memories; present when it ran.",
    )
    extraction: ExtractionOut | None = None
    contested_ids: list[str] | None = Field(
        default=None,
        description="Memories of someone else this text updates: they stay active.",
    )
    message: str | None = None


class MatchOut(BaseModel):
    id: str
    summary: str = Field(description="The content, whitespace-collapsed, at most 220 characters.")
    score: float = Field(
        ge=0.0,
        le=1.0,
        description="Fused semantic and keyword relevance, normalised per query (0-1); a "
        "rank signal for this query, not an absolute similarity: do not compare it across "
        "queries or reuse thresholds meant for cosine similarity.",
    )
    similarity: float | None = Field(
        ge=-1.0,
        le=1.0,
        description="Cosine similarity between the query's and the memory's embeddings; null "
        "when the memory was found by its keywords or its neighbours alone.",
    )
    relevance: Literal["strong", "weak"] = Field(
        description="Judged on the match's own evidence, not its rank: 'strong' when its "
        "meaning is close to the query's or it holds most of the query's keywords; 'weak' "
        "when it was only the best of what there is. Treat weak matches as unrelated."
    )
    metadata: MetadataOut
    related: list[RelatedOut] = Field(default_factory=list, description=_RELATED)


class SearchContextOutput(BaseModel):
    matches: list[MatchOut]
    applied_filters: AppliedFiltersOut
    # Not required, so the original MetaCortex's search outputs still validate.
    nothing_relevant: bool = Field(
        default=False,
        description="True when no match is strong: nothing saved answers the query.",
    )
    note: str | None = Field(
        default=None, description="Said when nothing relevant was found, for you to heed."
    )


class NeighboursOut(BaseModel):
    before: list[ItemOut] = Field(description="The memories just before it, in reading order.")
    after: list[ItemOut] = Field(description="The memories just after it, in reading order.")


class FetchContextOutput(BaseModel):
    item: ItemOut
    neighbours: NeighboursOut | None = Field(
        default=None, description="Present when neighbours was asked for."
    )


class ListItemOut(BaseModel):
    id: str
    summary: str
    metadata: MetadataOut
    related: list[RelatedOut] = Field(default_factory=list, description=_RELATED)


class ListContextOutput(BaseModel):
    items: list[ListItemOut]
    next_cursor: NullableStr = Field(
        description="Pass as cursor for the next page; null at the end."
    )
    applied_filters: AppliedFiltersOut


class DeprecatedItemOut(BaseModel):
    id: str
    branch_state: State
    superseded_by: NullableStr
    supersession_reason: Reason | None


_CONTESTED = (
    "Memories someone else wrote, which this call did not retire: they stay as they were "
    "(only their author or the owner retires them). Absent when there are none."
)


class DeprecateContextOutput(BaseModel):
    item: DeprecatedItemOut
    previous_state: State
    contested_ids: list[str] | None = Field(default=None, description=_CONTESTED)
    message: str | None = Field(default=None, description="Why some memory was not retired.")


class PromotedItemOut(BaseModel):
    id: str
    branch_state: State


class PromoteContextOutput(BaseModel):
    item: PromotedItemOut
    previous_state: State = Field(description="'wip' when it was promoted; 'active': it was.")


class MergedItemOut(BaseModel):
    merged_id: str
    merged_content: str
    topic: str
    branch_state: State


class ConsolidateContextOutput(BaseModel):
    item: MergedItemOut
    deprecated_ids: list[str]
    source_count: int
    contested_ids: list[str] | None = Field(default=None, description=_CONTESTED)
    message: str | None = Field(default=None, description="Why some memory was not retired.")


class NoInput(ToolInput):
    """A tool without arguments."""


Level = Literal["read", "write"]


class SpaceOut(BaseModel):
    key: str = Field(description="What the tools' space argument takes.")
    name: str
    description: str
    level: Level = Field(description="What you may do there: read, or read and write.")
    default: bool = Field(description="Whether calls without a space argument act here.")
    memories: int = Field(description="Memories there in the states you may read.")


class ListSpacesOutput(BaseModel):
    spaces: list[SpaceOut]
    default_space: str


class SetDefaultSpaceOutput(ListSpacesOutput):
    previous_default_space: str


class PersonOut(BaseModel):
    id: str
    name: str
    email: str | None
    role: Literal["owner", "writer", "reader"]


class SpaceLevelOut(BaseModel):
    key: str
    name: str
    level: Level


class WhoAmIOutput(BaseModel):
    person: PersonOut
    client: str = Field(description="The credential this call used.")
    spaces: list[SpaceLevelOut]
    default_space: str


class DerivedOut(BaseModel):
    id: str
    summary: str
    topic: str
    branch_state: State
    from_: list[str] = Field(
        alias="from",
        description="The erased (or likewise derived) ids it names in derived_from.",
    )


class EraseContextOutput(BaseModel):
    space: str | None = None
    erased_ids: list[str]
    erased_count: int
    erased_document_ids: list[str] = Field(
        default_factory=list,
        description="Documents erased whole with the passages named (every version: record, "
        "extracted text, original bytes, every passage).",
    )
    already_erased_ids: list[str]
    erased_at: str = Field(description=_TIME)
    derived: list[DerivedOut] = Field(
        description="Memories not erased whose text came from an erased one (consolidated "
        "from it, directly or through another): erase or correct them too."
    )


# -------------------------------------------------------------- schema tidying
def input_schema(model: type[BaseModel]) -> dict[str, Any]:
    return _tidy(model.model_json_schema(mode="validation"), nullable=False)


def output_schema(model: type[BaseModel]) -> dict[str, Any]:
    return _tidy(model.model_json_schema(mode="serialization"), nullable=True)


def _tidy(schema: dict[str, Any], *, nullable: bool) -> dict[str, Any]:
    definitions: dict[str, Any] = schema.pop("$defs", {})

    def walk(node: Any) -> Any:
        if isinstance(node, list):
            return [walk(item) for item in node]
        if not isinstance(node, dict):
            return node
        if "$ref" in node:
            target = definitions[node["$ref"].rsplit("/", 1)[-1]]
            merged = {**target, **{k: v for k, v in node.items() if k != "$ref"}}
            return walk(merged)
        node = {key: walk(value) for key, value in node.items() if key != "title"}
        variants = node.get("anyOf")
        if isinstance(variants, list) and {"type": "null"} in variants:
            others = [v for v in variants if v != {"type": "null"}]
            if len(others) == 1:
                del node["anyOf"]
                other = others[0]
                if nullable:
                    other = _with_null(other)
                node = {**other, **node}
        if node.get("default", ...) is None:
            del node["default"]
        return node

    tidy: dict[str, Any] = walk(schema)
    tidy.pop("description", None)
    return tidy


def _with_null(schema: dict[str, Any]) -> dict[str, Any]:
    kind = schema.get("type")
    if isinstance(kind, str):
        result = {**schema, "type": [kind, "null"]}
        if "enum" in result:
            result["enum"] = [*result["enum"], None]
        return result
    return {"anyOf": [schema, {"type": "null"}]}


class RelatedContextInput(ToolInput):
    id: Id = Field(description="The memory to start from. " + _ID)
    depth: int | None = Field(
        default=None, ge=1, le=3, description="How many links away to go (1-3); default 1."
    )
    types: list[RelationName] | None = Field(
        default=None, max_length=8, description="Only links of these types; all when omitted."
    )
    space: SpaceKey | None = Field(default=None, description=_SPACE)


class NodeOut(BaseModel):
    id: str
    kind: Literal["memory", "document"]
    summary: str


class EdgeOut(BaseModel):
    source: str
    target: str
    type: RelationName
    note: str


class RelatedContextOutput(BaseModel):
    root: str
    nodes: list[NodeOut]
    edges: list[EdgeOut]
    truncated: bool = Field(description="Whether more linked memories exist beyond the bound.")
