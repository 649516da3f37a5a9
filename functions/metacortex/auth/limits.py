"""What a stranger can make the authorization server store, and how fast.

Two endpoints write a record for anyone who asks: ``/oauth/register`` (a client,
kept until approved or expired) and ``/oauth/authorize`` (a pending request, 15
minutes). On Firestore each is a billed write. Both are bounded three ways:

- **size**: a registration body is at most ``MAX_REGISTRATION_BYTES`` (the limit a
  client metadata document has, ``cimd.MAX_BYTES``) with a ``client_name`` of at
  most ``MAX_CLIENT_NAME_CHARS``; an authorization request's ``state`` is at most
  ``MAX_STATE_CHARS`` and its ``code_challenge`` is 43-128 characters of the
  RFC 7636 alphabet. A refused request writes nothing.
- **rate**: token buckets per client address (``guard.addresses``: the address the
  guard resolved, an IPv6 /64 as one) and overall, per minute (Settings:
  ``METACORTEX_OAUTH_REGISTRATIONS_PER_MINUTE[_PER_ADDRESS]``,
  ``METACORTEX_OAUTH_AUTHORIZATIONS_PER_MINUTE[_PER_ADDRESS]``). The buckets live
  in process memory, like the sign-in limiter: each instance enforces them on its
  share of the traffic.
- **lifetime**: a registration the owner never approves expires after
  ``METACORTEX_OAUTH_UNUSED_CLIENT_MINUTES`` (``clients.py``).
"""

from __future__ import annotations

import re
from typing import Final

from starlette.requests import Request

from metacortex.auth.cimd import MAX_BYTES
from metacortex.config import Settings
from metacortex.guard.addresses import client_address
from metacortex.guard.ratelimit import RateLimiter

MAX_REGISTRATION_BYTES: Final = MAX_BYTES
MAX_CLIENT_NAME_CHARS: Final = 200
# Connect2id has held query-mode state to 1,024 characters for years; twice that
# leaves room for clients that pack a signed blob into it.
MAX_STATE_CHARS: Final = 2048
CODE_CHALLENGE: Final = re.compile(r"[A-Za-z0-9._~-]{43,128}")  # RFC 7636 §4.2


class AbuseLimits:
    """The per-address and overall request budgets of registration and authorization."""

    def __init__(self, settings: Settings, limiter: RateLimiter | None = None) -> None:
        self._settings = settings
        self._limiter = limiter or RateLimiter()

    def _wait(self, kind: str, request: Request, per_address: int, overall: int) -> int | None:
        # The guard's resolved address: the IPv4 address or the IPv6 /64.
        bucket = client_address(request).bucket
        wait = self._limiter.acquire(f"{kind}:{bucket}", per_address)
        return wait or self._limiter.acquire(f"{kind}:overall", overall)

    def registration(self, request: Request) -> int | None:
        """None when this registration may go ahead, else seconds to wait."""
        return self._wait(
            "register",
            request,
            self._settings.metacortex_oauth_registrations_per_minute_per_address,
            self._settings.metacortex_oauth_registrations_per_minute,
        )

    def authorization(self, request: Request) -> int | None:
        """None when this authorization request may go ahead, else seconds to wait."""
        return self._wait(
            "authorize",
            request,
            self._settings.metacortex_oauth_authorizations_per_minute_per_address,
            self._settings.metacortex_oauth_authorizations_per_minute,
        )


def registration_problem(body: bytes) -> str | None:
    """Why a registration body is refused before it is parsed, or None."""
    if len(body) > MAX_REGISTRATION_BYTES:
        return (
            f"the registration metadata is larger than {MAX_REGISTRATION_BYTES} bytes "
            "(the limit of a client metadata document)"
        )
    return None


def client_name_problem(name: str | None) -> str | None:
    if name is not None and len(name) > MAX_CLIENT_NAME_CHARS:
        return f"client_name is longer than {MAX_CLIENT_NAME_CHARS} characters"
    return None


def state_problem(state: str | None) -> str | None:
    if state is not None and len(state) > MAX_STATE_CHARS:
        return f"state is longer than {MAX_STATE_CHARS} characters; nothing was sent back"
    return None


def challenge_problem(challenge: str | None, method: str | None) -> str | None:
    if method != "S256" or challenge is None or not CODE_CHALLENGE.fullmatch(challenge):
        return (
            "PKCE is required: code_challenge (43-128 characters of A-Z a-z 0-9 - . _ ~, "
            "RFC 7636) with code_challenge_method=S256"
        )
    return None
