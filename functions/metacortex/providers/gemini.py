"""Gemini providers: production embeddings, image description and consolidation merges.

Each provider is built from ``Settings`` without touching the network; the
google-genai client is created on the first call (see ``gemini_client``).
Every failure leaves as ``metacortex.errors.Unavailable`` with the provider's reason.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, ClassVar, Final, Literal, Self

from metacortex.config import Settings
from metacortex.errors import Unavailable
from metacortex.providers.common import (
    RetryPolicy,
    chunks,
    embedding_window,
    in_order,
    unit_vector,
)
from metacortex.providers.gemini_client import (
    Connection,
    GeminiClient,
    generated_text,
)
from metacortex.providers.prompts import DESCRIBE_PROMPT, MERGE_INSTRUCTION, merge_prompt
from metacortex.storage.base import EmbeddingIdentity

if TYPE_CHECKING:
    from google import genai
    from google.auth.credentials import Credentials
    from google.genai import types

    from metacortex.storage.base import Vector

# The Gemini API's documented maximum for batchEmbedContents.
MAX_EMBED_BATCH: Final = 100
# Vertex AI documents gemini-embedding-001 as "one instance per request"; more is a 400.
VERTEX_ONE_TEXT_MODELS: Final = ("gemini-embedding-001",)
# Vertex AI's :predict embedding models take at most 20,000 tokens per request; a
# token covers at least one character of nearly any text, so 20,000 characters of
# windows per request stays inside it.
VERTEX_REQUEST_CHARS: Final = 20_000
DEFAULT_EMBED_CONCURRENCY: Final = 8
# Added to an embedding failure whose last answer was 429 (quota exhausted).
EMBED_QUOTA_HINT: Final = (
    "the project's embedding quota stayed exhausted; lower METACORTEX_EMBED_CONCURRENCY "
    "or raise the quota, then run the command again"
)
EMBED_TIMEOUT_SECONDS: Final = 30.0
GENERATE_TIMEOUT_SECONDS: Final = 60.0

TaskType = Literal["RETRIEVAL_DOCUMENT", "RETRIEVAL_QUERY"]


def _client_for(
    settings: Settings,
    *,
    timeout_seconds: float,
    http_options: types.HttpOptions | None,
    credentials: Credentials | None,
    retry: RetryPolicy | None,
) -> GeminiClient:
    return GeminiClient(
        Connection.from_settings(settings),
        timeout_seconds=timeout_seconds,
        http_options=http_options,
        credentials=credentials,
        retry=retry,
    )


class GeminiEmbedder:
    """``gemini-embedding-001`` (by default) at the configured dimension, re-normalized.

    Requested dimensions below the model's native 3072 are truncations (Matryoshka)
    and no longer unit length, so every vector is re-normalized here.
    """

    def __init__(
        self,
        client: GeminiClient,
        *,
        model: str,
        dimension: int,
        batch_size: int = MAX_EMBED_BATCH,
        concurrency: int = DEFAULT_EMBED_CONCURRENCY,
    ) -> None:
        if not 1 <= batch_size <= MAX_EMBED_BATCH:
            raise ValueError(f"batch_size must be between 1 and {MAX_EMBED_BATCH}")
        if concurrency < 1:
            raise ValueError("concurrency must be at least 1")
        self._client = client
        self._identity = EmbeddingIdentity(model=model, dimension=dimension)
        one_text = client.connection.vertexai and _one_text_per_request(model)
        self._batch_size = 1 if one_text else batch_size
        # Vertex AI's other models (:predict) also cap a request at 20,000 tokens.
        self._request_chars = (
            VERTEX_REQUEST_CHARS if client.connection.vertexai and not one_text else None
        )
        self._concurrency = concurrency

    @classmethod
    def from_settings(
        cls,
        settings: Settings,
        *,
        http_options: types.HttpOptions | None = None,
        credentials: Credentials | None = None,
        retry: RetryPolicy | None = None,
        batch_size: int = MAX_EMBED_BATCH,
    ) -> GeminiEmbedder:
        client = _client_for(
            settings,
            timeout_seconds=EMBED_TIMEOUT_SECONDS,
            http_options=http_options,
            credentials=credentials,
            retry=retry,
        )
        return cls(
            client,
            model=settings.gemini_embedding_model,
            dimension=settings.gemini_embedding_dimensions,
            batch_size=batch_size,
            concurrency=settings.metacortex_embed_concurrency,
        )

    @property
    def identity(self) -> EmbeddingIdentity:
        return self._identity

    @property
    def texts_per_request(self) -> int:
        """1 on Vertex AI for gemini-embedding-001; up to 100 on the Gemini API."""
        return self._batch_size

    def embed_documents(self, texts: Sequence[str]) -> list[Vector]:
        """Vectors in the order of ``texts``.

        Requests of ``texts_per_request`` texts go out ``concurrency`` at a time, each
        retried patiently on 429/5xx (a bulk re-embed rides out a quota window). The
        first request that still fails cancels the ones not yet sent and raises.
        """
        windows = [embedding_window(text) for text in texts]
        requests = chunks(windows, self._batch_size, self._request_chars)
        patient = self._client.retry.patient()

        def embed(chunk: list[str]) -> list[Vector]:
            return self._embed(chunk, "RETRIEVAL_DOCUMENT", patient)

        return [vector for part in in_order(embed, requests, self._concurrency) for vector in part]

    def embed_query(self, text: str) -> Vector:
        [vector] = self._embed([embedding_window(text)], "RETRIEVAL_QUERY")
        return vector

    def knows(self, word: str) -> bool:
        """Gemini's vocabulary is not published: no word is taken as known."""
        return False

    def words_near(self, word: str) -> dict[str, int]:
        """Gemini's vocabulary is not published: none."""
        return {}

    def _embed(
        self, texts: list[str], task_type: TaskType, retry: RetryPolicy | None = None
    ) -> list[Vector]:
        from google.genai import types

        model, dimension = self._identity.model, self._identity.dimension
        config = types.EmbedContentConfig(
            task_type=task_type,
            output_dimensionality=dimension,
            # Stated rather than left to a default: a window that is still over 2,048
            # tokens (code, CJK) is cut by Vertex AI, not refused. The Gemini API has no
            # such switch (the SDK rejects it) and always truncates.
            auto_truncate=True if self._client.connection.vertexai else None,
        )

        # Typed as the SDK's own union: whether Pillow is installed changes its members.
        contents: list[types.PartUnionDict] = [*texts]

        def request(client: genai.Client) -> types.EmbedContentResponse:
            return client.models.embed_content(model=model, contents=contents, config=config)

        response = self._client.call("embedding", request, retry=retry, quota_hint=EMBED_QUOTA_HINT)
        embeddings = response.embeddings or []
        if len(embeddings) != len(texts):
            raise Unavailable(
                f"Gemini embedding returned {len(embeddings)} vectors for {len(texts)} texts"
            )
        return [
            unit_vector(
                embedding.values,
                dimension,
                provider="Gemini",
                setting="GEMINI_EMBEDDING_DIMENSIONS",
            )
            for embedding in embeddings
        ]


