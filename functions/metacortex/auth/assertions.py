"""``private_key_jwt`` client authentication (RFC 7523 §2.2) for metadata-document clients.

ChatGPT's Client ID Metadata Document declares ``private_key_jwt`` with a
``jwks_uri``. Its token and revocation requests then carry a ``client_assertion``:
a JWT signed with one of those keys, ``iss`` = ``sub`` = the client id, ``aud`` =
this server's token endpoint (or issuer), a short ``exp`` (at most
``MAX_LIFETIME_S`` ahead: RFC 7523 §3 lets a server refuse one unreasonably far
in the future, Auth0 allows 5 minutes) and a ``jti`` that is never accepted
twice, remembered until the assertion expires. Verification is PyJWT's; keys
come from the document's ``jwks`` or from ``jwks_uri`` fetched with the
metadata-document rules (https, public addresses, size and time limits, cache
with stale-serve).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any, Final

import anyio.to_thread
import jwt

from metacortex.auth.cimd import MetadataDocumentError, MetadataDocuments
from metacortex.owner.sessions import digest
from metacortex.storage.base import MemoryStore

ASSERTION_TYPE: Final = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
ALGORITHMS: Final = ("RS256", "RS384", "RS512", "PS256", "ES256", "ES384", "EdDSA")
JTI_KIND: Final = "client_assertion_jti"
LEEWAY_S: Final = 30
MAX_LIFETIME_S: Final = 600


class InvalidAssertion(Exception):
    """Why a client assertion is refused (safe to show)."""


def claimed_client_id(assertion: str) -> str | None:
    """The ``iss`` an assertion claims, before verification (to find its client)."""
    try:
        claims: dict[str, Any] = jwt.decode(assertion, options={"verify_signature": False})
    except jwt.PyJWTError:
        return None
    issuer = claims.get("iss")
    return issuer if isinstance(issuer, str) else None


async def verify_assertion(
    assertion: str,
    *,
    client_id: str,
    jwks: dict[str, Any] | None,
    jwks_uri: str | None,
    documents: MetadataDocuments,
    store: MemoryStore,
    audiences: Sequence[str],
) -> None:
    """Return when ``assertion`` authenticates ``client_id``; else InvalidAssertion."""
    try:
        header = jwt.get_unverified_header(assertion)
    except jwt.PyJWTError:
        raise InvalidAssertion("client_assertion is not a JWT") from None
    algorithm = header.get("alg")
    if algorithm not in ALGORITHMS:
        raise InvalidAssertion(f"client_assertion alg must be one of {', '.join(ALGORITHMS)}")
    if jwks is None:
        if jwks_uri is None:
            raise InvalidAssertion("the client publishes no keys")
        try:
            jwks = await documents.jwks(jwks_uri)
        except MetadataDocumentError as error:
            raise InvalidAssertion(str(error)) from None
    try:
        keys = jwt.PyJWKSet.from_dict(jwks).keys
    except jwt.PyJWTError:
        raise InvalidAssertion("the client's key set has no usable key") from None
    kid = header.get("kid")
    candidates = [key for key in keys if kid is None or key.key_id == kid]
    for key in candidates:
        try:
            claims: dict[str, Any] = jwt.decode(
                assertion,
                key=key.key,
                algorithms=[str(algorithm)],
                audience=list(audiences),
                issuer=client_id,
                leeway=LEEWAY_S,
                options={"require": ["exp", "iss", "sub", "aud", "jti"]},
            )
        except jwt.InvalidSignatureError:
            continue
        except jwt.PyJWTError as error:
            raise InvalidAssertion(f"client_assertion refused: {error}") from None
        if claims.get("sub") != client_id:
            raise InvalidAssertion("client_assertion sub must be the client_id")
        if int(claims["exp"]) > time.time() + MAX_LIFETIME_S + LEEWAY_S:
            raise InvalidAssertion(
                f"client_assertion exp is more than {MAX_LIFETIME_S // 60} minutes ahead; "
                "sign a short-lived assertion for each request"
            )
        await _first_use(store, client_id, str(claims["jti"]), int(claims["exp"]))
        return
    raise InvalidAssertion("client_assertion does not verify with the client's keys")


async def _first_use(store: MemoryStore, client_id: str, jti: str, exp: int) -> None:
    key = digest(f"{client_id} {jti}")
    expires = datetime.fromtimestamp(exp + LEEWAY_S, tz=UTC)

    def remember() -> bool:
        if store.auth_get(JTI_KIND, key) is not None:
            return False
        store.auth_put(JTI_KIND, key, {}, expires)
        taken = store.auth_consume(JTI_KIND, key)
        return taken is not None and taken[1]

    if not await anyio.to_thread.run_sync(remember):
        raise InvalidAssertion("client_assertion was already used (jti)")
