"""The Gemini providers against a fake Gemini REST API at the HTTP wire.

The real google-genai client runs end to end; only its HTTP transport is a
``httpx2.MockTransport`` (google-genai here is built on httpx2, not httpx), so
request shapes are what the SDK would really send.
"""

from __future__ import annotations

import base64
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx2
import numpy as np
import pytest
from google.genai import types
from google.oauth2.credentials import Credentials

from metacortex.config import Settings
from metacortex.errors import ConfigurationError, Unavailable
from metacortex.operations.backup import export_portable, restore_portable
from metacortex.operations.reembed import reembed
from metacortex.providers.common import EMBED_WINDOW_CHARS, RetryPolicy, embedding_window
from metacortex.providers.gemini import GeminiEmbedder, GeminiImageDescriber, GeminiMerger
from metacortex.providers.offline_merge import SentenceUnionMerger
from metacortex.service import Access, MemoryService
from metacortex.storage.sqlite import SQLiteStore
from tests.conftest import PNG_1X1
from tests.fakes import HashingEmbedder
from tests.gemini_wire import (
    DIMS,
    FakeGemini,
    Json,
    error_reply,
    generate_reply,
    text_candidate,
    wire_vector,
)

API_KEY = "AIzaTEST-not-a-real-key-0123456789"
GEMINI_API = "https://generativelanguage.googleapis.com"


@dataclass
class Sleeps:
    delays: list[float] = field(default_factory=list)

    def __call__(self, seconds: float) -> None:
        self.delays.append(seconds)


@pytest.fixture
def fake() -> FakeGemini:
    return FakeGemini()


@pytest.fixture
def wire(fake: FakeGemini) -> Iterator[types.HttpOptions]:
    client = httpx2.Client(transport=httpx2.MockTransport(fake.handle))
    yield types.HttpOptions(httpx_client=client)
    client.close()


@pytest.fixture
def sleeps() -> Sleeps:
    return Sleeps()


@pytest.fixture
def retry(sleeps: Sleeps) -> RetryPolicy:
    # jitter pinned to its maximum so the delays are exact.
    return RetryPolicy(
        attempts=3, initial_delay=1.0, max_delay=8.0, sleep=sleeps, jitter=lambda: 1.0
    )


def settings(**overrides: Any) -> Settings:
    values: dict[str, Any] = {
        "gemini_api_key": API_KEY,
        "google_cloud_project": None,
        "gemini_embedding_dimensions": DIMS,
        "gemini_multimodal_model": "gemini-test-vision",
        "gemini_merge_model": "gemini-test-merge",
    }
    values.update(overrides)
    return Settings(_env_file=None, **values)  # type: ignore[call-arg]


def unit(values: list[float]) -> np.ndarray[Any, np.dtype[np.float32]]:
    vector = np.asarray(values, dtype=np.float32)
    return vector / np.linalg.norm(vector)


# ------------------------------------------------------------------ embeddings
def test_embed_documents_sends_document_task_type_and_dimension_and_returns_unit_vectors(
    fake: FakeGemini, wire: types.HttpOptions
) -> None:
    embedder = GeminiEmbedder.from_settings(settings(), http_options=wire)

    vectors = embedder.embed_documents(["alpha fact", "beta fact"])

    [request] = fake.requests
    assert str(request.url) == (f"{GEMINI_API}/v1/models/gemini-embedding-001:batchEmbedContents")
    assert request.headers["x-goog-api-key"] == API_KEY
    items = fake.body(request)["requests"]
    assert [item["content"]["parts"][0]["text"] for item in items] == ["alpha fact", "beta fact"]
    assert {item["taskType"] for item in items} == {"RETRIEVAL_DOCUMENT"}
    assert {item["outputDimensionality"] for item in items} == {DIMS}
    assert {item["model"] for item in items} == {"models/gemini-embedding-001"}
    for vector, text in zip(vectors, ["alpha fact", "beta fact"], strict=True):
        assert vector.dtype == np.float32
        assert vector.shape == (DIMS,)
        assert np.linalg.norm(vector) == pytest.approx(1.0, abs=1e-6)
        np.testing.assert_allclose(vector, unit(wire_vector(text)), rtol=1e-6)


