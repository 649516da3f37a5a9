"""One bad document never stops ``migrate firestore`` nor is silently mangled.

Counterpart: the original's documents (``original_metacortex.py``) among documents
damaged the ways a long-lived collection gets damaged: hand edits, other
programs, a failed script. Each bad one is refused, named with the field at fault,
counted and left exactly as it was; every good one is migrated; the dry run
reports exactly what ``--apply`` does.
"""

from __future__ import annotations

from typing import Any

import pytest
from google.cloud import firestore
from google.cloud.firestore_v1.vector import Vector

from metacortex.cli.main import main
from metacortex.migration.firestore_corpus import backfill
from tests.migration.original_metacortex import MEMORY_COLLECTION
from tests.migration.support import the_original

pytestmark = pytest.mark.firestore


def _top_level(content: str, **fields: Any) -> dict[str, Any]:
    return {
        "content": content,
        "module_name": "ops",
        "branch_state": "active",
        "modality": "text",
        "created_at": "2025-06-01T10:00:00Z",
        **fields,
    }


def _nested(client: firestore.Client, source_id: str, **changes: Any) -> dict[str, Any]:
    """A copy of one of the original's documents with some fields changed."""
    data = client.collection(MEMORY_COLLECTION).document(source_id).get().to_dict() or {}
    data.update(changes)
    return data


BAD_REASONS = {
    "bad-embedding-text": "embedding[0] is a str, not a number",
    "bad-embedding-maps": "embedding[0] is a dict, not a number",
    "bad-year-zero": "created_at is outside the supported range",
    "bad-800kb": "content is 800000 characters; the limit is 20000",
    "bad-derived-letters": "derived_from is a string, not a list of strings",
    "bad-topic-list": "module_name is a list, not a string",
    "bad-no-state": "no state: metadata.branch_state is missing",
    "bad-metadata-list": "metadata is a list, not a map",
    "bad-unknown-state": "metadata.branch_state 'archived' is not one of",
}


def _corpus(client: firestore.Client) -> list[str]:
    original = the_original(client)
    good = [
        original.remember(f"Runbook step {n}: restart the {name} worker.", "ops")
        for n, name in enumerate(["billing", "search", "upload", "mail", "index"])
    ]
    memories = client.collection(MEMORY_COLLECTION)
    model = _nested(client, good[0])
    bad = {
        "bad-embedding-text": _nested(client, good[1], embedding=["0.1", "0.2"]),
        "bad-embedding-maps": _nested(client, good[1], embedding=[{"x": 1.0}, {"x": 2.0}]),
        "bad-year-zero": _top_level("Year zero", created_at="0001-01-01T00:00:00+14:00"),
        "bad-800kb": {**model, "content": "x" * 800_000, "retrieval_text": "x"},
        "bad-derived-letters": _top_level("Derived from letters", derived_from="abc"),
        "bad-topic-list": _top_level("Listed topic", module_name=["x"]),
        "bad-no-state": {
            **model,
            "metadata": {k: v for k, v in model["metadata"].items() if k != "branch_state"},
        },
        "bad-metadata-list": {**model, "metadata": ["ops", "active"]},
        "bad-unknown-state": {
            **model,
            "metadata": {**model["metadata"], "branch_state": "archived"},
        },
    }
    for document_id, data in bad.items():
        memories.document(document_id).set(data)
    good.append("good-top-level")
    memories.document("good-top-level").set(
        _top_level("Staging lives in metacortex-staging.", embedding=Vector([0.5] * 768))
    )
    return good


def test_every_good_document_migrates_and_every_bad_one_is_named_and_left_alone(
    client: firestore.Client, capsys: pytest.CaptureFixture[str]
) -> None:
    good = _corpus(client)
    memories = client.collection(MEMORY_COLLECTION)
    before = {d.id: d.to_dict() or {} for d in memories.stream()}

    status = main(["migrate", "firestore", "--apply", "--page-size", "3"])

    out = capsys.readouterr().out
    assert status == 0
    assert f"updated {len(good)}\n" in out
    assert f"refused {len(BAD_REASONS)} document(s), left as they are:" in out
    for document_id, reason in BAD_REASONS.items():
        line = next(line for line in out.splitlines() if line.startswith(f"  {document_id}: "))
        assert reason in line, line
    after = {d.id: d.to_dict() or {} for d in memories.stream()}
    for document_id in BAD_REASONS:
        assert after[document_id] == before[document_id]  # not mangled, not half-written
    for document_id in good:
        assert after[document_id]["schema_version"] == 1
        assert after[document_id]["module_name"] == "ops"


def test_the_dry_run_reports_exactly_what_apply_does_and_a_second_apply_nothing(
    client: firestore.Client,
) -> None:
    _corpus(client)
    dry = backfill(client, MEMORY_COLLECTION, page_size=4)
    applied = backfill(client, MEMORY_COLLECTION, apply=True, page_size=4)
    again = backfill(client, MEMORY_COLLECTION, apply=True, page_size=4)

    assert dry == applied
    assert dict(dry.refused).keys() == BAD_REASONS.keys()
    assert (again.changed, dict(again.refused).keys()) == (0, BAD_REASONS.keys())
