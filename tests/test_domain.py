"""Domain pieces that need no store: analysis, merges, images, summaries, ids, config."""

from __future__ import annotations

import base64

import pytest

from metacortex.config import Settings
from metacortex.domain.images import decode_image
from metacortex.domain.limits import parse_instant
from metacortex.domain.records import new_memory_id, to_wire_time
from metacortex.domain.text import summarize
from metacortex.errors import InvalidArgument
from metacortex.providers.offline_merge import SentenceUnionMerger, split_sentences
from metacortex.retrieval.text import query_terms, terms


def test_terms_are_casefolded_stemmed_and_free_of_stop_words() -> None:
    assert terms("The Runners were RUNNING to Caroline's house") == [
        "runner",
        "run",
        "carolin",
        "hous",
    ]


def test_query_terms_are_distinct_in_first_seen_order() -> None:
    assert query_terms("deploy deploys deploying pipeline") == ["deploy", "pipelin"]


def test_terms_keep_non_latin_words_and_ids() -> None:
    assert "東京" in terms("東京 office")
    assert terms("zq-7781-kappa") == ["zq", "7781", "kappa"]


def test_the_offline_merge_keeps_every_distinct_sentence_once_in_order() -> None:
    merged = SentenceUnionMerger().merge(
        "general", ["Ship Monday. Tests pass!", "tests   pass! Tell QA?\nDone"]
    )
    assert merged == "Ship Monday. Tests pass! Tell QA? Done."


def test_sentence_splitting_never_drops_text() -> None:
    text = 'He said "stop." Then left. e.g. this (a) [b]! Next?'
    assert "".join(split_sentences(text)).replace(" ", "") == text.replace(" ", "")


def test_summaries_collapse_whitespace_and_cut_at_220_characters() -> None:
    assert summarize(" a\n\n b\tc ") == "a b c"
    long = summarize("word " * 100)
    assert len(long) == 220
    assert long.endswith("…")


def test_ids_are_url_safe_unique_and_ordered_by_creation() -> None:
    ids = [new_memory_id() for _ in range(1000)]
    assert len(set(ids)) == 1000
    assert ids == sorted(ids)
    assert all(i.isalnum() and i.islower() for i in ids)


def test_instants_parse_to_millisecond_utc() -> None:
    parsed = parse_instant("2026-03-04T05:06:07.891234+02:00", "valid_at")
    assert parsed is not None
    assert to_wire_time(parsed) == "2026-03-04T03:06:07.891Z"
    naive = parse_instant("2026-03-04", "valid_at")
    assert naive is not None
    assert to_wire_time(naive) == "2026-03-04T00:00:00.000Z"


def test_data_urls_and_jpg_alias_are_accepted() -> None:
    jpeg = b"\xff\xd8\xff\xe0" + b"\x00" * 16
    payload = decode_image("data:image/jpeg;base64," + base64.b64encode(jpeg).decode(), "image/jpg")
    assert payload.mime_type == "image/jpeg"
    assert payload.data == jpeg


def test_empty_image_bytes_are_refused() -> None:
    with pytest.raises(InvalidArgument, match="no bytes"):
        decode_image("", "image/png")


def test_settings_read_comma_lists_and_choose_defaults_per_deployment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("MCP_ALLOWED_TOOLS", "search_context, fetch_context")
    monkeypatch.setenv("MCP_ALLOWED_ORIGINS", "https://chatgpt.com")
    local = Settings(_env_file=None)  # type: ignore[call-arg]
    cloud = Settings(_env_file=None, deployment="cloud")  # type: ignore[call-arg]
    assert local.mcp_allowed_tools == ("search_context", "fetch_context")
    assert local.mcp_allowed_origins == ("https://chatgpt.com",)
    assert (local.store_kind, local.embeddings_kind) == ("sqlite", "local")
    assert (cloud.store_kind, cloud.embeddings_kind) == ("firestore", "gemini")


def test_settings_refuse_an_embedding_dimension_firestore_cannot_index(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("GEMINI_EMBEDDING_DIMENSIONS", "4096")
    with pytest.raises(ValueError, match="2048"):
        Settings(_env_file=None)  # type: ignore[call-arg]
