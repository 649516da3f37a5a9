"""MetaCortex as its own OAuth 2.1 authorization server and protected resource.

Turned on by ``METACORTEX_OAUTH=true``. ``AuthorizationServer(settings, runtime)``
gives the routes (``.routes()``: metadata, authorize, consent, token, revoke,
register, and the owner's sign-in pages); ``.start(store)`` in the app's lifespan
returns the ``OAuthResource`` the HTTP guard asks about bearer tokens that are
not static ones. Everything is kept in the store (``storage.base`` ``auth_*``):
clients, cached client metadata documents, pending requests, codes, grants,
access and refresh tokens, each secret only as its sha256. See
``docs/CONNECTORS.md`` and the auth section of ``docs/SERVER.md``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from metacortex.auth.resource import OAuthResource
    from metacortex.auth.server import AuthorizationServer

__all__ = ["AuthorizationServer", "OAuthResource"]


def __getattr__(name: str) -> Any:
    # Loaded on first use: the console's pages import ``metacortex.auth.tokens``,
    # and building the app (a cold start) should not load PyJWT and the HTTP client.
    if name == "AuthorizationServer":
        from metacortex.auth.server import AuthorizationServer

        return AuthorizationServer
    if name == "OAuthResource":
        from metacortex.auth.resource import OAuthResource

        return OAuthResource
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
