"""How bulk embedding meets quota answers on each route (issue 12, on top of
``test_gemini_providers``): the Gemini API states its wait in a ``RetryInfo``
detail, not a header; a quota that never frees tells the operator what to change."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx2
import numpy as np
import pytest
from google.genai import types

from metacortex.errors import Unavailable
from metacortex.operations.evaluation import synthetic_corpus
from metacortex.operations.reembed import reembed
from metacortex.providers.common import RetryPolicy
from metacortex.providers.gemini import GeminiEmbedder
from metacortex.providers.offline_merge import SentenceUnionMerger
from metacortex.service import Access, MemoryService
from metacortex.storage.sqlite import SQLiteStore
from tests.fakes import HashingEmbedder
from tests.gemini_wire import (
    VERTEX_MAX_REQUEST_TOKENS,
    FakeGemini,
    embedded_texts,
    error_reply,
    wire_tokens,
    wire_vector,
)
from tests.test_gemini_providers import ADC, Sleeps, settings, unit, vertex

ROUTES = ["vertex", "gemini-api"]


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


def on(route: str, wire: types.HttpOptions, retry: RetryPolicy | None = None) -> GeminiEmbedder:
    config = vertex(metacortex_embed_concurrency=1) if route == "vertex" else settings()
    return GeminiEmbedder.from_settings(config, http_options=wire, credentials=ADC, retry=retry)


def quota_with_retry_info(delay: str) -> httpx2.Response:
    retry_info = {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": delay}
    error = {
        "code": 429,
        "message": "You exceeded your current quota",
        "status": "RESOURCE_EXHAUSTED",
        "details": [retry_info],
    }
    return httpx2.Response(429, json={"error": error})


def test_a_retry_info_delay_in_a_429_body_is_honoured(
    fake: FakeGemini, wire: types.HttpOptions, sleeps: Sleeps
) -> None:
    fake.script.append(lambda request: quota_with_retry_info("6s"))
    retry = RetryPolicy(attempts=3, max_delay=8.0, sleep=sleeps, jitter=lambda: 1.0)

    on("gemini-api", wire, retry).embed_query("hello")

    assert sleeps.delays == [6.0]


@pytest.mark.parametrize("route", ROUTES)
def test_a_quota_that_never_frees_names_the_setting_to_lower_and_reembed_writes_nothing(
    route: str, fake: FakeGemini, wire: types.HttpOptions, sleeps: Sleeps, tmp_path: Path
) -> None:
    store = SQLiteStore(tmp_path / "m.sqlite3")
    service = MemoryService(store, HashingEmbedder(), merger=SentenceUnionMerger())
    saved = [service.save(Access.admin(), content=f"note {i}")["item"]["id"] for i in range(5)]
    fake.script += [error_reply(429, "RESOURCE_EXHAUSTED", "Quota exceeded")] * 50
    retry = RetryPolicy(attempts=3, sleep=sleeps, jitter=lambda: 1.0)

    with pytest.raises(Unavailable) as caught:
        reembed(store, on(route, wire, retry))

    message = str(caught.value)
    assert "429 RESOURCE_EXHAUSTED" in message
    assert "METACORTEX_EMBED_CONCURRENCY" in message
    # The store still opens with its old model: nothing was half re-embedded.
    reopened = MemoryService(store, HashingEmbedder(), merger=SentenceUnionMerger())
    assert reopened.search(Access.admin(), query="note 3")["matches"][0]["id"] == saved[3]


@pytest.mark.parametrize("route", ROUTES)
def test_eval_generate_seeds_its_corpus_on_each_route(
    route: str, fake: FakeGemini, wire: types.HttpOptions, tmp_path: Path
) -> None:
    store = SQLiteStore(tmp_path / "eval.sqlite3")
    service = MemoryService(store, on(route, wire), merger=SentenceUnionMerger())

    cases = synthetic_corpus(service, topics=1, per_topic=8)

    assert len(cases) == 10
    assert len(fake.requests) == 8


# ------------------------------------------- Vertex models answered by :predict
def test_a_predict_model_on_vertex_keeps_each_request_under_20000_tokens(
    fake: FakeGemini, wire: types.HttpOptions
) -> None:
    # 900 tokens (~7,000 characters) each: 30 in one request would be 27,000 tokens.
    texts = [" ".join(f"w{i}x{j}" for j in range(900)) for i in range(30)]
    embedder = GeminiEmbedder.from_settings(
        vertex(gemini_embedding_model="text-embedding-005"), http_options=wire, credentials=ADC
    )

    vectors = embedder.embed_documents(texts)

    assert all(r.url.path.endswith("text-embedding-005:predict") for r in fake.requests)
    for request in fake.requests:
        sent = embedded_texts(fake.body(request))
        assert sum(wire_tokens(text) for text in sent) <= VERTEX_MAX_REQUEST_TOKENS
    for text, vector in zip(texts, vectors, strict=True):
        np.testing.assert_allclose(vector, unit(wire_vector(text)), rtol=1e-6)


def test_short_texts_on_a_predict_model_still_share_requests(
    fake: FakeGemini, wire: types.HttpOptions
) -> None:
    embedder = GeminiEmbedder.from_settings(
        vertex(gemini_embedding_model="text-embedding-005"), http_options=wire, credentials=ADC
    )

    embedder.embed_documents([f"short note {i}" for i in range(150)])

    assert sorted(len(embedded_texts(fake.body(r))) for r in fake.requests) == [50, 100]


# ----------------------------------------------------------------- long texts
def test_vertex_requests_state_auto_truncate_so_a_token_dense_window_is_cut_not_refused(
    fake: FakeGemini, wire: types.HttpOptions
) -> None:
    dense = ",".join("x" for _ in range(3000))  # 5,999 characters, ~6,000 tokens
    embedder = GeminiEmbedder.from_settings(vertex(), http_options=wire, credentials=ADC)

    embedder.embed_documents([dense])
    embedder.embed_query("a question")

    for request in fake.requests:
        assert fake.body(request)["embedContentConfig"]["autoTruncate"] is True


def test_gemini_api_requests_carry_no_auto_truncate_switch(
    fake: FakeGemini, wire: types.HttpOptions
) -> None:
    GeminiEmbedder.from_settings(settings(), http_options=wire).embed_documents(["a", "b"])

    [request] = fake.requests
    assert all("autoTruncate" not in item for item in fake.body(request)["requests"])