def _one_text_per_request(model: str) -> bool:
    model_id = model.rsplit("/", 1)[-1]
    return any(model_id.startswith(name) for name in VERTEX_ONE_TEXT_MODELS)


class GenerationModel:
    """A provider over one Gemini generation model: the ``Settings`` field
    ``model_setting`` names it."""

    model_setting: ClassVar[str]

    def __init__(self, client: GeminiClient, *, model: str) -> None:
        self._client = client
        self._model = model

    @classmethod
    def from_settings(
        cls,
        settings: Settings,
        *,
        http_options: types.HttpOptions | None = None,
        credentials: Credentials | None = None,
        retry: RetryPolicy | None = None,
    ) -> Self:
        client = _client_for(
            settings,
            timeout_seconds=GENERATE_TIMEOUT_SECONDS,
            http_options=http_options,
            credentials=credentials,
            retry=retry,
        )
        return cls(client, model=str(getattr(settings, cls.model_setting)))


class GeminiImageDescriber(GenerationModel):
    """Retrieval text for an image from a multimodal Gemini model."""

    model_setting = "gemini_multimodal_model"

    def describe(self, image: bytes, mime_type: str) -> str:
        from google.genai import types

        model = self._model
        # Typed as the SDK's own union: whether Pillow is installed changes its members.
        contents: list[types.PartUnionDict] = [
            types.Part.from_bytes(data=image, mime_type=mime_type),
            DESCRIBE_PROMPT,
        ]
        config = types.GenerateContentConfig(temperature=0.2)

        def request(client: genai.Client) -> types.GenerateContentResponse:
            return client.models.generate_content(model=model, contents=contents, config=config)

        # A description cut at the output limit is still useful retrieval text.
        text, _ = generated_text(
            self._client.call("image description", request), "image description"
        )
        return text


class GeminiMerger(GenerationModel):
    """One canonical text from several memories of a topic, keeping every distinct fact."""

    model_setting = "gemini_merge_model"

    @property
    def method(self) -> str:
        return f"gemini:{self._model}"

    def merge(self, topic: str, contents: Sequence[str]) -> str:
        from google.genai import types

        model = self._model
        prompt = merge_prompt(topic, contents)
        config = types.GenerateContentConfig(system_instruction=MERGE_INSTRUCTION, temperature=0.0)

        def request(client: genai.Client) -> types.GenerateContentResponse:
            return client.models.generate_content(model=model, contents=prompt, config=config)

        text, finish = generated_text(self._client.call("merge", request), "merge")
        if finish == "MAX_TOKENS":
            # A truncated merge would silently drop facts of the later sources.
            raise Unavailable(
                "Gemini merge was cut off at the model's output limit; "
                "consolidate fewer or shorter sources at a time"
            )
        return text
