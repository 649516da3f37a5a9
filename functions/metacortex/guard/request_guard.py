"""The HTTP guard: every request passes here before the MCP transport sees it.

A pure ASGI middleware (not ``BaseHTTPMiddleware``) so the body limit is
enforced while the body is read and nothing is buffered beyond it. ``__call__``
first refuses what it cannot serve: 503 when the process failed to start or a route
needs the store before it opened; 404 for any route but ``/mcp``,
``/clients/{id}/mcp``, ``/healthz`` (also under ``/metaCortexMcp``) and, with OAuth
on, the OAuth and owner pages. Then the named steps of ``RequestGuard.steps`` run in
order until one refuses the request or answers it; a request that passes them all
goes to MCP:

- ``host_allowed``: the Host header (DNS-rebinding defence), 421 when not allowed;
- ``health``: ``/healthz`` answers ``GET`` and ``HEAD``;
- ``auth_and_owner_pages``: the OAuth and owner pages get the body limit, then the
  router;
- ``profiles_known``: 503 when the client id can only be a stored one and the store
  failed to open;
- ``preflight``: ``OPTIONS`` is a CORS preflight, answered on the origin alone (it
  carries no credential);
- ``authenticated``: ``Authorization: Bearer`` or ``X-Api-Key`` (or ``?auth_token=``
  for profiles that opt in; the two headers with different values are refused with
  400 ``conflicting_credentials``), compared as sha256 digests in constant time
  (``guard/credentials.py``); an unknown client id and a wrong token get the very
  same 401, whatever the method (a client such as Codex discovers OAuth with an
  unauthenticated ``GET``);
- ``not_paused``: a client the owner paused (``metacortex.clients``), or a
  deactivated person's, is refused with 403;
- ``post_only``: only ``POST`` reaches MCP (stateless server: no SSE stream to
  ``GET``, no session to ``DELETE``), anything else is 405 with ``Allow``;
- ``origin_allowed_for_profile``: ``Origin``, when sent, must be one of the
  profile's origins exactly (403);
- ``json_sent``, ``json_accepted``: content type and accept (415, 406), so every
  refusal is JSON;
- ``within_rate_limit``: per-profile rate limit (429 with ``Retry-After``, the body a
  JSON-RPC error whose message names the limit and the delay, as MCP clients show it);
- ``body_read``: body limit, checked on ``Content-Length`` and again while reading
  (413), and the body deadline: the whole body within
  ``METACORTEX_BODY_DEADLINE_SECONDS`` however it trickles (408, and the connection
  is closed);
- ``one_message``, ``known_protocol_version``: no JSON-RPC batch, no unknown
  ``MCP-Protocol-Version`` (400);
- ``within_token_scopes``: a tool call outside an OAuth token's scopes (403).

With OAuth on (``runtime.oauth``), routes of kind ``auth`` pass after the Host
check; a bearer token that is no static token is asked of the OAuth resource
server, whose 401 carries ``resource_metadata`` and ``scope``, and a tool call
outside the token's scopes is refused with 403 ``insufficient_scope``.

Every refusal (``guard/refusals.py``) is a small JSON body ``{"error": {"code",
"message"}}``, logged and recorded as a ``memory_events`` rejection. The
``auth_token`` query parameter is removed from the request before anything downstream sees it. A
request's log line is bounded like a refusal's event: the path cut at 200
characters, the query only as its length and digest, the User-Agent cut.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable, Collection, Mapping
from dataclasses import dataclass
from typing import Final

import anyio
from mcp.server.streamable_http import check_accept_headers
from starlette.datastructures import Headers
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from metacortex.access.profiles import Profile, Profiles
from metacortex.guard import refusals
from metacortex.guard.addresses import AddressResolver, client_address
from metacortex.guard.cors import ALLOWED_METHODS, SAFE_HEADERS, cors_headers, preflight_headers
from metacortex.guard.credentials import (
    StaticTokens,
    conflicting,
    credential,
    without_url_token,
)
from metacortex.guard.hosts import HostPolicy, is_loopback_origin
from metacortex.guard.ratelimit import RateLimiter
from metacortex.kernel.bearer import BearerAuthority, BearerIdentity
from metacortex.kernel.logs import bounded_text, log, redact_query, request_lines
from metacortex.kernel.rejections import Rejection, bounded_request, loggable_path
from metacortex.kernel.routes import Route, resolve
from metacortex.kernel.runtime import PROFILE_SCOPE_KEY, Runtime

_ANY_MCP_ANSWER: Final = b"application/json, text/event-stream"


class _Answered:
    """A step answered the request itself (or its client went away): nothing is left."""


ANSWERED: Final = _Answered()
Outcome = Rejection | _Answered | None
Step = Callable[["GuardedRequest"], Awaitable[Outcome]]


@dataclass(slots=True)
class GuardedRequest:
    """One request as the steps see it: each step may fill in what it learnt (the
    profiles in effect, the caller's profile and OAuth identity, the body)."""

    scope: Scope
    receive: Receive
    send: Send
    route: Route
    headers: Headers
    started: float
    profiles: Profiles | None = None
    profile: Profile | None = None
    identity: BearerIdentity | None = None
    authority: BearerAuthority | None = None  # the OAuth resource server that knew it
    body: bytes = b""

    @property
    def method(self) -> str:
        return str(self.scope["method"])

    @property
    def known_profiles(self) -> Profiles:
        """The profiles in effect (steps after ``profiles_known`` only)."""
        if self.profiles is None:
            raise RuntimeError("a guard step ran before the profiles were known")
        return self.profiles

    @property
    def caller(self) -> Profile:
        """The authenticated profile (steps after ``authenticated`` only)."""
        if self.profile is None:
            raise RuntimeError("a guard step ran before the credential was checked")
        return self.profile


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
        self._static_tokens = StaticTokens()
        self._loopback_origins = settings.bind_is_loopback
        # What a request to a route served here passes, in order (the module's list).
        self.steps: tuple[Step, ...] = (
            self._host_allowed,
            self._health,
            self._auth_and_owner_pages,
            self._profiles_known,
            self._preflight,
            self._authenticated,
            self._not_paused,
            self._post_only,
            self._origin_allowed_for_profile,
            self._json_sent,
            self._json_accepted,
            self._within_rate_limit,
            self._body_read,
            self._one_message,
            self._known_protocol_version,
            self._within_token_scopes,
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        self._addresses.remember(scope)
        route = resolve(scope["path"])
        if not await self._available(route):
            await self._reject(scope, send, route, started, refusals.UNAVAILABLE)
            return
        if route is None or (route.kind == "auth" and self._runtime.oauth is None):
            await self._reject(scope, send, None, started, refusals.not_found())
            return
        request = GuardedRequest(scope, receive, send, route, Headers(scope=scope), started)
        for step in self.steps:
            outcome = await step(request)
            if isinstance(outcome, Rejection):
                await self._reject(request.scope, send, route, started, outcome)
            if outcome is not None:
                return
        with request_lines():  # on a terminal, the tool call's line joins the access line
            await self._forward(request)

    async def _available(self, route: Route | None) -> bool:
        """The process started, and the store is open where the route needs it."""
        if self._runtime.failure is not None:
            return False
        needs_store = route is not None and route.kind in ("auth", "owner")
        return not needs_store or await self._runtime.start_succeeded()

    # ----------------------------------------------------------------- steps
    async def _host_allowed(self, request: GuardedRequest) -> Outcome:
        """The Host header (DNS-rebinding defence): 421 when not allowed."""
        allowed = self._hosts.allows(request.headers.get("host"))
        return None if allowed else refusals.HOST_NOT_ALLOWED

    async def _health(self, request: GuardedRequest) -> Outcome:
        """``/healthz`` answers ``GET`` and ``HEAD``, and nothing else."""
        if request.route.kind != "health":
            return None
        if request.method not in ("GET", "HEAD"):
            return refusals.method_not_allowed("GET")
        await self.app(request.scope, request.receive, request.send)
        return ANSWERED

    async def _auth_and_owner_pages(self, request: GuardedRequest) -> Outcome:
        """OAuth and owner routes: the same body limit, then the router; one access log."""
        if request.route.kind not in ("auth", "owner"):
            return None
        if request.method == "POST":
            refused = await self._body_read(request)
            if refused is not None:
                return refused
        scope, receive, send = request.scope, request.receive, request.send
        status = 0
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if scope["method"] == "POST" and not replayed:
                replayed = True
                return {"type": "http.request", "body": request.body, "more_body": False}
            return await receive()

        async def watch(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
            await send(message)

        await self.app(scope, replay, watch)
        self._access_log(scope, request.route, status, request.started, None)
        return ANSWERED

    async def _profiles_known(self, request: GuardedRequest) -> Outcome:
        """The profiles in effect; 503 when the client id can only be a stored one and
        the store failed to open."""
        clients = self._runtime.clients
        client_id = request.route.client_id
        # A stored client is known once the store is open (a background start).
        stored = client_id is not None and client_id not in clients.environment.clients
        if stored and not await self._runtime.start_succeeded():
            return refusals.UNAVAILABLE
        request.profiles = await clients.current()
        return None

    async def _preflight(self, request: GuardedRequest) -> Outcome:
        """``OPTIONS`` is a CORS preflight, answered on the origin alone."""
        if request.method != "OPTIONS":
            return None
        origin = request.headers.get("origin")
        if origin is None:
            response = Response(status_code=204, headers={"allow": ALLOWED_METHODS, **SAFE_HEADERS})
            await response(request.scope, _no_receive, request.send)
            return ANSWERED
        # A preflight is answered on the origin alone: any origin some profile configures
        # is let through, whatever the client id. Answering per profile told a prober
        # which ids exist (204 for an unknown id, 403 for a known one lacking the
        # origin). The POST that follows still checks the profile's own origins.
        if not self._origin_allowed(origin, self._all_origins()):
            return refusals.ORIGIN_NOT_ALLOWED
        requested = request.headers.get("access-control-request-headers", "")
        cors = preflight_headers(origin, requested)
        response = Response(status_code=204, headers=cors)
        await response(request.scope, _no_receive, request.send)
        return ANSWERED

    async def _authenticated(self, request: GuardedRequest) -> Outcome:
        """The credential: one of the profile's static tokens, else (OAuth on) a token
        the OAuth resource server knows; the same 401 for an unknown client id and a
        wrong token, whatever the method."""
        query = request.scope.get("query_string", b"")
        if conflicting(request.headers):
            return refusals.CONFLICTING_CREDENTIALS
        request.profile = self._static_tokens.profile(
            request.route.client_id, request.headers, query, request.known_profiles
        )
        if request.profile is None and self._may_be_new(request):
            # A client added a moment ago: look again now (bounded), then once more.
            request.profiles = await self._runtime.clients.recheck()
            request.profile = self._static_tokens.profile(
                request.route.client_id, request.headers, query, request.known_profiles
            )
        if request.profile is not None:
            return None
        # OAuth tokens are kept in the store: wait for it to be open.
        if self._runtime.settings.metacortex_oauth and not await self._runtime.start_succeeded():
            return refusals.UNAVAILABLE
        oauth = self._runtime.oauth
        if oauth is None:
            return refusals.UNAUTHORIZED
        found = credential(request.headers, query)
        identity = None
        if found is not None and found.source == "bearer":
            # An OAuth access token is a Bearer token (RFC 6750), never an X-Api-Key.
            identity = await oauth.authenticate(request.scope, request.route, found.token)
        if identity is None:
            return oauth.unauthorized(request.scope, request.route, found is not None)
        request.profile, request.identity, request.authority = identity.profile, identity, oauth
        return None

    def _may_be_new(self, request: GuardedRequest) -> bool:
        """Whether an unmatched credential may be a stored client's added since the last
        check: on any client endpoint, an environment client's too, so that a refused
        request costs the same reads whether its id exists or not."""
        return request.route.client_id is not None

    async def _not_paused(self, request: GuardedRequest) -> Outcome:
        """A client the owner paused, or a deactivated person's, is refused (403)."""
        refused_because = request.caller.refused_because
        if refused_because is None:
            return None
        return refusals.PAUSED if refused_because == "paused" else refusals.PERSON_INACTIVE

    async def _post_only(self, request: GuardedRequest) -> Outcome:
        """Stateless MCP: no SSE stream to ``GET``, no session to ``DELETE`` (405)."""
        if request.method == "POST":
            return None
        return refusals.method_not_allowed(ALLOWED_METHODS)

    async def _origin_allowed_for_profile(self, request: GuardedRequest) -> Outcome:
        """``Origin``, when sent, is one of the profile's origins exactly (403)."""
        origin = request.headers.get("origin")
        if origin is None or self._origin_allowed(origin, request.caller.allowed_origins):
            return None
        return refusals.ORIGIN_NOT_ALLOWED

    async def _json_sent(self, request: GuardedRequest) -> Outcome:
        content_type = request.headers.get("content-type", "").lower()
        if content_type.startswith("application/json"):
            return None
        return refusals.UNSUPPORTED_MEDIA_TYPE

    async def _json_accepted(self, request: GuardedRequest) -> Outcome:
        scope = request.scope
        if "accept" not in request.headers:
            # No Accept header means the client takes anything (RFC 9110 §12.5.1);
            # the SDK transport below insists on one, so name what we answer with.
            request.scope = {**scope, "headers": [*scope["headers"], (b"accept", _ANY_MCP_ANSWER)]}
            return None
        return None if check_accept_headers(Request(scope))[0] else refusals.NOT_ACCEPTABLE

    async def _within_rate_limit(self, request: GuardedRequest) -> Outcome:
        """The profile's requests a minute (429 with ``Retry-After``)."""
        per_minute = request.caller.rate_limit_per_minute
        wait = self._limiter.acquire(request.caller.id, per_minute)
        return None if wait is None else refusals.rate_limited(wait, per_minute)

    async def _body_read(self, request: GuardedRequest) -> Outcome:
        """The whole body, within the size limit and the body deadline (413, 408); a
        client that went away is answered by no one."""
        try:
            request.body = await self._read_body(request.headers, request.receive)
        except _BodyRefused as refused:
            return refused.rejection
        except _Disconnected:
            return ANSWERED
        return None

    async def _one_message(self, request: GuardedRequest) -> Outcome:
        batch = request.body.lstrip()[:1] == b"["
        return refusals.BATCH_NOT_SUPPORTED if batch else None

    async def _known_protocol_version(self, request: GuardedRequest) -> Outcome:
        version = request.headers.get("mcp-protocol-version")
        if version is None or version in refusals.PROTOCOL_VERSIONS:
            return None
        return refusals.unsupported_version(version)

    async def _within_token_scopes(self, request: GuardedRequest) -> Outcome:
        """An OAuth token calls only the tools its scopes cover (403)."""
        if request.identity is None or request.authority is None:
            return None
        return request.authority.insufficient_scope(
            request.scope, request.route, request.identity, request.body
        )

    # ------------------------------------------------------------ helpers
    def _all_origins(self) -> frozenset[str]:
        """Every origin some profile allows (the profiles as last checked)."""
        return frozenset(
            origin for profile in self._runtime.profiles.all() for origin in profile.allowed_origins
        )

    def _origin_allowed(self, origin: str, configured: Collection[str]) -> bool:
        return origin in configured or (self._loopback_origins and is_loopback_origin(origin))

    async def _read_body(self, headers: Headers, receive: Receive) -> bytes:
        """The whole body, within the size limit and the body deadline (however it trickles)."""
        declared = headers.get("content-length")
        if declared is not None and declared.isdigit() and int(declared) > self._max_body:
            raise _BodyRefused(refusals.too_large(self._max_body))
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
                    raise _BodyRefused(refusals.too_large(self._max_body))
                chunks.append(chunk)
                if not message.get("more_body", False):
                    return b"".join(chunks)
        raise _BodyRefused(refusals.too_slow(self._body_deadline))

    # --------------------------------------------------------------- forward
    async def _forward(self, request: GuardedRequest) -> None:
        scope, receive, send, route = request.scope, request.receive, request.send, request.route
        profile, origin = request.caller, request.headers.get("origin")
        inner_scope = dict(scope)
        inner_scope["path"] = route.canonical_path
        inner_scope["query_string"] = without_url_token(scope.get("query_string", b""))
        inner_scope[PROFILE_SCOPE_KEY] = profile
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": request.body, "more_body": False}
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
                    (name.encode(), value.encode()) for name, value in SAFE_HEADERS.items()
                ]
                if origin is not None:
                    extra += cors_headers(origin)
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
        self._access_log(scope, route, status, request.started, profile.id)

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
                key.decode(): value.decode("latin-1") for key, value in cors_headers(origin)
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
                headers={**SAFE_HEADERS, **headers},
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
        headers={**SAFE_HEADERS, **(headers or {})},
    )


async def _no_receive() -> Message:
    return {"type": "http.disconnect"}
