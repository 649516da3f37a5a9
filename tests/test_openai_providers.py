"""The OpenAI-compatible providers against a fake OpenAI API on a real loopback port.

The real ``openai`` SDK sends every request over HTTP to ``tests/openai_wire.py``,
which answers as the OpenAI API reference documents, and keeps Azure OpenAI's and
Ollama's known differences; so request shapes are what the SDK really sends.
"""

from __future__ import annotations

import base64
import json
import subprocess
import sys
import threading
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

from metacortex.composition import build_extractor, build_generation, check_configuration
from metacortex.config import Settings
from metacortex.errors import ConfigurationError, FailedPrecondition, Unavailable
from metacortex.providers.base import Candidate
from metacortex.providers.common import RetryPolicy
from metacortex.providers.openai_models import (
    OpenAIEmbedder,
    OpenAIExtractor,
    OpenAIImageDescriber,
    OpenAIMerger,
)
from tests.conftest import PNG_1X1
from tests.gemini_wire import wire_tokens
from tests.openai_wire import (
    API_KEY,
    NATIVE_DIMS,
    FakeOpenAI,
    Flavour,
    WireReply,
    WireRequest,
    chat_reply,
    error_reply,
    request_text,
    serve_openai,
    wire_vector,
)
from tests.test_gemini_providers import Sleeps

GIF_1X1 = base64.b64decode("R0lGODlhAQABAIAAAP///wAAACH5BAEAAAAALAAAAAABAAEAAAICRAEAOw==")


def openai_settings(flavour: Flavour, root: str, **overrides: Any) -> Settings:
    """Settings that point every part at the fake, as docs/openai.md, docs/azure-openai.md
    and docs/ollama.md configure the real services."""
    values: dict[str, Any] = {
        "metacortex_embeddings": "openai",
        "metacortex_generation": "openai",
        "openai_embedding_dimensions": 16,
        "openai_chat_model": "chat-model",
        "openai_vision_model": "vision-model",
        "openai_embedding_model": "embed-model",
    }
    if flavour == "azure":
        values |= {"azure_openai_endpoint": root, "openai_api_key": API_KEY}
    elif flavour == "ollama":
        values |= {"openai_base_url": f"{root}/v1"}
    else:
        values |= {"openai_base_url": f"{root}/v1", "openai_api_key": API_KEY}
    values.update(overrides)
    return Settings(_env_file=None, **values)  # type: ignore[call-arg]


@pytest.fixture(params=["openai", "azure", "ollama"])
def flavour(request: pytest.FixtureRequest) -> Flavour:
    value: Flavour = request.param
    return value


@pytest.fixture
def fake(flavour: Flavour) -> FakeOpenAI:
    return FakeOpenAI(flavour=flavour)


@pytest.fixture
def root(fake: FakeOpenAI) -> Iterator[str]:
    with serve_openai(fake) as url:
        yield url


@pytest.fixture
def sleeps() -> Sleeps:
    return Sleeps()


@pytest.fixture
def retry(sleeps: Sleeps) -> RetryPolicy:
    return RetryPolicy(attempts=3, sleep=sleeps, jitter=lambda: 1.0)


def unit(values: list[float]) -> np.ndarray[Any, Any]:
    vector = np.asarray(values, dtype=np.float32)
    return vector / np.linalg.norm(vector)


# ----------------------------------------------------------------- embeddings
def test_embeddings_ask_for_floats_at_the_configured_size_and_come_back_unit_length(
    flavour: Flavour, fake: FakeOpenAI, root: str, retry: RetryPolicy
) -> None:
    embedder = OpenAIEmbedder.from_settings(openai_settings(flavour, root), retry=retry)

    vectors = embedder.embed_documents(["first text", "second text"])
    query = embedder.embed_query("a query")

    assert embedder.identity.model == "embed-model"
    assert embedder.identity.dimension == 16
    for vector, text in zip(
        [*vectors, query], ["first text", "second text", "a query"], strict=True
    ):
        assert vector.dtype == np.float32
        np.testing.assert_allclose(vector, unit(wire_vector(text, 16)), rtol=1e-6)
    first, second = fake.of("embeddings")
    assert first.body == {
        "model": "embed-model",
        "input": ["first text", "second text"],
        "encoding_format": "float",
        "dimensions": 16,
    }
    assert second.body["input"] == ["a query"]
    if flavour == "azure":
        assert first.path == "/openai/deployments/embed-model/embeddings"
        assert first.query["api-version"] == ["2024-10-21"]
        assert first.header("api-key") == API_KEY
    else:
        assert first.path == "/v1/embeddings"


