"""``metacortex init``: golden files per format (JSON, JSON with comments, TOML), for a new
file, one holding other servers, one already configured, and malformed ones.

The goldens are our reading of each application's documented format (the sources are
in ``appconfig/targets.py``); ``test_codex_reads_the_file_init_wrote`` checks the TOML
one with Codex's own CLI when npm can install it. ``{command}`` and ``{data_dir}`` in a
golden stand for this interpreter's ``metacortex`` and the test's data directory.
"""

from __future__ import annotations

import json
import stat
import sys
import tomllib
from pathlib import Path

import pytest

from metacortex.appconfig.edit import plan_entry, write
from metacortex.appconfig.targets import TARGETS
from metacortex.cli.init import _executable
from metacortex.cli.main import main
from metacortex.config import ApplicationDirs
from metacortex.errors import Conflict
from tests.appconfig.support import (
    GOLDEN,
    assert_malformed_file_refused_untouched,
    copy,
    run_init,
)


@pytest.fixture
def place(place_with_reader: Path) -> Path:
    return place_with_reader


def golden(name: str, data_dir: Path) -> str:
    command, leading = _executable()
    assert not leading, "the tests run from an installed metacortex script"
    text = (GOLDEN / name).read_text(encoding="utf-8")
    return text.replace("{command}", command).replace("{data_dir}", str(data_dir))


init = run_init


# ------------------------------------------------------------------ previews
@pytest.mark.parametrize(
    ("target", "suffix"),
    [("claude-desktop", "json"), ("codex", "toml"), ("vscode", "jsonc")],
)
def test_without_yes_it_shows_the_change_and_writes_nothing(
    place: Path, capsys: pytest.CaptureFixture[str], target: str, suffix: str
) -> None:
    config = place / f"config.{suffix}"
    code, out = init(capsys, target, config)
    assert code == 0
    assert "+++ " in out
    assert "Nothing was written. Run again with --yes" in out
    assert not config.exists()
    assert list(place.iterdir()) == []  # no data directory, no temporary file either


# ----------------------------------------------------------------- new files
@pytest.mark.parametrize(
    ("target", "suffix"),
    [
        ("claude-desktop", "json"),
        ("claude-code", "json"),
        ("codex", "toml"),
        ("cursor", "json"),
        ("vscode", "jsonc"),
        ("windsurf", "json"),
    ],
)
def test_a_new_file_holds_exactly_the_entry(
    place: Path, capsys: pytest.CaptureFixture[str], target: str, suffix: str
) -> None:
    config = place / "nested" / f"config.{suffix}"
    code, out = init(capsys, target, config, "--yes")
    assert code == 0, out
    assert config.read_text() == golden(f"{target}-new.after.{suffix}", place / "data")
    assert stat.S_IMODE(config.stat().st_mode) == 0o600
    assert not config.with_name(config.name + ".bak").exists()
    assert f"Wrote {config}" in out


# ------------------------------------------------------- existing, configured
@pytest.mark.parametrize(
    ("target", "before", "after"),
    [
        ("claude-desktop", "json-existing.before.json", "claude-desktop-existing.after.json"),
        ("cursor", "json-existing.before.json", "cursor-existing.after.json"),
        ("vscode", "vscode-comments.before.jsonc", "vscode-comments.after.jsonc"),
        ("codex", "codex-existing.before.toml", "codex-existing.after.toml"),
    ],
)
def test_an_existing_file_keeps_everything_else_and_gets_one_entry(
    place: Path, capsys: pytest.CaptureFixture[str], target: str, before: str, after: str
) -> None:
    config = place / before
    original = copy(before, config)
    config.chmod(0o644)

    code, out = init(capsys, target, config, "--yes")

    assert code == 0, out
    assert config.read_text() == golden(after, place / "data")
    assert config.with_name(config.name + ".bak").read_bytes() == original
    assert stat.S_IMODE(config.stat().st_mode) == 0o644  # the file's mode is kept
    again, out = init(capsys, target, config, "--yes")  # re-running changes nothing
    assert again == 0
    assert "already configured there as 'metacortex': nothing to change" in out
    assert config.read_text() == golden(after, place / "data")


