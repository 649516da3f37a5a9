"""OAuth scopes: what a token may do, independent of which tools its grant lists.

``memory:read`` covers the read tools, ``memory:write`` the writing ones;
``offline_access`` asks for a refresh token. A request without ``scope`` gets
``DEFAULT_SCOPES`` (ChatGPT reconnects without one); scopes this server does not
know are ignored (RFC 6749 §3.3 lets a server grant less than asked; the token
response says what was granted), so a client asking for its own extra scope
still connects. Calling a tool the token's
scopes do not cover is an HTTP 403 ``insufficient_scope`` naming the scope needed;
calling one the tool catalogue gives no scope (``erase_context``, or a tool added
without one) is an HTTP 403 ``forbidden`` whatever the token holds: fail closed.
"""

from __future__ import annotations

from typing import Final

from metacortex import tool_catalogue

READ: Final = tool_catalogue.READ
WRITE: Final = tool_catalogue.WRITE
OFFLINE: Final = "offline_access"
# What resources advertise and challenge with (offline_access is left out: MCP 2026-07-28).
RESOURCE_SCOPES: Final = (READ, WRITE)
SUPPORTED: Final = (READ, WRITE, OFFLINE)
DEFAULT_SCOPES: Final = (READ, WRITE)


def parse(raw: str | None) -> tuple[str, ...]:
    """The scopes to grant, in supported order: the known requested ones, with the
    default access when none of them is a resource scope (missing, blank, only
    ``offline_access`` or only unknown ones). Any whitespace separates scopes
    (Claude sends a leading space)."""
    if raw is None or not raw.split():
        return DEFAULT_SCOPES
    requested = set(raw.split()) & set(SUPPORTED)
    if not requested & set(RESOURCE_SCOPES):
        requested |= set(DEFAULT_SCOPES)  # only offline_access: it wants the default access
    return tuple(scope for scope in SUPPORTED if scope in requested)


def needed_for(tool: str) -> str | None:
    """The scope a token needs to call ``tool`` (the catalogue's); None where no token
    may call it: the tool has no scope, or there is no such tool."""
    return tool_catalogue.scope_of(tool)
