"""The Starlette app: routes, the HTTP guard, the stateless MCP transport, the lifespan.

``create_app(settings, service)`` validates the profiles at once (a bad
configuration fails here, before anything listens). The service is built in
the lifespan when not given (loading a model can take a moment), together with
the event writer; the lifespan exit writes the remaining events and, for a
service the app built itself, closes its store.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from mcp.server.streamable_http_manager import (
    StreamableHTTPASGIApp,
    StreamableHTTPSessionManager,
)
from mcp.server.transport_security import TransportSecuritySettings
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import BaseRoute, Route

from metacortex.access.client_directory import ClientDirectory
from metacortex.access.profiles import load_profiles
from metacortex.composition import check_configuration
from metacortex.config import Settings
from metacortex.console import Console
from metacortex.errors import MetaCortexError
from metacortex.guard.request_guard import RequestGuard
from metacortex.kernel.domain_errors import domain_error
from metacortex.kernel.logs import log
from metacortex.kernel.routes import starlette_paths
from metacortex.kernel.runtime import Runtime
from metacortex.mcp_surface.mcp_server import build_mcp_server
from metacortex.server.lifecycle import running
from metacortex.service import MemoryService
from metacortex.storage.base import MemoryStore


async def _healthz(request: Request) -> JSONResponse:
    return JSONResponse({"status": "ok"}, headers={"cache-control": "no-store"})


def create_app(
    settings: Settings,
    service: MemoryService | None = None,
    *,
    background_start: bool = False,
) -> Starlette:
    """The MetaCortex ASGI app. A given ``service`` stays owned by the caller.

    ``background_start``: the lifespan lets requests in before the service is
    built (opening the store, its first round trips), so a cold instance answers
    ``initialize`` and ``tools/list`` without waiting for it; tool calls and the
    routes that need the store wait (``Runtime.ready_service``). A failure to
    build is logged once and answered 503 from then on. Off, start-up fails
    before anything is served.
    """
    if service is None:
        check_configuration(settings)  # what building it would refuse, before anything runs
    runtime = Runtime(
        settings=settings,
        clients=ClientDirectory(load_profiles(settings), settings),
        service=service,
    )
    if runtime.profiles.admin.token_sha256 is None:
        log(
            logging.WARNING,
            "MCP_ADMIN_TOKEN is not set: the admin endpoint /mcp refuses every request",
        )
    manager = StreamableHTTPSessionManager(
        app=build_mcp_server(runtime),
        stateless=True,
        json_response=True,
        # Host and Origin are checked per profile by RequestGuard, which runs first.
        security_settings=TransportSecuritySettings(enable_dns_rebinding_protection=False),
        max_request_body_size=settings.metacortex_max_body_bytes,
    )

    def start_oauth(store: MemoryStore) -> None:
        if authorization is not None:
            runtime.oauth = authorization.start(store)

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        try:
            async with (
                running(runtime, background=background_start, on_start=start_oauth),
                manager.run(),
            ):
                yield
        finally:
            runtime.oauth = None

    authorization = None
    if settings.metacortex_oauth:
        # Imported only when OAuth is on: it loads PyJWT and the HTTP client, which a
        # cold start without OAuth never needs (no circle: auth imports nothing here).
        from metacortex.auth.server import AuthorizationServer

        authorization = AuthorizationServer(settings, runtime)
    paths = starlette_paths()
    mcp_endpoint = StreamableHTTPASGIApp(manager)
    routes: list[BaseRoute] = [Route(path, _healthz, methods=["GET"]) for path in paths["health"]]
    routes += [Route(path, mcp_endpoint, methods=["POST"]) for path in paths["mcp"]]
    if authorization is not None:
        routes += authorization.routes()
    routes += Console(settings, runtime, authorization).routes()
    app = Starlette(
        routes=routes,
        middleware=[Middleware(RequestGuard, runtime=runtime)],
        # A domain error outside a tool call (the OAuth endpoints, sign-in) is answered
        # with its own status and message, never a bare 500 (kernel/domain_errors.py).
        exception_handlers={MetaCortexError: domain_error},
        lifespan=lifespan,
    )
    app.state.runtime = runtime
    return app