def test_a_different_metacortex_entry_is_replaced_in_place_not_duplicated(
    place: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = place / "claude.json"
    copy("json-configured-differently.before.json", config)

    code, out = init(capsys, "claude-code", config, "--client", "reader", "--yes")

    assert code == 0, out
    assert "This replaces the existing entry 'metacortex'." in out
    assert config.read_text() == golden("claude-code-replaced.after.json", place / "data")
    assert list(json.loads(config.read_text())["mcpServers"]) == ["metacortex", "github"]


def test_another_name_adds_a_second_server_beside_the_first(
    place: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = place / "mcp.json"
    init(capsys, "cursor", config, "--yes")
    init(capsys, "cursor", config, "--yes", "--name", "memory-reader", "--client", "reader")
    servers = json.loads(config.read_text())["mcpServers"]
    assert list(servers) == ["metacortex", "memory-reader"]
    assert servers["memory-reader"]["args"][-2:] == ["--client", "reader"]


# ----------------------------------------------------------------- refusals
@pytest.mark.parametrize(
    ("target", "name", "message"),
    [
        ("claude-desktop", "json-malformed.before.json", "is not valid JSON (Expecting"),
        ("cursor", "json-not-an-object.before.json", "mcpServers is not an object"),
        ("vscode", "vscode-malformed.before.jsonc", "is not valid JSON with comments"),
        ("codex", "codex-malformed.before.toml", "is not valid TOML"),
        ("codex", "codex-not-a-table.before.toml", "mcp_servers is not a table"),
    ],
)
def test_a_malformed_file_is_refused_and_left_untouched(
    place: Path, capsys: pytest.CaptureFixture[str], target: str, name: str, message: str
) -> None:
    assert_malformed_file_refused_untouched(place, capsys, target, name, message)


def test_a_client_kept_in_the_store_is_found_too(
    place: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--client`` names a client created with ``metacortex client add`` (kept in the
    data directory's store), not only one of MCP_CLIENT_PROFILES_JSON."""
    assert main(["client", "add", "laptop", "--data-dir", "data"]) == 0
    capsys.readouterr()
    config = place / "mcp.json"

    code, out = init(capsys, "cursor", config, "--client", "laptop", "--yes")

    assert code == 0, out
    assert "client profile 'laptop'" in out
    entry = json.loads(config.read_text())["mcpServers"]["metacortex"]
    assert entry["args"] == ["stdio", "--data-dir", str(place / "data"), "--client", "laptop"]


def test_an_unknown_client_profile_is_refused_before_anything_is_written(
    place: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out = init(capsys, "cursor", place / "mcp.json", "--client", "nobody", "--yes")
    assert code == 2
    assert "no client profile 'nobody' (known: reader)" in out
    assert not (place / "mcp.json").exists()


# ------------------------------------------------------------ how it writes
def test_a_file_changed_after_it_was_read_is_not_overwritten(place: Path) -> None:
    config = place / "mcp.json"
    config.write_text('{"mcpServers": {}}\n')
    plan = plan_entry(config, "json", ("mcpServers",), "metacortex", {"command": "x"})
    config.write_text('{"mcpServers": {"added-meanwhile": {"command": "y"}}}\n')

    with pytest.raises(Conflict, match="changed while this ran"):
        write(plan)

    assert "added-meanwhile" in config.read_text()


def test_each_application_has_its_usual_file(tmp_path: Path) -> None:
    dirs = ApplicationDirs(home=tmp_path / "home", codex_home=None, xdg_config_home=None)
    cwd = tmp_path / "project"
    places = {
        key: {scope: target.path(scope, dirs, cwd) for scope in target.scopes}
        for key, target in TARGETS.items()
    }
    home = tmp_path / "home"
    assert places["claude-code"] == {"project": cwd / ".mcp.json", "user": home / ".claude.json"}
    assert places["codex"] == {
        "user": home / ".codex" / "config.toml",
        "project": cwd / ".codex" / "config.toml",
    }
    assert places["cursor"]["user"] == home / ".cursor" / "mcp.json"
    assert places["vscode"]["project"] == cwd / ".vscode" / "mcp.json"
    assert places["windsurf"] == {"user": home / ".codeium" / "windsurf" / "mcp_config.json"}
    if sys.platform.startswith("linux"):
        assert places["claude-desktop"] == {
            "user": home / ".config" / "Claude" / "claude_desktop_config.json"
        }
        assert places["vscode"]["user"] == home / ".config" / "Code" / "User" / "mcp.json"
    moved = ApplicationDirs(home=home, codex_home=tmp_path / "codex")
    assert TARGETS["codex"].path("user", moved, cwd) == tmp_path / "codex" / "config.toml"


def test_the_codex_entry_is_valid_toml_with_the_stdio_command(
    place: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = place / "config.toml"
    init(capsys, "codex", config, "--yes", "--client", "reader")
    server = tomllib.loads(config.read_text())["mcp_servers"]["metacortex"]
    assert server["args"] == ["stdio", "--data-dir", str(place / "data"), "--client", "reader"]
    assert Path(server["command"]).is_absolute()
