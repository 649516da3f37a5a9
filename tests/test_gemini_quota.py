"""How bulk embedding meets quota answers on each route (issue 12, on top of
``test_gemini_providers``): the Gemini API states its wait in a ``RetryInfo``
detail, not a header; a quota that never frees tells the operator what to change."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx2
import pytest
from google.genai import types

from metacortex.errors import Unavailable
from metacortex.operations.evaluation import synthetic_corpus
from metacortex.operations.reembed import reembed
from metacortex.providers.gemini import GeminiEmbedder
from metacortex.providers.gemini_client import RetryPolicy
from metacortex.providers.offline_merge import SentenceUnionMerger
from metacortex.service import Access, MemoryService
from metacortex.storage.sqlite import SQLiteStore
from tests.fakes import HashingEmbedder
from tests.gemini_wire import FakeGemini, error_reply
from tests.test_gemini_providers import ADC, Sleeps, settings, vertex

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
