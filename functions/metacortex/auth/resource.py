"""The protected-resource side: OAuth access tokens at the MCP endpoints.

A token is accepted only at the resource (endpoint URL) it was issued for, and
only while its grant lives. The profile is the grant's preset intersected with
the endpoint's own profile; a grant the owner paused (or a paused endpoint) gives
a paused profile, which the guard refuses with 403. Challenges carry
``resource_metadata`` and ``scope`` (RFC 9728, RFC 6750); a tool call outside the
token's scopes is a 403 ``insufficient_scope`` naming the scope to ask for, and a call
of a tool the catalogue gives no scope a 403 ``forbidden``: a tool fails closed.

Whether a client id exists is not told to strangers: every well-formed endpoint
URL has resource metadata and may be asked for at authorize (only the signed-in
owner's consent page says an endpoint does not exist), and a bearer token is
looked up the same way at a known and at an unknown endpoint.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, Final

import anyio.to_thread
from starlette.requests import Request
from starlette.types import Scope

from metacortex import tool_catalogue
from metacortex.access import scopes as scope_names
from metacortex.access.grants import grant_profile
from metacortex.access.profiles import CLIENT_ID_PATTERN, Profile, Profiles
from metacortex.auth.tokens import TokenStore
from metacortex.config import Settings
from metacortex.kernel.bearer import BearerIdentity
from metacortex.kernel.rejections import Rejection
from metacortex.kernel.routes import FUNCTION_PREFIX, Route, resolve
from metacortex.owner.base import public_base

WELL_KNOWN_PRM: Final = "/.well-known/oauth-protected-resource"


def endpoint_path(route: Route) -> str:
    """The route's path after the public base (``/mcp`` or ``/clients/<id>/mcp``)."""
    path = route.canonical_path
    return path[len(FUNCTION_PREFIX) :] if path.startswith(FUNCTION_PREFIX + "/") else path


def resource_url(base: str, route: Route) -> str:
    return base + endpoint_path(route)


def metadata_url(base: str, path: str) -> str:
    """The metadata URL a challenge names for the resource ``base + path``.

    Without a path in the base this is the RFC 9728 path-inserted URI. Under a
    prefix (``…/metaCortexMcp``) it stays under the prefix, because
    cloudfunctions.net delivers only paths that start with the function's name;
    the path-inserted form is served as well, for hosts that route the root."""
    return f"{base}{WELL_KNOWN_PRM}{path}"


