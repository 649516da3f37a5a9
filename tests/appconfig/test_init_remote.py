"""``metacortex init --url``: HTTP entries for a remote server, with a client of their own.

Golden files per format (our reading of each application's documented format; the
sources are in ``appconfig/targets.py``), for a new file and one holding other
servers; re-runs that change nothing, malformed files refused before any client is
made, Claude Desktop refused. The clients are real ones in the data directory's
SQLite store, read back through the owner's API; ``tests/server/test_init_remote_e2e.py``
connects with what is written.
"""

from __future__ import annotations

import json
import re
import subprocess
import tomllib
from pathlib import Path
from typing import Final

import pytest

from metacortex.access.profiles import token_digest
from metacortex.cli.main import main
from metacortex.clients import ClientManager
from metacortex.clients.lookup import profiles_with_stored
from metacortex.config import Settings
from metacortex.storage.sqlite import SQLiteStore
from tests.appconfig.support import (
    GOLDEN,
    assert_malformed_file_refused_untouched,
    copy,
    run_init,
)
from tests.filesystems import can_mount, tmpfs
from tests.firestore_support import PROJECT, FirestoreStoreFactory, firestore_settings
from tests.server.surface_snapshot import tool_names

URL: Final = "http://127.0.0.1:8765"
EXPORT: Final = re.compile(r"^  export (?P<variable>[A-Z0-9_]+)='(?P<token>[^']+)'$", re.M)


@pytest.fixture
def place(place_with_reader: Path) -> Path:
    return place_with_reader


def init(
    capsys: pytest.CaptureFixture[str], target: str, config: Path, *extra: str, url: str = URL
) -> tuple[int, str]:
    return run_init(capsys, target, config, "--url", url, *extra)


def settings(place: Path) -> Settings:
    return Settings(metacortex_data_dir=place / "data")


def stored_clients(place: Path) -> list[str]:
    store = SQLiteStore(place / "data" / "metacortex.sqlite3")
    try:
        return [c.id for c in ClientManager(store, settings(place)).list() if c.source == "store"]
    finally:
        store.close()


# ----------------------------------------------------------------- new files
@pytest.mark.parametrize(
    ("target", "suffix", "variable"),
    [
        ("claude-code", "json", "METACORTEX_TOKEN_CLAUDE_CODE"),
        ("codex", "toml", "METACORTEX_TOKEN_CODEX"),
        ("cursor", "json", "METACORTEX_TOKEN_CURSOR"),
        ("vscode", "jsonc", "METACORTEX_TOKEN_VSCODE"),
        ("windsurf", "json", "METACORTEX_TOKEN_WINDSURF"),
    ],
)
def test_a_new_file_gets_an_http_entry_and_the_application_a_client(
    place: Path, capsys: pytest.CaptureFixture[str], target: str, suffix: str, variable: str
) -> None:
    config = place / "nested" / f"config.{suffix}"

    code, out = init(capsys, target, config, "--yes")

    assert code == 0, out
    assert config.read_text() == (GOLDEN / f"{target}-remote-new.after.{suffix}").read_text()
    assert stored_clients(place) == [target]
    exports = EXPORT.findall(out)
    assert [found[0] for found in exports] == [variable]  # printed once
    token = exports[0][1]
    assert token not in config.read_text()
    assert "the store keeps only its sha256" in out
    client = profiles_with_stored(settings(place)).get(target)
    assert client is not None
    assert client.token_sha256 == token_digest(token)
    assert list(client.tools) == tool_names("laptop")


@pytest.mark.parametrize(
    ("target", "before", "after"),
    [
        ("codex", "codex-existing.before.toml", "codex-remote-existing.after.toml"),
        ("vscode", "vscode-comments.before.jsonc", "vscode-remote-comments.after.jsonc"),
    ],
)
def test_an_existing_file_keeps_everything_else_and_a_rerun_changes_nothing(
    place: Path, capsys: pytest.CaptureFixture[str], target: str, before: str, after: str
) -> None:
    config = place / before
    original = copy(before, config)

    code, out = init(capsys, target, config, "--yes")

    assert code == 0, out
    assert config.read_text() == (GOLDEN / after).read_text()
    backup = config.with_name(config.name + ".bak")
    assert backup.read_bytes() == original
    modified = config.stat().st_mtime_ns
    # The same server however the URL is spelled: no second entry, no second client.
    for url in (URL, f"{URL}/", f"{URL}/mcp", f"{URL}/clients/{target}/mcp"):
        again, out = init(capsys, target, config, "--yes", url=url)
        assert again == 0, out
        assert f"client {target!r} at {URL}/clients/{target}/mcp) is already configured" in out
        assert EXPORT.search(out) is None
    assert config.stat().st_mtime_ns == modified
    assert backup.read_bytes() == original
    assert stored_clients(place) == [target]


