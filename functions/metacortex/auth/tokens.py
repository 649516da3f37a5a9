"""Grants, authorization codes, access and refresh tokens, all in the store.

Tokens and codes are 256-bit random strings handed to the client once; the
store keeps only their sha256 (``owner.sessions.digest``), with an expiry:

- ``grant`` (key: grant id): client, resource, scopes, chosen preset. Revoking
  the grant (the CLI, reuse detection, a replayed code, revoking a refresh token)
  deletes it, and every token that names it stops working at once.
- ``code``: single use, 5 minutes, bound to client, redirect URI, PKCE challenge,
  resource and grant. A second use revokes the grant.
- ``access_token``: bound to one resource (the endpoint's URL), checked on every
  request together with its grant.
- ``refresh_token``: issued when the client asked for ``offline_access`` or is
  registered for the ``refresh_token`` grant; rotated on every use; presenting a
  used one (reuse) revokes the whole grant, i.e. the token family.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, Final

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


class TokenStore:
    def __init__(
        self, store: MemoryStore, access_lifetime: timedelta, refresh_lifetime: timedelta
    ) -> None:
        self.store = store
        self._access = access_lifetime
        self._refresh = refresh_lifetime

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

    def redeem_code(self, code: str) -> tuple[dict[str, Any], bool] | None:
        """(binding, first use) or None. A replay revokes the grant the code created."""
        taken = self.store.auth_consume(CODE, digest(code))
        if taken is not None and not taken[1]:
            self.revoke_grant(str(taken[0]["grant"]))
        return taken

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
            grant = self.grant(grant_id)
            if grant is not None:  # a used grant lives as long as its newest refresh token
                self.store.auth_put(GRANT, grant_id, grant, utc_now() + self._refresh)
        return Issued(access, int(self._access.total_seconds()), scopes, refresh_token)

    def access(self, token: str) -> dict[str, Any] | None:
        """The access token's binding, when the token and its grant are both live."""
        record = self.store.auth_get(ACCESS, digest(token))
        if record is None or self.grant(str(record["grant"])) is None:
            return None
        return record

    def rotate(self, refresh_token: str) -> tuple[dict[str, Any], bool] | None:
        """(binding, first use) of a refresh token; a reuse revokes its grant."""
        taken = self.store.auth_consume(REFRESH, digest(refresh_token))
        if taken is not None and not taken[1]:
            self.revoke_grant(str(taken[0]["grant"]))
        return taken

    def find(self, token: str) -> tuple[str, dict[str, Any]] | None:
        """(kind, binding) of an access or refresh token, for revocation."""
        for kind in (ACCESS, REFRESH):
            record = self.store.auth_get(kind, digest(token))
            if record is not None:
                return kind, record
        return None

    def revoke_access(self, token: str) -> None:
        self.store.auth_delete(ACCESS, digest(token))
