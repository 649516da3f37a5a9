"""Google's front end for Cloud Functions (``https://REGION-PROJECT.cloudfunctions.net``),
emulated on loopback as it behaves for a deployed HTTP function:

- only ``/<function>`` and ``/<function>/...`` reach the function, with the function
  name stripped (``/metaCortexMcp/mcp`` arrives as ``/mcp``, ``/metaCortexMcp`` as
  ``/``); the query string and the rest of the path are passed on as sent;
- every other path, for every method (``OPTIONS`` preflights included), gets Google's
  own ``404`` HTML page from the front end itself, with no CORS header: a client's
  root ``/.well-known/...`` probes never reach the app;
- the request body is read whole before the function sees it; the client's ``Host``
  is kept, ``X-Forwarded-For``/``X-Forwarded-Proto`` and a trace header are added,
  hop-by-hop headers are dropped.

Sources: the Functions Framework maintainers ("the Cloud Functions deployment strips
the function name out of the URL before your function sees it",
GoogleCloudPlatform/functions-framework-python#54) and the Cloud Functions docs (the
URL is ``https://REGION-PROJECT.cloudfunctions.net/FUNCTION``, nothing else is routed).
The 404 page's markup is the one Google's front end serves for unknown paths
(``<title>404 Page not found</title>``); clients only see that it is HTML with 404.
"""

from __future__ import annotations

import secrets
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any, Final

import httpx2

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]

FUNCTION: Final = "metaCortexMcp"
NOT_FOUND_PAGE: Final = (
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
        "connection",
        "keep-alive",
        "proxy-authenticate",
        "proxy-authorization",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
    }
)


class CloudFunctionsFrontEnd:
    """An ASGI app forwarding ``/<function>/...`` to ``backend`` and 404-ing the rest.

    ``refused`` records every request the front end answered itself, so a test can name
    the probes a client made that Google would never have delivered."""

    def __init__(self, backend: str, function: str = FUNCTION) -> None:
        self.backend = backend.rstrip("/")
        self.prefix = "/" + function
        self.refused: list[str] = []
        self._http: httpx2.AsyncClient | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
            return
        if scope["type"] != "http":
            return
        raw_path: bytes = scope.get("raw_path") or scope["path"].encode()
        prefix = self.prefix.encode()
        if raw_path != prefix and not raw_path.startswith(prefix + b"/"):
            self.refused.append(f"{scope['method']} {scope['path']}")
            await _not_found(send)
            return
        await self._forward(scope, receive, send, raw_path[len(prefix) :] or b"/")

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
            self._http = httpx2.AsyncClient(timeout=60, follow_redirects=False)
        body = b""
        more = True
        while more:
            message = await receive()
            body += message.get("body", b"")
            more = message.get("more_body", False)
        headers = [
            (name.decode("latin-1"), value.decode("latin-1"))
            for name, value in scope["headers"]
            if name.decode("latin-1").lower() not in _HOP_BY_HOP
            and name.lower() not in (b"content-length", b"x-forwarded-for", b"x-forwarded-proto")
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
                        (name.encode("latin-1"), value.encode("latin-1"))
                        for name, value in response.headers.multi_items()
                        if name.lower() not in _HOP_BY_HOP
                    ],
                }
            )
            async for chunk in response.aiter_raw():
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
            await send({"type": "http.response.body", "body": b""})
        finally:
            await response.aclose()


async def _not_found(send: Send) -> None:
    await send(
        {
            "type": "http.response.start",
            "status": 404,
            "headers": [
                (b"content-type", b"text/html; charset=UTF-8"),
                (b"content-length", str(len(NOT_FOUND_PAGE)).encode()),
            ],
        }
    )
    await send({"type": "http.response.body", "body": NOT_FOUND_PAGE})
