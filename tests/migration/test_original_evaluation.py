"""The original's evaluation data on the emulator: its events become cases, its cases load.

Counterpart: ``memory_events``, ``retrieval_query_events`` and
``retrieval_eval_cases`` documents written as the TypeScript MetaCortex writes them
(``original_metacortex.py``: flat fields, numeric ``timestamp``, ``positive_ids``,
no ``saved_at``).
"""

from __future__ import annotations

import time

import pytest
from google.cloud import firestore

from metacortex.cli.main import main
from metacortex.config import Settings
from metacortex.operations.eval_cases import EVAL_CASES_COLLECTION, case_store
from metacortex.operations.evaluation import run_cases
from metacortex.providers.offline_merge import SentenceUnionMerger
from metacortex.service import MemoryService
from metacortex.storage.firestore import FirestoreStore
from tests.migration.original_metacortex import MEMORY_COLLECTION
from tests.migration.support import original_model, the_original

pytestmark = pytest.mark.firestore

HOUR_MS = 60 * 60 * 1000


@pytest.fixture(autouse=True)
def _cases_on_firestore(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("METACORTEX_STORE", "firestore")


def test_import_events_turns_the_originals_searches_and_fetches_into_cases(
    client: firestore.Client, capsys: pytest.CaptureFixture[str]
) -> None:
    original = the_original(client)
    original.now_ms = int(time.time() * 1000) - 72 * HOUR_MS
    old = original.remember("The old deploy script lives in ops/legacy.", "ops")
    original.search_call("old deploy script", [old])  # three days ago: outside the window
    original.fetch_call(old)
    original.now_ms = int(time.time() * 1000) - 2 * HOUR_MS
    timeout = original.remember("Uploads time out after 30 seconds.", "kmp-networking")
    backoff = original.remember("Retries back off exponentially.", "kmp-networking")
    original.search_call("upload timeout", [backoff, timeout], filter_topic="kmp-networking")
    original.fetch_call(timeout)
    # retrieval logging off (the original's default): only memory_events hold the evidence
    original.search_call("retry policy", [backoff], retrieval_logging=False, client_id="claude")
    original.fetch_call(backoff, retrieval_logging=False, client_id="claude")
    long_query = "why do uploads fail " + "on slow networks " * 12  # cut at 160 in the log
    original.search_call(long_query, [timeout], retrieval_logging=False)
    original.fetch_call(timeout, retrieval_logging=False)

    assert main(["eval", "import-events", "--lookback-hours", "24"]) == 0

    out = capsys.readouterr().out
    assert "2 cases from" in out
    assert "of the TypeScript MetaCortex's" in out
    assert "1 searches left out: their logged query was cut at 160 characters" in out
    saved = {
        d.get("query"): (d.get("expected_ids"), d.get("topic"))
        for d in client.collection(EVAL_CASES_COLLECTION).stream()
    }
    assert saved == {
        "upload timeout": ([timeout], "kmp-networking"),
        "retry policy": ([backoff], None),
    }


def test_the_originals_saved_cases_load_and_run(client: firestore.Client) -> None:
    original = the_original(client)
    timeout = original.remember("Uploads time out after 30 seconds.", "kmp-networking")
    wrong = original.remember("Release 2.0 ships in March.", "release-timeline")
    right = original.remember("Release 2.0 ships in April.", "release-timeline")
    original.deprecate(wrong, right, reason="corrected")
    original.eval_case("observed-e1", "upload timeout", [timeout], filter_topic="kmp-networking")
    original.eval_case("observed-e2", "release in March", [wrong], filter_state="deprecated")
    client.collection(EVAL_CASES_COLLECTION).document("junk").set({"note": "not a case"})
    assert main(["migrate", "firestore", "--apply"]) == 0

    source = case_store(Settings(), None)
    cases = source.load()

    assert [(c.query, c.expected_ids, c.topic, c.state) for c in cases] == [
        ("upload timeout", (timeout,), "kmp-networking", None),
        ("release in March", (wrong,), None, "deprecated"),
    ]
    assert cases[0].label == "original observed_events observed-e1"
    assert source.skipped == ["junk"]
    store = FirestoreStore(client, MEMORY_COLLECTION)
    service = MemoryService(store, original_model(), merger=SentenceUnionMerger())
    report = run_cases(service, cases, limit=5)
    assert report.hit[1] == 1.0
