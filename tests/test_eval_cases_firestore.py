"""On Firestore, evaluation cases live in ``retrieval_eval_cases`` (as in the original)."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest
from google.cloud import firestore

from metacortex.cli.main import main
from metacortex.config import Settings
from metacortex.domain.records import utc_now
from metacortex.errors import ConfigurationError
from metacortex.kernel.events import RETRIEVAL_QUERY_EVENTS
from metacortex.operations.eval_cases import EVAL_CASES_COLLECTION, FileCases, case_store
from metacortex.storage.base import Event
from tests.firestore_support import PROJECT, FirestoreStoreFactory

pytestmark = pytest.mark.firestore


def _events(hours_ago: float, query: str) -> list[Event]:
    at = utc_now() - timedelta(hours=hours_ago)
    search = {"client_id": "c", "event_type": "search", "query": query, "filters": {}}
    return [
        Event(RETRIEVAL_QUERY_EVENTS, at, None, search | {"result_ids": ["m1", "m2"]}),
        Event(
            RETRIEVAL_QUERY_EVENTS,
            at,
            None,
            {"client_id": "c", "event_type": "fetch", "fetched_ids": ["m2"]},
        ),
    ]


def test_imported_cases_go_to_retrieval_eval_cases_once_each(
    firestore_store_factory: FirestoreStoreFactory,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> None:
    store = firestore_store_factory()
    store.record_events(_events(72, "stale question") + _events(2, "where is the spare key"))
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("METACORTEX_STORE", "firestore")
    monkeypatch.setenv("GOOGLE_CLOUD_PROJECT", PROJECT)
    for _ in range(2):  # the same evidence imported twice is one document
        assert main(["eval", "import-events", "--lookback-hours", "24"]) == 0
    assert "written to Firestore collection retrieval_eval_cases" in capsys.readouterr().out
    documents = list(firestore.Client(project=PROJECT).collection(EVAL_CASES_COLLECTION).stream())
    assert [d.get("query") for d in documents] == ["where is the spare key"]
    assert [d.get("expected_ids") for d in documents] == [["m2"]]
    loaded = case_store(Settings(_env_file=None, metacortex_store="firestore"), None).load()  # type: ignore[call-arg]
    assert [(c.query, c.expected_ids) for c in loaded] == [("where is the spare key", ("m2",))]


def test_a_named_file_is_used_on_any_store_and_sqlite_needs_one(tmp_path: Path) -> None:
    settings = Settings(_env_file=None, metacortex_data_dir=tmp_path)  # type: ignore[call-arg]
    assert isinstance(case_store(settings, tmp_path / "cases.ndjson"), FileCases)
    with pytest.raises(ConfigurationError, match="name a cases file"):
        case_store(settings, None)
