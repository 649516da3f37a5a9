"""OpenAI-compatible providers: embeddings, consolidation merges, image descriptions and
fact extraction through the ``openai`` package (docs/openai.md).

They speak the Chat Completions and Embeddings APIs as OpenAI documents them, which
Azure OpenAI, Ollama, vLLM, llama.cpp's server and LM Studio also serve. Requests stay
inside what all of them accept: streaming off, ``encoding_format: "float"`` (the SDK
would otherwise ask for base64, which older servers do not send), images as
``data:`` URLs, and a JSON schema (or JSON mode) for extraction. Each provider is built
from ``Settings`` without touching the network; the client is created on the first call.
"""

from __future__ import annotations

import base64
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Final, Self, cast

from metacortex.config import Settings
from metacortex.errors import ConfigurationError, Unavailable
from metacortex.providers.base import Candidate, ExtractorAnswer, ModelUsage
from metacortex.providers.common import (
    RetryPolicy,
    chunks,
    embedding_window,
    in_order,
    unit_vector,
)
from metacortex.providers.openai_client import (
    EMBED_TIMEOUT_SECONDS,
    OpenAIClient,
    OpenAIConnection,
)
from metacortex.providers.prompts import (
    DESCRIBE_PROMPT,
    EXTRACT_INSTRUCTION,
    MAX_FACTS,
    MERGE_INSTRUCTION,
    RELATION_TYPES,
    extraction_prompt,
    merge_prompt,
    parse_facts,
)
from metacortex.storage.base import EmbeddingIdentity

if TYPE_CHECKING:
    import httpx2
    import openai
    from openai.types.chat import ChatCompletion

    from metacortex.storage.base import Vector

# Texts per embedding request: OpenAI takes up to 2,048 inputs and 300,000 tokens per
# request; 100 windows of at most 8,000 characters stay well inside both.
MAX_EMBED_BATCH: Final = 100
# The sizes of OpenAI's own embedding models (their documentation), used when
# OPENAI_EMBEDDING_DIMENSIONS is unset; any other model needs the setting.
KNOWN_DIMENSIONS: Final = {
    "text-embedding-3-small": 1536,
    "text-embedding-3-large": 3072,
    "text-embedding-ada-002": 1536,
}
# Bounds what one extraction may cost in output (reasoning tokens included).
MAX_EXTRACT_TOKENS: Final = 4096
# Said in JSON mode, where no schema constrains the answer (OpenAI's JSON mode also
# requires the word JSON in the messages).
JSON_SHAPE: Final = (
    'Answer with JSON only, of the shape {"facts": [{"text": "...", "relation": '
    '{"id": "...", "type": "...", "note": "..."} or null}]}.'
)


def _client_for(
    settings: Settings,
    *,
    timeout_seconds: float,
    retry: RetryPolicy | None,
    http_client: httpx2.Client | None,
) -> OpenAIClient:
    return OpenAIClient(
        OpenAIConnection.from_settings(settings),
        timeout_seconds=timeout_seconds,
        retry=retry,
        http_client=http_client,
    )


def embedding_dimension(settings: Settings) -> int:
    """OPENAI_EMBEDDING_DIMENSIONS, else the size of one of OpenAI's own models;
    ``ConfigurationError`` for another model without the setting."""
    model = settings.openai_embedding_model
    dimension = settings.openai_embedding_dimensions or KNOWN_DIMENSIONS.get(model)
    if dimension is None:
        raise ConfigurationError(
            f"the size of {model!r}'s vectors is not known: set OPENAI_EMBEDDING_DIMENSIONS "
            "to it (nomic-embed-text: 768, mxbai-embed-large: 1024, all-minilm: 384)"
        )
    return dimension