def test_embed_query_uses_the_query_task_type(fake: FakeGemini, wire: types.HttpOptions) -> None:
    embedder = GeminiEmbedder.from_settings(settings(), http_options=wire)

    vector = embedder.embed_query("what is the launch plan?")

    [request] = fake.requests
    [item] = fake.body(request)["requests"]
    assert item["taskType"] == "RETRIEVAL_QUERY"
    assert item["outputDimensionality"] == DIMS
    assert np.linalg.norm(vector) == pytest.approx(1.0, abs=1e-6)


def test_embed_documents_sends_at_most_100_texts_per_request_and_keeps_order(
    fake: FakeGemini, wire: types.HttpOptions
) -> None:
    texts = [f"memory number {i}" for i in range(250)]
    embedder = GeminiEmbedder.from_settings(settings(), http_options=wire)

    vectors = embedder.embed_documents(texts)

    assert sorted(len(fake.body(r)["requests"]) for r in fake.requests) == [50, 100, 100]
    assert len(vectors) == 250
    np.testing.assert_allclose(vectors[137], unit(wire_vector(texts[137])), rtol=1e-6)


def test_embed_documents_of_nothing_makes_no_request(
    fake: FakeGemini, wire: types.HttpOptions
) -> None:
    assert GeminiEmbedder.from_settings(settings(), http_options=wire).embed_documents([]) == []
    assert fake.requests == []


def test_embedding_identity_names_the_model_and_the_configured_dimension() -> None:
    embedder = GeminiEmbedder.from_settings(
        settings(gemini_embedding_model="gemini-embedding-001", gemini_embedding_dimensions=768)
    )

    assert embedder.identity.key() == "gemini-embedding-001:768"


def test_a_vector_of_the_wrong_dimension_is_unavailable_with_a_hint(
    fake: FakeGemini, wire: types.HttpOptions
) -> None:
    fake.script.append(generate_reply({"embeddings": [{"values": [0.6, 0.8]}]}))
    embedder = GeminiEmbedder.from_settings(settings(), http_options=wire)

    with pytest.raises(Unavailable, match="dimension 2, expected 8"):
        embedder.embed_query("anything")


# ---------------------------------------------------------- connection choice
def test_a_google_project_without_api_key_uses_the_regional_vertex_ai_endpoint(
    fake: FakeGemini, wire: types.HttpOptions
) -> None:
    config = settings(
        gemini_api_key=None, google_cloud_project="demo-proj", google_cloud_location="europe-west4"
    )
    embedder = GeminiEmbedder.from_settings(
        config,
        http_options=wire,
        credentials=Credentials(token="adc-token"),  # type: ignore[no-untyped-call]
    )

    vectors = embedder.embed_documents(["alpha", "beta"])

    # gemini-embedding-001 on Vertex AI: one text per request (a batch would be a 400)
    assert len(fake.requests) == 2
    for request in fake.requests:
        assert str(request.url) == (
            "https://europe-west4-aiplatform.googleapis.com/v1beta1/projects/demo-proj/"
            "locations/europe-west4/publishers/google/models/gemini-embedding-001:embedContent"
        )
        assert request.headers["authorization"] == "Bearer adc-token"
        assert "x-goog-api-key" not in request.headers
        config = fake.body(request)["embedContentConfig"]
        assert config == {
            "taskType": "RETRIEVAL_DOCUMENT",
            "outputDimensionality": DIMS,
            "autoTruncate": True,
        }
    np.testing.assert_allclose(vectors[1], unit(wire_vector("beta")), rtol=1e-6)


def test_an_api_key_wins_over_a_google_project(fake: FakeGemini, wire: types.HttpOptions) -> None:
    embedder = GeminiEmbedder.from_settings(
        settings(google_cloud_project="demo-proj"), http_options=wire
    )

    embedder.embed_query("hello")

    [request] = fake.requests
    assert request.url.host == "generativelanguage.googleapis.com"
    assert request.headers["x-goog-api-key"] == API_KEY


@pytest.mark.parametrize("build", [GeminiEmbedder, GeminiImageDescriber, GeminiMerger])
def test_without_api_key_or_project_every_provider_refuses_naming_what_to_set(
    build: type[GeminiEmbedder | GeminiImageDescriber | GeminiMerger],
) -> None:
    with pytest.raises(ConfigurationError, match="GEMINI_API_KEY") as caught:
        build.from_settings(settings(gemini_api_key=None, google_cloud_project=None))
    assert "GOOGLE_CLOUD_PROJECT" in str(caught.value)


