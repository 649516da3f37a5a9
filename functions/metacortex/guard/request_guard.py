"""The HTTP guard: every request passes here before the MCP transport sees it.

A pure ASGI middleware (not ``BaseHTTPMiddleware``) so the body limit is
enforced while the body is read and nothing is buffered beyond it. In order:

1. route: ``/mcp``, ``/clients/{id}/mcp``, ``/healthz`` (also under
   ``/metaCortexMcp``); anything else is 404;
2. Host header (DNS-rebinding defence), 421 when not allowed;
3. ``OPTIONS`` is a CORS preflight answered per profile (it carries no credential);
4. credential: ``Authorization: Bearer`` (or ``?auth_token=`` for profiles that
   opt in), compared as sha256 digests in constant time; an unknown client id
   and a wrong token get the very same 401, whatever the method (a client such
   as Codex discovers OAuth with an unauthenticated ``GET``); a client the owner
   paused (``metacortex.clients``) is refused with 403;
   then the method: only ``POST`` reaches MCP (stateless server: no SSE stream
   to ``GET``, no session to ``DELETE``), anything else is 405 with ``Allow``;
5. ``Origin``, when sent, must be one of the profile's origins exactly (403);
6. content type and accept (415, 406), so every refusal is JSON;
7. per-profile rate limit (429 with ``Retry-After``, the body a JSON-RPC error
   whose message names the limit and the delay, as MCP clients show it);
8. body limit, checked on ``Content-Length`` and again while reading (413), and
   the body deadline: the whole body within ``METACORTEX_BODY_DEADLINE_SECONDS``
   however it trickles (408, and the connection is closed).

With OAuth on (``runtime.oauth``), routes of kind ``auth`` pass after the Host
check; a bearer token that is no static token is asked of the OAuth resource
server, whose 401 carries ``resource_metadata`` and ``scope``, and a tool call
outside the token's scopes is refused with 403 ``insufficient_scope``.

Every refusal is a small JSON body ``{"error": {"code", "message"}}``, logged
and recorded as a ``memory_events`` rejection. The ``auth_token`` query
parameter is removed from the request before anything downstream sees it. A
request's log line is bounded like a refusal's event: the path cut at 200
characters, the query only as its length and digest, the User-Agent cut.
"""

from __future__ import annotations

import hmac
import logging
import secrets
import time
from collections.abc import Collection, Mapping
from typing import Final
from urllib.parse import parse_qsl, urlencode

import anyio
from mcp.server.streamable_http import check_accept_headers
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, MODERN_PROTOCOL_VERSIONS
from starlette.datastructures import Headers
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from metacortex.access.profiles import Profile, Profiles, token_digest
from metacortex.guard.addresses import AddressResolver, client_address
from metacortex.guard.hosts import HostPolicy, is_loopback_origin
from metacortex.guard.ratelimit import RateLimiter
from metacortex.kernel.bearer import BearerIdentity
from metacortex.kernel.logs import bounded_text, log, redact_query, request_lines
from metacortex.kernel.rejections import Rejection, bounded_request, loggable_path
from metacortex.kernel.routes import Route, resolve
from metacortex.kernel.runtime import PROFILE_SCOPE_KEY, UNAVAILABLE_MESSAGE, Runtime

