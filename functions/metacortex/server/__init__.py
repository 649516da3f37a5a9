"""The MCP server: Starlette app, endpoint profiles, HTTP guard, tools, prompt, events."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from metacortex.server.app import create_app

__all__ = ["create_app"]


def __getattr__(name: str) -> Any:
    # Loaded on first use: ``metacortex.clients`` reads ``server.profiles`` and the app
    # reads ``metacortex.clients``, so importing the package must not build the app.
    if name == "create_app":
        from metacortex.server.app import create_app

        return create_app
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
