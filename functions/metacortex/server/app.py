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
from datetime import timedelta

import anyio.to_thread
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

from metacortex.composition import build_service
from metacortex.config import Settings
from metacortex.server.events import EventRecorder
from metacortex.server.guard import RequestGuard
from metacortex.server.logs import log
from metacortex.server.mcp_server import build_mcp_server
from metacortex.server.profiles import load_profiles
from metacortex.server.rejections import RejectionBudget
from metacortex.server.routes import starlette_paths
from metacortex.server.runtime import Runtime
from metacortex.service import MemoryService


async def _healthz(request: Request) -> JSONResponse:
    return JSONResponse({"status": "ok"}, headers={"cache-control": "no-store"})


def create_app(settings: Settings, service: MemoryService | None = None) -> Starlette:
    """The MetaCortex ASGI app. A given ``service`` stays owned by the caller."""
    runtime = Runtime(settings=settings, profiles=load_profiles(settings), service=service)
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

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        owned = runtime.service is None
        if runtime.service is None:
            runtime.service = await anyio.to_thread.run_sync(build_service, settings)
        recorder = EventRecorder(
            runtime.service.store,
            retention=timedelta(days=settings.metacortex_event_retention_days),
            retrieval_logging=settings.retrieval_event_logging_enabled,
            rejection_budget=RejectionBudget(settings.metacortex_rejection_events_per_minute),
        )
        recorder.start()
        runtime.events = recorder
        if authorization is not None:
            runtime.oauth = authorization.start(runtime.service.store)
        try:
            async with manager.run():
                yield
        finally:
            runtime.oauth = None
            await anyio.to_thread.run_sync(recorder.close)
            if owned:
                runtime.service.store.close()
                runtime.service = None

    authorization = None
    if settings.metacortex_oauth:
        # Imported here: the auth package builds on metacortex.server's modules.
        from metacortex.auth import AuthorizationServer

        authorization = AuthorizationServer(settings, runtime)
    paths = starlette_paths()
    mcp_endpoint = StreamableHTTPASGIApp(manager)
    routes: list[BaseRoute] = [Route(path, _healthz, methods=["GET"]) for path in paths["health"]]
    routes += [Route(path, mcp_endpoint, methods=["POST"]) for path in paths["mcp"]]
    if authorization is not None:
        routes += authorization.routes()
    from metacortex.console import Console  # builds on metacortex.owner, as auth does

    routes += Console(settings, runtime, authorization).routes()
    app = Starlette(
        routes=routes,
        middleware=[Middleware(RequestGuard, runtime=runtime)],
        lifespan=lifespan,
    )
    app.state.runtime = runtime
    return app
