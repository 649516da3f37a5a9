"""The low-level MCP server: per-profile tools, resources and prompts, wired to the runtime.

The low-level ``Server`` (not ``MCPServer``) is used because what a caller sees
depends on who calls: every handler asks ``profile_of`` for the caller's
profile and answers ``tools/list``, ``resources/list`` and ``prompts/list`` for
that profile only. Over HTTP that is the profile the guard put on the request
(``request_profile``); over stdio, the one profile the process serves
(``server/stdio.py``). Both transports run this same server.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Final

import mcp_types as types
from mcp.server import Server
from mcp.server.context import ServerRequestContext

from metacortex import __version__
from metacortex.access.profiles import Profile
from metacortex.apps import views
from metacortex.kernel.runtime import Runtime, request_profile
from metacortex.mcp_surface import prompts, resources, tools

INSTRUCTIONS: Final = (
    "MetaCortex is the user's persistent memory, shared by all their assistants. Before "
    "answering anything that may depend on earlier conversations (preferences, project "
    "facts, decisions), call search_context, then fetch_context for the full text of a "
    "match. Save durable, self-contained facts with save_context when the user shares "
    "something worth keeping or asks you to remember it. When a memory turns out wrong or "
    "outdated, save the right one and deprecate the old one (the correct_memory prompt "
    "walks through it)."
)


# The caller's profile for one request.
ProfileOf = Callable[[ServerRequestContext[Any]], Awaitable[Profile]]


async def profile_of_request(ctx: ServerRequestContext[Any]) -> Profile:
    """Over HTTP: the profile the guard authenticated for this request."""
    return request_profile(ctx.request)


def build_mcp_server(runtime: Runtime, profile_of: ProfileOf = profile_of_request) -> Server[Any]:
    async def list_tools(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        profile = await profile_of(ctx)
        extraction = runtime.settings.extracts_facts
        return types.ListToolsResult(tools=tools.tool_definitions(profile, extraction=extraction))

    async def call_tool(
        ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        request = ctx.request
        return await tools.call_tool(
            runtime,
            await profile_of(ctx),
            params.name,
            params.arguments,
            ctx.protocol_version,
            receive=getattr(request, "receive", None),  # HTTP: the client's disconnect
        )

    async def list_resources(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourcesResult:
        return types.ListResourcesResult(resources=resources.resources_for(await profile_of(ctx)))

    async def list_resource_templates(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourceTemplatesResult:
        return types.ListResourceTemplatesResult(
            resource_templates=resources.templates_for(await profile_of(ctx))
        )

    async def read_resource(
        ctx: ServerRequestContext[Any], params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        return await resources.read_resource(
            runtime, await profile_of(ctx), params.uri, ctx.protocol_version
        )

    async def list_prompts(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListPromptsResult:
        return types.ListPromptsResult(prompts=prompts.prompts_for(await profile_of(ctx)))

    async def get_prompt(
        ctx: ServerRequestContext[Any], params: types.GetPromptRequestParams
    ) -> types.GetPromptResult:
        return await prompts.get_prompt(
            runtime, await profile_of(ctx), params.name, params.arguments, ctx.protocol_version
        )

    server: Server[Any] = Server(
        "metacortex",
        version=__version__,
        title="MetaCortex",
        description="Persistent memory for AI agents: save, search and fetch memories.",
        instructions=INSTRUCTIONS,
        # Input schemas are the same for every profile; answering Mcp-Param header
        # validation from the catalog spares a tools/list round per call.
        get_tool_input_schema=tools.input_schema_of,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_list_resources=list_resources,
        on_list_resource_templates=list_resource_templates,
        on_read_resource=read_resource,
        on_list_prompts=list_prompts,
        on_get_prompt=get_prompt,
    )
    # MCP Apps: announced as the SDK's own Apps extension announces it (no settings).
    server.extensions[views.EXTENSION_ID] = {}
    return server