def test_openais_own_models_need_no_size_setting_and_are_sent_none() -> None:
    fake = FakeOpenAI(flavour="openai")
    with serve_openai(fake) as root:
        settings = openai_settings(
            "openai",
            root,
            openai_embedding_dimensions=None,
            openai_embedding_model="text-embedding-3-small",
        )
        embedder = OpenAIEmbedder.from_settings(settings)
        assert embedder.identity.dimension == 1536
        with pytest.raises(Unavailable) as refused:
            embedder.embed_query("text")  # the fake's vectors are 12 long, not 1536

    assert "dimensions" not in fake.of("embeddings")[0].body
    assert (
        f"embedding returned a vector of dimension {NATIVE_DIMS}, expected 1536 (check "
        "OPENAI_EMBEDDING_DIMENSIONS against the model)" in str(refused.value)
    )


def test_another_model_without_a_size_is_refused_at_start_naming_the_setting() -> None:
    settings = openai_settings(
        "ollama",
        "http://127.0.0.1:9",
        openai_embedding_dimensions=None,
        openai_embedding_model="nomic-embed-text",
    )

    with pytest.raises(ConfigurationError, match="set OPENAI_EMBEDDING_DIMENSIONS"):
        check_configuration(settings)


def test_vectors_are_put_back_in_the_order_of_the_texts_whatever_order_they_come_in(
    root: str, fake: FakeOpenAI, flavour: Flavour
) -> None:
    def shuffled(request: WireRequest) -> WireReply:
        texts = request.body["input"]
        data = [
            {"object": "embedding", "index": index, "embedding": wire_vector(text, 16)}
            for index, text in reversed(list(enumerate(texts)))
        ]
        return WireReply(200, {"object": "list", "data": data, "model": "m", "usage": {}})

    fake.script.append(shuffled)
    embedder = OpenAIEmbedder.from_settings(openai_settings(flavour, root))

    vectors = embedder.embed_documents(["a", "b", "c"])

    for vector, text in zip(vectors, "abc", strict=True):
        np.testing.assert_allclose(vector, unit(wire_vector(text, 16)), rtol=1e-6)


def test_bulk_embedding_sends_at_most_a_hundred_texts_a_request(
    root: str, fake: FakeOpenAI, flavour: Flavour
) -> None:
    embedder = OpenAIEmbedder.from_settings(
        openai_settings(flavour, root, metacortex_embed_concurrency=1)
    )

    vectors = embedder.embed_documents([f"text {n}" for n in range(250)])

    assert len(vectors) == 250
    assert [len(r.body["input"]) for r in fake.of("embeddings")] == [100, 100, 50]


# ------------------------------------------------------------- chat providers
def test_a_merge_sends_the_instruction_and_the_sources_and_names_its_model(
    flavour: Flavour, fake: FakeOpenAI, root: str
) -> None:
    merger = OpenAIMerger.from_settings(openai_settings(flavour, root))

    merged = merger.merge("falcon", ["Falcon launches in Q3.", "Dana owns the launch."])

    assert merged == fake.merged
    prefix = "azure-openai" if flavour == "azure" else "openai"
    assert merger.method == f"{prefix}:chat-model"
    [request] = fake.of("chat/completions")
    body = request.body
    assert body["model"] == "chat-model"
    assert body["stream"] is False
    assert body["temperature"] == 0.0
    assert [m["role"] for m in body["messages"]] == ["system", "user"]
    assert "keeps every distinct fact" in body["messages"][0]["content"]
    assert "Falcon launches in Q3." in body["messages"][1]["content"]
    if flavour == "azure":
        assert request.path == "/openai/deployments/chat-model/chat/completions"
        assert request.header("authorization") is None
    elif flavour == "ollama":
        # No key configured: the SDK still needs one; Ollama ignores it.
        assert request.header("authorization") == "Bearer no-key"


def test_a_merge_cut_off_at_the_output_limit_is_refused_rather_than_dropping_facts(
    flavour: Flavour, fake: FakeOpenAI, root: str
) -> None:
    fake.script.append(chat_reply("Falcon launches", finish="length"))
    merger = OpenAIMerger.from_settings(openai_settings(flavour, root))

    with pytest.raises(Unavailable, match="merge was cut off at the model's output limit"):
        merger.merge("falcon", ["a", "b"])


