"""Redirect URIs: which a client may register, how they are shown, what the page trusts.

Three kinds are accepted, each parsed strictly (RFC 3986 characters only, a
lowercase scheme, no user information, no fragment, a host that is a DNS name
or an IP literal and nothing else):

- ``https`` URLs (web clients: ``https://chatgpt.com/connector/oauth/…``,
  ``https://claude.ai/api/mcp/auth_callback``), matched exactly;
- ``http`` on a loopback host (``127.0.0.1``, ``localhost``, ``[::1]``), matched
  on any port (RFC 8252 §7.3: Claude Code, Codex and Cursor listen on a random
  one);
- private-use URI schemes of native apps (RFC 8252 §7.1), matched exactly:
  ``cursor://anysphere.cursor-mcp/oauth/callback``,
  ``com.example.app:/oauth2redirect``. RFC 8252 asks apps for a reverse-DNS
  scheme; Cursor's own ``cursor:`` is not one, so any well-formed scheme is
  accepted except those a browser handles itself or that run content
  (``javascript:``, ``data:``, ``file:``, ``blob:``…) and any other scheme
  spelled like ``http``. A private-use redirect can be claimed by another app
  on the device: PKCE (required of every client here) is what makes an
  intercepted code useless.

The consent page shows the parsed host (never the raw netloc, which can carry
``chatgpt.com@evil.example``), and its CSP ``form-action`` is built from the
parsed origin, so nothing a client document says can add a CSP directive.
"""

from __future__ import annotations

import ipaddress
import json
import re
from typing import Any, Final
from urllib.parse import SplitResult, urlsplit

from mcp.shared.auth import OAuthClientMetadata
from pydantic import ValidationError

LOOPBACK_HOSTS: Final = frozenset({"127.0.0.1", "localhost", "::1"})
# RFC 3986 characters: unreserved, reserved and percent-encodings; nothing else
# (no space, quote, backslash, angle bracket, brace, caret, backtick or control).
_URI_CHARS: Final = re.compile(r"(?:[A-Za-z0-9\-._~:/?#\[\]@!$&'()*+,;=]|%[0-9A-Fa-f]{2})+")
_SCHEME: Final = re.compile(r"[a-z][a-z0-9+.\-]*")
_DNS_NAME: Final = re.compile(
    r"(?=.{1,253}\Z)[a-z0-9](?:[a-z0-9\-]{0,61}[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9\-]{0,61}[a-z0-9])?)*"
)
# Schemes a browser handles itself or that carry content: never a callback.
REFUSED_SCHEMES: Final = frozenset(
    {
        "about",
        "blob",
        "chrome",
        "chrome-extension",
        "data",
        "file",
        "filesystem",
        "ftp",
        "intent",
        "jar",
        "javascript",
        "mailto",
        "moz-extension",
        "resource",
        "sms",
        "tel",
        "urn",
        "vbscript",
        "view-source",
        "ws",
        "wss",
    }
)


def _host(parts: SplitResult) -> str | None:
    """The parsed host in canonical form (IPv6 bracketed), or None when it is not a
    DNS name or an IP literal exactly, or the authority carries anything else."""
    try:
        hostname = parts.hostname
        port = parts.port
    except ValueError:
        return None
    if hostname is None or parts.username is not None or "@" in parts.netloc:
        return None
    try:
        address = ipaddress.ip_address(hostname)
    except ValueError:
        if not _DNS_NAME.fullmatch(hostname):
            return None
        host = hostname
    else:
        host = f"[{address.compressed}]" if address.version == 6 else address.compressed
    expected = host if port is None else f"{host}:{port}"
    # Nothing may hide in the authority besides host and port (the parser skips a lot).
    return host if parts.netloc.lower() == expected else None


def kind(uri: str) -> str | None:
    """``"https"``, ``"loopback"`` or ``"private-use"`` for an acceptable redirect URI;
    None for anything else."""
    if not _URI_CHARS.fullmatch(uri):
        return None
    parts = urlsplit(uri)
    scheme = parts.scheme
    if not scheme or not uri.startswith(scheme + ":") or not _SCHEME.fullmatch(scheme):
        return None
    if parts.fragment or "#" in uri:
        return None
    if scheme in ("http", "https"):
        if not uri.startswith(scheme + "://"):
            return None  # https:/x and https:x are look-alikes a parser would "fix"
        host = _host(parts)
        if host is None:
            return None
        if scheme == "https":
            return "https"
        return "loopback" if host.strip("[]") in LOOPBACK_HOSTS else None
    if scheme in REFUSED_SCHEMES or scheme.startswith("http"):
        return None
    if uri.startswith(scheme + "://"):
        if _host(parts) is None:
            return None
    elif not parts.path.startswith("/"):
        return None  # opaque forms (myapp:foo) are no callback
    return "private-use"


def allowed(uri: str) -> bool:
    return kind(uri) is not None


def refusal(refused: list[str]) -> str:
    """The registration error's description, naming the first refused URI."""
    named = f" (refused: {refused[0][:200]})" if refused else ""
    return (
        "redirect_uris must be https URLs, http loopback URLs or a native app's "
        "private-use scheme (RFC 8252), well-formed, without user information or fragment" + named
    )


def refused_in_registration(body: bytes) -> str | None:
    """Why a registration request's redirect URIs, as the client wrote them, are refused;
    None when they are acceptable (or not a list of strings: the registration handler
    answers that). The SDK's model parses URLs leniently (``https:/x`` becomes
    ``https://x``, hosts are lowercased): a URI is registered only if it is already in that
    form, so what is stored is exactly what the client will send back."""
    try:
        document: Any = json.loads(body)
    except (ValueError, UnicodeDecodeError):
        return None
    uris = document.get("redirect_uris") if isinstance(document, dict) else None
    if not isinstance(uris, list) or not all(isinstance(uri, str) for uri in uris):
        return None
    for uri in uris:
        if not allowed(uri):
            return refusal([uri])
        try:
            parsed = OAuthClientMetadata.model_validate({"redirect_uris": [uri]})
        except ValidationError:
            return refusal([uri])
        normalized = str((parsed.redirect_uris or [uri])[0])
        if normalized != uri:
            return f"register the redirect URI in its normalized form: {normalized[:200]}"
    return None


def shown_host(uri: str) -> str:
    """What the consent page names as the place the owner is sent back to: the parsed
    host (with a port when one is given), or ``scheme://host`` / ``scheme:`` for an app."""
    parts = urlsplit(uri)
    host = _host(parts) if parts.netloc else None
    if kind(uri) == "private-use":
        return f"{parts.scheme}://{host}" if host else f"{parts.scheme}:"
    if host is None:
        return "(an invalid address)"
    try:
        port = parts.port
    except ValueError:
        port = None
    return host if port is None else f"{host}:{port}"


def csp_source(uri: str) -> str | None:
    """The CSP source expression for a form that ends at ``uri``, built from the parsed
    parts only: ``scheme://host[:port]``, or ``scheme:`` for a private-use scheme."""
    found = kind(uri)
    if found is None:
        return None
    parts = urlsplit(uri)
    if found == "private-use":
        return f"{parts.scheme}:"
    host = _host(parts)
    if host is None:
        return None
    port = parts.port
    return f"{parts.scheme}://{host}" if port is None else f"{parts.scheme}://{host}:{port}"
