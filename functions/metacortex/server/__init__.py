"""The MCP server: Starlette app, endpoint profiles, HTTP guard, tools, prompt, events."""

from metacortex.server.app import create_app

__all__ = ["create_app"]
