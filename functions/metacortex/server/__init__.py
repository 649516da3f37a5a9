"""The running server: the Starlette app and what its parts share.

``app.create_app`` composes the HTTP guard (``metacortex.guard``), the MCP
surface (``metacortex.mcp_surface``), the OAuth server, the console and the
owner's pages; ``stdio`` serves the same MCP surface over stdin/stdout.
Shared by all of them: ``runtime`` (the service, clients and start-up state of
one process), ``profiles`` (what an endpoint may call and see), ``events``
(``memory_events`` written off the request path), ``logs``, ``lifecycle``
(building and closing the service) and ``domain_errors`` (domain errors as HTTP
answers on every route but MCP's).
"""

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
