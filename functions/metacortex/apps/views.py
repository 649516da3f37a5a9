"""The view registry: one ``ui://metacortex/<view>.html`` resource per view, the
tools that link it, and the ``_meta`` both carry.

Trigger: a stateless server cannot tell, on most requests, whether the caller
announced the extension (over the handshake protocol each POST is a fresh
session that never saw ``initialize``). Why: ``_meta`` is the protocol's place
for what a client may ignore; hosts never hand a tool's ``_meta`` to the
model, and the SDK's own ``Apps`` extension stamps ``_meta.ui`` on its tools
whatever the client announced. Outcome: every linked tool carries its link
always; what the model reads (name, description, schemas, ``content``,
``structuredContent``) is the same with or without views. docs/APPS.md says more.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

import mcp_types as types
from mcp.server.apps import APP_MIME_TYPE, EXTENSION_ID, ResourceCsp

from metacortex.apps.documents import document

__all__ = ["APP_MIME_TYPE", "EXTENSION_ID"]

SCHEME: Final = "ui://metacortex/"
# ChatGPT's Apps SDK (before it read MCP Apps' key) finds a tool's view here.
OPENAI_TEMPLATE_KEY: Final = "openai/outputTemplate"
# ... lets a view call a tool (window.openai.callTool) only where this is true, and
# hides a tool from the model where the other is "private" (MCP Apps: visibility ["app"]).
OPENAI_WIDGET_ACCESSIBLE_KEY: Final = "openai/widgetAccessible"
OPENAI_VISIBILITY_KEY: Final = "openai/visibility"
# No external domain of any kind: the views load nothing and connect nowhere.
NO_EXTERNAL_DOMAIN: Final = ResourceCsp(
    connect_domains=[], resource_domains=[], frame_domains=[], base_uri_domains=[]
)


@dataclass(frozen=True, slots=True)
class View:
    name: str  # the file static/<name>.html and the URI's last segment
    title: str
    description: str
    tools: tuple[str, ...]  # the tools whose results it shows

    @property
    def uri(self) -> str:
        return f"{SCHEME}{self.name}.html"


VIEWS: Final = (
    View(
        "search",
        "Search results",
        "Cards of the matches: summary, score and its parts, topic, space, author, links, "
        "document and page; open one to read it whole.",
        ("search_context",),
    ),
    View(
        "memory",
        "A memory",
        "One memory in full: its text, who wrote it, its lineage and links; correct or "
        "deprecate it where the credential may.",
        ("fetch_context",),
    ),
    View(
        "save",
        "Save a memory",
        "What was saved (or found already saved) and a form to save another in a writable space.",
        ("save_context",),
    ),
    View(
        "spaces",
        "Your spaces",
        "The spaces this credential holds, what it may do in each, and the default one; "
        "make another the default where the credential may.",
        ("list_spaces", "who_am_i", "set_default_space"),
    ),
    View(
        "upload",
        "Add a document",
        "What a document became (its passages) and a file picker to add another.",
        ("create_document",),
    ),
    View(
        "graph",
        "Linked memories",
        "A memory's neighbourhood drawn as a graph: what it replaced, what it was merged "
        "from, what extends it.",
        ("related_context",),
    ),
)
# The tools the views call themselves (static/*.html); test_view_resources keeps it whole.
CALLED_BY_VIEWS: Final = frozenset(
    {
        "create_document",
        "deprecate_context",
        "fetch_context",
        "list_context",
        "promote_context",
        "save_context",
        "set_default_space",
    }
)
# Tools only a view should call: the extension's visibility hides them from the model
# (docs/APPS.md says what a host without the extension shows, and why that is safe).
APP_ONLY: Final = frozenset({"set_default_space"})
BY_URI: Final[Mapping[str, View]] = {view.uri: view for view in VIEWS}
VIEW_OF_TOOL: Final[Mapping[str, View]] = {tool: view for view in VIEWS for tool in view.tools}


def tool_meta(tool_name: str) -> dict[str, Any] | None:
    """The ``_meta`` linking a tool to its view and, for a tool the views call, letting
    an Apps SDK host run it from a view; None for a tool that is neither."""
    meta: dict[str, Any] = {}
    view = VIEW_OF_TOOL.get(tool_name)
    if view is not None:
        ui: dict[str, Any] = {"resourceUri": view.uri}
        meta = {"ui": ui, OPENAI_TEMPLATE_KEY: view.uri}
        if tool_name in APP_ONLY:
            ui["visibility"] = ["app"]
            meta[OPENAI_VISIBILITY_KEY] = "private"
    if tool_name in CALLED_BY_VIEWS:
        meta[OPENAI_WIDGET_ACCESSIBLE_KEY] = True
    return meta or None


def linked(tool: types.Tool) -> types.Tool:
    """The tool with its view link added to its ``_meta`` (unchanged without a view)."""
    meta = tool_meta(tool.name)
    if meta is None:
        return tool
    return tool.model_copy(update={"meta": {**(tool.meta or {}), **meta}})


def resource_meta() -> dict[str, Any]:
    return {
        "ui": {
            "csp": NO_EXTERNAL_DOMAIN.model_dump(by_alias=True, exclude_none=True),
            "prefersBorder": True,
        }
    }


def is_view_uri(uri: str) -> bool:
    return uri.startswith(SCHEME)


def read(uri: str) -> types.ReadResourceResult | None:
    """``resources/read`` of a view; None for a ``ui://metacortex/`` URI that names none."""
    view = BY_URI.get(uri)
    if view is None:
        return None
    contents = types.TextResourceContents(
        uri=view.uri, mime_type=APP_MIME_TYPE, text=document(view.name), _meta=resource_meta()
    )
    return types.ReadResourceResult(contents=[contents])


def offered() -> str:
    return ", ".join(view.uri for view in VIEWS)
