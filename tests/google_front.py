"""Google's front end for a ``https://REGION-PROJECT.cloudfunctions.net/metaCortexMcp`` URL,
emulated as it behaves: only requests whose path is under ``/metaCortexMcp/`` reach the
function; every other path (``/.well-known/...`` at the root included) gets Google's own
HTML 404 and never reaches the app. ``strip=True`` delivers ``/metaCortexMcp/x`` as
``/x`` (what Google's maintainers describe for gen 1; the deployment then sets
``METACORTEX_PUBLIC_URL``), ``strip=False`` passes the path unchanged."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from starlette.types import ASGIApp, Receive, Scope, Send

from metacortex.server.routes import FUNCTION_PREFIX

GOOGLE_404: Final = (
    b"<!DOCTYPE html>\n<html lang=en><meta charset=utf-8><title>Error 404 (Not Found)!!1</title>"
    b"<p><b>404.</b> <ins>That\xe2\x80\x99s an error.</ins><p>The requested URL was not found "
    b"on this server. <ins>That\xe2\x80\x99s all we know.</ins>"
)


@dataclass(frozen=True)
class CloudFunctionsFront:
    app: ASGIApp
    strip: bool

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path: str = scope["path"]
        if not path.startswith(FUNCTION_PREFIX + "/"):
            await send(
                {
                    "type": "http.response.start",
                    "status": 404,
                    "headers": [(b"content-type", b"text/html; charset=UTF-8")],
                }
            )
            await send({"type": "http.response.body", "body": GOOGLE_404})
            return
        if self.strip:
            inner = path[len(FUNCTION_PREFIX) :]
            scope = {**scope, "path": inner, "raw_path": inner.encode()}
        await self.app(scope, receive, send)
