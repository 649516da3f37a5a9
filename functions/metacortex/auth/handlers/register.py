"""``POST /oauth/register``: dynamic client registration (RFC 7591), answered by the
``mcp`` SDK's own ``RegistrationHandler`` after this server's checks: the registration
rate limit, the metadata's size and shape (``auth/limits.py``), and redirect URIs it
would refuse at authorize (``auth/redirects.py``)."""

from __future__ import annotations

from typing import Any

from mcp.server.auth.handlers.register import RegistrationHandler
from mcp.server.auth.settings import ClientRegistrationOptions
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from metacortex.auth import redirects
from metacortex.auth.handlers.common import CORS, NO_STORE, OAuthError, oauth_json
from metacortex.auth.handlers.context import OAuthContext
from metacortex.auth.limits import registration_problem


class Registration:
    def __init__(self, context: OAuthContext) -> None:
        self._context = context
        self._sdk = RegistrationHandler(
            _LazyProvider(context),  # type: ignore[arg-type]
            # No scope check at registration: scopes are decided at authorize, where
            # unknown ones are ignored (a client registering its own scope still works).
            ClientRegistrationOptions(enabled=True),
        )

    async def handle(self, request: Request) -> Response:
        wait = self._context.limits.registration(request)
        if wait is not None:
            return JSONResponse(
                {
                    "error": "temporarily_unavailable",
                    "error_description": f"too many registrations; retry after {wait} s",
                },
                status_code=429,
                headers={**NO_STORE, **CORS, "retry-after": str(wait)},
            )
        body = await request.body()
        problem = registration_problem(body)
        if problem is not None:
            return oauth_json(OAuthError("invalid_client_metadata", problem))
        refused = redirects.refused_in_registration(body)
        if refused is not None:
            return oauth_json(OAuthError("invalid_redirect_uri", refused))
        response = await self._sdk.handle(request)
        response.headers.update({**NO_STORE, **CORS})
        return response


class _LazyProvider:
    """What the SDK's RegistrationHandler calls: ``register_client``, once started."""

    def __init__(self, context: OAuthContext) -> None:
        self._context = context

    async def register_client(self, client_info: Any) -> None:
        await self._context.clients.register_client(client_info)
