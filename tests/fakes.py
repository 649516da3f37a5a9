"""Stand-ins for EXTERNAL models only (never for our own code), entering through the
same Protocols as the real providers."""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from metacortex.retrieval.text import terms
from metacortex.storage.base import EmbeddingIdentity

if TYPE_CHECKING:
    from metacortex.storage.base import Vector


class HashingEmbedder:
    """Deterministic bag-of-stems vectors: texts sharing words are similar.

    Fast and model-free, for tests that exercise storage and protocol rather than
    retrieval quality (the LoCoMo benchmark measures the real local model).
    """

    def __init__(self, dimension: int = 64, model: str = "test-hashing") -> None:
        self._identity = EmbeddingIdentity(model=model, dimension=dimension)
        self.calls = 0
        self._lock = threading.Lock()

    @property
    def identity(self) -> EmbeddingIdentity:
        return self._identity

    def _vector(self, text: str) -> Vector:
        vector = np.zeros(self._identity.dimension, dtype=np.float32)
        for term in terms(text) or [text.strip().lower() or "empty"]:
            digest = hashlib.sha256(term.encode()).digest()
            vector[int.from_bytes(digest[:4], "big") % self._identity.dimension] += 1.0
        return (vector / np.linalg.norm(vector)).astype(np.float32)

    def embed_documents(self, texts: Sequence[str]) -> list[Vector]:
        with self._lock:
            self.calls += 1
        return [self._vector(text) for text in texts]

    def embed_query(self, text: str) -> Vector:
        with self._lock:
            self.calls += 1
        return self._vector(text)

    def knows(self, word: str) -> bool:
        """No vocabulary: every word may be corrected."""
        return False

    def words_near(self, word: str) -> dict[str, int]:
        """No vocabulary: no real word is known."""
        return {}


class FixedImageDescriber:
    """Describes every image with the same text; counts calls."""

    def __init__(self, description: str = "a red square on a white background") -> None:
        self.description = description
        self.calls = 0

    def describe(self, image: bytes, mime_type: str) -> str:
        self.calls += 1
        return self.description


class FailingOnceMerger:
    """A merge model whose first call fails (as a provider outage would)."""

    def __init__(self) -> None:
        self.calls = 0

    @property
    def method(self) -> str:
        return "test-failing-once"

    def merge(self, topic: str, contents: Sequence[str]) -> str:
        from metacortex.errors import Unavailable

        self.calls += 1
        if self.calls == 1:
            raise Unavailable("merge model unavailable: 503 (test)")
        return " ".join(contents)