class OAuthResource:
    def __init__(
        self, settings: Settings, profiles: Callable[[], Profiles], tokens: TokenStore
    ) -> None:
        self._settings = settings
        self._profiles = profiles  # the profiles in effect (stored clients change)
        self._tokens = tokens

    def endpoint_profile(self, route: Route) -> Profile | None:
        return self._profiles().get(route.client_id)

    async def authenticate(self, scope: Scope, route: Route, token: str) -> BearerIdentity | None:
        endpoint = self.endpoint_profile(route)
        # Looked up even when the endpoint does not exist: the same work either way.
        record = await anyio.to_thread.run_sync(self._tokens.access, token)
        if record is None or endpoint is None:
            return None
        base = public_base(Request(scope), self._settings)
        if record.get("resource") != resource_url(base, route):
            return None  # audience-bound: issued for another endpoint
        grant_id = str(record["grant"])
        grant = await anyio.to_thread.run_sync(self._tokens.grant, grant_id)
        if grant is None:
            return None
        profile = grant_profile(
            grant_id,
            grant,
            endpoint,
            self._settings.metacortex_rate_limit_per_minute,
            self._profiles().directory,
        )
        return BearerIdentity(profile=profile, scopes=frozenset(record.get("scopes", ())))

    def _challenge(self, scope: Scope, route: Route, extra: str = "", scopes: str = "") -> str:
        base = public_base(Request(scope), self._settings)
        wanted = scopes or " ".join(scope_names.RESOURCE_SCOPES)
        # The metadata of the URL as the client wrote it (``…/mcp/`` keeps its slash), so
        # the resource it reads there is the URL it used (RFC 9728 §3.3).
        path = endpoint_path(route) + ("/" if str(scope["path"]).endswith("/") else "")
        return f'Bearer{extra} resource_metadata="{metadata_url(base, path)}", scope="{wanted}"'

    def unauthorized(self, scope: Scope, route: Route, token_presented: bool) -> Rejection:
        extra = ' error="invalid_token",' if token_presented else ""
        return Rejection(
            401,
            "unauthorized",
            "unauthorized",
            "missing or invalid credential; send Authorization: Bearer <token> "
            "(an OAuth client discovers how to get one from WWW-Authenticate)",
            {"www-authenticate": self._challenge(scope, route, extra)},
        )

    def insufficient_scope(
        self, scope: Scope, route: Route, identity: BearerIdentity, body: bytes
    ) -> Rejection | None:
        called = _called_tools(body)
        if called is None:
            return _TOO_DEEP
        for tool in called:
            needed = scope_names.needed_for(tool)
            if needed is None and tool_catalogue.entry(tool) is not None:
                return _no_scope(tool)
            if needed is not None and needed not in identity.scopes:
                wanted = " ".join(
                    s for s in scope_names.RESOURCE_SCOPES if s in identity.scopes or s == needed
                )
                return Rejection(
                    403,
                    "insufficient_scope",
                    "insufficient_scope",
                    f"this token lacks the scope {needed!r} that {tool!r} needs; "
                    "authorize again asking for it",
                    {
                        "www-authenticate": self._challenge(
                            scope, route, ' error="insufficient_scope",', wanted
                        )
                    },
                )
        return None


def _called_tools(body: bytes) -> list[str] | None:
    """The tools a JSON-RPC body calls; None when it nests deeper than Python's parser
    follows (it raises RecursionError where the SDK's parser gives up sooner)."""
    try:
        message: Any = json.loads(body)
    except RecursionError:
        return None
    except (ValueError, UnicodeDecodeError):
        return []
    messages = message if isinstance(message, list) else [message]
    names: list[str] = []
    for item in messages:
        if isinstance(item, dict) and item.get("method") == "tools/call":
            params = item.get("params")
            if isinstance(params, dict) and isinstance(params.get("name"), str):
                names.append(params["name"])
    return names


def _no_scope(tool: str) -> Rejection:
    """A tool the catalogue gives no scope: no OAuth token may call it, so no scope
    helps (no challenge). A name the catalogue does not know passes on, for MCP's own
    "unknown tool": nothing serves a tool the catalogue does not hold."""
    return Rejection(
        403,
        "forbidden",
        "tool_without_scope",
        f"the tool {tool[:64]!r} is not offered to OAuth tokens",
    )


_TOO_DEEP: Final = Rejection(
    400,
    "invalid_request",
    "parse_error",
    "Parse error: the JSON body is nested too deeply",
    jsonrpc_code=-32700,
)


def resource_of(base: str, url: str) -> str | None:
    """The canonical resource URL ``url`` names on this server, or None: ``/mcp`` or
    ``/clients/<id>/mcp`` with an id of the profile syntax, whether or not such a profile
    exists (``served`` tells that, to the owner only).

    One trailing slash is tolerated, as for the endpoints themselves."""
    candidate = url[:-1] if url.endswith("/") else url
    if not candidate.startswith(base + "/"):
        return None
    route = resolve(candidate[len(base) :])
    if route is None or route.kind != "mcp":
        return None
    if route.client_id is not None and not CLIENT_ID_PATTERN.fullmatch(route.client_id):
        return None
    return candidate


def served(base: str, profiles: Profiles, resource: str) -> bool:
    """Whether the resource URL (from ``resource_of``) is an endpoint configured here."""
    route = resolve(resource[len(base) :]) if resource.startswith(base + "/") else None
    return route is not None and route.kind == "mcp" and profiles.get(route.client_id) is not None
