"""The credential a request to an MCP endpoint carries, and the static tokens it may match.

A static token (the admin token, an ``MCP_CLIENT_PROFILES_JSON`` entry's, a stored
client's) comes in ``Authorization: Bearer`` or in ``X-Api-Key`` (the header the
clients of the seeds' .NET server send); both headers win over ``?auth_token=``
(accepted only for profiles that opt in). A request carrying both headers with
different values is refused (``conflicting``): which one was meant cannot be told,
and trying each would let one request test two guesses. An OAuth access token comes
in ``Authorization: Bearer`` only (RFC 6750). A static token is compared as a sha256
digest in constant time, and the comparison costs the same whether the client id
exists or not. The ``auth_token`` query parameter is removed before anything
downstream sees the request; neither header is ever logged.
"""

from __future__ import annotations

import hmac
import secrets
from dataclasses import dataclass
from typing import Final, Literal
from urllib.parse import parse_qsl, urlencode

from starlette.datastructures import Headers

from metacortex.access.profiles import Profile, Profiles, token_digest

URL_TOKEN_PARAM: Final = "auth_" + "token"  # split: not a credential (ruff S105)
API_KEY_HEADER: Final = "x-api-key"
Source = Literal["bearer", "api_key", "url"]


@dataclass(frozen=True, slots=True)
class Presented:
    """The credential a request carries and where it came from."""

    token: str
    source: Source

    @property
    def from_url(self) -> bool:
        return self.source == "url"


class StaticTokens:
    """Which profile a request's static token opens, if any."""

    def __init__(self) -> None:
        # Compared against when there is no real digest, so every path costs the same.
        self._no_token = secrets.token_bytes(32)

    def profile(
        self, client_id: str | None, headers: Headers, query_string: bytes, profiles: Profiles
    ) -> Profile | None:
        """The profile of ``client_id`` when the request carries its static token."""
        profile = profiles.get(client_id)
        found = credential(headers, query_string)
        token = found.token if found is not None else None
        presented = token_digest(token) if token is not None else self._no_token
        expected = (
            profile.token_sha256
            if profile is not None and profile.token_sha256 is not None
            else self._no_token
        )
        # Always one digest comparison of fixed-length values: neither the token's
        # length nor whether the client id exists shows in the timing.
        matches = hmac.compare_digest(presented, expected)
        if not matches or token is None or profile is None or profile.token_sha256 is None:
            return None
        if found is not None and found.from_url and not profile.allow_url_token:
            return None
        return profile


def credential(headers: Headers, query_string: bytes) -> Presented | None:
    """The token a request carries: ``Authorization: Bearer``, else ``X-Api-Key``
    (the two agree when both are sent: ``conflicting`` refuses them first), else
    ``?auth_token=``; None when it carries none."""
    bearer = _bearer(headers)
    if bearer is not None:
        return Presented(bearer, "bearer")
    api_key = _api_key(headers)
    if api_key is not None:
        return Presented(api_key, "api_key")
    for key, value in parse_qsl(query_string.decode("latin-1"), keep_blank_values=True):
        if key == URL_TOKEN_PARAM and value:
            return Presented(value, "url")
    return None


def conflicting(headers: Headers) -> bool:
    """Whether ``Authorization: Bearer`` and ``X-Api-Key`` are both sent and differ
    (the comparison is of digests, so it takes the same time whatever they hold)."""
    bearer, api_key = _bearer(headers), _api_key(headers)
    if bearer is None or api_key is None:
        return False
    return not hmac.compare_digest(token_digest(bearer), token_digest(api_key))


def _bearer(headers: Headers) -> str | None:
    authorization = headers.get("authorization")
    if authorization:
        scheme, _, value = authorization.partition(" ")
        if scheme.lower() == "bearer" and value.strip():
            return value.strip()
    return None


def _api_key(headers: Headers) -> str | None:
    value = headers.get(API_KEY_HEADER, "").strip()
    return value or None


def without_url_token(query_string: bytes) -> bytes:
    """The query string without ``auth_token`` (as it was when it had none)."""
    pairs = parse_qsl(query_string.decode("latin-1"), keep_blank_values=True)
    kept = [(key, value) for key, value in pairs if key != URL_TOKEN_PARAM]
    return urlencode(kept).encode("latin-1") if len(kept) != len(pairs) else query_string