class OpenAIEmbedder:
    """Unit-length float32 vectors from ``/embeddings`` (re-normalized: a shortened or
    another server's vector need not be unit length)."""

    def __init__(
        self,
        client: OpenAIClient,
        *,
        model: str,
        dimension: int,
        send_dimensions: bool,
        batch_size: int = MAX_EMBED_BATCH,
        concurrency: int = 8,
    ) -> None:
        self._client = client
        self._identity = EmbeddingIdentity(model=model, dimension=dimension)
        self._send_dimensions = send_dimensions
        self._batch_size = batch_size
        self._concurrency = concurrency

    @classmethod
    def from_settings(
        cls,
        settings: Settings,
        *,
        retry: RetryPolicy | None = None,
        http_client: httpx2.Client | None = None,
    ) -> OpenAIEmbedder:
        dimension = embedding_dimension(settings)
        client = _client_for(
            settings,
            timeout_seconds=min(EMBED_TIMEOUT_SECONDS, settings.openai_timeout_seconds),
            retry=retry,
            http_client=http_client,
        )
        return cls(
            client,
            model=settings.openai_embedding_model,
            dimension=dimension,
            send_dimensions=settings.openai_embedding_dimensions is not None,
            concurrency=settings.metacortex_embed_concurrency,
        )

    @property
    def identity(self) -> EmbeddingIdentity:
        return self._identity

    def embed_documents(self, texts: Sequence[str]) -> list[Vector]:
        windows = [embedding_window(text) for text in texts]
        patient = self._client.retry.patient()

        def embed(batch: list[str]) -> list[Vector]:
            return self._embed(batch, patient)

        requests = chunks(windows, self._batch_size, None)
        return [vector for part in in_order(embed, requests, self._concurrency) for vector in part]

    def embed_query(self, text: str) -> Vector:
        [vector] = self._embed([embedding_window(text)])
        return vector

    def knows(self, word: str) -> bool:
        """The model's vocabulary is not known here: no word is taken as known."""
        return False

    def words_near(self, word: str) -> dict[str, int]:
        """The model's vocabulary is not known here: none."""
        return {}

    def _embed(self, texts: list[str], retry: RetryPolicy | None = None) -> list[Vector]:
        model, dimension = self._identity.model, self._identity.dimension
        extra: dict[str, Any] = {"dimensions": dimension} if self._send_dimensions else {}

        def request(client: openai.OpenAI) -> Any:
            return client.embeddings.create(
                model=model, input=texts, encoding_format="float", **extra
            )

        response = self._client.call("embedding", request, retry=retry)
        data = sorted(response.data or [], key=lambda item: item.index)
        label = self._client.connection.label
        if len(data) != len(texts):
            raise Unavailable(
                f"{label} embedding returned {len(data)} vectors for {len(texts)} texts"
            )
        return [
            unit_vector(
                item.embedding,
                dimension,
                provider=label,
                setting="OPENAI_EMBEDDING_DIMENSIONS",
            )
            for item in data
        ]


@dataclass(frozen=True, slots=True)
class ChatAnswer:
    """The first choice's text (None when the model gave none), why it stopped, whether
    it refused, and what the call cost."""

    text: str | None
    finish: str
    refused: bool
    usage: ModelUsage


class ChatModel:
    """A provider over one chat model of the connection: the ``Settings`` field
    ``model_setting`` names it (a deployment on Azure)."""

    model_setting: ClassVar[str]
    fallback_setting: ClassVar[str | None] = None

    def __init__(self, client: OpenAIClient, *, model: str) -> None:
        self._client = client
        self._model = model

    @classmethod
    def from_settings(
        cls,
        settings: Settings,
        *,
        retry: RetryPolicy | None = None,
        http_client: httpx2.Client | None = None,
    ) -> Self:
        model = getattr(settings, cls.model_setting)
        if not model and cls.fallback_setting is not None:
            model = getattr(settings, cls.fallback_setting)
        if not model:
            raise ConfigurationError(f"{cls.model_setting.upper()} names no model")
        client = _client_for(
            settings,
            timeout_seconds=settings.openai_timeout_seconds,
            retry=retry,
            http_client=http_client,
        )
        return cls(client, model=str(model), **cls._options(settings))

    @classmethod
    def _options(cls, settings: Settings) -> dict[str, Any]:
        """What else a subclass takes from the settings."""
        return {}

    @property
    def method(self) -> str:
        return f"{self._client.connection.method_prefix}:{self._model}"

    def _chat(self, operation: str, messages: list[dict[str, Any]], **options: Any) -> ChatAnswer:
        model = self._model

        def request(client: openai.OpenAI) -> ChatCompletion:
            # Streaming off: one JSON answer, whose usage every server fills in.
            answer: ChatCompletion = client.chat.completions.create(
                model=model, messages=cast("Any", messages), stream=False, **options
            )
            return answer

        response = self._client.call(operation, request)
        usage = _usage(response)
        if not response.choices:
            raise Unavailable(f"{self._client.connection.label} {operation} returned no choices")
        choice = response.choices[0]
        message = choice.message
        text = (message.content or "").strip() or None
        refused = bool(getattr(message, "refusal", None))
        # Typed as always set, but servers send null (Ollama, before its last chunk).
        finish = getattr(choice, "finish_reason", None) or "none"
        return ChatAnswer(text, str(finish), refused, usage)

    def _text(self, operation: str, answer: ChatAnswer) -> str:
        """The answer's text; ``Unavailable`` when it was refused, filtered or empty."""
        label = self._client.connection.label
        if answer.refused:
            raise Unavailable(f"{label} {operation} was refused by the model")
        if answer.finish == "content_filter":
            raise Unavailable(f"{label} {operation} was blocked by the service's content filter")
        if answer.text is None:
            raise Unavailable(
                f"{label} {operation} returned no text (finish reason {answer.finish})"
            )
        return answer.text