def test_building_providers_sends_no_request(fake: FakeGemini, wire: types.HttpOptions) -> None:
    GeminiEmbedder.from_settings(settings(), http_options=wire)
    GeminiImageDescriber.from_settings(settings(), http_options=wire)
    GeminiMerger.from_settings(settings(), http_options=wire)

    assert fake.requests == []


def test_importing_the_gemini_providers_does_not_import_google_genai() -> None:
    probe = (
        "import sys, metacortex.providers.gemini as g\n"
        "g.GeminiEmbedder.from_settings(g.Settings(_env_file=None, gemini_api_key='k'))\n"
        "print('google.genai' in sys.modules)"
    )
    result = subprocess.run(  # noqa: S603 - our own interpreter, fixed arguments
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=60
    )

    assert result.stdout.strip() == "False"


# -------------------------------------------------------------------- retries
def test_transient_429_and_503_are_retried_with_growing_backoff_then_succeed(
    fake: FakeGemini, wire: types.HttpOptions, retry: RetryPolicy, sleeps: Sleeps
) -> None:
    fake.script += [
        error_reply(429, "RESOURCE_EXHAUSTED", "Quota exceeded"),
        error_reply(503, "UNAVAILABLE", "The model is overloaded"),
    ]
    embedder = GeminiEmbedder.from_settings(settings(), http_options=wire, retry=retry)

    vector = embedder.embed_query("hello")

    assert len(fake.requests) == 3
    assert sleeps.delays == [1.0, 2.0]
    np.testing.assert_allclose(vector, unit(wire_vector("hello")), rtol=1e-6)


def test_network_errors_and_timeouts_are_retried(
    fake: FakeGemini, wire: types.HttpOptions, retry: RetryPolicy, sleeps: Sleeps
) -> None:
    def refuse(request: httpx2.Request) -> httpx2.Response:
        raise httpx2.ConnectError("connection refused", request=request)

    def stall(request: httpx2.Request) -> httpx2.Response:
        raise httpx2.ReadTimeout("read timed out", request=request)

    fake.script += [refuse, stall]
    merger = GeminiMerger.from_settings(settings(), http_options=wire, retry=retry)

    assert merger.merge("falcon", ["a.", "b."]) == fake.merged
    assert len(fake.requests) == 3
    assert len(sleeps.delays) == 2


def test_429_on_every_attempt_is_unavailable_with_the_providers_reason(
    fake: FakeGemini, wire: types.HttpOptions, retry: RetryPolicy, sleeps: Sleeps
) -> None:
    fake.script += [error_reply(429, "RESOURCE_EXHAUSTED", "Quota exceeded for model")] * 5
    embedder = GeminiEmbedder.from_settings(settings(), http_options=wire, retry=retry)

    with pytest.raises(Unavailable) as caught:
        embedder.embed_query("hello")  # interactive: three attempts, then the caller hears

    message = str(caught.value)
    assert "429 RESOURCE_EXHAUSTED" in message
    assert "Quota exceeded for model" in message
    assert "after 3 attempts" in message
    assert caught.value.code == "unavailable"
    assert len(fake.requests) == 3
    assert len(sleeps.delays) == 2


@pytest.mark.parametrize(
    ("status", "grpc_status"),
    [
        (400, "INVALID_ARGUMENT"),
        (401, "UNAUTHENTICATED"),
        (403, "PERMISSION_DENIED"),
        (404, "NOT_FOUND"),
    ],
)
def test_a_client_error_is_unavailable_at_once_without_retry(
    fake: FakeGemini,
    wire: types.HttpOptions,
    retry: RetryPolicy,
    sleeps: Sleeps,
    status: int,
    grpc_status: str,
) -> None:
    fake.script.append(error_reply(status, grpc_status, "request rejected"))
    describer = GeminiImageDescriber.from_settings(settings(), http_options=wire, retry=retry)

    with pytest.raises(Unavailable, match=f"{status} {grpc_status}: request rejected"):
        describer.describe(PNG_1X1, "image/png")

    assert len(fake.requests) == 1
    assert sleeps.delays == []


