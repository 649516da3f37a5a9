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
from metacortex.kernel.events import MEMORY_EVENTS
from metacortex.providers.offline_merge import SentenceUnionMerger
from metacortex.server.app import create_app
from metacortex.service import MemoryService
from metacortex.storage.sqlite import SQLiteStore
from tests.fakes import HashingEmbedder
from tests.owner_commands import Operator
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
    return await _post(data_dir, path, token, {"jsonrpc": "2.0", "id": 1, "method": "tools/list"})


async def _post(data_dir: Path, path: str, token: str, body: dict[str, Any]) -> httpx2.Response:
    """``body`` posted at ``path`` of a server on ``data_dir`` (the store read each request)."""
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
                path, headers={**JSON_HEADERS, "authorization": f"Bearer {token}"}, json=body
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


# ------------------------------------------------------------------ spaces (issue 30 §4)
async def _who_am_i(data_dir: Path, path: str, token: str) -> Any:
    """``who_am_i`` at ``path`` of a server on ``data_dir``: what the server grants."""
    call = {"name": "who_am_i", "arguments": {}}
    answer = await _post(
        data_dir, path, token, {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": call}
    )
    assert answer.status_code == 200, answer.text
    return answer.json()["result"]["structuredContent"]


@pytest.fixture
def team(tmp_path: Path) -> Operator:
    """Spaces family and work; Ann, a writer in family and a reader in work."""
    operator = Operator(tmp_path / "team")
    operator.root.mkdir()
    operator.json("space", "add", "family", "--name", "Family")
    operator.json("space", "add", "work", "--name", "Work")
    operator.json(
        "person", "add", "ann@example.com", "--name", "Ann", "--role", "writer",
        "--space", "family", "--space", "work:read",
    )  # fmt: skip
    return operator


@pytest.mark.anyio
async def test_a_client_of_a_person_prints_the_levels_a_server_then_grants_it(
    team: Operator,
) -> None:
    created = team.json(
        "client", "add", "ann-laptop", "--person", "ann@example.com",
        "--space", "family", "--space", "work:write", "--default-space", "family",
    )  # fmt: skip

    served = await _who_am_i(team.data_dir, created["client"]["path"], created["token"])
    listed = team.run("client", "list").stdout

    client = created["client"]
    assert (client["person"], client["person_name"]) == ("ann@example.com", "Ann")
    assert client["grants"] == {"family": "write", "work": "write"}
    # Ann is a member of work at read: the grant's write does not raise it.
    assert client["levels"] == {"family": "write", "work": "read"}
    assert {s["key"]: s["level"] for s in served["spaces"]} == client["levels"]
    assert served["default_space"] == client["default_space"] == "family"
    assert served["person"]["email"] == "ann@example.com"
    assert listed.startswith(
        "ann-laptop  [active; stored]  person=ann@example.com  levels=family:write work:read  "
        "granted=family:write work:write  default=family  tools="
    )


def test_a_client_without_a_space_gets_the_default_space_at_the_persons_level(
    team: Operator,
) -> None:
    owners = team.json("client", "add", "desk")["client"]
    team.json("person", "grant", "ann@example.com", "default:read")
    anns = team.json("client", "add", "ann-tablet", "--person", "ann@example.com")["client"]
    at_work = team.json(
        "client", "add", "ann-work", "--person", "ann@example.com", "--default-space", "work"
    )["client"]

    assert (owners["person"], owners["levels"], owners["default_space"]) == (
        "owner",
        {"default": "write"},
        "default",
    )
    assert (anns["grants"], anns["levels"]) == ({"default": "read"}, {"default": "read"})
    assert (at_work["grants"], at_work["default_space"]) == ({"work": "read"}, "work")


def test_client_add_refuses_a_space_the_person_is_not_in_naming_the_person_grant_to_run(
    team: Operator,
) -> None:
    team.json("space", "add", "garden")

    line = team.refused(
        "client", "add", "ann-laptop", "--person", "ann@example.com", "--space", "garden"
    )
    no_default = team.refused("client", "add", "ann-laptop", "--person", "ann@example.com")
    two = team.refused(
        "client", "add", "ann-laptop", "--person", "ann@example.com",
        "--space", "family", "--space", "work",
    )  # fmt: skip
    nobody = team.refused("client", "add", "x", "--person", "zed@example.com")

    assert line == (
        "metacortex: Ann is not a member of the space 'garden'; make them one first "
        f"({team.spelled('person grant ann@example.com garden')})"
    )
    assert no_default == (
        "metacortex: Ann is not a member of the space 'default', which a client gets when "
        "given no space: name its spaces (--space KEY); Ann's are: family:write work:read"
    )
    assert two == (
        "metacortex: the client gets 2 spaces (family, work): name the one calls without a "
        "space act in (--default-space KEY)"
    )
    assert nobody == (
        "metacortex: no person 'zed@example.com'; add them first "
        f"({team.spelled('person add zed@example.com --name NAME --role writer')})"
    )
    assert team.json("client", "list") == []


def test_client_grant_and_ungrant_change_a_stored_clients_spaces_and_print_its_levels(
    team: Operator,
) -> None:
    team.json("client", "add", "ann-laptop", "--person", "ann@example.com", "--space", "family")

    granted = team.json("client", "grant", "ann-laptop", "work")["client"]
    defaulted = team.json("client", "grant", "ann-laptop", "work", "--default")["client"]
    kept_default = team.refused("client", "ungrant", "ann-laptop", "work")
    ungranted = team.json("client", "ungrant", "ann-laptop", "family")["client"]
    last = team.refused("client", "ungrant", "ann-laptop", "work")

    assert (granted["grants"], granted["levels"]) == (
        {"family": "write", "work": "read"},
        {"family": "write", "work": "read"},
    )
    assert defaulted["default_space"] == "work"
    assert kept_default == (
        "metacortex: the space 'work' is the default of client 'ann-laptop': make another "
        "space its default first "
        f"({team.spelled('client grant ann-laptop family --default')})"
    )
    assert (ungranted["grants"], ungranted["levels"]) == ({"work": "read"}, {"work": "read"})
    assert last.startswith("metacortex: 'work' is the only space client 'ann-laptop' holds")
    with team.store() as store:
        events = [e["tool_name"] for e in store.read_events(MEMORY_EVENTS)]
    assert events.count("client_grant") == 2
    assert events.count("client_ungrant") == 3  # the two refusals are recorded as errors


def test_client_grant_refuses_a_client_of_the_environment_and_list_shows_its_levels(
    tmp_path: Path,
) -> None:
    operator = Operator(tmp_path, {"MCP_CLIENT_PROFILES_JSON": json.dumps(client_profiles())})
    operator.json("space", "add", "work")
    operator.json("client", "add", "desk", "--space", "work")

    refused = operator.refused("client", "grant", "web", "work")
    listed = operator.run("client", "list")

    assert refused == (
        "metacortex: client 'web' is defined in MCP_CLIENT_PROFILES_JSON, so it cannot be "
        "changed here: change that variable and restart the server"
    )
    lines = listed.stdout.splitlines()
    assert lines[0].startswith(
        "desk  [active; stored]  person=owner  levels=work:write  default=work  tools="
    )
    assert lines[2].startswith(
        "web  [active; MCP_CLIENT_PROFILES_JSON, read-only]  person=owner  "
        "levels=default:write  default=default  tools="
    )