def _usage(response: ChatCompletion) -> ModelUsage:
    """One call and the tokens its ``usage`` reports (``completion_tokens`` includes a
    reasoning model's reasoning tokens, billed as output)."""
    usage = response.usage
    if usage is None:
        return ModelUsage(calls=1)
    return ModelUsage(
        calls=1,
        prompt_tokens=usage.prompt_tokens or 0,
        output_tokens=usage.completion_tokens or 0,
    )


class OpenAIMerger(ChatModel):
    """One canonical text from several memories of a topic (OPENAI_CHAT_MODEL)."""

    model_setting = "openai_chat_model"

    def merge(self, topic: str, contents: Sequence[str]) -> str:
        messages = [
            {"role": "system", "content": MERGE_INSTRUCTION},
            {"role": "user", "content": merge_prompt(topic, contents)},
        ]
        answer = self._chat("merge", messages, temperature=0.0)
        if answer.finish == "length":
            # A truncated merge would silently drop facts of the later sources.
            raise Unavailable(
                f"{self._client.connection.label} merge was cut off at the model's output "
                "limit; consolidate fewer or shorter sources at a time"
            )
        return self._text("merge", answer)


class OpenAIImageDescriber(ChatModel):
    """Retrieval text for an image from a model that reads images (OPENAI_VISION_MODEL)."""

    model_setting = "openai_vision_model"

    def describe(self, image: bytes, mime_type: str) -> str:
        url = f"data:{mime_type};base64,{base64.b64encode(image).decode('ascii')}"
        messages = [
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": DESCRIBE_PROMPT},
                    {"type": "image_url", "image_url": {"url": url}},
                ],
            }
        ]
        # A description cut at the output limit is still useful retrieval text.
        return self._text("image description", self._chat("image description", messages))


class OpenAIExtractor(ChatModel):
    """``Extractor`` over a chat model (OPENAI_EXTRACTION_MODEL, else OPENAI_CHAT_MODEL),
    its answer constrained by a JSON schema or, where the server has none, JSON mode."""

    model_setting = "openai_extraction_model"
    fallback_setting = "openai_chat_model"

    def __init__(self, client: OpenAIClient, *, model: str, json_schema: bool = True) -> None:
        super().__init__(client, model=model)
        self._json_schema = json_schema

    @classmethod
    def _options(cls, settings: Settings) -> dict[str, Any]:
        return {"json_schema": settings.openai_structured_output == "json_schema"}

    def extract(self, text: str, candidates: Sequence[Candidate]) -> ExtractorAnswer:
        ids = [candidate.id for candidate in candidates]
        instruction = EXTRACT_INSTRUCTION
        if self._json_schema:
            response_format: dict[str, Any] = {
                "type": "json_schema",
                "json_schema": {"name": "facts", "strict": True, "schema": response_schema(ids)},
            }
        else:
            response_format = {"type": "json_object"}
            instruction = f"{EXTRACT_INSTRUCTION} {JSON_SHAPE}"
        messages = [
            {"role": "system", "content": instruction},
            {"role": "user", "content": extraction_prompt(text, candidates)},
        ]
        answer = self._chat(
            "fact extraction",
            messages,
            temperature=0.0,
            response_format=response_format,
            max_completion_tokens=MAX_EXTRACT_TOKENS,
        )
        try:
            content = self._text("fact extraction", answer)
        except Unavailable as refused:  # refused, filtered, empty: billed, but unusable
            return ExtractorAnswer((), answer.usage, refused.message)
        if answer.finish == "length":
            return ExtractorAnswer((), answer.usage, "the answer was cut off at the output limit")
        try:
            facts = parse_facts(content)
        except ValueError as malformed:
            return ExtractorAnswer((), answer.usage, f"malformed answer: {malformed}")
        return ExtractorAnswer(facts, answer.usage)


def response_schema(candidate_ids: Sequence[str]) -> dict[str, Any]:
    """The answer's JSON schema in the form strict structured outputs accept (every
    property required, no others allowed; an optional relation is ``anyOf`` it or null);
    no ``relation`` when there is no candidate. At most ``MAX_FACTS`` facts is checked
    on the answer (``parse_facts``): not every server takes ``maxItems``."""
    properties: dict[str, Any] = {"text": {"type": "string"}}
    if candidate_ids:
        relation = {
            "type": "object",
            "properties": {
                "id": {"type": "string", "enum": list(candidate_ids)},
                "type": {"type": "string", "enum": list(RELATION_TYPES)},
                "note": {"type": "string"},
            },
            "required": ["id", "type", "note"],
            "additionalProperties": False,
        }
        properties["relation"] = {"anyOf": [relation, {"type": "null"}]}
    fact = {
        "type": "object",
        "properties": properties,
        "required": list(properties),
        "additionalProperties": False,
    }
    return {
        "type": "object",
        "properties": {
            "facts": {
                "type": "array",
                "items": fact,
                "description": f"at most {MAX_FACTS} facts",
            }
        },
        "required": ["facts"],
        "additionalProperties": False,
    }
