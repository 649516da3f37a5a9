"""The authorization server: its endpoints' routes over one shared context.

Endpoints (also under ``/metaCortexMcp``), each answered by a module of ``auth/handlers/``:

| route | what |
|---|---|
| ``GET /.well-known/oauth-authorization-server[/<issuer path>]`` | RFC 8414 metadata |
| ``GET /.well-known/openid-configuration[/<issuer path>]`` | the same document, OIDC-valid |
| ``GET /.well-known/oauth-protected-resource[/<resource path>]`` | RFC 9728 metadata |
| ``GET /oauth/authorize`` | checks the request, then the owner's consent page |
| ``GET, POST /oauth/consent`` | sign-in if needed, the consent page, approve or deny |
| ``POST /oauth/token`` | ``authorization_code`` (PKCE S256) and ``refresh_token`` |
| ``POST /oauth/revoke`` | RFC 7009, public clients too |
| ``POST /oauth/register`` | RFC 7591, the SDK's ``RegistrationHandler`` |
| ``GET /oauth/jwks`` | an empty key set (the metadata's ``jwks_uri``; nothing is signed) |

The three documents and the key set are ``handlers/metadata.py``; each other endpoint
is the module of its name (``handlers/authorize.py`` ... ``handlers/register.py``).
The issuer is the public base URL as a plain string (no trailing slash), and it
comes back as ``iss`` in every authorization response (RFC 9207). ``resource``
(RFC 8707) must name one of this server's MCP endpoints at authorize and, when
sent, the same one at the token endpoint.
"""

from __future__ import annotations

from starlette.routing import BaseRoute, Route

from metacortex.auth.handlers.authorize import AuthorizationHandler
from metacortex.auth.handlers.client_auth import ClientAuthenticator
from metacortex.auth.handlers.common import (
    AUTHORIZE,
    CONSENT,
    JWKS,
    READ,
    REGISTER,
    REVOKE,
    TOKEN,
    WELL_KNOWN_AS,
    WELL_KNOWN_OIDC,
    preflight,
)
from metacortex.auth.handlers.consent import ConsentHandler
from metacortex.auth.handlers.context import OAuthContext
from metacortex.auth.handlers.metadata import (
    AuthorizationServerMetadata,
    ProtectedResourceMetadata,
    key_set,
)
from metacortex.auth.handlers.register import Registration
from metacortex.auth.handlers.revoke import RevocationHandler
from metacortex.auth.handlers.token import TokenHandler
from metacortex.auth.resource import WELL_KNOWN_PRM, OAuthResource
from metacortex.config import Settings
from metacortex.kernel.routes import FUNCTION_PREFIX
from metacortex.kernel.runtime import Runtime
from metacortex.storage.base import MemoryStore


class AuthorizationServer:
    """Everything OAuth for one app; the store is reached once the app has started."""

    def __init__(self, settings: Settings, runtime: Runtime) -> None:
        self.context = OAuthContext(settings, runtime)
        self.owner = self.context.owner

    def start(self, store: MemoryStore) -> OAuthResource:
        """Bind to the store (in the app's lifespan); returns the resource-server side."""
        return self.context.start(store)

    def routes(self) -> list[BaseRoute]:
        context = self.context
        authenticator = ClientAuthenticator(context)
        as_metadata = AuthorizationServerMetadata(context).handle
        resource_metadata = ProtectedResourceMetadata(context).handle
        authorize = AuthorizationHandler(context).handle
        consent = ConsentHandler(context).handle
        token = TokenHandler(context, authenticator).handle
        revoke = RevocationHandler(context, authenticator).handle
        register = Registration(context).handle
        routes: list[BaseRoute] = []
        for prefix in ("", FUNCTION_PREFIX):
            routes += [
                Route(prefix + WELL_KNOWN_AS + "{rest:path}", as_metadata, methods=READ),
                # The same document where OIDC discovery looks: under a prefix it is the
                # one form cloudfunctions.net delivers (<issuer>/.well-known/openid-…).
                Route(prefix + WELL_KNOWN_OIDC + "{rest:path}", as_metadata, methods=READ),
                Route(prefix + WELL_KNOWN_PRM + "{rest:path}", resource_metadata, methods=READ),
                Route(prefix + AUTHORIZE, authorize, methods=["GET"]),
                Route(prefix + CONSENT, consent, methods=["GET", "POST"]),
                Route(prefix + TOKEN, token, methods=["POST", "OPTIONS"]),
                Route(prefix + REVOKE, revoke, methods=["POST", "OPTIONS"]),
                Route(prefix + REGISTER, register, methods=["POST"]),
                Route(prefix + REGISTER, preflight, methods=["OPTIONS"]),
                Route(prefix + JWKS, key_set, methods=READ),
            ]
        return routes + self.owner.routes()
