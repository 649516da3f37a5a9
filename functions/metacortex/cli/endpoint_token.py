"""The token a client-side command (``smoke``, ``eval run --url``) sends to an endpoint.

One name for the admin token everywhere: ``MCP_ADMIN_TOKEN``, the variable the
server reads (the original MetaCortex's name), which the start-up banner tells
the operator to export. In order:

1. ``MCP_SMOKE_TOKEN``: a token for the endpoint under test (a client endpoint's);
2. ``MCP_ADMIN_TOKEN``;
3. ``METACORTEX_TOKEN``: what the banner told operators to export before, kept as
   an alias so their shells keep working;
4. for an endpoint on this machine (a loopback host), the admin token ``serve``
   keeps in the data directory (``--data-dir``, as for ``serve``): no variable
   is needed against a local server. Never for another host: that would send
   this machine's admin token to someone else's server.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from metacortex.cli.admin_token import stored_admin_token
from metacortex.config import Settings
from metacortex.errors import ConfigurationError
from metacortex.guard.hosts import is_loopback_host


def endpoint_token(settings: Settings, url: str) -> str:
    for secret in (settings.mcp_smoke_token, settings.mcp_admin_token, settings.metacortex_token):
        if secret is not None:
            return secret.get_secret_value()
    if is_local(url):
        stored = stored_admin_token(settings)
        if stored is not None:
            return stored
        where = f"; no admin token is stored in {settings.admin_token_path} either"
    else:
        where = " (the data directory's admin token is used only for a local endpoint)"
    raise ConfigurationError(
        f"no token for {url}: set MCP_ADMIN_TOKEN (or MCP_SMOKE_TOKEN for a client endpoint){where}"
    )


def is_local(url: str) -> bool:
    return is_loopback_host(urlsplit(url).hostname or "")
