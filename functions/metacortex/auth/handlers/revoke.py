"""``POST /oauth/revoke`` (RFC 7009, public clients too): a refresh token revokes its
whole grant, an access token itself. An unknown token, or one issued to another client,
is answered like a revoked one."""

from __future__ import annotations

from dataclasses import dataclass

import anyio.to_thread
from starlette.requests import Request
from starlette.responses import Response

from metacortex.auth.handlers.client_auth import ClientAuthenticator
from metacortex.auth.handlers.common import CORS, NO_STORE, OAuthError, field, oauth_json, preflight
from metacortex.auth.handlers.context import OAuthContext


@dataclass(frozen=True, slots=True)
class RevocationHandler:
    context: OAuthContext
    authenticator: ClientAuthenticator

    async def handle(self, request: Request) -> Response:
        if request.method == "OPTIONS":
            return await preflight(request)
        try:
            form = await request.form()
            client = await self.authenticator.authenticate(request, form)
            token = field(form, "token")
            if not token:
                raise OAuthError("invalid_request", "token is required")
        except OAuthError as error:
            return oauth_json(error)
        tokens = self.context.tokens
        found = await anyio.to_thread.run_sync(tokens.find, token)
        if found is not None and found[1].get("client_id") == client.client_id:
            kind, binding = found
            if kind == "refresh_token":
                await anyio.to_thread.run_sync(tokens.revoke_grant, str(binding["grant"]))
            else:
                await anyio.to_thread.run_sync(tokens.revoke_access, token)
        # RFC 7009: an unknown or foreign token is answered like a revoked one.
        return Response(status_code=200, headers={**NO_STORE, **CORS})
