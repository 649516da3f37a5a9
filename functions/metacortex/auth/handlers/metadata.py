"""The metadata documents: the authorization server's (RFC 8414, also where OpenID Connect
discovery looks), the protected resource's (RFC 9728), and the empty key set its
``jwks_uri`` names.

| route | what |
|---|---|
| ``GET /.well-known/oauth-authorization-server[/<issuer path>]`` | RFC 8414 metadata |
| ``GET /.well-known/openid-configuration[/<issuer path>]`` | the same document, OIDC-valid |
| ``GET /.well-known/oauth-protected-resource[/<resource path>]`` | RFC 9728 metadata |
| ``GET /oauth/jwks`` | an empty key set (nothing is signed) |
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final
from urllib.parse import urlsplit

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from metacortex.access import scopes as scope_names
from metacortex.auth.assertions import ALGORITHMS
from metacortex.auth.handlers.common import (
    AUTH_METHODS,
    AUTHORIZE,
    CORS,
    JWKS,
    REGISTER,
    REVOKE,
    TOKEN,
    preflight,
)
from metacortex.auth.handlers.context import OAuthContext
from metacortex.auth.resource import resource_of
from metacortex.kernel.routes import FUNCTION_PREFIX
from metacortex.owner.base import origin_of

_CACHED: Final = {"cache-control": "public, max-age=300", **CORS}


@dataclass(frozen=True, slots=True)
class AuthorizationServerMetadata:
    context: OAuthContext

    async def handle(self, request: Request) -> Response:
        if request.method == "OPTIONS":
            return await preflight(request, "GET, OPTIONS")
        issuer = self.context.issuer(request)
        rest = request.path_params.get("rest", "")
        if rest == FUNCTION_PREFIX and not self.context.settings.metacortex_public_url:
            issuer = origin_of(issuer) + FUNCTION_PREFIX  # path-inserted issuer under the prefix
        if rest not in ("", urlsplit(issuer).path):
            return _not_found()
        return JSONResponse(
            {
                "issuer": issuer,
                "authorization_endpoint": issuer + AUTHORIZE,
                "token_endpoint": issuer + TOKEN,
                "registration_endpoint": issuer + REGISTER,
                "revocation_endpoint": issuer + REVOKE,
                "scopes_supported": list(scope_names.SUPPORTED),
                "response_types_supported": ["code"],
                "response_modes_supported": ["query"],
                "grant_types_supported": ["authorization_code", "refresh_token"],
                "token_endpoint_auth_methods_supported": list(AUTH_METHODS),
                "revocation_endpoint_auth_methods_supported": list(AUTH_METHODS),
                "token_endpoint_auth_signing_alg_values_supported": list(ALGORITHMS),
                "code_challenge_methods_supported": ["S256"],
                "client_id_metadata_document_supported": True,
                "authorization_response_iss_parameter_supported": True,
                # What OpenID Connect discovery requires, so the one document that can be
                # reached under a path prefix (<issuer>/.well-known/openid-configuration)
                # passes the TypeScript SDK's OIDC schema. Honest: no ID token is ever
                # issued (no ``openid`` scope), so no algorithm and an empty key set.
                "jwks_uri": issuer + JWKS,
                "subject_types_supported": ["public"],
                "id_token_signing_alg_values_supported": [],
            },
            headers=_CACHED,
        )


@dataclass(frozen=True, slots=True)
class ProtectedResourceMetadata:
    context: OAuthContext

    async def handle(self, request: Request) -> Response:
        if request.method == "OPTIONS":
            return await preflight(request, "GET, OPTIONS")
        base = self.context.issuer(request)
        rest = request.path_params.get("rest", "")
        if rest == "":
            resource: str | None = base + "/mcp"  # the root describes the admin endpoint
        else:
            origin = origin_of(base)
            resource = resource_of(base, origin + rest) or resource_of(base, base + rest)
        if resource is None:
            return _not_found()
        if rest.endswith("/"):
            # RFC 9728 §3.3: the resource is the very URL the metadata URL was built from.
            # A client given ``…/mcp/`` (VS Code compares exactly) sends that back as
            # ``resource``; it names the same endpoint, and tokens are bound to ``…/mcp``.
            resource += "/"
        return JSONResponse(
            {
                "resource": resource,
                "authorization_servers": [base],
                "scopes_supported": list(scope_names.RESOURCE_SCOPES),
                "bearer_methods_supported": ["header"],
                "resource_name": "MetaCortex",
            },
            headers=_CACHED,
        )


async def key_set(request: Request) -> Response:
    """The authorization server's signing keys: none (it signs no ID token or JWT)."""
    if request.method == "OPTIONS":
        return await preflight(request, "GET, OPTIONS")
    return JSONResponse({"keys": []}, headers=_CACHED)


def _not_found() -> Response:
    return JSONResponse(
        {"error": {"code": "not_found", "message": "no such metadata document"}},
        status_code=404,
        headers={"cache-control": "no-store"},
    )
