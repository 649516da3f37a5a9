"""The low-level MCP server: per-profile tools and prompts, wired to the runtime.

The low-level ``Server`` (not ``MCPServer``) is used because what a caller sees
depends on the endpoint it called: handlers read the profile the HTTP guard
put on the request and answer ``tools/list`` and ``prompts/list`` for that
profile only.
"""

from __future__ import annotations

from typing import Any, Final

import mcp_types as types
from mcp.server import Server
from mcp.server.context import ServerRequestContext

from metacortex import __version__
from metacortex.server import prompts, tools
from metacortex.server.guard import request_profile
from metacortex.server.runtime import Runtime

INSTRUCTIONS: Final = (
    "MetaCortex is the user's persistent memory, shared by all their assistants. Before "
    "answering anything that may depend on earlier conversations (preferences, project "
    "facts, decisions), call search_context, then fetch_context for the full text of a "
    "match. Save durable, self-contained facts with save_context when the user shares "
    "something worth keeping or asks you to remember it. When a memory turns out wrong or "
    "outdated, save the right one and deprecate the old one (the correct_memory prompt "
    "walks through it)."
)


def build_mcp_server(runtime: Runtime) -> Server[Any]:
    async def list_tools(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools.tool_definitions(request_profile(ctx.request)))

    async def call_tool(
        ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        return await tools.call_tool(
            runtime,
            request_profile(ctx.request),
            params.name,
            params.arguments,
            ctx.protocol_version,
        )

    async def list_prompts(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListPromptsResult:
        return types.ListPromptsResult(prompts=prompts.prompts_for(request_profile(ctx.request)))

    async def get_prompt(
        ctx: ServerRequestContext[Any], params: types.GetPromptRequestParams
    ) -> types.GetPromptResult:
        return prompts.render(request_profile(ctx.request), params.name, params.arguments)

    return Server(
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
        on_list_prompts=list_prompts,
        on_get_prompt=get_prompt,
    )