def test_the_api_key_never_appears_in_an_error_message(
    fake: FakeGemini, wire: types.HttpOptions, retry: RetryPolicy
) -> None:
    fake.script.append(error_reply(400, "INVALID_ARGUMENT", f"API key {API_KEY} not valid"))
    embedder = GeminiEmbedder.from_settings(settings(), http_options=wire, retry=retry)

    with pytest.raises(Unavailable) as caught:
        embedder.embed_query("hello")

    assert API_KEY not in str(caught.value)
    assert API_KEY not in repr(caught.value.to_payload())
    assert "[redacted] not valid" in str(caught.value)
    assert caught.value.__cause__ is None
    assert caught.value.__context__ is None


def test_backoff_is_capped_and_jittered_below_the_step() -> None:
    policy = RetryPolicy(initial_delay=1.0, max_delay=4.0, jitter=lambda: 0.0)

    assert [policy.delay(n) for n in (1, 2, 3, 4)] == [0.5, 1.0, 2.0, 2.0]


# ---------------------------------------------------------- image description
def test_describe_sends_the_image_inline_as_base64_with_its_type_and_a_retrieval_prompt(
    fake: FakeGemini, wire: types.HttpOptions
) -> None:
    describer = GeminiImageDescriber.from_settings(settings(), http_options=wire)

    text = describer.describe(PNG_1X1, "image/png")

    assert text == fake.description
    [request] = fake.requests
    assert str(request.url) == f"{GEMINI_API}/v1/models/gemini-test-vision:generateContent"
    [content] = fake.body(request)["contents"]
    image_part, prompt_part = content["parts"]
    assert image_part["inlineData"]["mime_type"] == "image/png"
    assert base64.b64decode(image_part["inlineData"]["data"]) == PNG_1X1
    prompt = prompt_part["text"].lower()
    assert "visible text" in prompt
    assert "entities" in prompt


def test_a_blocked_request_is_unavailable_with_the_block_reason(
    fake: FakeGemini, wire: types.HttpOptions
) -> None:
    fake.script.append(generate_reply({"promptFeedback": {"blockReason": "SAFETY"}}))
    describer = GeminiImageDescriber.from_settings(settings(), http_options=wire)

    with pytest.raises(Unavailable, match=r"image description was blocked.*SAFETY"):
        describer.describe(PNG_1X1, "image/png")


def test_a_candidate_stopped_for_safety_is_unavailable(
    fake: FakeGemini, wire: types.HttpOptions
) -> None:
    fake.script.append(generate_reply({"candidates": [{"finishReason": "SAFETY"}]}))
    describer = GeminiImageDescriber.from_settings(settings(), http_options=wire)

    with pytest.raises(Unavailable, match="finish reason SAFETY"):
        describer.describe(PNG_1X1, "image/png")


@pytest.mark.parametrize(
    "body",
    [
        {"candidates": []},
        {"candidates": [{"content": {"role": "model", "parts": []}, "finishReason": "STOP"}]},
        text_candidate("   "),
    ],
)
def test_an_empty_generation_is_unavailable(
    fake: FakeGemini, wire: types.HttpOptions, body: Json
) -> None:
    fake.script.append(generate_reply(body))
    describer = GeminiImageDescriber.from_settings(settings(), http_options=wire)

    with pytest.raises(Unavailable, match=r"image description returned no (text|candidates)"):
        describer.describe(PNG_1X1, "image/png")


# --------------------------------------------------------------------- merges
def test_merge_sends_the_topic_and_every_source_oldest_first_under_a_keep_every_fact_instruction(
    fake: FakeGemini, wire: types.HttpOptions
) -> None:
    merger = GeminiMerger.from_settings(settings(), http_options=wire)

    merged = merger.merge("falcon", ["Launch is in Q3.", "Dana owns the launch."])

    assert merged == fake.merged
    assert merger.method == "gemini:gemini-test-merge"
    [request] = fake.requests
    assert str(request.url) == f"{GEMINI_API}/v1/models/gemini-test-merge:generateContent"
    body = fake.body(request)
    instruction = body["systemInstruction"]["parts"][0]["text"]
    assert "keeps every distinct fact" in instruction
    prompt = body["contents"][0]["parts"][0]["text"]
    assert "Topic: falcon" in prompt
    assert prompt.index("Launch is in Q3.") < prompt.index("Dana owns the launch.")


