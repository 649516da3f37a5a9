"""CORS for the MCP endpoints: the preflight's answer, and the headers a response to a
browser-based client carries so that it may read the status and headers (a refusal's
``WWW-Authenticate`` and ``Retry-After`` included)."""

from __future__ import annotations

from typing import Final

ALLOWED_METHODS: Final = "POST, OPTIONS"
SAFE_HEADERS: Final = {"cache-control": "no-store", "x-content-type-options": "nosniff"}
_BASE_HEADERS: Final = frozenset(
    {
        "authorization",
        "x-api-key",
        "content-type",
        "accept",
        "mcp-protocol-version",
        "mcp-session-id",
        "last-event-id",
        "mcp-method",
        "mcp-name",
    }
)
_EXPOSED_HEADERS: Final = "mcp-session-id, mcp-protocol-version, retry-after, www-authenticate"
_PREFLIGHT_MAX_AGE: Final = "600"


def preflight_headers(origin: str, requested: str) -> dict[str, str]:
    """The answer to a preflight from an allowed ``origin`` asking for the
    ``requested`` headers (those MCP uses are allowed, ``mcp-param-*`` included)."""
    allow_headers = [
        name
        for name in (part.strip().lower() for part in requested.split(","))
        if name in _BASE_HEADERS or name.startswith("mcp-param-")
    ]
    return {
        "access-control-allow-origin": origin,
        "access-control-allow-methods": ALLOWED_METHODS,
        "access-control-allow-headers": ", ".join(allow_headers or sorted(_BASE_HEADERS)),
        "access-control-max-age": _PREFLIGHT_MAX_AGE,
        "vary": "Origin",
        **SAFE_HEADERS,
    }


def cors_headers(origin: str) -> list[tuple[bytes, bytes]]:
    """What a response to an allowed ``origin`` carries."""
    return [
        (b"access-control-allow-origin", origin.encode("latin-1")),
        (b"access-control-expose-headers", _EXPOSED_HEADERS.encode()),
        (b"vary", b"Origin"),
    ]
