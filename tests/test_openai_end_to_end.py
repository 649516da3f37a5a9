"""Every OpenAI-compatible provider path end to end, on both stores (issue 40): a service
composed from ``Settings`` exactly as ``metacortex serve`` composes it, its embeddings,
fact extraction, merges and image descriptions all going through the real ``openai``
SDK to the fake API of ``tests/openai_wire.py`` (OpenAI, Azure OpenAI and Ollama
flavours): save with extraction, search, consolidation merge, image description."""

from __future__ import annotations

import base64
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from metacortex.composition import build_embedder, build_extractor, build_generation
from metacortex.service import Access, MemoryService
from metacortex.storage.base import MemoryStore
from metacortex.storage.sqlite import SQLiteStore
from tests.conftest import PNG_1X1
from tests.openai_wire import FakeOpenAI, Flavour, WireRequest, serve_openai
from tests.test_openai_providers import openai_settings

TEXT = "Staging moved to db-staging-2 on 2026-03-01. Dana ran the migration over the weekend."
MOVED = "The staging database moved to db-staging-2 on 2026-03-01."
DANA = "Dana ran the staging database migration over the weekend."


@pytest.fixture(params=["sqlite", pytest.param("firestore", marks=pytest.mark.firestore)])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[MemoryStore]:
    if request.param == "sqlite":
        sqlite = SQLiteStore(tmp_path / "memories.sqlite3")
        yield sqlite
        sqlite.close()
    else:  # the factory closes what it opened
        factory: Callable[[], MemoryStore] = request.getfixturevalue("firestore_store_factory")
        yield factory()


def facts_of(request: WireRequest) -> dict[str, Any]:
    """The model's answer: two facts, the first updating the one candidate offered."""
    schema = request.body["response_format"]["json_schema"]["schema"]
    fact = schema["properties"]["facts"]["items"]["properties"]
    candidates = (
        fact["relation"]["anyOf"][0]["properties"]["id"]["enum"] if "relation" in fact else []
    )
    relation = (
        {"id": candidates[0], "type": "updates", "note": "the database moved"}
        if candidates
        else None
    )
    return {"facts": [{"text": MOVED, "relation": relation}, {"text": DANA, "relation": None}]}


@pytest.mark.parametrize("flavour", ["openai", "azure", "ollama"])
def test_save_with_extraction_search_merge_and_image_description_on_the_fake(
    flavour: Flavour, store: MemoryStore
) -> None:
    fake = FakeOpenAI(flavour=flavour, facts=facts_of)
    with serve_openai(fake) as root:
        settings = openai_settings(flavour, root, metacortex_ocr="off")
        merger, describer = build_generation(settings)
        embedder = build_embedder(settings)
        service = MemoryService(
            store,
            embedder,
            merger=merger,
            describer=describer,
            extractor=build_extractor(settings),
        )
        admin = Access.admin()
        model = f"{'azure-openai' if flavour == 'azure' else 'openai'}:chat-model"
        # What the space held before: saved without extraction.
        plain = MemoryService(store, embedder, merger=merger)
        old = plain.save(admin, content="The staging database is db-staging-1.", topic="infra")
        saved = service.save(admin, content=TEXT, topic="infra")

        assert saved["item"]["content"] == TEXT
        assert [fact["content"] for fact in saved["facts"]] == [MOVED, DANA]
        report = saved["extraction"]
        assert (report["status"], report["model"], report["model_calls"]) == ("ran", model, 1)
        assert report["prompt_tokens"] > 0
        assert report["output_tokens"] > 0
        moved_id = saved["facts"][0]["id"]
        assert saved["relations"] == [
            {
                "source": moved_id,
                "target": old["item"]["id"],
                "type": "updates",
                "note": "the database moved",
            }
        ]

        found = service.search(admin, query="db-staging-2 migration", filter_topic="infra")
        assert saved["item"]["id"] in [match["id"] for match in found["matches"]]

        merged = service.consolidate(
            admin, topic="infra", source_ids=[old["item"]["id"], saved["item"]["id"]]
        )["item"]
        assert merged["merged_content"] == fake.merged
        record = store.get(merged["merged_id"])
        assert record is not None
        assert record.merge_method == model

        image = service.save(
            admin,
            content="Photo of the planning board",
            image_base64=base64.b64encode(PNG_1X1).decode(),
            image_mime_type="image/png",
            topic="falcon",
            artifact_refs=["file:///boards/q3.png"],
        )
        stored = store.get(image["item"]["id"])
        assert stored is not None
        assert fake.description in stored.retrieval_text
        assert stored.artifact_refs == ("file:///boards/q3.png",)
        found = service.search(admin, query="Q3 launch plan whiteboard", filter_topic="falcon")
        assert image["item"]["id"] in [match["id"] for match in found["matches"]]

    endpoints = {request.endpoint for request in fake.requests}
    assert endpoints == {"embeddings", "chat/completions"}
    assert all(request.body.get("stream") in (None, False) for request in fake.requests)
