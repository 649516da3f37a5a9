"""The server ``metacortex init --url`` points an application at.

The URL names a MetaCortex server: its base (``https://memory.example.com``, or a
path prefix behind a proxy), its admin endpoint (``.../mcp``) or one client's
endpoint (``.../clients/<id>/mcp``). Each application gets a client endpoint of
its own, ``<base>/clients/<id>/mcp`` (``clients.snippets.client_endpoint``: the
route the server serves stored and configured clients at), so the base is what
is kept. Only http and https, with a host; no credentials, query or fragment (a
token never travels in the URL written to a file).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Final
from urllib.parse import urlsplit, urlunsplit

from metacortex.clients.snippets import client_endpoint
from metacortex.errors import InvalidArgument
from metacortex.guard.hosts import is_loopback_host

_CLIENT_PATH: Final = re.compile(r"(?P<base>.*)/clients/(?P<id>[^/]+)/mcp")


@dataclass(frozen=True, slots=True)
class Server:
    base: str  # scheme://host[:port][/prefix], lower-case host, no trailing slash
    client_id: str | None  # the client the URL named (…/clients/<id>/mcp), if any
    local: bool  # a loopback host: plain http is fine there

    def endpoint(self, client_id: str) -> str:
        """The client's MCP endpoint on this server."""
        return client_endpoint(self.base, client_id).url


def parse(url: str) -> Server:
    """The server ``url`` names (InvalidArgument saying what is wrong with it)."""
    try:
        parts = urlsplit(url.strip())
        port = parts.port
    except ValueError as error:
        raise InvalidArgument(f"--url {url!r} is not a URL ({error})") from None
    if parts.scheme not in ("http", "https"):
        raise InvalidArgument(
            f"--url {url!r} must start with https:// (or http:// for a server on this machine)"
        )
    host = parts.hostname
    if not host:
        raise InvalidArgument(f"--url {url!r} names no host")
    if parts.username is not None or parts.password is not None:
        raise InvalidArgument("--url must not hold credentials: the token is kept apart")
    if parts.query or parts.fragment:
        raise InvalidArgument(
            "--url takes no query or fragment: name the server (https://host), its /mcp "
            "or a /clients/<id>/mcp endpoint"
        )
    path = parts.path.rstrip("/")
    client_id: str | None = None
    named = _CLIENT_PATH.fullmatch(path)
    if named is not None:
        path, client_id = named["base"], named["id"]
    elif path.endswith("/mcp"):
        path = path[: -len("/mcp")]
    shown = f"[{host}]" if ":" in host else host
    netloc = shown if port is None else f"{shown}:{port}"
    base = urlunsplit((parts.scheme, netloc, path, "", ""))
    return Server(base=base, client_id=client_id, local=is_loopback_host(host))


def configured_client(entry: Any, url_key: str, server: Server) -> str | None:
    """The client an existing entry connects to on ``server``, or None (another server,
    not a remote entry, or not a client endpoint)."""
    if not isinstance(entry, dict):
        return None
    url = entry.get(url_key)
    if not isinstance(url, str):
        return None
    try:
        found = parse(url)
    except InvalidArgument:
        return None
    return found.client_id if found.base == server.base else None
