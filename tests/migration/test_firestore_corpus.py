"""``metacortex migrate firestore`` on the emulator: the top-level layout, resuming, the CLI.

Documents with the record's fields at the top level (``content``, ``module_name``,
``branch_state``, ``embedding``, ``created_at`` as a Timestamp, an ISO string or
epoch milliseconds) and no term index: what earlier versions of this migration
expected (our reading, kept supported). The original's own nested layout, built
from its source, is in ``test_original_corpus.py``. Before the backfill such a
record cannot be found by keyword and a string ``created_at`` reads as 1970;
after it, both work, and a second run changes nothing.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from google.cloud import firestore
from google.cloud.firestore_v1.vector import Vector

from metacortex.cli.main import main
from metacortex.domain.records import ALL_STATES, Origin
from metacortex.migration.firestore_corpus import backfill
from metacortex.retrieval.text import terms
from metacortex.storage.base import MemoryFilter
from metacortex.storage.firestore import META_SUFFIX
from tests.firestore_support import PROJECT, FirestoreStoreFactory

pytestmark = pytest.mark.firestore

COLLECTION = "memory_vectors"
DIMENSION = 768
MARCH = datetime(2025, 3, 1, 10, 0, tzinfo=UTC)


def _vector(seed: int) -> Vector:
    return Vector([1.0 if i == seed else 0.0 for i in range(DIMENSION)])


def _original(content: str, created_at: Any, seed: int, **extra: Any) -> dict[str, Any]:
    return {
        "content": content,
        "module_name": "garden",
        "branch_state": "active",
        "modality": "text",
        "embedding": _vector(seed),
        "created_at": created_at,
        **extra,
    }


@pytest.fixture
def client(firestore_store_factory: FirestoreStoreFactory) -> firestore.Client:
    firestore_store_factory()  # wipes the emulator and points the environment at it
    return firestore.Client(project=PROJECT)


def _seed(client: firestore.Client) -> None:
    memories = client.collection(COLLECTION)
    memories.document("m1").set(_original("Tomatoes need staking in June", MARCH, 1))
    memories.document("m2").set(
        _original("The shed key hangs by the back door", "2025-04-02T08:30:00.000Z", 2)
    )
    memories.document("m3").set(_original("Compost turned every two weeks", 1746000000000, 3))
    memories.document("m4").set(
        _original("Basil goes by the kitchen window", MARCH, 4, embedding=[0.0] * DIMENSION)
    )
    memories.document("m5").set(_original("Water lilies in the pond", "last spring", 5))
    memories.document("m6").set({"module_name": "garden", "branch_state": "active"})


def test_a_dry_run_reports_every_fix_and_writes_nothing(client: firestore.Client) -> None:
    _seed(client)
    before = {d.id: d.to_dict() for d in client.collection(COLLECTION).stream()}
    report = backfill(client, COLLECTION)
    assert (report.scanned, report.changed, len(report.refused)) == (6, 4, 2)
    assert report.fixes["term index (keyword search) added"] == 4
    assert report.fixes["created_at: ISO text -> Timestamp"] == 1
    assert report.fixes["created_at: epoch ms -> Timestamp"] == 1
    assert report.fixes["embedding: array -> Vector"] == 1
    assert any("last spring" in why for _, why in report.refused)
    assert {d.id: d.to_dict() for d in client.collection(COLLECTION).stream()} == before
    assert not client.collection(COLLECTION + META_SUFFIX).document("migration").get().exists


def test_after_the_backfill_original_records_are_found_by_keyword_and_by_time(
    client: firestore.Client, firestore_store_factory: FirestoreStoreFactory
) -> None:
    _seed(client)
    store = firestore_store_factory(collection=COLLECTION)
    everything = MemoryFilter(states=ALL_STATES)
    april = MemoryFilter(states=ALL_STATES, created_after=datetime(2025, 4, 1, tzinfo=UTC))
    assert store.lexical_search(terms("shed key"), everything, 5) == []
    unmigrated = store.get("m2")
    assert unmigrated is not None
    assert unmigrated.created_at.year == 1970  # a string created_at is unreadable

    report = backfill(client, COLLECTION, apply=True)
    assert report.changed == 4

    found = store.lexical_search(terms("shed key"), everything, 5)
    assert [hit.memory.id for hit in found] == ["m2"]
    m2 = store.get("m2")
    assert m2 is not None
    assert m2.created_at == datetime(2025, 4, 2, 8, 30, tzinfo=UTC)
    assert m2.retrieval_text == m2.content
    assert m2.provenance.origin is Origin.LEGACY_IMPORT
    dated = {m.id for m in store.list_page(april, 10, None)}
    assert dated == {"m2", "m3"}
    assert isinstance(client.collection(COLLECTION).document("m4").get().get("embedding"), Vector)
    # the embedding and unknown fields are left alone; the second run finds nothing
    again = backfill(client, COLLECTION, apply=True)
    assert (again.changed, again.scanned) == (0, 6)


def test_an_interrupted_backfill_resumes_after_the_last_committed_page(
    client: firestore.Client,
) -> None:
    _seed(client)
    pages = []

    def stop_after_first_page(count: int) -> None:
        pages.append(count)
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        backfill(
            client,
            COLLECTION,
            apply=True,
            page_size=2,
            advance=stop_after_first_page,
        )
    resumed = backfill(client, COLLECTION, apply=True, page_size=2)
    assert resumed.resumed_after == "m2"
    assert resumed.scanned == 4
    assert backfill(client, COLLECTION, restart=True).changed == 0


def test_the_command_runs_dry_first_then_applies(
    client: firestore.Client,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    _seed(client)
    monkeypatch.setenv("GOOGLE_CLOUD_PROJECT", PROJECT)
    monkeypatch.setenv("MEMORY_COLLECTION", COLLECTION)
    assert main(["migrate", "firestore"]) == 0
    dry = capsys.readouterr()
    assert "would update 4" in dry.out
    assert "nothing was written" in dry.out
    assert "dry run" in dry.err
    assert main(["migrate", "firestore", "--apply"]) == 0
    applied = capsys.readouterr().out
    assert "updated 4" in applied
    assert "refused 2 document(s), left as they are" in applied
    assert main(["migrate", "firestore", "--apply"]) == 0
    assert "updated 0" in capsys.readouterr().out


def test_an_embedding_model_without_its_dimension_is_one_clear_error(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["migrate", "firestore", "--embedding-model", "text-embedding-004"]) == 2
    assert "must be MODEL:DIMENSION, e.g. text-embedding-004:768" in capsys.readouterr().err