def test_an_image_goes_as_a_data_url_with_its_type_beside_the_prompt(
    flavour: Flavour, fake: FakeOpenAI, root: str
) -> None:
    describer = OpenAIImageDescriber.from_settings(openai_settings(flavour, root))

    assert describer.describe(PNG_1X1, "image/png") == fake.description

    [request] = fake.of("chat/completions")
    assert request.body["model"] == "vision-model"
    [message] = request.body["messages"]
    text, image = message["content"]
    assert text["type"] == "text"
    assert "every piece of visible text" in text["text"]
    assert image == {
        "type": "image_url",
        "image_url": {"url": "data:image/png;base64," + base64.b64encode(PNG_1X1).decode()},
    }


def test_ollama_refuses_a_gif_and_the_save_is_told_why_without_retrying(
    retry: RetryPolicy, sleeps: Sleeps
) -> None:
    fake = FakeOpenAI(flavour="ollama")
    with serve_openai(fake) as root:
        describer = OpenAIImageDescriber.from_settings(openai_settings("ollama", root), retry=retry)
        with pytest.raises(Unavailable) as refused:
            describer.describe(GIF_1X1, "image/gif")

    assert "image description failed: 400 invalid_request_error: invalid image input" in str(
        refused.value
    )
    assert sleeps.delays == []


# ------------------------------------------------------------------ extraction
FACTS = {
    "facts": [
        {"text": "Staging moved to db-staging-2.", "relation": None},
        {"text": "Dana ran the migration.", "relation": None},
    ]
}


def test_extraction_asks_for_a_strict_json_schema_whose_ids_are_the_candidates(
    flavour: Flavour, fake: FakeOpenAI, root: str
) -> None:
    fake.facts = FACTS
    extractor = OpenAIExtractor.from_settings(openai_settings(flavour, root))

    answer = extractor.extract(
        "Staging moved. Dana ran it.", [Candidate("01ABC", "The staging database is db-1.")]
    )

    assert [fact.text for fact in answer.facts] == [
        "Staging moved to db-staging-2.",
        "Dana ran the migration.",
    ]
    assert answer.unusable is None
    [request] = fake.of("chat/completions")
    body = request.body
    assert body["model"] == "chat-model"
    assert body["max_completion_tokens"] == 4096
    fmt = body["response_format"]
    assert fmt["type"] == "json_schema"
    assert fmt["json_schema"]["strict"] is True
    schema = fmt["json_schema"]["schema"]
    fact = schema["properties"]["facts"]["items"]
    assert fact["required"] == ["text", "relation"]
    assert fact["additionalProperties"] is False
    relation, null = fact["properties"]["relation"]["anyOf"]
    assert null == {"type": "null"}
    assert relation["properties"]["id"]["enum"] == ["01ABC"]
    assert relation["properties"]["type"]["enum"] == ["derives", "extends", "relates_to", "updates"]
    prompt = request_text(body)
    assert answer.usage.calls == 1
    assert answer.usage.prompt_tokens > 0
    assert "db-1" in prompt
    assert extractor.method.endswith(":chat-model")


def test_json_mode_states_the_shape_and_the_word_json_in_the_messages(
    flavour: Flavour, fake: FakeOpenAI, root: str
) -> None:
    fake.facts = FACTS
    extractor = OpenAIExtractor.from_settings(
        openai_settings(
            flavour,
            root,
            openai_structured_output="json_object",
            openai_extraction_model="extract-model",
        )
    )

    answer = extractor.extract("Staging moved. Dana ran it.", [])

    assert len(answer.facts) == 2
    [request] = fake.of("chat/completions")
    assert request.body["model"] == "extract-model"
    assert request.body["response_format"] == {"type": "json_object"}
    assert 'Answer with JSON only, of the shape {"facts"' in request.body["messages"][0]["content"]


def test_reasoning_tokens_are_counted_as_output(
    root: str, fake: FakeOpenAI, flavour: Flavour
) -> None:
    fake.script.append(chat_reply(json.dumps(FACTS), reasoning_tokens=120))
    extractor = OpenAIExtractor.from_settings(openai_settings(flavour, root))

    answer = extractor.extract("Staging moved. Dana ran it.", [])

    assert answer.usage.output_tokens == wire_tokens(json.dumps(FACTS)) + 120
    assert len(answer.facts) == 2


