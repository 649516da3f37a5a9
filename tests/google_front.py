"""Google's front end for a Cloud Function (``https://REGION-PROJECT.cloudfunctions.net``),
emulated as it behaves for the deployed HTTP function ``metaCortexMcp``:

- only ``/metaCortexMcp`` and the paths under it reach the function; on cloudfunctions.net
  with the function name stripped (``/metaCortexMcp/mcp`` arrives as ``/mcp``,
  ``/metaCortexMcp`` as ``/``), the query and the rest of the path as sent;
- every other path, for every method (``OPTIONS`` preflights included), gets Google's
  own HTML 404 from the front end, with no CORS header: a client's root
  ``/.well-known/...`` probes never reach the app.

Sources: the Functions Framework maintainers ("the Cloud Functions deployment strips the
function name out of the URL before your function sees it",
GoogleCloudPlatform/functions-framework-python#54) and the Cloud Functions docs (the URL
is ``https://REGION-PROJECT.cloudfunctions.net/FUNCTION``; nothing else is routed). The
404 page is the Google front end's "Page not found" page, as it answers unknown paths
(our reading of captured answers; clients only see an HTML 404).

Two shapes of the same rule:

- ``CloudFunctionsFront`` wraps the app in-process (``tests.oauth_support.oauth_server(
  front=...)``); ``strip=False`` passes the path on unchanged (Hosting rewrites, run.app);
- ``CloudFunctionsFrontEnd`` is a separate hop over loopback in front of any server,
  a subprocess too (``functions-framework``): it reads the body whole, keeps the
  client's ``Host``, adds ``X-Forwarded-For``/``X-Forwarded-Proto`` and a trace header,
  drops hop-by-hop headers, passes cookies per request and keeps none (no jar: a
  session one caller signed in with never reaches another), and records what it
  answered itself (``refused``).
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from http.cookiejar import CookieJar, DefaultCookiePolicy
from typing import Final

import httpx2
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from metacortex.kernel.routes import FUNCTION_PREFIX

GOOGLE_404: Final = (
    b"<html><head>\n"
    b'<meta http-equiv="content-type" content="text/html;charset=utf-8">\n'
    b"<title>404 Page not found</title>\n"
    b"</head>\n"
    b"<body text=#000000 bgcolor=#ffffff>\n"
    b"<h1>Error: Page not found</h1>\n"
    b"<h2>The requested URL was not found on this server.</h2>\n"
    b"<h2></h2>\n"
    b"</body></html>\n"
)
_HOP_BY_HOP: Final = frozenset(
    {
        b"connection",
        b"keep-alive",
        b"proxy-authenticate",
        b"proxy-authorization",
        b"te",
        b"trailer",
        b"transfer-encoding",
        b"upgrade",
    }
)
_REPLACED: Final = frozenset({b"content-length", b"x-forwarded-for", b"x-forwarded-proto"})


def function_path(raw_path: bytes) -> bytes | None:
    """The path the function receives with its name stripped; None when the front end
    answers the request itself."""
    prefix = FUNCTION_PREFIX.encode()
    if raw_path != prefix and not raw_path.startswith(prefix + b"/"):
        return None
    return raw_path[len(prefix) :] or b"/"


def _raw_path(scope: Scope) -> bytes:
    raw: bytes | None = scope.get("raw_path")
    return raw if raw else str(scope["path"]).encode()


async def send_google_404(send: Send) -> None:
    await send(
        {
            "type": "http.response.start",
            "status": 404,
            "headers": [
                (b"content-type", b"text/html; charset=UTF-8"),
                (b"content-length", str(len(GOOGLE_404)).encode()),
            ],
        }
    )
    await send({"type": "http.response.body", "body": GOOGLE_404})


@dataclass(frozen=True)
class CloudFunctionsFront:
    """The rule in-process, around the app itself."""

    app: ASGIApp
    strip: bool

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        inner = function_path(_raw_path(scope))
        if inner is None:
            await send_google_404(send)
            return
        if self.strip:
            path = str(scope["path"])[len(FUNCTION_PREFIX) :] or "/"
            scope = {**scope, "path": path, "raw_path": inner}
        await self.app(scope, receive, send)


class CloudFunctionsFrontEnd:
    """The rule as a separate hop: an ASGI app forwarding to ``backend`` over HTTP."""

    def __init__(self, backend: str) -> None:
        self.backend = backend.rstrip("/")
        self.refused: list[str] = []
        self._http: httpx2.AsyncClient | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
            return
        inner = function_path(_raw_path(scope))
        if inner is None:
            self.refused.append(f"{scope['method']} {scope['path']}")
            await send_google_404(send)
            return
        await self._forward(scope, receive, send, inner)

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                if self._http is not None:
                    await self._http.aclose()
                await send({"type": "lifespan.shutdown.complete"})
                return

    async def _forward(self, scope: Scope, receive: Receive, send: Send, path: bytes) -> None:
        if self._http is None:
            # No cookie jar: Google's front end is no browser. A Cookie header reaches the
            # function with the request that carries it, a Set-Cookie goes back to that
            # caller, and nothing is kept for the next caller (an allowed-domain list that
            # is empty refuses every cookie, for storing and for sending).
            no_jar = CookieJar(DefaultCookiePolicy(allowed_domains=[]))
            self._http = httpx2.AsyncClient(timeout=60, follow_redirects=False, cookies=no_jar)
        body = b""
        message: Message = {"more_body": True}
        while message.get("more_body", False):
            message = await receive()
            body += message.get("body", b"")
        headers = [
            (name.decode("latin-1"), value.decode("latin-1"))
            for name, value in scope["headers"]
            if name.lower() not in _HOP_BY_HOP | _REPLACED
        ]
        client = scope.get("client")
        headers += [
            ("x-forwarded-for", client[0] if client else "0.0.0.0"),  # noqa: S104 (a header value)
            ("x-forwarded-proto", scope.get("scheme", "http")),
            ("x-cloud-trace-context", f"{secrets.token_hex(16)}/1;o=1"),
        ]
        query = scope.get("query_string", b"")
        target = self.backend + path.decode("latin-1") + ("?" + query.decode() if query else "")
        request = self._http.build_request(scope["method"], target, headers=headers, content=body)
        response = await self._http.send(request, stream=True)
        try:
            await send(
                {
                    "type": "http.response.start",
                    "status": response.status_code,
                    "headers": [
                        (name, value)
                        for name, value in response.headers.raw
                        if name.lower() not in _HOP_BY_HOP
                    ],
                }
            )
            async for chunk in response.aiter_raw():
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
            await send({"type": "http.response.body", "body": b""})
        finally:
            await response.aclose()