def test_a_merge_cut_off_at_the_output_limit_is_unavailable(
    fake: FakeGemini, wire: types.HttpOptions
) -> None:
    fake.script.append(generate_reply(text_candidate("Project Falcon launches", "MAX_TOKENS")))
    merger = GeminiMerger.from_settings(settings(), http_options=wire)

    with pytest.raises(Unavailable, match="cut off"):
        merger.merge("falcon", ["a.", "b."])


# ------------------------------------------------------------ with the service
def test_the_service_saves_an_image_and_consolidates_through_the_gemini_providers(
    fake: FakeGemini, wire: types.HttpOptions, tmp_path: Path, png_base64: str
) -> None:
    from metacortex.service import Access, MemoryService
    from metacortex.storage.sqlite import SQLiteStore

    config = settings()
    store = SQLiteStore(tmp_path / "m.sqlite3")
    service = MemoryService(
        store,
        GeminiEmbedder.from_settings(config, http_options=wire),
        merger=GeminiMerger.from_settings(config, http_options=wire),
        describer=GeminiImageDescriber.from_settings(config, http_options=wire),
    )
    admin = Access.admin()
    try:
        saved = service.save(
            admin,
            content="Photo of the planning board",
            image_base64=png_base64,
            image_mime_type="image/png",
            topic="falcon",
        )
        image_memory = store.get(saved["item"]["id"])
        assert image_memory is not None
        assert fake.description in image_memory.retrieval_text
        assert image_memory.modality.value == "mixed"

        other = service.save(admin, content="Dana owns the Falcon launch.", topic="falcon")
        result = service.consolidate(
            admin, topic="falcon", source_ids=[saved["item"]["id"], other["item"]["id"]]
        )

        assert result["item"]["merged_content"] == fake.merged
        merged = store.get(result["item"]["merged_id"])
        assert merged is not None
        assert merged.merge_method == "gemini:gemini-test-merge"
        merge_requests = [r for r in fake.requests if "gemini-test-merge" in r.url.path]
        [merge_request] = merge_requests
        prompt = fake.body(merge_request)["contents"][0]["parts"][0]["text"]
        assert "Photo of the planning board" in prompt
        assert "Dana owns the Falcon launch." in prompt
        found = service.search(admin, query="who owns the Falcon launch?", filter_topic="falcon")
        assert [m["id"] for m in found["matches"]] == [merged.id]
    finally:
        store.close()


# ------------------------------------------------- routes, limits and bulk work
def vertex(**overrides: Any) -> Settings:
    return settings(gemini_api_key=None, google_cloud_project="demo-proj", **overrides)


ADC = Credentials(token="adc-token")  # type: ignore[no-untyped-call]


def test_bulk_embedding_on_vertex_sends_one_text_per_request_concurrently_in_order(
    fake: FakeGemini, wire: types.HttpOptions
) -> None:
    texts = [f"memory number {i}" for i in range(60)]
    embedder = GeminiEmbedder.from_settings(
        vertex(metacortex_embed_concurrency=6), http_options=wire, credentials=ADC
    )

    vectors = embedder.embed_documents(texts)

    assert embedder.texts_per_request == 1
    assert len(fake.requests) == 60
    assert all(r.url.path.endswith(":embedContent") for r in fake.requests)
    for text, vector in zip(texts, vectors, strict=True):
        np.testing.assert_allclose(vector, unit(wire_vector(text)), rtol=1e-6)


def test_the_gemini_api_route_keeps_batches_within_its_limit_in_order(
    fake: FakeGemini, wire: types.HttpOptions
) -> None:
    texts = [f"memory number {i}" for i in range(230)]
    embedder = GeminiEmbedder.from_settings(
        settings(metacortex_embed_concurrency=3), http_options=wire
    )

    vectors = embedder.embed_documents(texts)

    assert sorted(len(fake.body(r)["requests"]) for r in fake.requests) == [30, 100, 100]
    np.testing.assert_allclose(vectors[229], unit(wire_vector(texts[229])), rtol=1e-6)


