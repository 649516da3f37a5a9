"""Grants, authorization codes, access and refresh tokens, all in the store.

Tokens and codes are 256-bit random strings handed to the client once; the
store keeps only their sha256 (``owner.sessions.digest``), with an expiry:

- ``grant`` (key: grant id): client, resource, scopes, chosen preset. Revoking
  the grant (the CLI, reuse detection, a replayed code, revoking a refresh token)
  deletes it, and every token that names it stops working at once.
- ``code``: single use, 5 minutes, bound to client, redirect URI, PKCE challenge,
  resource and grant. A second use revokes the grant (but see the grace window).
- ``access_token``: bound to one resource (the endpoint's URL), checked on every
  request together with its grant.
- ``refresh_token``: issued when the client asked for ``offline_access`` or is
  registered for the ``refresh_token`` grant; rotated on every use; presenting a
  used one (reuse) revokes the whole grant, i.e. the token family.

The grace window (``METACORTEX_OAUTH_REPLAY_GRACE_SECONDS``, 60 s by default):
a repeat of the same code exchange or refresh within it (a response lost on the
way, two workers of one client racing) is answered with the very pair the first
use got, which stays valid. The first use keeps that pair on its spent record,
sealed under the spent secret (``auth.successors``), in the same atomic step that
spends it, so the rule holds across server instances and no token is stored in
plaintext.

The grace is the first use's own: the spent record also keeps digests of who
presented it (``Presenter``: the client's address, IPv6 by its /64, and its
User-Agent). A repeat from another address or user agent is no retry of that
request but someone else holding the secret: like a use after the window, it is
reuse and revokes the family (RFC 9700 §4.14.2). That also catches a thief who
spends a stolen refresh token first: the real client's repeat comes from elsewhere.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, Final, Literal

from metacortex.auth import successors
from metacortex.domain.records import to_wire_time, utc_now
from metacortex.owner.sessions import digest
from metacortex.storage.base import MemoryStore

GRANT: Final = "grant"
CODE: Final = "code"
ACCESS: Final = "access_token"
REFRESH: Final = "refresh_token"
REQUEST: Final = "authz_request"
CODE_LIFETIME: Final = timedelta(minutes=5)
REQUEST_LIFETIME: Final = timedelta(minutes=15)


def new_secret() -> str:
    return secrets.token_urlsafe(32)


def pkce_matches(verifier: str, challenge: str) -> bool:
    """RFC 7636 S256: BASE64URL(SHA256(verifier)) without padding equals the challenge."""
    computed = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode("ascii")).digest())
    return hmac.compare_digest(computed.rstrip(b"=").decode("ascii"), challenge)


@dataclass(frozen=True, slots=True)
class Issued:
    access_token: str
    expires_in: int
    scopes: tuple[str, ...]
    refresh_token: str | None


@dataclass(frozen=True, slots=True)
class Presenter:
    """Who presents a code or refresh token: the client's address (its rate-limit
    bucket: the IPv4 address, or the IPv6 /64) and its User-Agent header."""

    address: str
    user_agent: str

    def digests(self) -> dict[str, str]:
        """What a spent record keeps of it: digests, so the store holds neither."""
        return {"address": digest(self.address), "user_agent": digest(self.user_agent)}


@dataclass(frozen=True, slots=True)
class Exchanged:
    """What spending a code or refresh token came to: a new pair (``issued``), the first
    use's pair again (``repeated``, inside the grace window, by the same presenter), a
    detected reuse that revoked the family (``reused``; ``differs`` names what was not
    the first use's when it came inside the window), or nothing (``gone``: expired or
    revoked)."""

    outcome: Literal["issued", "repeated", "reused", "gone"]
    pair: Issued | None = None
    differs: tuple[str, ...] = ()


class TokenStore:
    def __init__(
        self,
        store: MemoryStore,
        access_lifetime: timedelta,
        refresh_lifetime: timedelta,
        replay_grace: timedelta = timedelta(seconds=60),
    ) -> None:
        self.store = store
        self._access = access_lifetime
        self._refresh = refresh_lifetime
        self._grace = replay_grace

    # ----------------------------------------------------------- requests
    def save_request(self, request: dict[str, Any]) -> str:
        request_id = new_secret()
        self.store.auth_put(REQUEST, digest(request_id), request, utc_now() + REQUEST_LIFETIME)
        return request_id

    def get_request(self, request_id: str) -> dict[str, Any] | None:
        return self.store.auth_get(REQUEST, digest(request_id))

    def take_request(self, request_id: str) -> dict[str, Any] | None:
        taken = self.store.auth_consume(REQUEST, digest(request_id))
        if taken is None or not taken[1]:
            return None
        self.store.auth_delete(REQUEST, digest(request_id))
        return taken[0]

    # ------------------------------------------------------------- grants
    def create_grant(self, grant: dict[str, Any]) -> str:
        grant_id = secrets.token_hex(8)
        record = {**grant, "created_at": to_wire_time(utc_now())}
        self.store.auth_put(GRANT, grant_id, record, utc_now() + self._refresh)
        return grant_id

    def grant(self, grant_id: str) -> dict[str, Any] | None:
        return self.store.auth_get(GRANT, grant_id)

    def revoke_grant(self, grant_id: str) -> bool:
        return self.store.auth_delete(GRANT, grant_id)

    def grants(self) -> list[tuple[str, dict[str, Any]]]:
        return self.store.auth_list(GRANT)

    # -------------------------------------------------------------- codes
    def issue_code(self, binding: dict[str, Any]) -> str:
        code = new_secret()
        self.store.auth_put(CODE, digest(code), binding, utc_now() + CODE_LIFETIME)
        return code

    def code(self, code: str) -> dict[str, Any] | None:
        """The code's binding while it lives (spent or not), without spending it."""
        return self.store.auth_get(CODE, digest(code))

    def spend_code(self, code: str) -> None:
        """A code refused at the token endpoint is spent, and the grant it created goes
        too: it can never be used."""
        taken = self.store.auth_consume(CODE, digest(code))
        if taken is not None:
            self.revoke_grant(str(taken[0]["grant"]))

    # ------------------------------------------------------------- tokens
    def issue(
        self,
        grant_id: str,
        client_id: str,
        resource: str,
        scopes: tuple[str, ...],
        *,
        refresh: bool,
    ) -> Issued:
        """A new pair; with a refresh token the grant lives as long as that token."""
        if refresh:
            # A used grant lives as long as its newest refresh token. Only its expiry moves:
            # a revocation or a pause (``metacortex.clients.grants``) landing after the
            # caller read the grant stays as it is.
            self.store.auth_extend(GRANT, grant_id, utc_now() + self._refresh)
        access = new_secret()
        binding = {"grant": grant_id, "client_id": client_id, "resource": resource}
        self.store.auth_put(
            ACCESS, digest(access), {**binding, "scopes": list(scopes)}, utc_now() + self._access
        )
        refresh_token: str | None = None
        if refresh:
            refresh_token = new_secret()
            self.store.auth_put(
                REFRESH,
                digest(refresh_token),
                {**binding, "scopes": list(scopes)},
                utc_now() + self._refresh,
            )
        return Issued(access, int(self._access.total_seconds()), scopes, refresh_token)

    def access(self, token: str) -> dict[str, Any] | None:
        """The access token's binding, when the token and its grant are both live."""
        record = self.store.auth_get(ACCESS, digest(token))
        if record is None or self.grant(str(record["grant"])) is None:
            return None
        return record

    def refresh_binding(self, refresh_token: str) -> dict[str, Any] | None:
        """The refresh token's binding while it lives (used or not), without using it."""
        return self.store.auth_get(REFRESH, digest(refresh_token))

    def exchange(
        self,
        kind: Literal["code", "refresh_token"],
        presented: str,
        binding: dict[str, Any],
        scopes: tuple[str, ...],
        *,
        refresh: bool,
        presenter: Presenter,
    ) -> Exchanged:
        """Spend ``presented`` (a code or refresh token whose request passed every check)
        for a new pair, once; see the module's note on the grace window.

        The pair is written first and kept, sealed, on the spent record by the same
        atomic step that spends it: a racing repeat reads it there. A repeat's own pair
        is deleted unused."""
        grant_id = str(binding["grant"])
        client_id, resource = str(binding["client_id"]), str(binding["resource"])
        pair = self.issue(grant_id, client_id, resource, scopes, refresh=refresh)
        now = utc_now()
        context = f"{kind}:{digest(presented)}"
        sealed = successors.seal(
            presented,
            context,
            {
                "access_token": pair.access_token,
                "refresh_token": pair.refresh_token,
                "scopes": list(pair.scopes),
                "access_expires_at": now.timestamp() + pair.expires_in,
            },
        )
        presented_by = presenter.digests()
        taken = self.store.auth_consume(
            kind,
            digest(presented),
            {"used_at": now.timestamp(), "successor": sealed, "presented_by": presented_by},
        )
        if taken is not None and taken[1]:
            return Exchanged("issued", pair)
        self._discard(pair)
        if taken is None:
            return Exchanged("gone")
        spent = taken[0]
        used_at = spent.get("used_at")
        within = (
            isinstance(used_at, float | int)
            and now.timestamp() - used_at <= self._grace.total_seconds()
        )
        first: Any = spent.get("presented_by")
        differs = tuple(
            name
            for name, value in presented_by.items()
            if not isinstance(first, dict) or first.get(name) != value
        )
        opened = (
            successors.open_sealed(presented, context, str(spent["successor"]))
            if within and not differs and isinstance(spent.get("successor"), str)
            else None
        )
        if opened is None:
            self.revoke_grant(grant_id)
            return Exchanged("reused", differs=differs if within else ())
        if self.grant(grant_id) is None:
            return Exchanged("gone")
        expires_in = max(0, int(float(opened["access_expires_at"]) - now.timestamp()))
        return Exchanged(
            "repeated",
            Issued(
                str(opened["access_token"]),
                expires_in,
                tuple(opened["scopes"]),
                opened["refresh_token"],
            ),
        )

    def _discard(self, pair: Issued) -> None:
        """Delete a pair that was never handed out."""
        self.store.auth_delete(ACCESS, digest(pair.access_token))
        if pair.refresh_token is not None:
            self.store.auth_delete(REFRESH, digest(pair.refresh_token))

    def find(self, token: str) -> tuple[str, dict[str, Any]] | None:
        """(kind, binding) of an access or refresh token, for revocation."""
        for kind in (ACCESS, REFRESH):
            record = self.store.auth_get(kind, digest(token))
            if record is not None:
                return kind, record
        return None

    def revoke_access(self, token: str) -> None:
        self.store.auth_delete(ACCESS, digest(token))
