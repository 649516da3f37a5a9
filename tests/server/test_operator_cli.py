"""Operator commands run as an operator would: smoke against a live server over real
HTTP; backup, restore, reembed and eval on a real data directory."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

import pytest

from metacortex.cli.main import main
from metacortex.composition import build_store
from metacortex.config import Settings
from metacortex.domain.records import utc_now
from metacortex.kernel.events import RETRIEVAL_QUERY_EVENTS
from metacortex.operations.evaluation import Case, load_cases, save_cases
from metacortex.service import Access
from metacortex.storage.base import Event
from tests.server.conftest import ADMIN_TOKEN, READER_TOKEN, WEB_ORIGIN, WEB_TOKEN, LiveServer

pytestmark = pytest.mark.slow


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.chdir(tmp_path)  # no stray .env
    for name in ("MCP_ADMIN_TOKEN", "MCP_SMOKE_TOKEN", "MCP_SMOKE_MODE", "MCP_SMOKE_ORIGIN"):
        monkeypatch.delenv(name, raising=False)


def test_the_admin_smoke_test_passes_and_retires_its_memory(
    live: LiveServer, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("MCP_ADMIN_TOKEN", ADMIN_TOKEN)
    assert main(["smoke", "--url", f"{live.url}/mcp"]) == 0
    err = capsys.readouterr().err
    assert "deprecate_context (smoke memory retired)" in err
    assert ADMIN_TOKEN not in err


def test_the_browser_smoke_test_uses_the_origin_and_the_url_token(
    live: LiveServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MCP_SMOKE_TOKEN", WEB_TOKEN)
    monkeypatch.setenv("MCP_SMOKE_ORIGIN", WEB_ORIGIN)
    monkeypatch.setenv("MCP_SMOKE_URL_TOKEN", "true")
    url = f"{live.url}/clients/web/mcp"
    assert main(["smoke", "--url", url, "--mode", "browser-read-write"]) == 0


def test_the_search_only_smoke_test_passes_on_a_read_only_profile(
    live: LiveServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MCP_SMOKE_TOKEN", READER_TOKEN)
    url = f"{live.url}/clients/reader/mcp"
    assert main(["smoke", "--url", url, "--mode", "search-only"]) == 0


def test_a_smoke_test_with_a_wrong_token_fails_clearly(
    live: LiveServer, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("MCP_SMOKE_TOKEN", "wrong-" + "x" * 40)
    assert main(["smoke", "--url", f"{live.url}/mcp"]) == 1
    assert "FAIL" in capsys.readouterr().err


def test_backup_restore_and_reembed_round_trip_a_data_directory(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source, target = tmp_path / "source", tmp_path / "target"
    # Seed a real store through the service the CLI would build.
    from metacortex.composition import build_service
    from metacortex.config import Settings
    from metacortex.service import Access

    service = build_service(Settings(_env_file=None, metacortex_data_dir=source))  # type: ignore[call-arg]
    saved = service.save(Access.admin(), content="The build cache lives on the NAS.")["item"]
    service.store.close()

    assert main(["backup", str(tmp_path / "b"), "--data-dir", str(source)]) == 0
    assert (
        main(["backup", str(tmp_path / "full.sqlite3"), "--full", "--data-dir", str(source)]) == 0
    )
    assert main(["restore", str(tmp_path / "b"), "--data-dir", str(target)]) == 0
    assert main(["reembed", "--data-dir", str(target)]) == 0
    out = capsys.readouterr().out
    assert "1 memories written" in out
    assert "restored 1 memories" in out
    assert "re-embedded 1 memories" in out

    restored = build_service(Settings(_env_file=None, metacortex_data_dir=target))  # type: ignore[call-arg]
    assert restored.fetch(Access.admin(), id=saved["id"])["item"] == saved
    assert (tmp_path / "full.sqlite3").stat().st_size > 0
    restored.store.close()


def test_eval_generates_an_isolated_corpus_and_reports_metrics(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("METACORTEX_DATA_DIR", str(tmp_path / "data"))
    cases = tmp_path / "cases.ndjson"
    assert main(["eval", "generate", str(cases), "--topics", "1", "--per-topic", "8"]) == 0
    assert main(["eval", "run", str(cases)]) == 0
    out = capsys.readouterr().out
    assert "recall@5" in out
    assert (tmp_path / "data" / "eval" / "metacortex.sqlite3").exists()
    assert not (tmp_path / "data" / "metacortex.sqlite3").exists()


def test_eval_runs_cases_against_a_deployed_endpoint_through_mcp(
    live: LiveServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    admin = Access.admin()
    saved = live.service.save(admin, content="The boiler is serviced every October", topic="house")
    cases = tmp_path / "cases.ndjson"
    save_cases([Case("when is the boiler serviced", (saved["item"]["id"],), "house")], cases)
    monkeypatch.setenv("MCP_ADMIN_TOKEN", ADMIN_TOKEN)
    assert main(["eval", "run", str(cases), "--url", f"{live.url}/mcp", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["cases"] == 1
    assert report["recall"]["@5"] == 1.0
    assert report["latency_ms_p50"] > 0


def test_eval_against_an_endpoint_with_a_wrong_token_fails_clearly(
    live: LiveServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    cases = tmp_path / "cases.ndjson"
    save_cases([Case("anything", ("some-id",))], cases)
    monkeypatch.setenv("MCP_SMOKE_TOKEN", "wrong-" + "x" * 40)
    assert main(["eval", "run", str(cases), "--url", f"{live.url}/mcp"]) == 1
    err = capsys.readouterr().err
    assert "failed" in err
    assert "Traceback" not in err


def test_import_events_keeps_only_the_lookback_window(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / "data"
    monkeypatch.setenv("METACORTEX_DATA_DIR", str(data))
    store = build_store(Settings(_env_file=None, metacortex_data_dir=data))  # type: ignore[call-arg]
    now = utc_now()

    def search_then_fetch(hours_ago: float, query: str) -> list[Event]:
        at = now - timedelta(hours=hours_ago)
        search = {"client_id": "c", "event_type": "search", "query": query, "filters": {}}
        fetch = {"client_id": "c", "event_type": "fetch", "fetched_ids": ["m1"]}
        return [
            Event(RETRIEVAL_QUERY_EVENTS, at, None, search | {"result_ids": ["m1"]}),
            Event(RETRIEVAL_QUERY_EVENTS, at, None, fetch),
        ]

    store.record_events(search_then_fetch(48, "old question") + search_then_fetch(1, "recent"))
    store.close()
    cases = tmp_path / "cases.ndjson"
    assert main(["eval", "import-events", str(cases), "--lookback-hours", "24"]) == 0
    assert "1 cases from 2 events of the last 24 h" in capsys.readouterr().out
    assert [case.query for case in load_cases(cases)] == ["recent"]
    assert main(["eval", "import-events", str(cases)]) == 0
    assert len(load_cases(cases)) == 2
