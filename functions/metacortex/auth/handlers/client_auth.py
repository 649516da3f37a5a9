"""Who is calling the token and revocation endpoints: a public client by its id, a
confidential one by its secret (form or HTTP Basic), or by a ``private_key_jwt``
assertion (RFC 7523, ``auth/assertions.py``). Every failure is ``invalid_client`` (401).
"""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass
from urllib.parse import unquote

from starlette.datastructures import FormData
from starlette.requests import Request

from metacortex.auth.assertions import (
    ASSERTION_TYPE,
    InvalidAssertion,
    claimed_client_id,
    verify_assertion,
)
from metacortex.auth.cimd import is_metadata_url
from metacortex.auth.clients import Client, UnknownClient
from metacortex.auth.handlers.common import REVOKE, TOKEN, OAuthError, field
from metacortex.auth.handlers.context import OAuthContext


@dataclass(frozen=True, slots=True)
class ClientAuthenticator:
    context: OAuthContext

    async def authenticate(self, request: Request, form: FormData) -> Client:
        client_id = field(form, "client_id")
        secret = field(form, "client_secret")
        assertion = field(form, "client_assertion")
        authorization = request.headers.get("authorization", "")
        if authorization.lower().startswith("basic "):
            try:
                decoded = base64.b64decode(authorization[6:].strip(), validate=True).decode()
            except (binascii.Error, UnicodeDecodeError):
                raise OAuthError("invalid_client", "malformed Basic credentials", 401) from None
            basic_id, _, basic_secret = decoded.partition(":")
            client_id, secret = unquote(basic_id), unquote(basic_secret)
        if not client_id and assertion:
            client_id = claimed_client_id(assertion)
        if not client_id:
            raise OAuthError("invalid_client", "client_id is required", 401)
        if is_metadata_url(client_id):
            # Looking a document up may fetch and cache it: it counts like an authorize.
            wait = self.context.limits.authorization(request)
            if wait is not None:
                raise OAuthError(
                    "temporarily_unavailable",
                    f"too many requests from this address; retry after {wait} s",
                    429,
                )
        try:
            client = await self.context.clients.get(client_id)
        except UnknownClient as error:
            raise OAuthError("invalid_client", str(error), 401) from None
        if client.auth_method == "private_key_jwt" or assertion is not None:
            await self._verify_assertion(request, form, client, assertion)
        elif not client.secret_matches(secret):
            raise OAuthError("invalid_client", "client authentication failed", 401)
        return client

    async def _verify_assertion(
        self, request: Request, form: FormData, client: Client, assertion: str | None
    ) -> None:
        if client.auth_method != "private_key_jwt":
            raise OAuthError("invalid_client", "this client does not use private_key_jwt", 401)
        if not assertion or field(form, "client_assertion_type") != ASSERTION_TYPE:
            raise OAuthError(
                "invalid_client",
                f"authenticate with client_assertion_type={ASSERTION_TYPE} and client_assertion",
                401,
            )
        issuer = self.context.issuer(request)
        try:
            await verify_assertion(
                assertion,
                client_id=client.client_id,
                jwks=client.jwks,
                jwks_uri=client.jwks_uri,
                documents=self.context.documents,
                store=self.context.store(),
                audiences=(issuer + TOKEN, issuer, issuer + REVOKE),
            )
        except InvalidAssertion as error:
            raise OAuthError("invalid_client", str(error), 401) from None
