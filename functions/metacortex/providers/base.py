"""Provider Protocols. Implementations: ``local`` (offline default) and ``gemini``.

Providers raise ``metacortex.errors.Unavailable`` with the provider's reason when
a model call fails after bounded retries; nothing else escapes them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from metacortex.storage.base import EmbeddingIdentity

if TYPE_CHECKING:
    from metacortex.storage.base import Vector


class Embedder(Protocol):
    @property
    def identity(self) -> EmbeddingIdentity: ...

    def embed_documents(self, texts: Sequence[str]) -> list[Vector]:
        """Unit-length float32 vectors for texts to be stored, batched internally."""
        ...

    def embed_query(self, text: str) -> Vector:
        """A unit-length float32 vector for a search query."""
        ...

    def knows(self, word: str) -> bool:
        """Whether the model reads ``word`` (casefolded) as one token of its own
        vocabulary: typo correction leaves such a word as written (a real word the
        store lacks is no typo, and the model understands it). False where the model
        cannot tell."""
        ...

    def words_near(self, word: str) -> dict[str, int]:
        """Whole words of the model's vocabulary one edit from ``word`` (casefolded),
        with their distance: the real words a typo may have meant (typo correction
        prefers them to the store's stems, docs/ARCHITECTURE.md "What the model
        embeds"). Empty where the vocabulary is not known."""
        ...


class ImageDescriber(Protocol):
    def describe(self, image: bytes, mime_type: str) -> str:
        """Retrieval text for an image: what it shows, any text in it."""
        ...


class Merger(Protocol):
    @property
    def method(self) -> str:
        """Recorded as ``merge_method`` on the consolidated record."""
        ...

    def merge(self, topic: str, contents: Sequence[str]) -> str:
        """One canonical text that keeps every fact of ``contents`` (oldest first)."""
        ...


@dataclass(frozen=True, slots=True)
class Candidate:
    """A memory of the same space a new text may relate to, as the model is shown it."""

    id: str
    summary: str


@dataclass(frozen=True, slots=True)
class ProposedRelation:
    """What the model proposed between a fact and a candidate; the use case checks it
    (an id outside the candidates is dropped)."""

    id: str
    type: str
    note: str


@dataclass(frozen=True, slots=True)
class ExtractedFact:
    text: str
    relation: ProposedRelation | None = None


@dataclass(frozen=True, slots=True)
class ModelUsage:
    """What one save cost in model calls and tokens (``output_tokens`` includes the
    model's thinking tokens, billed as output)."""

    calls: int = 0
    prompt_tokens: int = 0
    output_tokens: int = 0


@dataclass(frozen=True, slots=True)
class ExtractorAnswer:
    """The facts a model found, what it cost, and, when its answer could not be used
    (malformed, cut off, blocked), why: ``facts`` is then empty."""

    facts: tuple[ExtractedFact, ...]
    usage: ModelUsage
    unusable: str | None = None


class Extractor(Protocol):
    @property
    def method(self) -> str:
        """Names the model in results and events (``gemini:<model>``)."""
        ...

    def extract(self, text: str, candidates: Sequence[Candidate]) -> ExtractorAnswer:
        """``text`` split into atomic facts, each with at most one relation to one of
        ``candidates``. ``Unavailable`` when the model could not be reached."""
        ...
