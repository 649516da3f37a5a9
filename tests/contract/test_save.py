"""save_context through the service, on every store backend."""

from __future__ import annotations

import re
import threading
from datetime import timedelta
from typing import Any

import pytest

from metacortex.domain.limits import MAX_ARTIFACT_REFS, MAX_CONTENT_CHARS
from metacortex.domain.records import BranchState
from metacortex.errors import FailedPrecondition, Forbidden, InvalidArgument
from metacortex.providers.offline_merge import SentenceUnionMerger
from metacortex.service import Access, MemoryService, ServiceOptions
from metacortex.storage.base import MemoryStore
from tests.contract.conftest import StoreFactory
from tests.fakes import FixedImageDescriber, HashingEmbedder

WIRE_TIME = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")


def test_a_new_memory_gets_an_id_defaults_and_millisecond_utc_timestamps(
    service: MemoryService, admin: Access
) -> None:
    result = service.save(admin, content="  The deploy key lives in 1Password.  ")

    assert result["write_status"] == "created"
    item = result["item"]
    assert re.fullmatch(r"[A-Za-z0-9_-]{16,}", item["id"])
    assert item["content"] == "The deploy key lives in 1Password."
    meta = item["metadata"]
    assert meta["topic"] == "general"
    assert meta["branch_state"] == "active"
    assert meta["modality"] == "text"
    assert WIRE_TIME.match(meta["created_at"])
    assert meta["created_at"] == meta["updated_at"]
    assert service.fetch(admin, id=item["id"])["item"] == item


def test_every_optional_field_round_trips(service: MemoryService, admin: Access) -> None:
    sources = [service.save(admin, content=f"Source note {n}")["item"]["id"] for n in "ab"]
    saved = service.save(
        admin,
        content="Ünïcode café ☕ and 日本語 text",
        topic="project.alpha/notes",
        valid_from="2026-01-01T00:00:00Z",
        valid_until="2027-01-01T00:00:00.5+00:00",
        origin="agent_inferred",
        source_session="session-42",
        derived_from=sources,
        confidence=0.25,
        artifact_refs=["gs://bucket/a.png", "https://example.com/x"],
    )["item"]

    fetched = service.fetch(admin, id=saved["id"])["item"]
    meta = fetched["metadata"]
    assert fetched["content"] == "Ünïcode café ☕ and 日本語 text"
    assert meta["topic"] == "project.alpha/notes"
    assert meta["valid_from"] == "2026-01-01T00:00:00.000Z"
    assert meta["valid_until"] == "2027-01-01T00:00:00.500Z"
    assert meta["provenance"] == {
        "origin": "agent_inferred",
        "source_session": "session-42",
        "derived_from": sources,
        "confidence": 0.25,
    }
    assert meta["artifact_refs"] == ["gs://bucket/a.png", "https://example.com/x"]


def test_an_identical_write_inside_the_window_returns_the_first_record(
    service: MemoryService, admin: Access, embedder: HashingEmbedder
) -> None:
    first = service.save(admin, content="Standup is at 9:30.", topic="team")
    calls = embedder.calls
    again = service.save(admin, content="  Standup   is at\n9:30. ", topic="team")

    assert again["write_status"] == "duplicate"
    assert again["item"]["id"] == first["item"]["id"]
    assert embedder.calls == calls, "dedupe must run before any model call"


@pytest.mark.parametrize(
    "change",
    [
        {"content": "standup is at 9:30."},
        {"topic": "other"},
        {"draft": True},
        {"valid_until": "2030-01-01T00:00:00Z"},
        {"origin": "user_asserted"},
        {"confidence": 0.5},
        {"artifact_refs": ["gs://b/c.png"]},
    ],
)
def test_a_write_that_differs_in_any_identity_field_is_a_new_record(
    service: MemoryService, admin: Access, change: dict[str, object]
) -> None:
    base: dict[str, object] = {"content": "Standup is at 9:30.", "topic": "team"}
    first = service.save(admin, **base)  # type: ignore[arg-type]
    second = service.save(admin, **(base | change))  # type: ignore[arg-type]
    assert second["write_status"] == "created"
    assert second["item"]["id"] != first["item"]["id"]


def test_artifact_refs_count_as_a_set_for_dedupe(service: MemoryService, admin: Access) -> None:
    first = service.save(admin, content="diagram", artifact_refs=["gs://a/1", "gs://a/2"])
    again = service.save(admin, content="diagram", artifact_refs=["gs://a/2", "gs://a/1"])
    assert again["write_status"] == "duplicate"
    assert again["item"]["id"] == first["item"]["id"]


