"""``metacortex client add|list|pause|resume|remove`` on a real data directory (issue 21 §2).

Before, ``client add`` printed JSON it did not keep, and run twice it showed only the
new entry. The counterpart is the real server on the same data directory: each
token the command prints is presented at its endpoint over the MCP JSON-RPC.
"""

from __future__ import annotations

import hashlib
import json
import os
from contextlib import redirect_stdout
from io import StringIO
from pathlib import Path
from typing import Any

import httpx2
import pytest
from pydantic import SecretStr

from metacortex.cli.main import main
from metacortex.config import Settings
from metacortex.providers.offline_merge import SentenceUnionMerger
from metacortex.server import create_app
from metacortex.server.events import MEMORY_EVENTS
from metacortex.service import MemoryService
from metacortex.storage.sqlite import SQLiteStore
from tests.fakes import HashingEmbedder
from tests.server.conftest import ADMIN_TOKEN, JSON_HEADERS, client_profiles

ENV_PREFIXES = ("MCP_", "METACORTEX_", "GEMINI_", "SEARCH_", "DEFAULT_FILTER", "RETRIEVAL_")


@pytest.fixture
def data_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A data directory, and no configuration from the caller's environment or cwd."""
    for name in list(os.environ):
        if name.startswith(ENV_PREFIXES):
            monkeypatch.delenv(name)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MCP_CLIENT_PROFILES_JSON", json.dumps(client_profiles()))
    return tmp_path / "data"


def _add(data_dir: Path, client_id: str, *options: str) -> Any:
    return _json(["client", "add", client_id, "--data-dir", str(data_dir), "--json", *options])


def _json(argv: list[str]) -> Any:
    out = StringIO()
    with redirect_stdout(out):
        assert main(argv) == 0
    return json.loads(out.getvalue())


async def _tools(data_dir: Path, path: str, token: str) -> httpx2.Response:
    """tools/list at ``path`` of a server on ``data_dir`` (checking the store each request)."""
    settings = Settings(  # type: ignore[call-arg]
        _env_file=None,
        metacortex_data_dir=data_dir,
        mcp_admin_token=SecretStr(ADMIN_TOKEN),
        mcp_client_profiles_json=SecretStr(json.dumps(client_profiles())),
        metacortex_client_refresh_seconds=0,
    )
    store = SQLiteStore(settings.sqlite_path)
    service = MemoryService(store, HashingEmbedder(), merger=SentenceUnionMerger())
    app = create_app(settings, service)
    try:
        async with (
            app.router.lifespan_context(app),
            httpx2.AsyncClient(
                transport=httpx2.ASGITransport(app=app), base_url="http://localhost"
            ) as http,
        ):
            return await http.post(
                path,
                headers={**JSON_HEADERS, "authorization": f"Bearer {token}"},
                json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
            )
    finally:
        store.close()


@pytest.mark.anyio
async def test_client_add_keeps_each_client_and_a_second_add_keeps_the_first(
    data_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    first = _add(data_dir, "laptop", "--tools", "search_context,fetch_context")
    second = _add(data_dir, "phone", "--url-token")

    listed = _json(["client", "list", "--data-dir", str(data_dir), "--json"])
    by_id = {client["id"]: client for client in listed}

    assert sorted(by_id) == ["laptop", "phone", "reader", "web"]
    assert by_id["web"]["source"] == "environment"
    assert by_id["laptop"]["source"] == by_id["phone"]["source"] == "store"
    assert first["client"]["tools"] == ["search_context", "fetch_context"]
    assert first["url"] == "http://127.0.0.1:8765/clients/laptop/mcp"
    assert first["token_variable"] == "METACORTEX_TOKEN_LAPTOP"
    for created in (first, second):
        answer = await _tools(data_dir, created["client"]["path"], created["token"])
        assert answer.status_code == 200, answer.text
    store = SQLiteStore(data_dir / "metacortex.sqlite3")
    try:
        kept = json.dumps(store.auth_list("client_profile"))
        events = store.read_events(MEMORY_EVENTS)
    finally:
        store.close()
    assert first["token"] not in kept
    assert hashlib.sha256(first["token"].encode()).hexdigest() in kept
    assert [e["tool_name"] for e in events] == ["client_create", "client_create"]
    assert first["token"] not in json.dumps(events)


@pytest.mark.anyio
async def test_client_pause_resume_and_remove_take_effect_on_a_server_of_the_same_store(
    data_dir: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    created = _add(data_dir, "agent")
    path, token = created["client"]["path"], created["token"]
    argv = ["--data-dir", str(data_dir)]

    assert main(["client", "pause", "agent", *argv]) == 0
    paused = await _tools(data_dir, path, token)
    assert main(["client", "resume", "agent", *argv]) == 0
    resumed = await _tools(data_dir, path, token)
    monkeypatch.setattr("sys.stdin", StringIO())  # not a terminal
    refused = main(["client", "remove", "agent", *argv])
    refused_err = capsys.readouterr().err
    kept = await _tools(data_dir, path, token)
    assert main(["client", "remove", "agent", "--yes", *argv]) == 0
    out = capsys.readouterr().out
    removed = await _tools(data_dir, path, token)

    assert paused.status_code == 403
    assert resumed.status_code == 200
    assert refused == 2
    assert "without a confirmation" in refused_err
    assert kept.status_code == 200
    assert f"removed in the SQLite store {data_dir / 'metacortex.sqlite3'}" in out
    assert removed.status_code == 401


def test_clients_from_the_environment_are_refused_with_where_to_change_them(
    data_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["client", "pause", "web", "--data-dir", str(data_dir)]) == 2
    assert "defined in MCP_CLIENT_PROFILES_JSON" in capsys.readouterr().err
    assert main(["client", "add", "web", "--data-dir", str(data_dir)]) == 2
    assert "already defined" in capsys.readouterr().err
    assert main(["client", "remove", "nobody", "--yes", "--data-dir", str(data_dir)]) == 2
    assert "no client 'nobody'" in capsys.readouterr().err


def test_client_add_prints_the_token_once_and_connections_that_do_not_hold_it(
    data_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["client", "add", "desk", "--data-dir", str(data_dir), "--url", "https://m.example"]
    assert main(argv) == 0
    out = capsys.readouterr().out

    token_line = out.split("Token, shown only now (the store keeps its sha256):\n")[1]
    token = token_line.splitlines()[0].strip()
    assert out.count(token) == 2  # the token, and the export line that loads it
    assert f"export METACORTEX_TOKEN_DESK='{token}'" in out
    assert 'url = "https://m.example/clients/desk/mcp"' in out
    assert 'bearer_token_env_var = "METACORTEX_TOKEN_DESK"' in out
    for app in ("ChatGPT", "Claude", "Claude Code", "Codex", "Cursor", "VS Code"):
        assert f"\n{app} (" in out


def test_tools_shows_the_surface_of_a_stored_client(
    data_dir: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    _add(data_dir, "reader-two", "--tools", "search_context,list_context")
    monkeypatch.setenv("METACORTEX_DATA_DIR", str(data_dir))

    shown = _json(["tools", "--profile", "reader-two", "--json"])

    assert shown["endpoint"] == "POST /clients/reader-two/mcp"
    assert [tool["name"] for tool in shown["tools"]] == ["search_context", "list_context"]
