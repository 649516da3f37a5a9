"""The embedding model behind the original's vectors, recorded where the server checks it.

The store records which model and dimension produced its vectors, and a server
configured for another refuses to start, telling the operator to run
``metacortex reembed`` (``MemoryStore.bind_embedding``). The original wrote no such
record, so without this step the first server to start after a migration would
record whatever model it is configured with and search the original's vectors
with it. ``migrate firestore`` therefore records the original's model: its
configuration's default is ``text-embedding-004`` at 768 dimensions
(config.ts ``embeddingModel``, ``embeddingDimensions``); a deployment that set
GEMINI_EMBEDDING_MODEL / GEMINI_EMBEDDING_DIMENSIONS passes ``--embedding-model``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from metacortex.errors import ConfigurationError
from metacortex.storage.base import EmbeddingIdentity, MemoryStore

ORIGINAL_DEFAULT: Final = EmbeddingIdentity("text-embedding-004", 768)


def parse_identity(text: str) -> EmbeddingIdentity:
    """``MODEL:DIMENSION``, e.g. ``text-embedding-004:768``."""
    model, _, dimension = text.strip().rpartition(":")
    if not model or not dimension.isdigit() or not 1 <= int(dimension) <= 2048:
        raise ConfigurationError(
            f"--embedding-model {text!r} must be MODEL:DIMENSION, e.g. "
            f"{ORIGINAL_DEFAULT.key()} (the dimension between 1 and 2048)"
        )
    return EmbeddingIdentity(model, int(dimension))


@dataclass(frozen=True, slots=True)
class IdentityStep:
    """What the run does (or, dry, would do) to the recorded identity."""

    wanted: EmbeddingIdentity
    recorded: EmbeddingIdentity | None
    replace: bool

    @property
    def writes(self) -> bool:
        return self.recorded is None or self.replace

    def describe(self, applied: bool) -> str:
        if self.recorded == self.wanted:
            return f"embedding model: {self.wanted.key()} already recorded"
        verb = "recorded" if applied else "would record"
        if self.recorded is None:
            return (
                f"embedding model: {verb} {self.wanted.key()} (the original's vectors); a server "
                "configured for another model refuses to start until `metacortex reembed`"
            )
        if self.replace:
            return (
                f"embedding model: {verb} {self.wanted.key()} in place of {self.recorded.key()}, "
                "which a server started before the migration recorded; the collection holds "
                "the original's vectors, so run `metacortex reembed` before serving"
            )
        return (
            f"embedding model: {self.recorded.key()} is recorded and left as it is (no document "
            f"of the original's was migrated in this run; --embedding-model said "
            f"{self.wanted.key()})"
        )


def plan_identity(
    store: MemoryStore, wanted: EmbeddingIdentity, *, original_found: bool
) -> IdentityStep:
    """Record ``wanted`` when nothing is recorded; replace another identity only when
    this run migrated documents of the original's (their vectors are ``wanted``'s)."""
    recorded = store.recorded_embedding()
    replace = recorded is not None and recorded != wanted and original_found
    return IdentityStep(wanted, recorded, replace)


def apply_identity(store: MemoryStore, step: IdentityStep) -> None:
    if step.writes:
        store.bind_embedding(step.wanted, replace=step.replace)