def test_a_write_outside_the_dedupe_window_creates_a_new_record(
    store: MemoryStore, embedder: HashingEmbedder, admin: Access
) -> None:
    service = MemoryService(
        store,
        embedder,
        merger=SentenceUnionMerger(),
        options=ServiceOptions(dedupe_window=timedelta(0)),
    )
    first = service.save(admin, content="Window test")
    second = service.save(admin, content="Window test")
    assert second["write_status"] == "created"
    assert second["item"]["id"] != first["item"]["id"]


def test_a_retry_after_the_first_record_changed_state_creates_a_new_record(
    service: MemoryService, admin: Access
) -> None:
    first = service.save(admin, content="Use Python 3.11")
    service.deprecate(admin, id=first["item"]["id"])
    again = service.save(admin, content="Use Python 3.11")
    assert again["write_status"] == "created"
    assert again["item"]["id"] != first["item"]["id"]


def test_concurrent_identical_saves_create_exactly_one_record(
    store_factory: StoreFactory, admin: Access
) -> None:
    services = [
        MemoryService(store_factory(), HashingEmbedder(), merger=SentenceUnionMerger())
        for _ in range(2)
    ]
    barrier = threading.Barrier(8)
    results: list[dict[str, Any]] = []
    lock = threading.Lock()

    def write(index: int) -> None:
        barrier.wait(timeout=10)
        result = services[index % 2].save(admin, content="Exactly once, please.", topic="race")
        with lock:
            results.append(result)

    threads = [threading.Thread(target=write, args=(i,)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)

    ids = {result["item"]["id"] for result in results}
    assert len(results) == 8
    assert len(ids) == 1
    assert [r["write_status"] for r in results].count("created") == 1
    listed = services[0].list_memories(admin, filter_topic="race")
    assert [item["id"] for item in listed["items"]] == list(ids)


def test_draft_saves_a_wip_memory(service: MemoryService, admin: Access) -> None:
    item = service.save(admin, content="half an idea", draft=True)["item"]
    assert item["metadata"]["branch_state"] == "wip"


def test_draft_and_branch_state_together_are_refused(service: MemoryService, admin: Access) -> None:
    with pytest.raises(InvalidArgument, match="draft or branch_state"):
        service.save(admin, content="x", draft=True, branch_state="wip")


def test_explicit_branch_state_needs_a_profile_that_may_write_lifecycle_states(
    service: MemoryService, admin: Access
) -> None:
    reader = Access(admin.readable_states, admin.default_state, may_write_lifecycle=False)
    with pytest.raises(Forbidden, match="branch_state"):
        service.save(reader, content="x", branch_state="active")
    assert (
        service.save(reader, content="x", draft=True)["item"]["metadata"]["branch_state"] == "wip"
    )
    saved = service.save(admin, content="x", branch_state="merged")["item"]
    assert saved["metadata"]["branch_state"] == "merged"


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({}, "content or image_base64 is required"),
        ({"content": "   "}, "content or image_base64 is required"),
        ({"content": "x" * (MAX_CONTENT_CHARS + 1)}, "limit is 20000"),
        ({"content": "x", "topic": "bad topic!"}, "may use only letters"),
        (
            {"content": "x", "topic": "architecture decisions"},
            "for example 'architecture-decisions'",
        ),
        ({"content": "x", "topic": "  Café & bar / 2026 "}, "for example 'Cafe-bar/2026'"),
        ({"content": "x", "topic": "-draft-"}, "for example 'draft'"),
        ({"content": "x", "topic": "t" * 65}, "limit is 64"),
        ({"content": "x", "branch_state": "gone"}, "branch_state must be one of"),
        ({"content": "x", "origin": "rumour"}, "origin must be one of"),
        ({"content": "x", "confidence": 1.5}, "between 0 and 1"),
        ({"content": "x", "valid_from": "tomorrow"}, "ISO 8601"),
        (
            {"content": "x", "valid_from": "2026-02-01T00:00:00Z", "valid_until": "2026-01-01"},
            "earlier than valid_until",
        ),
        ({"content": "x", "artifact_refs": ["not a uri"]}, "artifact_refs\\[0\\] must be a URI"),
        (
            {
                "content": "x",
                "artifact_refs": [f"gs://b/{i}" for i in range(MAX_ARTIFACT_REFS + 1)],
            },
            "limit is 16",
        ),
        ({"content": "x", "derived_from": ["has space"]}, "derived_from\\[0\\]"),
        ({"content": "x", "image_mime_type": "image/png"}, "without image_base64"),
        ({"content": "x", "image_base64": "iVBORw0KGgo="}, "image_mime_type is required"),
        (
            {"content": "x", "image_base64": "%%%", "image_mime_type": "image/png"},
            "not valid base64",
        ),
        (
            {"content": "x", "image_base64": "aGVsbG8=", "image_mime_type": "image/bmp"},
            "not supported",
        ),
        ({"content": "x", "image_base64": "aGVsbG8=", "image_mime_type": "image/png"}, "not a PNG"),
    ],
)
def test_bad_input_gets_a_specific_error_and_stores_nothing(
    service: MemoryService, admin: Access, arguments: dict[str, object], message: str
) -> None:
    with pytest.raises(InvalidArgument, match=message):
        service.save(admin, **arguments)  # type: ignore[arg-type]
    assert (
        service.list_memories(admin, filter_state=["active", "wip", "merged", "deprecated"])[
            "items"
        ]
        == []
    )