def test_an_entry_whose_client_was_removed_gets_a_new_client_not_a_second_entry(
    place: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = place / "config.toml"
    init(capsys, "codex", config, "--yes")
    assert main(["client", "remove", "codex", "--yes", "--data-dir", "data"]) == 0
    capsys.readouterr()

    code, out = init(capsys, "codex", config, "--yes")

    assert code == 0, out
    assert EXPORT.search(out) is not None  # a new client, a new token
    assert stored_clients(place) == ["codex"]
    assert list(tomllib.loads(config.read_text())["mcp_servers"]) == ["metacortex"]


def test_another_name_gets_another_client_whose_id_says_which(
    place: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = place / "mcp.json"
    init(capsys, "cursor", config, "--yes")

    code, out = init(capsys, "cursor", config, "--yes", "--name", "memory-work")

    assert code == 0, out
    assert "Created client 'cursor-2'" in out
    assert EXPORT.findall(out)[0][0] == "METACORTEX_TOKEN_CURSOR_2"
    servers = json.loads(config.read_text())["mcpServers"]
    assert list(servers) == ["metacortex", "memory-work"]
    assert servers["memory-work"]["url"] == f"{URL}/clients/cursor-2/mcp"
    assert stored_clients(place) == ["cursor", "cursor-2"]


def test_a_local_entry_under_the_name_is_replaced_by_the_remote_one(
    place: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = place / ".mcp.json"
    copy("json-configured-differently.before.json", config)

    code, out = init(capsys, "claude-code", config, "--yes")

    assert code == 0, out
    assert "This replaces the existing entry 'metacortex'." in out
    servers = json.loads(config.read_text())["mcpServers"]
    assert list(servers) == ["metacortex", "github"]
    assert servers["metacortex"]["url"] == f"{URL}/clients/claude-code/mcp"


# ------------------------------------------------------------ an existing client
def test_an_existing_client_is_used_and_its_token_is_not_shown(
    place: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["client", "add", "laptop", "--data-dir", "data"]) == 0
    capsys.readouterr()
    config = place / "config.toml"

    code, out = init(capsys, "codex", config, "--yes", "--client", "laptop")

    assert code == 0, out
    assert EXPORT.search(out) is None
    assert "reads the token of client 'laptop' from METACORTEX_TOKEN_LAPTOP" in out
    assert "cannot be shown again" in out
    assert "metacortex client remove laptop" in out
    server = tomllib.loads(config.read_text())["mcp_servers"]["metacortex"]
    assert server == {
        "url": f"{URL}/clients/laptop/mcp",
        "bearer_token_env_var": "METACORTEX_TOKEN_LAPTOP",
    }
    assert stored_clients(place) == ["laptop"]
    again, out = init(capsys, "codex", config, "--yes", "--client", "laptop")
    assert again == 0
    assert "already configured" in out


def test_an_environment_client_named_in_the_url_is_used(
    place: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = place / "mcp.json"
    code, out = init(capsys, "cursor", config, "--yes", url=f"{URL}/clients/reader/mcp")
    assert code == 0, out
    entry = json.loads(config.read_text())["mcpServers"]["metacortex"]
    assert entry["url"] == f"{URL}/clients/reader/mcp"
    assert entry["headers"] == {"Authorization": "Bearer ${env:METACORTEX_TOKEN_READER}"}
    assert not (place / "data").exists()  # nothing created: the client is the environment's


def test_an_unknown_client_is_refused_before_anything_is_written(
    place: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out = init(capsys, "codex", place / "c.toml", "--yes", "--client", "nobody")
    assert code == 2
    assert "no client 'nobody' in the SQLite store" in out
    assert "metacortex client add nobody" in out
    assert not (place / "c.toml").exists()


# ------------------------------------------------------------------ refusals
@pytest.mark.parametrize(
    ("target", "name", "message"),
    [
        ("claude-code", "json-malformed.before.json", "is not valid JSON (Expecting"),
        ("cursor", "json-not-an-object.before.json", "mcpServers is not an object"),
        ("vscode", "vscode-malformed.before.jsonc", "is not valid JSON with comments"),
        ("codex", "codex-malformed.before.toml", "is not valid TOML"),
        ("codex", "codex-not-a-table.before.toml", "mcp_servers is not a table"),
    ],
)
def test_a_malformed_file_is_refused_untouched_and_no_client_is_created(
    place: Path, capsys: pytest.CaptureFixture[str], target: str, name: str, message: str
) -> None:
    # No data directory is left either: no client was made.
    assert_malformed_file_refused_untouched(place, capsys, target, name, message, "--url", URL)


def test_a_client_created_for_a_file_that_cannot_be_written_is_removed_again(
    place: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The file lives on a read-only file system (a real read-only tmpfs): the client made
    for it is removed, and the refusal names the file."""
    if not can_mount():
        pytest.skip("READ-ONLY FILE SYSTEM NOT AVAILABLE: mounting a tmpfs needs root")
    try:
        with tmpfs(place / "readonly", read_only=True) as directory:
            code, out = init(capsys, "codex", directory / "config.toml", "--yes")
            assert list(directory.iterdir()) == []
    except subprocess.CalledProcessError as error:
        pytest.skip(f"READ-ONLY FILE SYSTEM NOT AVAILABLE: {error.stderr!r}")

    assert code == 2
    assert "config.toml could not be written (Read-only file system)" in out
    assert EXPORT.search(out) is None
    assert stored_clients(place) == []


def test_claude_desktop_is_refused_for_a_remote_server(
    place: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = place / "claude_desktop_config.json"
    code, out = init(capsys, "claude-desktop", config, "--yes")
    assert code == 2
    assert "adds remote MCP servers as connectors in its own settings" in out
    assert "no client was created" in out
    assert list(place.iterdir()) == []


def test_without_yes_it_shows_the_entry_and_the_client_it_would_create(
    place: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out = init(capsys, "codex", place / "c.toml")
    assert code == 0
    assert '+url = "http://127.0.0.1:8765/clients/codex/mcp"' in out
    assert "With --yes it creates client 'codex' for Codex in the SQLite store" in out
    assert "Nothing was written; no client was created." in out
    assert EXPORT.search(out) is None
    assert list(place.iterdir()) == []


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("ftp://memory.example.com", "must start with https://"),
        ("memory.example.com/mcp", "must start with https://"),
        ("https:///mcp", "names no host"),
        ("https://memory.example.com/mcp?auth_token=x", "takes no query or fragment"),
        ("https://me:secret@memory.example.com", "must not hold credentials"),
        ("http://127.0.0.1:99999", "is not a URL"),
    ],
)
def test_a_url_that_names_no_server_is_refused(
    place: Path, capsys: pytest.CaptureFixture[str], url: str, message: str
) -> None:
    code, out = init(capsys, "codex", place / "c.toml", "--yes", url=url)
    assert code == 2
    assert message in out
    assert list(place.iterdir()) == []


def test_a_public_server_gets_its_https_endpoint_and_a_note_on_the_store(
    place: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = place / "c.toml"
    code, out = init(capsys, "codex", config, "--yes", url="https://Memory.Example.com/mcp/")
    assert code == 0, out
    server = tomllib.loads(config.read_text())["mcp_servers"]["metacortex"]
    assert server["url"] == "https://memory.example.com/clients/codex/mcp"
    assert "the server at https://memory.example.com must serve that store" in out
    assert "unencrypted" not in out
    _, plain = init(capsys, "codex", place / "d.toml", url="http://memory.example.com")
    assert "http:// to another machine sends the token unencrypted" in plain


@pytest.mark.firestore
def test_with_firestore_configured_the_client_is_kept_there(
    place: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    firestore_store_factory: FirestoreStoreFactory,
) -> None:
    """The store the settings point at is the one a deployed server reads: Firestore."""
    monkeypatch.setenv("METACORTEX_STORE", "firestore")
    monkeypatch.setenv("GOOGLE_CLOUD_PROJECT", PROJECT)
    config = place / "c.toml"

    code, out = init(capsys, "codex", config, "--yes", url="https://memory.example.com")

    assert code == 0, out
    assert f"Created client 'codex' in Firestore (project {PROJECT}" in out
    assert "must serve that store" not in out  # a note for a SQLite store only
    token = EXPORT.findall(out)[0][1]
    store = firestore_store_factory()
    client = ClientManager(store, firestore_settings()).get("codex")
    assert client.source == "store"
    stored = profiles_with_stored(firestore_settings()).get("codex")
    assert stored is not None
    assert stored.token_sha256 == token_digest(token)
    assert not (place / "data").exists()
    again, out = init(capsys, "codex", config, "--yes", url="https://memory.example.com/mcp")
    assert again == 0
    assert "already configured" in out