URL_TOKEN_PARAM: Final = "auth_" + "token"  # split: not a credential (ruff S105)
_ALLOWED_METHODS: Final = "POST, OPTIONS"
_CORS_BASE_HEADERS: Final = frozenset(
    {
        "authorization",
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
_SAFE_HEADERS: Final = {"cache-control": "no-store", "x-content-type-options": "nosniff"}


class _BodyRefused(Exception):
    """The body was refused while reading it (too large, too slow)."""

    def __init__(self, rejection: Rejection) -> None:
        super().__init__(rejection.reason)
        self.rejection = rejection


class _Disconnected(Exception):
    pass


class RequestGuard:
    def __init__(
        self,
        app: ASGIApp,
        *,
        runtime: Runtime,
        rate_limiter: RateLimiter | None = None,
    ) -> None:
        self.app = app
        self._runtime = runtime
        settings = runtime.settings
        self._hosts = HostPolicy(
            settings.metacortex_allowed_hosts,
            enforce=settings.deployment == "local" or bool(settings.metacortex_allowed_hosts),
        )
        self._max_body = settings.metacortex_max_body_bytes
        self._body_deadline = settings.metacortex_body_deadline_seconds
        self._limiter = rate_limiter or RateLimiter()
        self._addresses = AddressResolver(settings.trusted_proxy_hops)
        # Compared against when there is no real digest, so every path costs the same.
        self._no_token = secrets.token_bytes(32)
        self._loopback_origins = settings.bind_is_loopback

    def _all_origins(self) -> frozenset[str]:
        """Every origin some profile allows (the profiles as last checked)."""
        return frozenset(
            origin for profile in self._runtime.profiles.all() for origin in profile.allowed_origins
        )

    async def _profiles_for(self, route: Route) -> Profiles | None:
        """The profiles in effect for this request; None when the client id can only be
        a stored one and the store failed to open."""
        clients = self._runtime.clients
        # A stored client is known once the store is open (a background start).
        stored = route.client_id is not None and route.client_id not in clients.environment.clients
        if stored and not await self._runtime.start_succeeded():
            return None
        return await clients.current()

    def _origin_allowed(self, origin: str, configured: Collection[str]) -> bool:
        return origin in configured or (self._loopback_origins and is_loopback_origin(origin))

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        self._addresses.remember(scope)
        route = resolve(scope["path"])
        method: str = scope["method"]
        needs_store = route is not None and route.kind in ("auth", "owner")
        if self._runtime.failure is not None or (
            needs_store and not await self._runtime.start_succeeded()
        ):
            await self._reject(scope, send, route, started, _UNAVAILABLE)
            return
        if route is None or (route.kind == "auth" and self._runtime.oauth is None):
            await self._reject(scope, send, None, started, _not_found())
            return
        headers = Headers(scope=scope)
        if not self._hosts.allows(headers.get("host")):
            await self._reject(scope, send, route, started, _HOST_NOT_ALLOWED)
            return
        if route.kind == "health":
            if method in ("GET", "HEAD"):
                await self.app(scope, receive, send)
            else:
                await self._reject(scope, send, route, started, _method_not_allowed("GET"))
            return
        if route.kind in ("auth", "owner"):
            await self._pass_through(scope, receive, send, route, headers, started)
            return
        profiles = await self._profiles_for(route)
        if profiles is None:
            await self._reject(scope, send, route, started, _UNAVAILABLE)
            return
        if method == "OPTIONS":
            await self._preflight(scope, send, route, headers, started)
            return
        profile = self._authenticate(route, scope, headers, profiles)
        identity: BearerIdentity | None = None
        # OAuth tokens are kept in the store: wait for it to be open.
        if (
            profile is None
            and self._runtime.settings.metacortex_oauth
            and not await self._runtime.start_succeeded()
        ):
            await self._reject(scope, send, route, started, _UNAVAILABLE)
            return
        oauth = self._runtime.oauth
        if profile is None and oauth is not None:
            token, from_url = _credential(headers, scope.get("query_string", b""))
            if token is not None and not from_url:
                identity = await oauth.authenticate(scope, route, token)
            if identity is None:
                rejection = oauth.unauthorized(scope, route, token is not None)
                await self._reject(scope, send, route, started, rejection)
                return
            profile = identity.profile
        if profile is None:
            await self._reject(scope, send, route, started, _UNAUTHORIZED)
            return
        refused_because = profile.refused_because
        if refused_because is not None:
            rejection = _PAUSED if refused_because == "paused" else _PERSON_INACTIVE
            await self._reject(scope, send, route, started, rejection)
            return
        if method != "POST":
            await self._reject(scope, send, route, started, _method_not_allowed(_ALLOWED_METHODS))
            return
        origin = headers.get("origin")
        if origin is not None and not self._origin_allowed(origin, profile.allowed_origins):
            await self._reject(scope, send, route, started, _ORIGIN_NOT_ALLOWED)
            return
        content_type = headers.get("content-type", "").lower()
        if not content_type.startswith("application/json"):
            await self._reject(scope, send, route, started, _UNSUPPORTED_MEDIA_TYPE)
            return
        if "accept" not in headers:
            # No Accept header means the client takes anything (RFC 9110 §12.5.1);
            # the SDK transport below insists on one, so name what we answer with.
            scope = {**scope, "headers": [*scope["headers"], (b"accept", _ANY_MCP_ANSWER)]}
        elif not check_accept_headers(Request(scope))[0]:
            await self._reject(scope, send, route, started, _NOT_ACCEPTABLE)
            return
        wait = self._limiter.acquire(profile.id, profile.rate_limit_per_minute)
        if wait is not None:
            limit = profile.rate_limit_per_minute
            await self._reject(scope, send, route, started, _rate_limited(wait, limit))
            return
        try:
            body = await self._read_body(headers, receive)
        except _BodyRefused as refused:
            await self._reject(scope, send, route, started, refused.rejection)
            return
        except _Disconnected:
            return
        if body.lstrip()[:1] == b"[":
            await self._reject(scope, send, route, started, _BATCH_NOT_SUPPORTED)
            return
        version = headers.get("mcp-protocol-version")
        if version is not None and version not in _PROTOCOL_VERSIONS:
            await self._reject(scope, send, route, started, _unsupported_version(version))
            return
        if identity is not None and oauth is not None:
            refusal = oauth.insufficient_scope(scope, route, identity, body)
            if refusal is not None:
                await self._reject(scope, send, route, started, refusal)
                return
        with request_lines():  # on a terminal, the tool call's line joins the access line
            await self._forward(scope, receive, send, route, profile, origin, body, started)

    # ------------------------------------------------------------ credential
    def _authenticate(
        self, route: Route, scope: Scope, headers: Headers, profiles: Profiles
    ) -> Profile | None:
        profile = profiles.get(route.client_id)
        token, from_url = _credential(headers, scope.get("query_string", b""))
        presented = token_digest(token) if token is not None else self._no_token
        expected = (
            profile.token_sha256
            if profile is not None and profile.token_sha256 is not None
            else self._no_token
        )
        # Always one digest comparison of fixed-length values: neither the token's
        # length nor whether the client id exists shows in the timing.
        matches = hmac.compare_digest(presented, expected)
        if not matches or token is None or profile is None or profile.token_sha256 is None:
            return None
        if from_url and not profile.allow_url_token:
            return None
        return profile

    # ------------------------------------------------------------ auth pages
    async def _pass_through(
        self,
        scope: Scope,
        receive: Receive,
        send: Send,
        route: Route,
        headers: Headers,
        started: float,
    ) -> None:
        """OAuth and owner routes: the same body limit, then the router; one access log."""
        body = b""
        if scope["method"] == "POST":
            try:
                body = await self._read_body(headers, receive)
            except _BodyRefused as refused:
                await self._reject(scope, send, route, started, refused.rejection)
                return
            except _Disconnected:
                return
        status = 0
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if scope["method"] == "POST" and not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        async def watch(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
            await send(message)

        await self.app(scope, replay, watch)
        self._access_log(scope, route, status, started, None)

    # ------------------------------------------------------------------ body
    async def _read_body(self, headers: Headers, receive: Receive) -> bytes:
        """The whole body, within the size limit and the body deadline (however it trickles)."""
        declared = headers.get("content-length")
        if declared is not None and declared.isdigit() and int(declared) > self._max_body:
            raise _BodyRefused(self._too_large())
        chunks: list[bytes] = []
        size = 0
        with anyio.move_on_after(self._body_deadline):
            while True:
                message = await receive()
                if message["type"] == "http.disconnect":
                    raise _Disconnected
                chunk: bytes = message.get("body", b"")
                size += len(chunk)
                if size > self._max_body:
                    raise _BodyRefused(self._too_large())
                chunks.append(chunk)
                if not message.get("more_body", False):
                    return b"".join(chunks)
        raise _BodyRefused(self._too_slow())

    def _too_large(self) -> Rejection:
        return Rejection(
            413,
            "payload_too_large",
            "payload_too_large",
            f"request body is larger than {self._max_body} bytes; send less content "
            "(split long text into several memories, or reference large files through "
            "artifact_refs)",
        )

    def _too_slow(self) -> Rejection:
        return Rejection(
            408,
            "request_timeout",
            "body_timeout",
            f"the request body did not arrive within {self._body_deadline:g} s; send it "
            "at once (the operator sets METACORTEX_BODY_DEADLINE_SECONDS)",
            # Whatever is still on its way is not read: the connection ends here.
            {"connection": "close"},
        )

    # --------------------------------------------------------------- forward
    async def _forward(
        self,
        scope: Scope,
        receive: Receive,
        send: Send,
        route: Route,
        profile: Profile,
        origin: str | None,
        body: bytes,
        started: float,
    ) -> None:
        inner_scope = dict(scope)
        inner_scope["path"] = route.canonical_path
        inner_scope["query_string"] = _without_url_token(scope.get("query_string", b""))
        inner_scope[PROFILE_SCOPE_KEY] = profile
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            # After the body, only the real disconnect can arrive.
            return await receive()

        status = 0
        response_started = False

        async def send_with_cors(message: Message) -> None:
            nonlocal status, response_started
            if message["type"] == "http.response.start":
                response_started = True
                status = int(message["status"])
                extra: list[tuple[bytes, bytes]] = [
                    (name.encode(), value.encode()) for name, value in _SAFE_HEADERS.items()
                ]
                if origin is not None:
                    extra += _cors_headers(origin)
                message = {**message, "headers": [*message.get("headers", []), *extra]}
            await send(message)

        try:
            await self.app(inner_scope, replay, send_with_cors)
        except Exception:
            logging.getLogger("metacortex.server").exception(
                "unhandled error while serving %s", loggable_path(route.canonical_path)
            )
            if not response_started:
                response = _json(500, "unavailable", "internal error; the server log has details")
                await response(inner_scope, replay, send)
                status = 500
        self._access_log(scope, route, status, started, profile.id)

    async def _preflight(
        self, scope: Scope, send: Send, route: Route, headers: Headers, started: float
    ) -> None:
        origin = headers.get("origin")
        if origin is None:
            response = Response(
                status_code=204, headers={"allow": _ALLOWED_METHODS, **_SAFE_HEADERS}
            )
            await response(scope, _no_receive, send)
            return
        # A preflight is answered on the origin alone: any origin some profile configures
        # is let through, whatever the client id. Answering per profile told a prober
        # which ids exist (204 for an unknown id, 403 for a known one lacking the
        # origin). The POST that follows still checks the profile's own origins.
        if not self._origin_allowed(origin, self._all_origins()):
            await self._reject(scope, send, route, started, _ORIGIN_NOT_ALLOWED)
            return
        requested = headers.get("access-control-request-headers", "")
        allow_headers = [
            name
            for name in (part.strip().lower() for part in requested.split(","))
            if name in _CORS_BASE_HEADERS or name.startswith("mcp-param-")
        ]
        cors = {
            "access-control-allow-origin": origin,
            "access-control-allow-methods": _ALLOWED_METHODS,
            "access-control-allow-headers": ", ".join(allow_headers or sorted(_CORS_BASE_HEADERS)),
            "access-control-max-age": _PREFLIGHT_MAX_AGE,
            "vary": "Origin",
            **_SAFE_HEADERS,
        }
        response = Response(status_code=204, headers=cors)
        await response(scope, _no_receive, send)

    # ------------------------------------------------------------- rejection
    async def _reject(
        self,
        scope: Scope,
        send: Send,
        route: Route | None,
        started: float,
        rejection: Rejection,
    ) -> None:
        headers = dict(rejection.headers)
        origin = Headers(scope=scope).get("origin")
        if origin is not None and self._origin_allowed(origin, self._all_origins()):
            # A browser sees a refusal's status and headers (WWW-Authenticate,
            # Retry-After) only when the response carries CORS headers.
            headers |= {
                key.decode(): value.decode("latin-1") for key, value in _cors_headers(origin)
            }
        response = (
            _json(rejection.status, rejection.code, rejection.message, headers)
            if rejection.jsonrpc_code is None
            else JSONResponse(
                {
                    "jsonrpc": "2.0",
                    "id": None,
                    "error": {
                        "code": rejection.jsonrpc_code,
                        "message": rejection.message,
                        **({"data": rejection.jsonrpc_data} if rejection.jsonrpc_data else {}),
                    },
                },
                status_code=rejection.status,
                headers={**_SAFE_HEADERS, **headers},
            )
        )
        await response(scope, _no_receive, send)
        client_id = route.loggable_client_id if route is not None else None
        events = self._runtime.events
        if events is not None:
            events.rejection(
                client_id=client_id,
                reason=rejection.reason,
                http_status=rejection.status,
                method=scope["method"],
                path=scope["path"],
                query=redact_query(scope.get("query_string", b"").decode("latin-1")),
                latency_ms=(time.perf_counter() - started) * 1000,
            )
        self._access_log(scope, route, rejection.status, started, client_id, rejection.reason)

    def _access_log(
        self,
        scope: Scope,
        route: Route | None,
        status: int,
        started: float,
        client_id: str | None,
        reason: str | None = None,
    ) -> None:
        """One line per request, bounded as a refusal's event is: anyone can send a
        60 KB User-Agent or path, and a query (authorize's ``state``, a console search)
        is logged only as its length and digest."""
        request = bounded_request(
            scope["method"],
            scope["path"],
            redact_query(scope.get("query_string", b"").decode("latin-1")),
        )
        level = (
            logging.ERROR if status >= 500 else logging.WARNING if status >= 400 else logging.INFO
        )
        latency = time.perf_counter() - started
        log(
            level,
            f"{request['method']} {request['path']} {status}",
            httpRequest={
                "requestMethod": request["method"],
                "requestUrl": request["path"],
                "status": status,
                "latency": f"{latency:.6f}s",
                "userAgent": bounded_text(Headers(scope=scope).get("user-agent")),
                "remoteIp": client_address(scope).ip,
                "protocol": f"HTTP/{scope.get('http_version', '1.1')[:8]}",
            },
            path_chars=request.get("path_chars"),
            query=request.get("query"),
            client_id=client_id,
            reason=reason,
            route=route.kind if route is not None else None,
        )


# ------------------------------------------------------------------ helpers
def _json(
    status: int, code: str, message: str, headers: Mapping[str, str] | None = None
) -> JSONResponse:
    return JSONResponse(
        {"error": {"code": code, "message": message}},
        status_code=status,
        headers={**_SAFE_HEADERS, **(headers or {})},
    )


def _credential(headers: Headers, query_string: bytes) -> tuple[str | None, bool]:
    """(token, came_from_url): the Bearer header wins over ``?auth_token=``."""
    authorization = headers.get("authorization")
    if authorization:
        scheme, _, value = authorization.partition(" ")
        if scheme.lower() == "bearer" and value.strip():
            return value.strip(), False
    for key, value in parse_qsl(query_string.decode("latin-1"), keep_blank_values=True):
        if key == URL_TOKEN_PARAM and value:
            return value, True
    return None, False


def _without_url_token(query_string: bytes) -> bytes:
    pairs = parse_qsl(query_string.decode("latin-1"), keep_blank_values=True)
    kept = [(key, value) for key, value in pairs if key != URL_TOKEN_PARAM]
    return urlencode(kept).encode("latin-1") if len(kept) != len(pairs) else query_string


def _cors_headers(origin: str) -> list[tuple[bytes, bytes]]:
    return [
        (b"access-control-allow-origin", origin.encode("latin-1")),
        (b"access-control-expose-headers", _EXPOSED_HEADERS.encode()),
        (b"vary", b"Origin"),
    ]


async def _no_receive() -> Message:
    return {"type": "http.disconnect"}


_UNAVAILABLE: Final = Rejection(
    503, "unavailable", "unavailable", UNAVAILABLE_MESSAGE, headers={"retry-after": "30"}
)


def _not_found() -> Rejection:
    return Rejection(
        404,
        "not_found",
        "unknown_route",
        "no such endpoint; MCP is served at POST /mcp and POST /clients/<id>/mcp",
    )


def _method_not_allowed(allowed: str) -> Rejection:
    return Rejection(
        405,
        "method_not_allowed",
        "method_not_allowed",
        f"this endpoint accepts {allowed} only (stateless MCP: no SSE stream, no session to delete)"
        if "POST" in allowed
        else f"this endpoint accepts {allowed} only",
        {"allow": allowed},
    )


# JSON-RPC code of the rate-limit refusal. MCP 2026-07-28 reserves -32020..-32099 for
# the specification's own codes and asks for new ones outside -32768..-32000; 429 is
# HTTP's Too Many Requests, as other MCP servers chose. What a client shows is the
# message: the official SDKs raise it as the tool call's error.
RATE_LIMITED_JSONRPC_CODE: Final = 429


def _rate_limited(seconds: int, per_minute: int) -> Rejection:
    """A JSON-RPC error (not the plain form): the MCP SDK client reads a non-2xx body
    only when it is one, else it raises a bare "Server returned an error response"
    and the caller never learns it was a rate limit (Retry-After stays in the HTTP
    headers, which the SDK does not pass on)."""
    return Rejection(
        429,
        "rate_limited",
        "rate_limited",
        f"rate limited: this endpoint takes {per_minute} requests a minute; "
        f"retry after {seconds} s",
        {"retry-after": str(seconds)},
        jsonrpc_code=RATE_LIMITED_JSONRPC_CODE,
        jsonrpc_data={"code": "rate_limited", "retry_after_seconds": seconds},
    )


_UNAUTHORIZED: Final = Rejection(
    401,
    "unauthorized",
    "unauthorized",
    "missing or invalid credential; send Authorization: Bearer <token>",
    {"www-authenticate": "Bearer"},
)
_PAUSED: Final = Rejection(
    403,
    "forbidden",
    "client_paused",
    "this client is paused by the server's owner; it is refused until the owner resumes it",
)
_PERSON_INACTIVE: Final = Rejection(
    403,
    "forbidden",
    "person_inactive",
    "the person this credential belongs to was deactivated by the server's owner; "
    "it is refused until the owner reactivates them",
)
_ORIGIN_NOT_ALLOWED: Final = Rejection(
    403,
    "forbidden",
    "origin_not_allowed",
    "this Origin is not allowed for this endpoint",
)
_HOST_NOT_ALLOWED: Final = Rejection(
    421,
    "host_not_allowed",
    "host_not_allowed",
    "this Host is not served here; the operator can add it to METACORTEX_ALLOWED_HOSTS",
)
_UNSUPPORTED_MEDIA_TYPE: Final = Rejection(
    415,
    "unsupported_media_type",
    "unsupported_media_type",
    "send the JSON-RPC message with Content-Type: application/json",
)
_ANY_MCP_ANSWER: Final = b"application/json, text/event-stream"

_BATCH_NOT_SUPPORTED: Final = Rejection(
    400,
    "invalid_request",
    "batch_not_supported",
    "JSON-RPC batches are not supported: send one message per request",
    jsonrpc_code=-32600,
)

_PROTOCOL_VERSIONS: Final = (*HANDSHAKE_PROTOCOL_VERSIONS, *MODERN_PROTOCOL_VERSIONS)


def _unsupported_version(version: str) -> Rejection:
    return Rejection(
        400,
        "invalid_request",
        "unsupported_protocol_version",
        f"unsupported MCP-Protocol-Version header {version[:40]!r}; "
        f"this server speaks {', '.join(_PROTOCOL_VERSIONS)}",
        jsonrpc_code=-32600,
    )


_NOT_ACCEPTABLE: Final = Rejection(
    406,
    "not_acceptable",
    "not_acceptable",
    "this server answers with JSON: send Accept: application/json, text/event-stream",
)