def test_image_bytes_must_match_the_declared_type(
    service: MemoryService, admin: Access, gif_base64: str
) -> None:
    with pytest.raises(InvalidArgument, match="image/gif but image_mime_type says image/png"):
        service.save(admin, image_base64=gif_base64, image_mime_type="image/png")


def test_an_image_write_without_a_description_model_names_what_to_configure(
    service: MemoryService, admin: Access, png_base64: str
) -> None:
    with pytest.raises(FailedPrecondition, match="GEMINI_API_KEY"):
        service.save(
            admin, content="screenshot", image_base64=png_base64, image_mime_type="image/png"
        )


def test_an_image_is_stored_as_retrieval_text_and_its_retries_cost_no_model_call(
    store: MemoryStore, embedder: HashingEmbedder, admin: Access, png_base64: str
) -> None:
    describer = FixedImageDescriber("a red square on a white background")
    service = MemoryService(store, embedder, merger=SentenceUnionMerger(), describer=describer)

    first = service.save(admin, image_base64=png_base64, image_mime_type="image/png")
    mixed = service.save(
        admin, content="Logo draft", image_base64=png_base64, image_mime_type="image/png"
    )
    again = service.save(admin, image_base64=png_base64, image_mime_type="image/png")

    assert first["item"]["metadata"]["modality"] == "image"
    assert first["item"]["content"] == "a red square on a white background"
    assert mixed["item"]["metadata"]["modality"] == "mixed"
    assert mixed["item"]["content"] == "Logo draft"
    assert again["write_status"] == "duplicate"
    assert describer.calls == 2
    stored = store.get(mixed["item"]["id"])
    assert stored is not None
    assert "red square" in stored.retrieval_text
    found = service.search(admin, query="red square")["matches"]
    assert {m["id"] for m in found} == {first["item"]["id"], mixed["item"]["id"]}


def test_a_duplicate_never_discloses_a_record_the_writer_may_not_read(
    service: MemoryService, admin: Access
) -> None:
    scoped = Access(frozenset({BranchState.ACTIVE}), BranchState.ACTIVE, False, principal="agent-a")
    other = Access(frozenset({BranchState.ACTIVE}), BranchState.ACTIVE, False, principal="agent-b")
    secret = service.save(admin, content="Acquisition of Initech closes Friday.", draft=True)

    mine = service.save(scoped, content="Acquisition of Initech closes Friday.", draft=True)

    # Saved as a record of its own: nothing about the invisible draft comes back.
    assert mine["write_status"] == "created"
    assert mine["item"]["id"] != secret["item"]["id"]
    assert mine["item"]["metadata"]["created_at"] >= secret["item"]["metadata"]["created_at"]
    # The writer's own retry is still idempotent; another scoped writer gets its own record.
    retry = service.save(scoped, content="Acquisition of Initech closes Friday.", draft=True)
    assert (retry["write_status"], retry["item"]["id"]) == ("duplicate", mine["item"]["id"])
    theirs = service.save(other, content="Acquisition of Initech closes Friday.", draft=True)
    assert theirs["write_status"] == "created"
    assert theirs["item"]["id"] not in {mine["item"]["id"], secret["item"]["id"]}


def test_a_duplicate_the_writer_may_read_is_still_shared_across_endpoints(
    service: MemoryService, admin: Access
) -> None:
    scoped = Access(frozenset({BranchState.ACTIVE}), BranchState.ACTIVE, False, principal="agent-a")
    first = service.save(admin, content="The office closes at 6 pm.")
    again = service.save(scoped, content="The office closes at 6 pm.")
    assert (again["write_status"], again["item"]["id"]) == ("duplicate", first["item"]["id"])
