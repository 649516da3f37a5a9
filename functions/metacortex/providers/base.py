"""Provider Protocols. Implementations: ``local`` (offline default) and ``gemini``.

Providers raise ``metacortex.errors.Unavailable`` with the provider's reason when
a model call fails after bounded retries; nothing else escapes them.
"""

from __future__ import annotations

from collections.abc import Sequence
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
