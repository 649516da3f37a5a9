"""What the OAuth endpoints share: their paths, the OAuth error and its JSON answer, the
cache and CORS headers, the CORS preflight, and reading a form field."""

from __future__ import annotations

from typing import Final

from starlette.datastructures import FormData
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

AUTHORIZE: Final = "/oauth/authorize"
CONSENT: Final = "/oauth/consent"
TOKEN: Final = "/oauth/token"  # noqa: S105 (a path, not a credential)
REVOKE: Final = "/oauth/revoke"
REGISTER: Final = "/oauth/register"
JWKS: Final = "/oauth/jwks"
WELL_KNOWN_AS: Final = "/.well-known/oauth-authorization-server"
WELL_KNOWN_OIDC: Final = "/.well-known/openid-configuration"
AUTH_METHODS: Final = ("none", "client_secret_post", "client_secret_basic", "private_key_jwt")
NO_STORE: Final = {"cache-control": "no-store", "pragma": "no-cache"}
# Metadata documents: read by clients, preflighted by browser-based ones.
READ: Final = ["GET", "OPTIONS"]
CORS: Final = {"access-control-allow-origin": "*"}


class OAuthError(Exception):
    """An OAuth error answer (RFC 6749 §5.2): ``error``, its description, the status."""

    def __init__(self, error: str, description: str, status: int = 400) -> None:
        super().__init__(description)
        self.error = error
        self.description = description
        self.status = status


def oauth_json(error: OAuthError) -> JSONResponse:
    headers = {**NO_STORE, **CORS}
    if error.status == 401:
        headers["www-authenticate"] = 'Basic realm="metacortex"'
    return JSONResponse(
        {"error": error.error, "error_description": error.description},
        status_code=error.status,
        headers=headers,
    )


async def preflight(request: Request, methods: str = "POST, OPTIONS") -> Response:
    """A browser's CORS preflight of an endpoint a client calls from its page."""
    return Response(
        status_code=204,
        headers={
            **CORS,
            "access-control-allow-methods": methods,
            "access-control-allow-headers": "authorization, content-type, mcp-protocol-version",
            "access-control-max-age": "600",
        },
    )


def field(form: FormData | None, name: str) -> str | None:
    """A form field's text (None: absent, or a file)."""
    if form is None:
        return None
    value = form.get(name)
    return value if isinstance(value, str) else None


def trim(url: str) -> str:
    """``url`` without one trailing slash (``…/mcp/`` names the endpoint ``…/mcp``)."""
    return url[:-1] if url.endswith("/") else url
