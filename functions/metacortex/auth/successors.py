"""The answer to a repeated token request, kept without keeping a token.

When a code or refresh token is spent, the token pair it bought is sealed
(AES-256-GCM) under a key derived (HKDF-SHA256) from the spent secret itself and
stored on the spent record (``storage.base.auth_consume``'s mark). A repeat of the
same request within the grace window presents that secret again, so it can open
the seal and answer with the same pair; nobody else can. The store still holds
no token in plaintext: the record is found by the secret's sha256, from which the
HKDF key (another function, another label) cannot be had.

Why not derive the successor deterministically from the presented token and a
server secret (an HMAC)? Cloud Functions instances share nothing but the store,
so that secret would have to live in the store, next to the digests it protects.
Why not mint a second pair for the repeat? Then a replay inside the window would
open a parallel branch of the family that reuse detection never sees again; with
one shared pair, whichever holder rotates it second outside the window is caught.

What a sealed pair exposes: someone holding both a copy of the store and the spent
token could open it. The refresh token inside is spent at the family's next
rotation (a later use is a detected reuse) and the access token expires with its
lifetime, so the exposure ends at the next refresh.
"""

from __future__ import annotations

import base64
import binascii
import json
import secrets
from collections.abc import Mapping
from typing import Any, Final

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

_INFO: Final = b"metacortex oauth successor v1"
_NONCE_BYTES: Final = 12


def _key(secret: str) -> bytes:
    return HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=_INFO).derive(
        secret.encode("utf-8")
    )


def seal(secret: str, context: str, payload: Mapping[str, Any]) -> str:
    """``payload`` encrypted under a key only ``secret`` gives; ``context`` (the record's
    kind and key) is authenticated with it, so a seal opens only on its own record."""
    nonce = secrets.token_bytes(_NONCE_BYTES)
    sealed = AESGCM(_key(secret)).encrypt(
        nonce, json.dumps(dict(payload)).encode("utf-8"), context.encode("utf-8")
    )
    return base64.urlsafe_b64encode(nonce + sealed).decode("ascii")


def open_sealed(secret: str, context: str, sealed: str) -> dict[str, Any] | None:
    """The payload ``seal`` kept, or None when it does not open with this secret."""
    try:
        raw = base64.urlsafe_b64decode(sealed.encode("ascii"))
        plain = AESGCM(_key(secret)).decrypt(
            raw[:_NONCE_BYTES], raw[_NONCE_BYTES:], context.encode("utf-8")
        )
    except (InvalidTag, ValueError, binascii.Error):
        return None
    payload: Any = json.loads(plain)
    return payload if isinstance(payload, dict) else None
