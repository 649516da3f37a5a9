"""``metacortex init --url --store-token`` (issue 29, section 3): the new client's token
kept where each application reads it, instead of an ``export`` line; the export line
stays the fallback, and the output says which was done.

Real files in a temporary directory, real clients in the data directory's SQLite
store (their stored sha256 is checked against what was kept).
"""

from __future__ import annotations

import json
import re
import stat
import tomllib
from pathlib import Path
from typing import Final

import pytest

from metacortex.access.profiles import token_digest
from metacortex.appconfig.jsonfile import load
from metacortex.cli.main import main
from metacortex.clients.lookup import profiles_with_stored
from metacortex.config import Settings
from tests.appconfig.support import copy, run_init

URL: Final = "http://127.0.0.1:8765"
EXPORT: Final = re.compile(r"^  export [A-Z0-9_]+='[^']+'$", re.M)


@pytest.fixture
def codex_home(place: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = place / "codex-home"
    home.mkdir()
    monkeypatch.setenv("CODEX_HOME", str(home))
    return home


def init(capsys: pytest.CaptureFixture[str], target: str, config: Path, *extra: str) -> str:
    code, out = run_init(capsys, target, config, "--url", URL, *extra)
    assert code == 0, out
    return out


def stored_digest(place: Path, client_id: str) -> bytes | None:
    client = profiles_with_stored(Settings(metacortex_data_dir=place / "data")).get(client_id)
    return None if client is None else client.token_sha256


def test_codex_gets_the_token_in_its_env_file_which_it_loads_at_start(
    place: Path, codex_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    env_file = codex_home / ".env"
    env_file.write_text("# mine\nOPENAI_BASE_URL=https://proxy.example\n")
    env_file.chmod(0o644)
    config = codex_home / "config.toml"

    out = init(capsys, "codex", config, "--store-token", "--yes")

    lines = env_file.read_text().splitlines()
    assert lines[:2] == ["# mine", "OPENAI_BASE_URL=https://proxy.example"]
    assert len(lines) == 3
    variable, token = lines[2].split("=", 1)
    assert variable == "METACORTEX_TOKEN_CODEX"
    assert token[0] == token[-1] == "'"
    assert stored_digest(place, "codex") == token_digest(token.strip("'"))
    assert stat.S_IMODE(env_file.stat().st_mode) == 0o600
    entry = tomllib.loads(config.read_text())["mcp_servers"]["metacortex"]
    assert entry["bearer_token_env_var"] == "METACORTEX_TOKEN_CODEX"
    assert f"is kept as METACORTEX_TOKEN_CODEX in {env_file} (mode 0600)" in out
    assert EXPORT.search(out) is None
    assert token.strip("'") not in out


def test_a_new_codex_client_replaces_the_old_line_not_adds_one(
    place: Path, codex_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = codex_home / "config.toml"
    init(capsys, "codex", config, "--store-token", "--yes")
    assert main(["client", "remove", "codex", "--yes", "--data-dir", "data"]) == 0
    capsys.readouterr()

    init(capsys, "codex", config, "--store-token", "--yes")

    lines = (codex_home / ".env").read_text().splitlines()
    assert len(lines) == 1
    assert stored_digest(place, "codex") == token_digest(lines[0].split("=", 1)[1].strip("'"))


def test_a_codex_env_file_that_is_a_link_is_refused_before_a_client_is_made(
    place: Path, codex_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    victim = place / "profile"
    victim.write_text("export PATH=/usr/bin\n")
    (codex_home / ".env").symlink_to(victim)

    code, out = run_init(
        capsys, "codex", codex_home / "config.toml", "--url", URL, "--store-token", "--yes"
    )

    assert code == 2
    assert f"{codex_home / '.env'} is a symbolic link" in out
    assert victim.read_text() == "export PATH=/usr/bin\n"
    assert not (codex_home / "config.toml").exists()
    assert not (place / "data").exists()  # no client


@pytest.mark.parametrize(
    ("target", "servers"), [("claude-code", "mcpServers"), ("cursor", "mcpServers")]
)
def test_a_users_own_file_gets_the_token_in_its_header_and_becomes_private(
    place: Path, capsys: pytest.CaptureFixture[str], target: str, servers: str
) -> None:
    config = place / "user.json"
    copy("json-existing.before.json", config)
    config.chmod(0o644)

    out = init(capsys, target, config, "--scope", "user", "--store-token", "--yes")

    entry = json.loads(config.read_text())[servers]["metacortex"]
    authorization = entry["headers"]["Authorization"]
    assert authorization.startswith("Bearer ")
    assert stored_digest(place, target) == token_digest(authorization.removeprefix("Bearer "))
    assert stat.S_IMODE(config.stat().st_mode) == 0o600
    assert "now readable by you alone: it holds a token" in out
    assert f"is kept in the entry's Authorization header in {config}" in out
    assert EXPORT.search(out) is None
    backup = config.with_name("user.json.bak")
    assert "Bearer" not in backup.read_text()

    again, out = run_init(capsys, target, config, "--url", URL, "--scope", "user", "--yes")

    assert again == 0
    assert "already configured" in out
    assert json.loads(config.read_text())[servers]["metacortex"] == entry


def test_a_projects_file_never_gets_the_token_and_the_export_line_says_so(
    place: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = place / ".mcp.json"

    out = init(capsys, "claude-code", config, "--scope", "project", "--store-token", "--yes")

    exported = EXPORT.search(out)
    assert exported is not None
    assert f"{config} is a project's file, which others read and often commit" in out
    token = exported.group(0).split("'")[1]
    assert token not in config.read_text()
    assert stat.S_IMODE(config.stat().st_mode) == 0o600  # a new file, as always


def test_vscode_asks_for_the_token_and_keeps_it_in_its_secret_storage(
    place: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = place / "mcp.jsonc"
    copy("vscode-comments.before.jsonc", config)

    out = init(capsys, "vscode", config, "--store-token", "--yes")

    text = config.read_text()
    assert "// Servers for this workspace" in text
    data = load(text, comments=True, where="x")
    assert data["servers"]["metacortex"]["headers"] == {
        "Authorization": "Bearer ${input:metacortex_token}"
    }
    assert data["inputs"] == [
        {
            "type": "promptString",
            "id": "metacortex_token",
            "description": f"MetaCortex token of client vscode ({URL}/clients/vscode/mcp)",
            "password": True,
        }
    ]
    shown = out.split("Paste this token there", 1)[1].splitlines()[1].strip()
    assert stored_digest(place, "vscode") == token_digest(shown)
    assert shown not in text
    assert EXPORT.search(out) is None


def test_the_preview_offers_to_store_the_token_and_says_where(
    place: Path, codex_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = codex_home / "config.toml"

    offered = init(capsys, "codex", config)
    chosen = init(capsys, "codex", config, "--store-token")
    header = init(capsys, "cursor", place / "m.json", "--scope", "user", "--store-token")

    assert f"Add --store-token to keep the token in {codex_home / '.env'} (mode 0600)" in offered
    assert f"The token is kept in {codex_home / '.env'} (mode 0600)" in chosen
    assert '"Authorization": "Bearer <token>"' in header  # the token itself comes with --yes
    assert not (place / "data").exists()
    assert not (codex_home / ".env").exists()


def test_store_token_without_url_is_refused(
    place: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out = run_init(capsys, "codex", place / "config.toml", "--store-token", "--yes")
    assert code == 2
    assert "--store-token goes with --url" in out
    assert list(place.iterdir()) == []
