"""The owner's passphrase: set from the CLI, kept only as an argon2id hash in the store."""

from __future__ import annotations

from functools import cache
from typing import Final

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError

from metacortex.errors import InvalidArgument
from metacortex.storage.base import MemoryStore

KIND: Final = "owner"
KEY: Final = "passphrase"
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
    a busy 2-core machine) was part of every `metacortex serve` start (issue 23)."""
    return _HASHER.hash("metacortex: no passphrase is set")


def passphrase_weakness(passphrase: str) -> str | None:
    """Why a passphrase is refused, or None."""
    if len(passphrase) < MIN_CHARS:
        return f"is {len(passphrase)} characters; use at least {MIN_CHARS}"
    if len(set(passphrase)) < MIN_DISTINCT_CHARS:
        return "repeats too few characters to be hard to guess"
    return None


def set_passphrase(store: MemoryStore, passphrase: str) -> None:
    """Hash and store the owner passphrase (replacing any earlier one)."""
    weakness = passphrase_weakness(passphrase)
    if weakness is not None:
        raise InvalidArgument(f"the passphrase {weakness}")
    store.auth_put(KIND, KEY, {"argon2": _HASHER.hash(passphrase)}, None)


def is_set(store: MemoryStore) -> bool:
    return store.auth_get(KIND, KEY) is not None


def verify_passphrase(store: MemoryStore, passphrase: str) -> bool:
    """True when ``passphrase`` is the owner's. Runs the KDF even when none is set."""
    record = store.auth_get(KIND, KEY)
    stored = record.get("argon2") if record is not None else None
    try:
        _HASHER.verify(stored if isinstance(stored, str) else _dummy_hash(), passphrase)
    except (VerificationError, InvalidHashError):
        return False
    return isinstance(stored, str)
