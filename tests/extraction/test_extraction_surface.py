"""Where extraction is on, and only there, the tool surface says so; its cost reaches
the save's event; a configuration that cannot extract is refused at start."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import SecretStr

from metacortex.composition import build_extractor, check_configuration
from metacortex.config import Settings
from metacortex.errors import ConfigurationError
from metacortex.mcp_surface.tools import TOOLS
from metacortex.providers.gemini_extract import GeminiExtractor
from metacortex.providers.offline_merge import SentenceUnionMerger
from metacortex.service import Access, MemoryService
from metacortex.storage.sqlite import SQLiteStore
from tests.extraction.conftest import API_KEY, extraction_settings
from tests.extraction.wire import MODEL, facts, ran_report, structured_reply
from tests.fakes import HashingEmbedder
from tests.gemini_wire import FakeGemini
from tests.server.conftest import make_settings, started

MOVED = "The staging database moved to db-staging-2 on 2026-03-01."
DANA = "Dana ran the staging database migration over the weekend."


@pytest.fixture
def sqlite_service(tmp_path: Path, extractor: GeminiExtractor) -> Iterator[MemoryService]:
    store = SQLiteStore(tmp_path / "m.sqlite3")
    yield MemoryService(store, HashingEmbedder(), merger=SentenceUnionMerger(), extractor=extractor)
    store.close()


def extracting_settings(tmp_path: Path) -> Settings:
    return make_settings(
        tmp_path / "data",
        gemini_api_key=API_KEY,
        metacortex_use_gemini_generation=True,
        metacortex_extraction="gemini",
        gemini_extraction_model=MODEL,
    )


def save_tool(tools: list[Any]) -> Any:
    return next(tool for tool in tools if tool.name == "save_context")


@pytest.mark.anyio
async def test_tools_list_says_extraction_is_on_only_where_it_is(
    tmp_path: Path, sqlite_service: MemoryService
) -> None:
    async with (
        started(extracting_settings(tmp_path), sqlite_service) as on,
        on.connect() as client,
    ):
        extracting = save_tool((await client.list_tools()).tools)
        others_on = [t for t in (await client.list_tools()).tools if t.name != "save_context"]
    async with (
        started(make_settings(tmp_path / "off"), sqlite_service) as off,
        off.connect() as client,
    ):
        offline = save_tool((await client.list_tools()).tools)
        others_off = [t for t in (await client.list_tools()).tools if t.name != "save_context"]

    assert offline.description == TOOLS["save_context"].description
    assert "atomic facts" not in offline.description
    assert "facts" not in offline.output_schema["properties"]
    assert "a model also splits the saved text into atomic facts" in extracting.description
    assert extracting.description.endswith(TOOLS["save_context"].description.split("\n")[-1])
    assert {"facts", "relations", "extraction", "contested_ids"} <= set(
        extracting.output_schema["properties"]
    )
    assert extracting.input_schema == offline.input_schema
    assert others_on == others_off


@pytest.mark.anyio
async def test_a_save_event_carries_the_model_calls_and_tokens_and_no_fact_text(
    tmp_path: Path, sqlite_service: MemoryService, fake: FakeGemini
) -> None:
    answer = facts((MOVED, None), (DANA, None))
    fake.script.append(structured_reply(answer, thoughts=12))

    async with (
        started(extracting_settings(tmp_path), sqlite_service) as harness,
        harness.connect() as client,
    ):
        # The SDK client checks structured content against the tool's output schema.
        result = await client.call_tool("save_context", {"content": f"{MOVED} {DANA}"})
        events = harness.events()

    assert not result.is_error
    assert result.structured_content is not None
    assert [fact["content"] for fact in result.structured_content["facts"]] == [MOVED, DANA]
    [event] = [e for e in events if e.get("tool_name") == "save_context"]
    [body] = [FakeGemini.body(r) for r in fake.requests if r.url.path.endswith(":generateContent")]
    assert event["response"]["extraction"] == ran_report(
        body, answer, thoughts=12, facts=2, saved_facts=2, relations=0, dropped_relations=0
    )
    assert "Dana" not in json.dumps(event)


def test_extraction_without_a_generation_model_is_refused_at_start() -> None:
    settings = Settings(_env_file=None, metacortex_extraction="gemini")  # type: ignore[call-arg]

    with pytest.raises(ConfigurationError, match="METACORTEX_EXTRACTION=gemini needs a generation"):
        check_configuration(settings)


def test_extraction_is_on_by_default_where_a_chat_model_is_and_off_offline() -> None:
    """Issue 40: on wherever a chat model is configured (Gemini in the cloud), as the
    seeds do; the laptop default has none, so it stays off there."""
    offline = Settings(_env_file=None, deployment="local")  # type: ignore[call-arg]
    cloud = Settings(_env_file=None, deployment="cloud")  # type: ignore[call-arg]
    laptop_gemini = Settings(  # type: ignore[call-arg]
        _env_file=None, metacortex_use_gemini_generation=True, gemini_api_key=SecretStr(API_KEY)
    )

    assert offline.extracts_facts is False
    assert build_extractor(offline) is None
    assert cloud.extracts_facts is True
    assert isinstance(build_extractor(laptop_gemini), GeminiExtractor)


def test_one_setting_turns_extraction_off_where_a_chat_model_is() -> None:
    settings = Settings(  # type: ignore[call-arg]
        _env_file=None, deployment="cloud", metacortex_extraction="off"
    )

    assert settings.extracts_facts is False
    assert build_extractor(settings) is None


def test_with_extraction_on_the_service_is_built_with_the_gemini_extractor() -> None:
    extractor = build_extractor(extraction_settings(gemini_extraction_model="gemini-2.5-flash"))

    assert isinstance(extractor, GeminiExtractor)
    assert extractor.method == "gemini:gemini-2.5-flash"


def test_without_extraction_a_save_answers_exactly_as_before(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "m.sqlite3")
    try:
        service = MemoryService(store, HashingEmbedder(), merger=SentenceUnionMerger())
        result = service.save(Access.admin(), content=f"{MOVED} {DANA}")
    finally:
        store.close()

    assert set(result) == {"item", "write_status"}
