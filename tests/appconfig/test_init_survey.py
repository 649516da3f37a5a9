"""``metacortex init`` as a new user meets it (issue 29, section 1): without ``--target``
it looks at the applications' files that exist (the user's in a fake home, the
project's in the current directory), previews the change for each and writes
nothing; with ``--target`` it says which file it writes, and whose, before writing.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from metacortex.appconfig.targets import TARGETS, Scope
from metacortex.cli.main import main
from metacortex.config import ApplicationDirs
from tests.appconfig.support import copy


def init(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    code = main(["init", "--data-dir", "data", *argv])
    captured = capsys.readouterr()
    return code, captured.out + captured.err


def snapshot(*roots: Path) -> dict[str, bytes]:
    return {
        str(path): path.read_bytes()
        for root in roots
        for path in sorted(root.rglob("*"))
        if path.is_file()
    }


def test_without_a_target_it_previews_each_file_it_finds_and_writes_nothing(
    home: Path, project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A user with Cursor and Codex set up, in a project that ships `.mcp.json`."""
    copy("json-existing.before.json", home / ".cursor" / "mcp.json")
    copy("codex-existing.before.toml", home / ".codex" / "config.toml")
    copy("json-existing.before.json", project / ".mcp.json")
    before = snapshot(home, project)

    code, out = init(capsys)

    assert code == 0, out
    assert snapshot(home, project) == before  # nothing written, no .bak, no data directory
    for found in (home / ".cursor" / "mcp.json", home / ".codex" / "config.toml"):
        assert f"+++ {found} (after)" in out
    assert f"+++ {project / '.mcp.json'} (after)" in out
    assert "metacortex init --target cursor --scope user --data-dir data --yes" in out
    assert "metacortex init --target claude-code --scope project --data-dir data --yes" in out
    not_found = out.split("Not found", 1)[1]
    for missing in (
        home / ".config" / "Claude" / "claude_desktop_config.json",
        home / ".claude.json",
        home / ".codeium" / "windsurf" / "mcp_config.json",
        project / ".vscode" / "mcp.json",
    ):
        assert str(missing) in not_found
    assert "--target windsurf" in not_found
    assert "Nothing was written" in out.splitlines()[-1]


def test_without_a_target_a_malformed_file_is_named_and_the_others_still_previewed(
    home: Path, project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    copy("json-malformed.before.json", home / ".cursor" / "mcp.json")
    copy("json-existing.before.json", project / ".mcp.json")

    code, out = init(capsys)

    assert code == 0, out
    assert f"Not previewed: {home / '.cursor' / 'mcp.json'} is not valid JSON" in out
    assert f"+++ {project / '.mcp.json'} (after)" in out


def test_without_a_target_yes_and_config_are_refused(
    home: Path, project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    copy("json-existing.before.json", project / ".mcp.json")
    before = snapshot(home, project)

    code, out = init(capsys, "--yes")
    assert code == 2
    assert "--yes writes one application's file: name it with --target" in out

    code, out = init(capsys, "--config", "x.json")
    assert code == 2
    assert "--config needs --target" in out
    assert snapshot(home, project) == before


@pytest.mark.parametrize(
    ("target", "scope"),
    [(target.key, scope) for target in TARGETS.values() for scope in target.scopes],
)
def test_each_target_says_which_file_it_writes_and_whose_before_writing(
    home: Path, project: Path, capsys: pytest.CaptureFixture[str], target: str, scope: Scope
) -> None:
    code, out = init(capsys, "--target", target, "--scope", scope, "--yes")

    assert code == 0, out
    dirs = ApplicationDirs(home=home, codex_home=None, xdg_config_home=None, appdata=None)
    written = TARGETS[target].path(scope, dirs, project)
    assert written.is_file()
    whose = "the project's file in" if scope == "project" else "the user's file: yours alone"
    said = out.index(f"{TARGETS[target].app}: {written}\n  {whose}")
    assert said < out.index(f"Wrote {written}")


def test_a_file_named_with_config_is_called_that_until_scope_says_whose(
    place: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = place / "somewhere.json"
    code, out = init(capsys, "--target", "cursor", "--config", str(config))
    assert code == 0
    assert "the file --config names (add --scope user if it is yours alone" in out
    code, out = init(capsys, "--target", "cursor", "--config", str(config), "--scope", "user")
    assert "the user's file: yours alone" in out
    assert not config.exists()


def test_the_entry_written_after_a_survey_is_the_one_it_previewed(
    home: Path, project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    copy("json-existing.before.json", home / ".cursor" / "mcp.json")
    _, survey = init(capsys)
    previewed = survey.split(f"+++ {home / '.cursor' / 'mcp.json'} (after)", 1)[1]

    code, out = init(capsys, "--target", "cursor", "--scope", "user", "--yes")

    assert code == 0, out
    entry = json.loads((home / ".cursor" / "mcp.json").read_text())["mcpServers"]["metacortex"]
    added = [line for line in previewed.splitlines() if line.startswith("+")]
    assert f'"command": "{entry["command"]}",' in "\n".join(added)
    assert f'"{entry["args"][-1]}"' in "\n".join(added)
