"""Domain errors raised while serving a page or an OAuth endpoint, as HTTP answers.

MCP tool calls translate their own errors (``mcp_surface/tools.py``: an ``isError``
result). Every other route (the OAuth endpoints, sign-in, the console) reaches
the store directly, so a domain error there (a full disk's ``StorageFull``, a
Firestore outage's ``Unavailable``) is translated here, once, for the whole app:
registered as the app's exception handler, it answers in the form the route's
callers read:

- OAuth endpoints (``/oauth/...``, route kind ``auth``): RFC 6749 JSON,
  ``{"error": "server_error" | "temporarily_unavailable", "error_description"}``;
- a browser asking for HTML: a short page with the message;
- anything else: the guard's JSON form ``{"error": {"code", "message"}}``.

The status is the error code's (``HTTP_STATUS``: a full disk is 507). Nothing
but the error's own message, which is written to be shown, reaches the client.
"""

from __future__ import annotations

import html
from collections.abc import Mapping
from typing import Final

from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response

from metacortex.errors import Busy, ErrorCode, MetaCortexError, RateLimited
from metacortex.kernel.routes import resolve

HTTP_STATUS: Final[Mapping[ErrorCode, int]] = {
    "invalid_argument": 400,
    "not_found": 404,
    "forbidden": 403,
    "conflict": 409,
    "failed_precondition": 409,
    "unavailable": 503,
    "rate_limited": 429,
    "resource_exhausted": 507,
}
_PAGE_HEADERS: Final = {
    "content-security-policy": "default-src 'none'; frame-ancestors 'none'; base-uri 'none'",
    "x-frame-options": "DENY",
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
    "cache-control": "no-store",
}


async def domain_error(request: Request, error: Exception) -> Response:
    """The app's handler for ``MetaCortexError`` (Starlette ``exception_handlers``)."""
    if not isinstance(error, MetaCortexError):  # registered for MetaCortexError only
        raise error
    status = HTTP_STATUS.get(error.code, 400)
    headers = dict(_PAGE_HEADERS)
    if isinstance(error, (RateLimited, Busy)):
        headers["retry-after"] = str(error.retry_after_seconds)
    route = resolve(request.url.path)
    if route is not None and route.kind == "auth":
        return JSONResponse(
            {
                "error": "temporarily_unavailable" if error.retryable else "server_error",
                "error_description": error.message,
            },
            status_code=status,
            headers={**headers, "access-control-allow-origin": "*"},
        )
    if "text/html" in request.headers.get("accept", ""):
        message = html.escape(error.message)
        return HTMLResponse(
            "<!doctype html><html lang=en><meta charset=utf-8>"
            "<title>MetaCortex cannot do this now</title>"
            f"<h1>MetaCortex cannot do this now</h1><p>{message}</p>",
            status_code=status,
            headers=headers,
        )
    return JSONResponse(error.to_payload(), status_code=status, headers=headers)
