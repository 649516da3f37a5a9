"""Passphrases: the owner's (set from the CLI) and each person's (set through an
invitation, ``owner/invitations.py``), kept only as argon2id hashes in the store.

The owner's is the record (kind ``owner``, key ``passphrase``); a person's is kind
``person_passphrase``, key the person's id. Both meet the same rule
(``passphrase_weakness``) and every check runs the KDF, whether or not a hash is
stored, so a sign-in costs the same for a known and an unknown person."""

from __future__ import annotations

from functools import cache
from typing import Any, Final

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError

from metacortex.errors import InvalidArgument
from metacortex.storage.base import MemoryStore

KIND: Final = "owner"
KEY: Final = "passphrase"
PERSON_KIND: Final = "person_passphrase"
MIN_CHARS: Final = 12
MIN_DISTINCT_CHARS: Final = 6
# The rule as the owner is told it before typing one (``metacortex owner set-passphrase``).
RULE: Final = (
    f"at least {MIN_CHARS} characters, with at least {MIN_DISTINCT_CHARS} different ones; "
    "a few words make a good one"
)
_HASHER: Final = PasswordHasher()  # argon2id with the library's current defaults


@cache
def _dummy_hash() -> str:
    """Verified against when no passphrase is set, so a sign-in costs the same either way.

    Made on first use, not at import: one argon2id hash (64 MiB, a third of a second on
    a busy 2-core machine) was part of every `metacortex serve` start
    (``docs/benchmarks.md``, "Scale")."""
    return _HASHER.hash("metacortex: no passphrase is set")


def passphrase_weakness(passphrase: str) -> str | None:
    """Why a passphrase is refused, or None."""
    if len(passphrase) < MIN_CHARS:
        return f"is {len(passphrase)} characters; use at least {MIN_CHARS}"
    if len(set(passphrase)) < MIN_DISTINCT_CHARS:
        return "repeats too few characters to be hard to guess"
    return None


def _hashed(passphrase: str) -> dict[str, str]:
    """The record of an acceptable passphrase; InvalidArgument saying why it is not."""
    weakness = passphrase_weakness(passphrase)
    if weakness is not None:
        raise InvalidArgument(f"the passphrase {weakness}")
    return {"argon2": _HASHER.hash(passphrase)}


def set_passphrase(store: MemoryStore, passphrase: str) -> None:
    """Hash and store the owner passphrase (replacing any earlier one)."""
    store.auth_put(KIND, KEY, _hashed(passphrase), None)


def is_set(store: MemoryStore) -> bool:
    return store.auth_get(KIND, KEY) is not None


def verify_passphrase(store: MemoryStore, passphrase: str) -> bool:
    """True when ``passphrase`` is the owner's. Runs the KDF even when none is set."""
    return _verify(store.auth_get(KIND, KEY), passphrase)


def set_person_passphrase(store: MemoryStore, person_id: str, passphrase: str) -> None:
    """Hash and store a person's passphrase (replacing any earlier one): the owner's rule."""
    store.auth_put(PERSON_KIND, person_id, _hashed(passphrase), None)


def verify_person_passphrase(store: MemoryStore, person_id: str | None, passphrase: str) -> bool:
    """True when ``passphrase`` is that person's. Runs the KDF even for no person (an
    unknown email) or one who never set a passphrase."""
    record = store.auth_get(PERSON_KIND, person_id) if person_id is not None else None
    return _verify(record, passphrase)


def _verify(record: dict[str, Any] | None, passphrase: str) -> bool:
    stored = record.get("argon2") if record is not None else None
    try:
        _HASHER.verify(stored if isinstance(stored, str) else _dummy_hash(), passphrase)
    except (VerificationError, InvalidHashError):
        return False
    return isinstance(stored, str)
