"""Property tests: fingerprint normalization and keyset pagination."""

from __future__ import annotations

import tempfile
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from metacortex.domain.fingerprint import WriteIdentity, normalize_content
from metacortex.domain.records import BranchState, Memory, Modality, Origin, Provenance
from metacortex.providers.offline_merge import SentenceUnionMerger
from metacortex.service import Access, MemoryService
from metacortex.storage.sqlite import SQLiteStore
from tests.fakes import HashingEmbedder

WHITESPACE = st.sampled_from([" ", "  ", "\t", "\n", "\r\n", "\u00a0", "\u2003"])
WORD = st.text(
    alphabet=st.characters(blacklist_categories=("Zs", "Zl", "Zp", "Cc", "Cs")),
    min_size=1,
    max_size=8,
)


def _identity(content: str, **overrides: object) -> WriteIdentity:
    fields: dict[str, object] = {
        "content": content,
        "topic": "general",
        "branch_state": BranchState.ACTIVE,
        "image_sha256": None,
        "artifact_refs": (),
        "valid_from": None,
        "valid_until": None,
        "provenance": Provenance(),
    } | overrides
    return WriteIdentity(**fields)  # type: ignore[arg-type]


@given(st.lists(WORD, min_size=1, max_size=8), st.data())
def test_fingerprints_ignore_how_words_are_spaced(words: list[str], data: st.DataObject) -> None:
    spaced = "".join(word + data.draw(WHITESPACE) for word in words)
    padded = data.draw(WHITESPACE) + spaced + data.draw(WHITESPACE)
    assert _identity(padded).fingerprint() == _identity(" ".join(words)).fingerprint()


@given(st.text(min_size=1, max_size=40))
def test_normalization_is_idempotent(text: str) -> None:
    once = normalize_content(text)
    assert normalize_content(once) == once


@given(st.lists(WORD, min_size=1, max_size=6), st.lists(WORD, min_size=1, max_size=6))
def test_different_words_give_different_fingerprints(left: list[str], right: list[str]) -> None:
    a, b = " ".join(left), " ".join(right)
    if normalize_content(a) != normalize_content(b):
        assert _identity(a).fingerprint() != _identity(b).fingerprint()


def test_compatibility_forms_normalize_alike() -> None:
    assert _identity("ﬁle №5").fingerprint() == _identity("file No5").fingerprint()


@given(st.permutations(["gs://a/1", "gs://a/2", "https://x/y"]))
def test_artifact_ref_order_does_not_matter(refs: list[str]) -> None:
    base = _identity("x", artifact_refs=("gs://a/1", "gs://a/2", "https://x/y"))
    assert _identity("x", artifact_refs=tuple(refs)).fingerprint() == base.fingerprint()


RECORD = st.tuples(
    st.integers(min_value=0, max_value=5),  # created_at minute: few values force ties
    st.sampled_from(["alpha", "beta"]),
    st.sampled_from([BranchState.ACTIVE, BranchState.WIP, BranchState.DEPRECATED]),
    st.sampled_from([None, Origin.USER_ASSERTED, Origin.AGENT_INFERRED]),
)


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(
    records=st.lists(RECORD, max_size=30),
    page_size=st.integers(min_value=1, max_value=7),
    topic=st.sampled_from([None, "alpha"]),
    states=st.sampled_from([("active",), ("active", "wip"), ("wip", "deprecated")]),
    origin=st.sampled_from([None, "user_asserted"]),
)
def test_walking_pages_yields_every_match_once_in_order_with_no_short_page(
    records: list[tuple[int, str, BranchState, Origin | None]],
    page_size: int,
    topic: str | None,
    states: tuple[str, ...],
    origin: str | None,
) -> None:
    base = datetime(2026, 1, 1, tzinfo=UTC)
    embedder = HashingEmbedder(8)
    with tempfile.TemporaryDirectory() as folder:
        store = SQLiteStore(Path(folder) / "p.sqlite3")
        service = MemoryService(store, embedder, merger=SentenceUnionMerger())
        memories = []
        for index, (minute, record_topic, state, record_origin) in enumerate(records):
            created = base + timedelta(minutes=minute)
            memory = Memory(
                id=f"m{index:03d}",
                content=f"record {index}",
                retrieval_text=f"record {index}",
                topic=record_topic,
                branch_state=state,
                modality=Modality.TEXT,
                created_at=created,
                updated_at=created,
                provenance=Provenance(origin=record_origin),
            )
            memories.append(memory)
            store.insert(memory, np.ones(8, dtype=np.float32) / np.sqrt(8), f"fp{index}", base)
        expected = [
            m.id
            for m in sorted(memories, key=lambda m: (m.created_at, m.id), reverse=True)
            if m.branch_state.value in states
            and (topic is None or m.topic == topic)
            and (origin is None or (m.provenance.origin and m.provenance.origin.value == origin))
        ]

        seen: list[str] = []
        cursor: str | None = None
        while True:
            page = service.list_memories(
                Access.admin(),
                filter_topic=topic,
                filter_state=list(states),
                filter_origin=origin,
                limit=page_size,
                cursor=cursor,
            )
            seen.extend(item["id"] for item in page["items"])
            cursor = page["next_cursor"]
            if cursor is None:
                break
            assert len(page["items"]) == page_size
        store.close()

    assert seen == expected