def test_bulk_embedding_rides_out_429s_without_losing_or_reordering_texts(
    fake: FakeGemini, wire: types.HttpOptions, retry: RetryPolicy, sleeps: Sleeps
) -> None:
    fake.script += [error_reply(429, "RESOURCE_EXHAUSTED", "Quota exceeded")] * 6
    texts = [f"text {i}" for i in range(10)]
    embedder = GeminiEmbedder.from_settings(
        vertex(metacortex_embed_concurrency=1), http_options=wire, credentials=ADC, retry=retry
    )

    vectors = embedder.embed_documents(texts)

    assert len(fake.requests) == 16  # 6 refused, then every text once
    assert sleeps.delays[:4] == [1.0, 2.0, 4.0, 8.0]  # patient: past the interactive 3
    for text, vector in zip(texts, vectors, strict=True):
        np.testing.assert_allclose(vector, unit(wire_vector(text)), rtol=1e-6)


def test_a_retry_after_longer_than_the_backoff_is_honoured(
    fake: FakeGemini, wire: types.HttpOptions, retry: RetryPolicy, sleeps: Sleeps
) -> None:
    body = {"error": {"code": 429, "message": "slow down", "status": "RESOURCE_EXHAUSTED"}}
    fake.script.append(
        lambda request: httpx2.Response(429, json=body, headers={"retry-after": "5"})
    )
    embedder = GeminiEmbedder.from_settings(settings(), http_options=wire, retry=retry)

    embedder.embed_query("hello")

    assert sleeps.delays == [5.0]


def test_a_quota_that_never_frees_fails_a_bulk_run_clearly_and_sends_no_more(
    fake: FakeGemini, wire: types.HttpOptions, retry: RetryPolicy, sleeps: Sleeps
) -> None:
    fake.script += [error_reply(429, "RESOURCE_EXHAUSTED", "Quota exceeded")] * 50
    embedder = GeminiEmbedder.from_settings(
        vertex(metacortex_embed_concurrency=1), http_options=wire, credentials=ADC, retry=retry
    )

    with pytest.raises(Unavailable, match="after 8 attempts: 429 RESOURCE_EXHAUSTED"):
        embedder.embed_documents([f"text {i}" for i in range(5)])
    assert len(fake.requests) == 8


def test_a_long_text_is_embedded_by_its_leading_window_cut_at_a_word(
    fake: FakeGemini, wire: types.HttpOptions
) -> None:
    long_text = "word " * 4000  # 20,000 characters, far past 2,048 tokens
    embedder = GeminiEmbedder.from_settings(vertex(), http_options=wire, credentials=ADC)

    embedder.embed_documents([long_text])

    sent = fake.body(fake.requests[0])["content"]["parts"][0]["text"]
    assert sent == embedding_window(long_text)
    assert len(sent) <= EMBED_WINDOW_CHARS
    assert sent.endswith("word")
    assert embedding_window("short") == "short"


@pytest.mark.parametrize("route", ["vertex", "gemini-api"])
def test_reembed_and_restore_of_a_store_succeed_on_each_route(
    route: str, fake: FakeGemini, wire: types.HttpOptions, tmp_path: Path
) -> None:
    config = vertex() if route == "vertex" else settings()
    gemini = GeminiEmbedder.from_settings(config, http_options=wire, credentials=ADC)
    source = MemoryService(
        SQLiteStore(tmp_path / "a.sqlite3"), HashingEmbedder(), merger=SentenceUnionMerger()
    )
    saved = [
        source.save(Access.admin(), content=f"fact number {i} about the garden")["item"]["id"]
        for i in range(150)
    ]
    export_portable(source.store, tmp_path / "backup", "test")

    summary = reembed(source.store, gemini)
    reembed_requests = len(fake.requests)
    restored_store = SQLiteStore(tmp_path / "b.sqlite3")
    restored = restore_portable(restored_store, gemini, tmp_path / "backup")
    restore_requests = len(fake.requests) - reembed_requests

    assert (summary.count, restored.restored) == (150, 150)
    # Vertex: one text per request. Gemini API: reembed and restore hand the embedder
    # all 150 at once (chunks of up to 512), sent as batches of at most 100 (100, 50).
    assert reembed_requests == restore_requests == (150 if route == "vertex" else 2)
    assert all(len(fake.body(r).get("requests") or [1]) <= 100 for r in fake.requests)
    reopened = MemoryService(source.store, gemini, merger=SentenceUnionMerger())
    hits = reopened.search(Access.admin(), query="fact number 17 about the garden")["matches"]
    assert hits[0]["id"] == saved[17]
    restored_store.close()
    source.store.close()