@pytest.mark.parametrize(
    ("reply", "reason"),
    [
        (chat_reply('{"facts": [{"text": "Staging'), "malformed answer: not JSON"),
        (chat_reply(json.dumps(FACTS), finish="length"), "the answer was cut off"),
        (chat_reply(None, refusal="I cannot help with Dana."), "fact extraction was refused"),
        (chat_reply("{}", finish="content_filter"), "fact extraction was blocked"),
        (chat_reply(""), "fact extraction returned no text"),
    ],
    ids=["truncated-json", "cut-off", "refusal", "content-filter", "empty"],
)
def test_an_unusable_answer_is_reported_without_quoting_it_and_its_cost_counted(
    flavour: Flavour, fake: FakeOpenAI, root: str, reply: Any, reason: str
) -> None:
    fake.script.append(reply)
    extractor = OpenAIExtractor.from_settings(openai_settings(flavour, root))

    answer = extractor.extract("Staging moved. Dana ran it.", [])

    assert answer.facts == ()
    assert answer.unusable is not None
    assert reason in answer.unusable
    assert "Dana" not in answer.unusable
    assert answer.usage.calls == 1


# ----------------------------------------------------------- errors and retries
def test_429_and_500_are_retried_honouring_the_wait_asked_for_then_succeed(
    flavour: Flavour, fake: FakeOpenAI, root: str, retry: RetryPolicy, sleeps: Sleeps
) -> None:
    fake.script += [
        error_reply(
            429,
            "Rate limit reached",
            code="rate_limit_exceeded",
            headers={"retry-after-ms": "2500"},
        ),
        error_reply(500, "The server had an error"),
    ]
    merger = OpenAIMerger.from_settings(openai_settings(flavour, root), retry=retry)

    assert merger.merge("t", ["a"]) == fake.merged

    assert len(fake.of("chat/completions")) == 3
    assert sleeps.delays == [2.5, 2.0]


def test_a_server_error_that_persists_fails_after_three_attempts_with_its_reason(
    flavour: Flavour, fake: FakeOpenAI, root: str, retry: RetryPolicy, sleeps: Sleeps
) -> None:
    fake.script += [error_reply(503, "overloaded") for _ in range(3)]
    merger = OpenAIMerger.from_settings(openai_settings(flavour, root), retry=retry)

    with pytest.raises(Unavailable) as failed:
        merger.merge("t", ["a"])

    assert "merge failed after 3 attempts: 503 server_error: overloaded" in str(failed.value)
    assert len(sleeps.delays) == 2


def test_a_refused_request_is_not_retried_and_the_key_never_appears(
    retry: RetryPolicy, sleeps: Sleeps
) -> None:
    fake = FakeOpenAI(flavour="openai")
    fake.script.append(error_reply(400, f"bad request for key {API_KEY}", code="invalid_value"))
    with serve_openai(fake) as root:
        merger = OpenAIMerger.from_settings(openai_settings("openai", root), retry=retry)
        with pytest.raises(Unavailable) as failed:
            merger.merge("t", ["a"])

    assert "400 invalid_value: bad request for key [redacted]" in str(failed.value)
    assert API_KEY not in str(failed.value)
    assert failed.value.__cause__ is None
    assert sleeps.delays == []


@pytest.mark.parametrize("flavour_with_key", ["openai", "azure"])
def test_a_wrong_key_is_a_clear_401(flavour_with_key: Flavour, retry: RetryPolicy) -> None:
    fake = FakeOpenAI(flavour=flavour_with_key)
    with serve_openai(fake) as root:
        settings = openai_settings(flavour_with_key, root, openai_api_key="sk-wrong")
        with pytest.raises(Unavailable, match="embedding failed: 401"):
            OpenAIEmbedder.from_settings(settings, retry=retry).embed_query("x")


def test_a_call_that_times_out_is_retried_then_fails_saying_so(
    flavour: Flavour, fake: FakeOpenAI, root: str, retry: RetryPolicy, sleeps: Sleeps
) -> None:
    fake.hold = threading.Event()  # the fake answers nothing until released
    merger = OpenAIMerger.from_settings(
        openai_settings(flavour, root, openai_timeout_seconds=0.3), retry=retry
    )

    with pytest.raises(Unavailable) as failed:
        merger.merge("t", ["a"])
    fake.hold.set()

    assert "merge failed after 3 attempts: no answer within 0.3 s (OPENAI_TIMEOUT_SECONDS)" in str(
        failed.value
    )
    assert len(fake.of("chat/completions")) == 3


# --------------------------------------------------------------- configuration
def test_building_the_providers_sends_no_request_and_imports_no_sdk() -> None:
    probe = (
        "import sys\n"
        "from metacortex.config import Settings\n"
        "from metacortex import composition\n"
        "s = Settings(_env_file=None, metacortex_embeddings='openai', "
        "metacortex_generation='openai', openai_base_url='http://127.0.0.1:9/v1', "
        "openai_embedding_dimensions=8, openai_vision_model='v')\n"
        "composition.build_embedder(s); composition.build_generation(s); "
        "composition.build_extractor(s)\n"
        "print('openai' in sys.modules)"
    )
    result = subprocess.run(  # noqa: S603 - our own interpreter, fixed arguments
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=60
    )

    assert result.stdout.strip() == "False"


