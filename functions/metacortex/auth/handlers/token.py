"""``POST /oauth/token``: ``authorization_code`` (PKCE S256) and ``refresh_token``.

Every check comes before a code or refresh token is spent. A code that fails a check
is spent anyway (its grant could never be used). A repeat within the grace window gets
the first use's pair when the same address and user agent ask again, else nothing, and
the grant is revoked (``auth/tokens.py``). ``resource``, when sent, must be the one
authorized.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from functools import partial
from typing import Any, Final, Literal

import anyio.to_thread
from starlette.datastructures import FormData
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from metacortex.access import scopes as scope_names
from metacortex.auth.clients import Client
from metacortex.auth.handlers.client_auth import ClientAuthenticator
from metacortex.auth.handlers.common import (
    CORS,
    NO_STORE,
    OAuthError,
    field,
    oauth_json,
    preflight,
    trim,
)
from metacortex.auth.handlers.context import OAuthContext
from metacortex.auth.tokens import CODE, REFRESH, Issued, Presenter, pkce_matches
from metacortex.guard.addresses import client_address
from metacortex.kernel.logs import bounded_text, log

_VERIFIER_CHARS: Final = frozenset(
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~"
)


@dataclass(frozen=True, slots=True)
class TokenHandler:
    context: OAuthContext
    authenticator: ClientAuthenticator

    async def handle(self, request: Request) -> Response:
        if request.method == "OPTIONS":
            return await preflight(request)
        try:
            form = await request.form()
            client = await self.authenticator.authenticate(request, form)
            grant_type = field(form, "grant_type")
            if grant_type == "authorization_code":
                body = await self._code_grant(request, form, client)
            elif grant_type == "refresh_token":
                body = await self._refresh_grant(request, form, client)
            else:
                raise OAuthError(
                    "unsupported_grant_type", "use authorization_code or refresh_token"
                )
        except OAuthError as error:
            return oauth_json(error)
        return JSONResponse(body, headers={**NO_STORE, **CORS})

    async def _code_grant(self, request: Request, form: FormData, client: Client) -> dict[str, Any]:
        tokens = self.context.tokens
        code = field(form, "code")
        verifier = field(form, "code_verifier")
        if not code or not verifier:
            raise OAuthError("invalid_request", "code and code_verifier are required")
        binding = await anyio.to_thread.run_sync(tokens.code, code)
        if binding is None:
            raise OAuthError("invalid_grant", "the code is unknown or expired")
        try:
            _check_code(form, client, binding, verifier)
        except OAuthError:
            # The code is spent: the grant it created can never be used, so it goes too.
            await anyio.to_thread.run_sync(tokens.spend_code, code)
            raise
        scopes = tuple(binding["scopes"])
        refresh = scope_names.OFFLINE in scopes or client.refresh_grant
        return await self._exchange(request, CODE, code, binding, scopes, refresh=refresh)

    async def _refresh_grant(
        self, request: Request, form: FormData, client: Client
    ) -> dict[str, Any]:
        token = field(form, "refresh_token")
        if not token:
            raise OAuthError("invalid_request", "refresh_token is required")
        # Every check comes before the token is used: a refused refresh leaves it as it was.
        binding = await anyio.to_thread.run_sync(self.context.tokens.refresh_binding, token)
        if binding is None:
            raise OAuthError("invalid_grant", "the refresh token is unknown or expired")
        if binding["client_id"] != client.client_id:
            raise OAuthError("invalid_grant", "the refresh token was issued to another client")
        resource = field(form, "resource")
        if resource is not None and trim(resource) != binding["resource"]:
            raise OAuthError("invalid_target", "resource differs from the one authorized")
        scopes = tuple(binding["scopes"])
        asked = field(form, "scope")
        if asked is not None and asked.split():
            narrowed = scope_names.parse(asked)
            if not set(narrowed) <= set(scopes):
                raise OAuthError("invalid_scope", "a refresh cannot widen the granted scopes")
            # offline_access stays: the family continues
            scopes = tuple(
                s
                for s in scope_names.SUPPORTED
                if s in narrowed or (s == scope_names.OFFLINE and s in scopes)
            )
        # refresh=True: the family continues
        return await self._exchange(request, REFRESH, token, binding, scopes, refresh=True)

    async def _exchange(
        self,
        request: Request,
        kind: Literal["code", "refresh_token"],
        presented: str,
        binding: dict[str, Any],
        scopes: tuple[str, ...],
        *,
        refresh: bool,
    ) -> dict[str, Any]:
        """Spend a checked code or refresh token; the grace window decides what a repeat
        gets (``auth.tokens``): the first use's pair when the same address and user agent
        ask again, else nothing, and the grant is revoked. Every repeat is a warning that
        names its address."""
        tokens = self.context.tokens
        grant_id = str(binding["grant"])
        if await anyio.to_thread.run_sync(tokens.grant, grant_id) is None:
            raise OAuthError("invalid_grant", "the grant was revoked")
        address = client_address(request)
        user_agent = request.headers.get("user-agent", "")
        presenter = Presenter(address.bucket, user_agent)
        exchanged = await anyio.to_thread.run_sync(
            partial(
                tokens.exchange,
                kind,
                presented,
                binding,
                scopes,
                refresh=refresh,
                presenter=presenter,
            )
        )
        what = "code" if kind == CODE else "refresh token"
        who = {"address": address.ip, "user_agent": bounded_text(user_agent)}
        if exchanged.outcome == "reused":
            why = (
                "replayed within the grace window from another address or user agent than "
                f"its first use (different: {', '.join(exchanged.differs)})"
                if exchanged.differs
                else "reused"
            )
            log(logging.WARNING, f"oauth {what} {why}: grant revoked", grant_id=grant_id, **who)
            raise OAuthError("invalid_grant", f"the {what} was already used; the grant is revoked")
        if exchanged.pair is None:
            raise OAuthError("invalid_grant", f"the {what} is unknown or expired")
        if exchanged.outcome == "repeated":
            log(
                logging.WARNING,
                f"oauth {what} repeated within the grace window by its first user: "
                "answered with the pair of its first use",
                grant_id=grant_id,
                **who,
            )
        return _token_body(exchanged.pair)


def _check_code(form: FormData, client: Client, binding: dict[str, Any], verifier: str) -> None:
    if binding["client_id"] != client.client_id:
        raise OAuthError("invalid_grant", "the code was issued to another client")
    redirect_uri = field(form, "redirect_uri")
    if (redirect_uri or binding["redirect_given"]) and redirect_uri != binding["redirect_uri"]:
        raise OAuthError("invalid_grant", "redirect_uri differs from the authorization request")
    if not (43 <= len(verifier) <= 128 and set(verifier) <= _VERIFIER_CHARS):
        raise OAuthError("invalid_grant", "code_verifier must be 43-128 unreserved characters")
    if not pkce_matches(verifier, str(binding["code_challenge"])):
        raise OAuthError("invalid_grant", "code_verifier does not match the code_challenge")
    resource = field(form, "resource")
    if resource is not None and trim(resource) != binding["resource"]:
        raise OAuthError("invalid_target", "resource differs from the one authorized")


def _token_body(issued: Issued) -> dict[str, Any]:
    body: dict[str, Any] = {
        "access_token": issued.access_token,
        "token_type": "Bearer",
        "expires_in": issued.expires_in,
        "scope": " ".join(issued.scopes),
    }
    if issued.refresh_token is not None:
        body["refresh_token"] = issued.refresh_token
    return body
