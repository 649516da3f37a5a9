"""Cloud Functions (2nd gen) entry: the HTTP function ``metaCortexMcp``.

functions-framework (ASGI mode) calls ``metaCortexMcp(request)`` for every
path. We hand the raw ASGI call to MetaCortex's own Starlette app (the same app
``metacortex serve`` runs), whose routes answer both ``/mcp`` and
``/metaCortexMcp/mcp`` forms: cloudfunctions.net strips the function name,
Hosting rewrites and run.app URLs keep it.

functions-framework has no lifespan hook, so the app and its lifespan (the MCP
session manager, the event writer) start once per worker process, on the first
request, in a task that lives as long as the process. Importing this module is
cheap and touches no network and no secret: deploy tooling imports it to
discover the function.

``firebase deploy`` finds the function the way the Firebase CLI finds every
Python function: it imports this module in ``functions/venv`` (the
``firebase_functions`` SDK's serving module) and reads the
``__firebase_endpoint__`` manifest of each module-level function.
``https_fn.on_request`` builds that manifest (region, memory, timeout,
instances, secrets) but wraps a Flask handler; so it decorates a twin whose
manifest is copied onto the ASGI handler, which functions-framework serves.
The manifest is built only when the Firebase SDK is already loaded (its
discovery imports this module); a serving instance never imports the SDK,
which would add ~0.2-0.5 s to every cold start.
"""

from __future__ import annotations

import asyncio
import logging
import sys
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

import functions_framework.aio
from starlette.requests import Request

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

logger = logging.getLogger("metacortex.entry")

# What `firebase deploy` provisions (docs/DEPLOYMENT.md). Secrets are read from
# Secret Manager at deploy (the version is pinned then) and reach the function as
# environment variables of the same name, which Settings reads.
REGION = "us-central1"
SECRET_NAMES = ("MCP_ADMIN_TOKEN", "MCP_CLIENT_PROFILES_JSON", "GEMINI_API_KEY")


class _Process:
    """The inner app, built and started once per worker process."""

    def __init__(self) -> None:
        self._app: ASGIApp | None = None
        self._failure: str | None = None
        self._lock = asyncio.Lock()
        self._lifespan: asyncio.Task[None] | None = None

    async def app(self) -> ASGIApp | None:
        if self._app is not None or self._failure is not None:
            return self._app
        async with self._lock:
            if self._app is None and self._failure is None:
                await self._start()
        return self._app

    async def _start(self) -> None:
        # Imported here so that discovering the function stays fast.
        from metacortex.config import Settings
        from metacortex.kernel.logs import configure_logging
        from metacortex.server.app import create_app

        started = asyncio.Event()
        try:
            settings = Settings(deployment="cloud")
            # Logs are collected here: JSON lines unless METACORTEX_LOG_FORMAT=text.
            text = settings.metacortex_log_format == "text"
            configure_logging(settings.metacortex_log_level, "text" if text else "json")
            # Requests get in while the store opens: see create_app.
            app = create_app(settings, background_start=True)
        except Exception as error:  # noqa: BLE001 - reported as 503 + one log line
            self._failure = f"{type(error).__name__}: {error}"
            logger.error("MetaCortex could not start: %s", self._failure)
            return

        async def hold() -> None:
            async with app.router.lifespan_context(app):
                started.set()
                await asyncio.Event().wait()  # until the worker process ends

        self._lifespan = asyncio.create_task(hold(), name="metacortex-lifespan")
        waiter = asyncio.create_task(started.wait())
        await asyncio.wait({waiter, self._lifespan}, return_when=asyncio.FIRST_COMPLETED)
        if not started.is_set():
            waiter.cancel()
            cause = self._lifespan.exception()
            self._failure = f"{type(cause).__name__}: {cause}"
            logger.error("MetaCortex could not start: %s", self._failure)
            return
        self._app = app


_process = _Process()

_UNAVAILABLE = (
    b'{"error": {"code": "unavailable", "message": '
    b'"the server is not configured correctly; the operator has been told why in the logs"}}'
)


class _Forward:
    """What the function returns: an ASGI callable that runs MetaCortex's app."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        app = await _process.app()
        if app is None:
            await send(
                {
                    "type": "http.response.start",
                    "status": 503,
                    "headers": [(b"content-type", b"application/json")],
                }
            )
            await send({"type": "http.response.body", "body": _UNAVAILABLE})
            return
        inner = dict(scope)
        for key in ("endpoint", "route", "path_params", "router"):
            inner.pop(key, None)  # set by functions-framework's own router
        await app(inner, receive, send)


_FORWARD = _Forward()


@functions_framework.aio.http
async def metaCortexMcp(request: Request) -> Any:  # the deployed name (camelCase)
    # Starlette runs a returned ASGI callable as the response: MetaCortex's app.
    return _FORWARD


def _manifest(name: str) -> Any:
    """The Firebase manifest of an HTTPS function called ``name`` (a Flask-shaped
    twin carries it; only its ``__firebase_endpoint__`` is used)."""
    from firebase_functions import https_fn, options
    from firebase_functions.params import SecretParam

    def twin(request: Any) -> Any:
        raise NotImplementedError  # never served: functions-framework calls the ASGI handler

    twin.__name__ = twin.__qualname__ = name
    declared = https_fn.on_request(
        region=REGION,
        memory=options.MemoryOption.GB_1,
        cpu=1,
        concurrency=80,
        timeout_sec=60,
        min_instances=0,
        max_instances=10,
        secrets=[SecretParam(secret) for secret in SECRET_NAMES],
    )(twin)
    return declared.__firebase_endpoint__  # type: ignore[attr-defined]


if "firebase_functions" in sys.modules:  # the Firebase CLI's discovery is importing us
    metaCortexMcp.__firebase_endpoint__ = _manifest(metaCortexMcp.__name__)  # type: ignore[attr-defined]
