"""The authorization server's endpoints, one module each, as the ``mcp`` SDK lays out its
own (``mcp.server.auth.handlers``): ``metadata`` (RFC 8414 and RFC 9728 documents, the
empty key set), ``authorize``, ``consent``, ``token``, ``revoke`` and ``register``.

Each handler is built over one ``context.OAuthContext`` (settings, the store's token and
client registries once the app has started, the owner's pages); ``token`` and ``revoke``
share ``client_auth.ClientAuthenticator``; ``common`` holds the paths, the OAuth error and
the response headers. ``metacortex.auth.server`` builds the handlers and their routes.
"""
