"""Batch embedding on both Gemini routes against a fake that enforces each route's
documented request limits (issue 12): Vertex AI takes one text per request for
``gemini-embedding-001``; the Gemini API takes batches of at most 100."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path
from typing import Any

import httpx2
import numpy as np
import pytest
from google.genai import types
from google.oauth2.credentials import Credentials

from metacortex.domain.records import BranchState
from metacortex.errors import Unavailable
from metacortex.operations.backup import export_portable, restore_portable
from metacortex.operations.evaluation import synthetic_corpus
from metacortex.operations.reembed import reembed
from metacortex.providers.gemini import GeminiEmbedder
from metacortex.providers.gemini_client import RetryPolicy
from metacortex.providers.gemini_limits import EMBED_WINDOW_CHARS, leading_window
from metacortex.providers.offline_merge import SentenceUnionMerger
from metacortex.retrieval.text import terms
from metacortex.service import Access, MemoryService
from metacortex.storage.base import MemoryFilter
from metacortex.storage.sqlite import SQLiteStore
from tests.fakes import HashingEmbedder
from tests.gemini_wire import DIMS, MAX_TEXT_TOKENS, FakeGemini, error_reply, wire_vector
from tests.test_gemini_providers import Sleeps, settings, unit

ADMIN = Access.admin()
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


def embedder_for(
    route: str, wire: types.HttpOptions, retry: RetryPolicy | None = None, **overrides: Any
) -> GeminiEmbedder:
    if route == "vertex":
        overrides = {"gemini_api_key": None, "google_cloud_project": "demo-proj", **overrides}
    return GeminiEmbedder.from_settings(
        settings(**overrides),
        http_options=wire,
        credentials=Credentials(token="adc-token"),  # type: ignore[no-untyped-call]
        retry=retry,
    )


def seeded_store(path: Path, count: int) -> SQLiteStore:
    store = SQLiteStore(path)
    service = MemoryService(store, HashingEmbedder(), merger=SentenceUnionMerger())
    for index in range(count):
        service.save(ADMIN, content=f"Memory {index}: the launch checklist item {index}.")
    return store


def stored_vectors(path: Path) -> list[tuple[str, Any]]:
    """Every (retrieval text, vector) pair as written to the SQLite file."""
    with closing(sqlite3.connect(path)) as conn:
        rows = conn.execute("SELECT retrieval_text, embedding FROM memories").fetchall()
    return [(text, np.frombuffer(blob, dtype=np.float32)) for text, blob in rows]


@pytest.mark.parametrize("route", ROUTES)
def test_reembed_of_more_than_a_batch_succeeds_on_each_route_with_every_vector_its_own(
    route: str, fake: FakeGemini, wire: types.HttpOptions, tmp_path: Path
) -> None:
    path = tmp_path / "m.sqlite3"
    store = seeded_store(path, 130)

    summary = reembed(store, embedder_for(route, wire))

    assert summary.count == 130
    assert summary.identity == f"gemini-embedding-001:{DIMS}"
    assert len(stored_vectors(path)) == 130
    for text, vector in stored_vectors(path):
        np.testing.assert_allclose(vector, unit(wire_vector(text)), rtol=1e-5)


@pytest.mark.parametrize("route", ROUTES)
def test_restore_re_embeds_every_memory_on_each_route(
    route: str, fake: FakeGemini, wire: types.HttpOptions, tmp_path: Path
) -> None:
    source = seeded_store(tmp_path / "a.sqlite3", 70)
    export_portable(source, tmp_path / "backup", "test-hashing:64")
    target_path = tmp_path / "b.sqlite3"
    target = SQLiteStore(target_path)
    embedder = embedder_for(route, wire)
    target.bind_embedding(embedder.identity)

    summary = restore_portable(target, embedder, tmp_path / "backup")

    assert summary.restored == 70
    for text, vector in stored_vectors(target_path):
        np.testing.assert_allclose(vector, unit(wire_vector(text)), rtol=1e-5)


@pytest.mark.parametrize("route", ROUTES)
def test_eval_generate_seeds_its_corpus_on_each_route(
    route: str, fake: FakeGemini, wire: types.HttpOptions, tmp_path: Path
) -> None:
    service = MemoryService(
        SQLiteStore(tmp_path / "eval.sqlite3"),
        embedder_for(route, wire),
        merger=SentenceUnionMerger(),
    )

    cases = synthetic_corpus(service, topics=1, per_topic=8)

    assert len(cases) == 10
    assert len(stored_vectors(tmp_path / "eval.sqlite3")) == 8


def test_on_vertex_every_request_carries_one_text_and_order_is_kept(
    fake: FakeGemini, wire: types.HttpOptions
) -> None:
    texts = [f"memory number {i}" for i in range(40)]
    embedder = embedder_for("vertex", wire, metacortex_embed_concurrency=6)

    vectors = embedder.embed_documents(texts)

    assert len(fake.requests) == 40
    assert all(r.url.path.endswith(":embedContent") for r in fake.requests)
    for text, vector in zip(texts, vectors, strict=True):
        np.testing.assert_allclose(vector, unit(wire_vector(text)), rtol=1e-6)


@pytest.mark.parametrize("route", ROUTES)
def test_429s_in_a_bulk_run_are_retried_and_no_text_is_lost(
    route: str, fake: FakeGemini, wire: types.HttpOptions, sleeps: Sleeps
) -> None:
    fake.script += [error_reply(429, "RESOURCE_EXHAUSTED", "Quota exceeded")] * 3
    retry = RetryPolicy(attempts=6, sleep=sleeps, jitter=lambda: 1.0)
    texts = [f"note {i}" for i in range(250 if route == "gemini-api" else 30)]
    embedder = embedder_for(route, wire, retry, metacortex_embed_concurrency=4)

    vectors = embedder.embed_documents(texts)

    assert len(sleeps.delays) == 3
    assert len(vectors) == len(texts)
    for text, vector in zip(texts, vectors, strict=True):
        np.testing.assert_allclose(vector, unit(wire_vector(text)), rtol=1e-6)


def test_a_retry_after_on_429_is_honoured(
    fake: FakeGemini, wire: types.HttpOptions, sleeps: Sleeps
) -> None:
    fake.script.append(
        error_reply(429, "RESOURCE_EXHAUSTED", "slow down", headers={"retry-after": "7"})
    )
    retry = RetryPolicy(attempts=3, sleep=sleeps, jitter=lambda: 1.0)

    embedder_for("vertex", wire, retry).embed_documents(["one"])

    assert sleeps.delays == [7.0]


def test_a_retry_info_delay_on_429_is_honoured(
    fake: FakeGemini, wire: types.HttpOptions, sleeps: Sleeps
) -> None:
    def quota(request: httpx2.Request) -> httpx2.Response:
        retry_info = {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "12s"}
        body = {
            "error": {
                "code": 429,
                "message": "Quota exceeded",
                "status": "RESOURCE_EXHAUSTED",
                "details": [retry_info],
            }
        }
        return httpx2.Response(429, json=body)

    fake.script.append(quota)
    retry = RetryPolicy(attempts=3, sleep=sleeps, jitter=lambda: 1.0)

    embedder_for("gemini-api", wire, retry).embed_documents(["one"])

    assert sleeps.delays == [12.0]


@pytest.mark.parametrize("route", ROUTES)
def test_persistent_429_is_a_clear_operator_error_and_reembed_writes_nothing(
    route: str, fake: FakeGemini, wire: types.HttpOptions, sleeps: Sleeps, tmp_path: Path
) -> None:
    path = tmp_path / "m.sqlite3"
    store = seeded_store(path, 5)
    before = stored_vectors(path)
    fake.script += [error_reply(429, "RESOURCE_EXHAUSTED", "Quota exceeded")] * 100
    retry = RetryPolicy(attempts=4, sleep=sleeps, jitter=lambda: 1.0)

    with pytest.raises(Unavailable) as caught:
        reembed(store, embedder_for(route, wire, retry, metacortex_embed_concurrency=1))

    message = str(caught.value)
    assert "429 RESOURCE_EXHAUSTED" in message
    assert "after 4 attempts" in message
    assert "METACORTEX_EMBED_CONCURRENCY" in message
    after = stored_vectors(path)
    assert [t for t, _ in after] == [t for t, _ in before]
    for (_, old), (_, new) in zip(before, after, strict=True):
        np.testing.assert_array_equal(old, new)


def test_concurrency_comes_from_settings_and_must_be_positive() -> None:
    embedder = GeminiEmbedder.from_settings(settings(metacortex_embed_concurrency=3))
    assert embedder.route.concurrency == 3
    with pytest.raises(ValueError, match="metacortex_embed_concurrency"):
        settings(metacortex_embed_concurrency=0)


def test_other_vertex_models_are_batched_within_the_predict_limits(
    fake: FakeGemini, wire: types.HttpOptions
) -> None:
    texts = [f"memory number {i}" for i in range(23)]
    embedder = embedder_for("vertex", wire, gemini_embedding_model="text-embedding-005")

    vectors = embedder.embed_documents(texts)

    assert all(r.url.path.endswith("text-embedding-005:predict") for r in fake.requests)
    sizes = sorted(len(fake.body(r)["instances"]) for r in fake.requests)
    assert sizes == [3, 5, 5, 5, 5]
    for text, vector in zip(texts, vectors, strict=True):
        np.testing.assert_allclose(vector, unit(wire_vector(text)), rtol=1e-6)


# ------------------------------------------------------------------ long texts
def test_the_fake_refuses_more_than_one_instance_for_gemini_embedding_on_vertex(
    fake: FakeGemini,
) -> None:
    client = httpx2.Client(transport=httpx2.MockTransport(fake.handle))
    url = (
        "https://us-central1-aiplatform.googleapis.com/v1beta1/projects/p/locations/"
        "us-central1/publishers/google/models/gemini-embedding-001:batchEmbedContents"
    )
    item = {"content": {"parts": [{"text": "a"}]}}

    answer = client.post(url, json={"requests": [item, item]})

    assert answer.status_code == 400
    assert "one instance per request" in answer.text


def test_the_fake_refuses_a_text_over_2048_tokens_when_auto_truncate_is_off(
    fake: FakeGemini,
) -> None:
    client = httpx2.Client(transport=httpx2.MockTransport(fake.handle))
    url = (
        "https://us-central1-aiplatform.googleapis.com/v1beta1/projects/p/locations/"
        "us-central1/publishers/google/models/gemini-embedding-001:embedContent"
    )
    long = " ".join(f"w{i}" for i in range(MAX_TEXT_TOKENS + 1))
    content = {"parts": [{"text": long}]}

    truncated = client.post(url, json={"content": content, "embedContentConfig": {}})
    refused = client.post(
        url, json={"content": content, "embedContentConfig": {"autoTruncate": False}}
    )

    assert truncated.status_code == 200
    assert refused.status_code == 400


@pytest.mark.parametrize("route", ROUTES)
def test_a_long_memory_embeds_a_leading_window_and_stays_findable_by_its_last_words(
    route: str, fake: FakeGemini, wire: types.HttpOptions, tmp_path: Path
) -> None:
    words = [f"word{i}" for i in range(2000)]
    content = " ".join([*words, "zanzibarquokka"])
    store = SQLiteStore(tmp_path / "m.sqlite3")
    service = MemoryService(store, embedder_for(route, wire), merger=SentenceUnionMerger())

    saved = service.save(ADMIN, content=content)["item"]["id"]
    [request] = fake.requests
    service.save(ADMIN, content="An unrelated note about the garden shed.")

    body = fake.body(request)
    sent = (body["requests"][0] if "requests" in body else body)["content"]["parts"][0]["text"]
    assert len(sent) <= EMBED_WINDOW_CHARS
    assert content.startswith(sent)
    assert content[len(sent)] == " "
    # Keyword search indexes the whole text, past the embedded window.
    everywhere = MemoryFilter(states=tuple(BranchState))
    found = store.lexical_search(terms("zanzibarquokka"), everywhere, 5)
    assert [hit.memory.id for hit in found] == [saved]
    assert service.fetch(ADMIN, id=saved)["item"]["content"] == content


def test_the_gemini_api_route_sends_no_auto_truncate_switch(
    fake: FakeGemini, wire: types.HttpOptions
) -> None:
    embedder_for("gemini-api", wire).embed_documents(["a", "b"])

    [request] = fake.requests
    for item in fake.body(request)["requests"]:
        assert "autoTruncate" not in item


def test_a_leading_window_cuts_at_whitespace_or_hard_when_there_is_none() -> None:
    assert leading_window("short text", 20) == "short text"
    assert leading_window("alpha beta gamma delta", 13) == "alpha beta"
    assert leading_window("x" * 30, 10) == "x" * 10
