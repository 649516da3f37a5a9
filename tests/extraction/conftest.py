"""Extraction runs the real google-genai client against a fake Gemini served on a real
loopback HTTP port (``tests/gemini_wire.py: serve_over_http``), on both stores."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from google.genai import types

from metacortex.config import Settings
from metacortex.providers.common import RetryPolicy
from metacortex.providers.gemini_extract import GeminiExtractor
from metacortex.providers.offline_merge import SentenceUnionMerger
from metacortex.service import MemoryService
from metacortex.storage.base import MemoryStore
from metacortex.storage.sqlite import SQLiteStore
from tests.extraction.wire import MODEL
from tests.fakes import HashingEmbedder
from tests.gemini_wire import FakeGemini, serve_over_http
from tests.test_gemini_providers import Sleeps

API_KEY = "AIzaTEST-not-a-real-key-0123456789"


def extraction_settings(**overrides: Any) -> Settings:
    values: dict[str, Any] = {
        "gemini_api_key": API_KEY,
        "google_cloud_project": None,
        "metacortex_use_gemini_generation": True,
        "metacortex_extraction": "gemini",
        "gemini_extraction_model": MODEL,
    }
    values.update(overrides)
    return Settings(_env_file=None, **values)  # type: ignore[call-arg]


@pytest.fixture
def fake() -> FakeGemini:
    return FakeGemini()


@pytest.fixture
def gemini_url(fake: FakeGemini) -> Iterator[str]:
    with serve_over_http(fake) as url:
        yield url


@pytest.fixture
def sleeps() -> Sleeps:
    return Sleeps()


@pytest.fixture
def extractor(gemini_url: str, sleeps: Sleeps) -> GeminiExtractor:
    return GeminiExtractor.from_settings(
        extraction_settings(),
        http_options=types.HttpOptions(base_url=gemini_url),
        retry=RetryPolicy(attempts=3, sleep=sleeps, jitter=lambda: 1.0),
    )


@pytest.fixture(params=["sqlite", pytest.param("firestore", marks=pytest.mark.firestore)])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[MemoryStore]:
    if request.param == "sqlite":
        sqlite = SQLiteStore(tmp_path / "memories.sqlite3")
        yield sqlite
        sqlite.close()
    else:  # the factory closes what it opened
        factory: Callable[[], MemoryStore] = request.getfixturevalue("firestore_store_factory")
        yield factory()


@pytest.fixture
def embedder() -> HashingEmbedder:
    return HashingEmbedder()


@pytest.fixture
def plain(store: MemoryStore, embedder: HashingEmbedder) -> MemoryService:
    """The same store without extraction: what the tests set up beforehand."""
    return MemoryService(store, embedder, merger=SentenceUnionMerger())


@pytest.fixture
def service(
    store: MemoryStore, embedder: HashingEmbedder, extractor: GeminiExtractor
) -> MemoryService:
    return MemoryService(store, embedder, merger=SentenceUnionMerger(), extractor=extractor)
