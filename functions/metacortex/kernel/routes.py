"""The HTTP routes, recognised once for both the guard and the Starlette router.

Deployed as the Cloud Function ``metaCortexMcp``, requests arrive either with
the function name stripped or with it as a path prefix (Hosting rewrites,
run.app URLs), so every route is served in both forms. A single trailing
slash is tolerated (normalized away) because connectors are often configured
with one, and a redirect would turn their POST into a failed request.

With OAuth on, the authorization server's pages (``/oauth/...``,
``/.well-known/oauth-...``) are routes of kind ``auth``; the owner's sign-in and
console (``/owner/...``, ``/console...``) are routes of kind ``owner``, always on.
The guard checks their Host and hands them to the router untouched.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final, Literal

FUNCTION_PREFIX: Final = "/metaCortexMcp"
ADMIN_PATH: Final = "/mcp"
CLIENT_PATH: Final = "/clients/{client_id}/mcp"
HEALTH_PATH: Final = "/healthz"

_PATTERN: Final = re.compile(
    r"^(?P<prefix>/metaCortexMcp)?"
    r"(?:(?P<health>/healthz)|(?P<admin>/mcp)|/clients/(?P<client>[^/]+)/mcp)/?$"
)
_AUTH_PATTERN: Final = re.compile(
    r"^(?:/metaCortexMcp)?"
    r"(?:/\.well-known/(?:oauth-protected-resource|oauth-authorization-server"
    r"|openid-configuration)(?:/[^?#]*)?"
    r"|/oauth/[a-z-]+)$"
)
# The sign-in pages, an invitation link (its token) and the memory console
# (metacortex.owner, metacortex.console).
_OWNER_PATTERN: Final = re.compile(
    r"^(?:/metaCortexMcp)?(?:/owner/[a-z./-]+|/owner/invite/[A-Za-z0-9_-]{1,100}"
    r"|/console(?:/[A-Za-z0-9._-]+)*/?)$"
)
# A claimed client id is attacker-controlled; only a short URL-safe one is echoed into
# logs and events.
_SAFE_ID: Final = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


@dataclass(frozen=True, slots=True)
class Route:
    kind: Literal["health", "mcp", "auth", "owner"]
    # None for the admin endpoint; the claimed id (not yet known to exist) for a client one.
    client_id: str | None
    # The path without a trailing slash, as the Starlette router matches it.
    canonical_path: str

    @property
    def loggable_client_id(self) -> str:
        if self.client_id is None:
            return "default"
        return self.client_id if _SAFE_ID.fullmatch(self.client_id) else "(invalid)"


def resolve(path: str) -> Route | None:
    match = _PATTERN.fullmatch(path)
    if match is None:
        if "/../" in path or path.endswith("/.."):
            return None
        if _AUTH_PATTERN.match(path):
            return Route("auth", None, path)
        if _OWNER_PATTERN.match(path):
            return Route("owner", None, path)
        return None
    canonical = path[:-1] if path.endswith("/") else path
    if match.group("health"):
        return Route("health", None, canonical)
    return Route("mcp", match.group("client"), canonical)


def starlette_paths() -> dict[str, tuple[str, ...]]:
    """Paths the Starlette router mounts, by kind (both forms of every route)."""
    health = (HEALTH_PATH, FUNCTION_PREFIX + HEALTH_PATH)
    mcp = (ADMIN_PATH, CLIENT_PATH, FUNCTION_PREFIX + ADMIN_PATH, FUNCTION_PREFIX + CLIENT_PATH)
    return {"health": health, "mcp": mcp}