def test_the_offline_default_never_imports_the_openai_package() -> None:
    probe = (
        "import sys\n"
        "from metacortex.config import Settings\n"
        "from metacortex import composition\n"
        "s = Settings(_env_file=None)\n"
        "composition.check_configuration(s); composition.build_generation(s)\n"
        "print(composition.build_extractor(s), 'openai' in sys.modules)"
    )
    result = subprocess.run(  # noqa: S603 - our own interpreter, fixed arguments
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=60
    )

    assert result.stdout.strip() == "None False"


def test_extraction_is_on_wherever_a_chat_model_is_and_one_setting_turns_it_off() -> None:
    chat = openai_settings("ollama", "http://127.0.0.1:9")
    off = openai_settings("ollama", "http://127.0.0.1:9", metacortex_extraction="off")
    embeddings_only = openai_settings("ollama", "http://127.0.0.1:9", metacortex_generation="none")

    assert isinstance(build_extractor(chat), OpenAIExtractor)
    assert build_extractor(off) is None
    assert build_extractor(embeddings_only) is None
    assert Settings(_env_file=None, deployment="cloud").extracts_facts  # type: ignore[call-arg]


def test_each_part_is_chosen_on_its_own(tmp_path: Any) -> None:
    """Local embeddings and a local Ollama chat model: merges and extraction through the
    server, no vision model, so images are read by OCR alone (where it is installed)."""
    settings = Settings(  # type: ignore[call-arg]
        _env_file=None,
        metacortex_generation="openai",
        openai_base_url="http://127.0.0.1:11434/v1",
        openai_chat_model="llama3.2",
        metacortex_ocr="off",
    )

    merger, describer = build_generation(settings)

    assert settings.embeddings_kind == "local"
    assert isinstance(merger, OpenAIMerger)
    assert merger.method == "openai:llama3.2"
    assert describer is None
    extractor = build_extractor(settings)
    assert isinstance(extractor, OpenAIExtractor)
    assert extractor.method == "openai:llama3.2"


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"metacortex_generation": "openai"}, "OpenAI is configured without a key"),
        (
            {
                "metacortex_generation": "openai",
                "azure_openai_endpoint": "https://x.openai.azure.com",
            },
            "set AZURE_OPENAI_API_KEY",
        ),
        (
            {"metacortex_generation": "openai", "openai_base_url": "localhost:11434"},
            r"OPENAI_BASE_URL must be an http\(s\) URL",
        ),
        ({"metacortex_extraction": "on"}, "METACORTEX_EXTRACTION=on needs a generation model"),
    ],
)
def test_a_configuration_that_cannot_work_is_refused_at_start(
    values: dict[str, Any], message: str
) -> None:
    with pytest.raises(ConfigurationError, match=message):
        check_configuration(Settings(_env_file=None, **values))  # type: ignore[call-arg]


# ------------------------------------------------------ changing the embedding model
def test_moving_to_an_openai_compatible_embedder_needs_reembed_which_records_it(
    tmp_path: Any, flavour: Flavour, fake: FakeOpenAI, root: str
) -> None:
    from metacortex.operations.reembed import reembed
    from metacortex.providers.offline_merge import SentenceUnionMerger
    from metacortex.service import Access, MemoryService
    from metacortex.storage.sqlite import SQLiteStore
    from tests.fakes import HashingEmbedder

    store = SQLiteStore(tmp_path / "m.sqlite3")
    before = MemoryService(store, HashingEmbedder(), merger=SentenceUnionMerger())
    saved = [
        before.save(Access.admin(), content=f"fact number {i} about the garden")["item"]["id"]
        for i in range(120)
    ]
    embedder = OpenAIEmbedder.from_settings(openai_settings(flavour, root))
    try:
        with pytest.raises(FailedPrecondition, match="run `metacortex reembed` to re-embed"):
            MemoryService(store, embedder, merger=SentenceUnionMerger())

        summary = reembed(store, embedder)

        assert (summary.count, summary.identity) == (120, "embed-model:16")
        # Sent concurrently (METACORTEX_EMBED_CONCURRENCY): any order.
        assert sorted(len(r.body["input"]) for r in fake.of("embeddings")) == [20, 100]
        after = MemoryService(store, embedder, merger=SentenceUnionMerger())
        hits = after.search(Access.admin(), query="fact number 17 about the garden")["matches"]
        assert hits[0]["id"] == saved[17]
    finally:
        store.close()
