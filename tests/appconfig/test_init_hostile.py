"""``metacortex init`` against hostile and unusual files (issue 28, section 1).

Each test imitates what a repository or a user's machine can hold: real files,
symbolic links, a FIFO and directories in a temporary directory, the real command
(in this process, or as a fresh process where a traceback would show). A fake home
holds the files a link must never reach.
"""

from __future__ import annotations

import json
import os
import stat
import tomllib
from pathlib import Path
from typing import Final

import pytest

from tests.appconfig.support import READER, copy, run_init, run_init_process

BASHRC: Final = b"# ~/.bashrc: executed by bash for non-login shells\nalias ll='ls -l'\n"


@pytest.fixture
def place(place_with_reader: Path) -> Path:
    return place_with_reader


@pytest.fixture
def home(home: Path) -> Path:
    """The user's home, holding a ``.bashrc`` a repository's links aim at."""
    (home / ".bashrc").write_bytes(BASHRC)
    return home


@pytest.fixture
def repository(project: Path) -> Path:
    """A cloned repository, the current directory (its project files are the default)."""
    return project


def init_here(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    """``metacortex init`` in the current directory with its usual files."""
    from metacortex.cli.main import main

    code = main(["init", "--data-dir", "data", *argv])
    captured = capsys.readouterr()
    return code, captured.out + captured.err


def assert_one_line_refusal(
    done: object, message: str, config: Path, before: bytes | None = None
) -> None:
    import subprocess

    assert isinstance(done, subprocess.CompletedProcess)
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert "Traceback" not in done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert message in lines[0]
    assert lines[0].startswith("metacortex: ")
    if before is not None:
        assert config.read_bytes() == before


# ------------------------------------------------------------------ links
def test_a_repository_that_ships_mcp_json_bak_linked_to_bashrc_leaves_bashrc_alone(
    home: Path, repository: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 28's probe: `.mcp.json` and `.mcp.json.bak -> ~/.bashrc`, then
    `metacortex init --target claude-code --yes` (the project file is the default)."""
    original = copy("json-existing.before.json", repository / ".mcp.json")
    trap = repository / ".mcp.json.bak"
    trap.symlink_to(home / ".bashrc")

    code, out = init_here(capsys, "--target", "claude-code", "--yes")

    assert code == 0, out
    assert (home / ".bashrc").read_bytes() == BASHRC
    assert trap.is_symlink()
    assert os.readlink(trap) == str(home / ".bashrc")
    kept = repository / ".mcp.json.bak.1"
    assert kept.read_bytes() == original
    assert not kept.is_symlink()
    assert ".mcp.json.bak is a symbolic link: left alone" in out
    assert "metacortex" in json.loads((repository / ".mcp.json").read_text())["mcpServers"]


def test_a_dangling_bak_link_does_not_create_its_target(
    home: Path, repository: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    copy("json-existing.before.json", repository / ".mcp.json")
    planted = home / ".config" / "autostart" / "evil.desktop"
    planted.parent.mkdir(parents=True)
    (repository / ".mcp.json.bak").symlink_to(planted)

    code, out = init_here(capsys, "--target", "claude-code", "--yes")

    assert code == 0, out
    assert not planted.exists()
    assert (repository / ".mcp.json.bak").is_symlink()
    assert (repository / ".mcp.json.bak.1").is_file()


def test_an_earlier_regular_backup_is_replaced_by_the_new_one(
    place: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = place / "mcp.json"
    copy("json-existing.before.json", config)
    backup = place / "mcp.json.bak"
    backup.write_text("an older backup\n")
    elsewhere = place / "hard-linked"
    os.link(backup, elsewhere)  # a second name for the old backup keeps its bytes

    first = config.read_bytes()
    code, out = run_init(capsys, "cursor", config, "--yes")

    assert code == 0, out
    assert backup.read_bytes() == first
    assert elsewhere.read_text() == "an older backup\n"
    assert not (place / "mcp.json.bak.1").exists()


def test_a_repository_that_ships_mcp_json_linked_to_another_apps_file_is_refused(
    home: Path, repository: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`.mcp.json -> ~/.config/other-app/settings.json`: valid JSON the link would have
    init rewrite; refused, saying what and how to write it anyway."""
    victim = home / ".config" / "other-app" / "settings.json"
    victim.parent.mkdir(parents=True)
    victim.write_text('{"theme": "dark"}\n')
    (repository / ".mcp.json").symlink_to(victim)

    code, out = init_here(capsys, "--target", "claude-code", "--yes")

    assert code == 2
    assert f"{repository / '.mcp.json'} is a symbolic link to {victim}" in out
    assert "--follow-symlink" in out
    assert victim.read_text() == '{"theme": "dark"}\n'
    assert sorted(p.name for p in repository.iterdir()) == [".mcp.json"]


def test_a_dangling_config_link_is_refused_and_creates_nothing(
    home: Path, repository: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    planted = home / ".ssh" / "rc"
    (repository / ".mcp.json").symlink_to(planted)

    code, out = init_here(capsys, "--target", "claude-code", "--yes")

    assert code == 2
    assert "is a symbolic link" in out
    assert not planted.exists()
    assert not planted.parent.exists()


def test_a_repository_that_ships_a_linked_vscode_directory_is_refused(
    home: Path, repository: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`.vscode -> ~/.config/Code/User`: the project's file would be the user's own."""
    user = home / ".config" / "Code" / "User"
    user.mkdir(parents=True)
    (user / "mcp.json").write_text('{"servers": {}}\n')
    (repository / ".vscode").symlink_to(user, target_is_directory=True)

    code, out = init_here(capsys, "--target", "vscode", "--yes")

    assert code == 2
    assert f"{repository / '.vscode'} is a symbolic link to {user}" in out
    assert "--follow-symlink" in out
    assert (user / "mcp.json").read_text() == '{"servers": {}}\n'
    assert sorted(p.name for p in user.iterdir()) == ["mcp.json"]


def test_a_dotfiles_link_is_written_through_only_with_follow_symlink(
    place: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    dotfiles = place / "dotfiles" / "mcp.json"
    original = copy("json-existing.before.json", dotfiles)
    link = place / "mcp.json"
    link.symlink_to(dotfiles)

    refused, out = run_init(capsys, "windsurf", link, "--yes")
    assert refused == 2
    assert "run again with --follow-symlink" in out
    assert dotfiles.read_bytes() == original

    code, out = run_init(capsys, "windsurf", link, "--yes", "--follow-symlink")

    assert code == 0, out
    assert link.is_symlink()
    assert "metacortex" in json.loads(dotfiles.read_text())["mcpServers"]
    assert (place / "dotfiles" / "mcp.json.bak").read_bytes() == original


# ------------------------------------------------------------ not a file
def test_config_naming_a_directory_gets_a_one_line_refusal(place: Path) -> None:
    directory = place / "cursor-config"
    directory.mkdir()

    done = run_init_process(place, "cursor", directory, "--yes")

    assert_one_line_refusal(done, f"{directory} is a directory", directory)
    assert list(directory.iterdir()) == []


def test_config_naming_a_fifo_is_refused_without_waiting_on_it(place: Path) -> None:
    fifo = place / "mcp.json"
    os.mkfifo(fifo)

    done = run_init_process(place, "cursor", fifo, "--yes")

    assert_one_line_refusal(done, "is not a regular file", fifo)
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


# ------------------------------------------------------------ what it holds
@pytest.mark.parametrize(
    ("target", "name"), [("claude-desktop", "deep.json"), ("vscode", "deep.jsonc")]
)
def test_a_100000_deep_json_file_gets_a_one_line_refusal(
    place: Path, target: str, name: str
) -> None:
    config = place / name
    depth = 100_000
    config.write_text('{"mcpServers": {}, "x": ' + "[" * depth + "]" * depth + "}\n")
    before = config.read_bytes()

    done = run_init_process(place, target, config, "--yes")

    assert_one_line_refusal(done, "nests deeper than a configuration file does", config, before)
    assert sorted(p.name for p in place.iterdir()) == [name]


@pytest.mark.parametrize(
    ("text", "repeated"),
    [
        (
            '{"mcpServers": {"a": {"command": "x"}}, "mcpServers": {"b": {"command": "y"}}}\n',
            "mcpServers 2 times",
        ),
        (
            '{"mcpServers": {"metacortex": {"command": "x"}, "metacortex": {"command": "y"}}}\n',
            "mcpServers.metacortex 2 times",
        ),
    ],
)
def test_duplicate_keys_that_the_application_reads_last_are_refused(
    place: Path, text: str, repeated: str
) -> None:
    """The applications read the last of repeated keys; init would edit the first and
    report success."""
    config = place / "mcp.json"
    config.write_text(text)

    done = run_init_process(place, "cursor", config, "--yes")

    assert_one_line_refusal(done, repeated, config, text.encode())
    assert "applications read only the last" in done.stderr
    assert sorted(p.name for p in place.iterdir()) == ["mcp.json"]


def test_duplicate_servers_in_a_vscode_file_with_comments_are_refused(
    place: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = place / "mcp.json"
    text = '{\n  // two\n  "servers": {},\n  "servers": {"a": {"type": "stdio"}},\n}\n'
    config.write_text(text)

    code, out = run_init(capsys, "vscode", config, "--yes")

    assert code == 2
    assert "servers 2 times" in out
    assert config.read_text() == text


def test_a_read_only_file_is_refused_not_silently_replaced(place: Path) -> None:
    config = place / "mcp.json"
    original = copy("json-existing.before.json", config)
    config.chmod(0o444)

    done = run_init_process(place, "cursor", config, "--yes")

    assert_one_line_refusal(done, "is read-only (mode 0444)", config, original)
    assert "chmod u+w" in done.stderr
    assert stat.S_IMODE(config.stat().st_mode) == 0o444
    assert sorted(p.name for p in place.iterdir()) == ["mcp.json"]


# ------------------------------------------------------ kept as it was found
def test_a_byte_order_mark_is_kept(place: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = place / "mcp.json"
    original = b"\xef\xbb\xbf" + copy("json-existing.before.json", config)
    config.write_bytes(original)

    code, out = run_init(capsys, "cursor", config, "--yes")

    assert code == 0, out
    written = config.read_bytes()
    assert written.startswith(b"\xef\xbb\xbf")
    assert not written[3:].startswith(b"\xef\xbb\xbf")
    assert "metacortex" in json.loads(written[3:])["mcpServers"]


@pytest.mark.parametrize(
    ("target", "golden", "load"),
    [
        ("cursor", "json-existing.before.json", json.loads),
        ("codex", "codex-existing.before.toml", tomllib.loads),
    ],
)
def test_crlf_line_endings_stay_crlf_on_every_line(
    place: Path, capsys: pytest.CaptureFixture[str], target: str, golden: str, load: object
) -> None:
    config = place / f"config.{golden.rsplit('.', 1)[1]}"
    copy(golden, config)
    config.write_bytes(config.read_bytes().replace(b"\n", b"\r\n"))

    code, out = run_init(capsys, target, config, "--yes")

    assert code == 0, out
    written = config.read_bytes()
    assert written.count(b"\n") == written.count(b"\r\n") > 10
    assert callable(load)
    assert "metacortex" in str(load(written.decode()))


@pytest.mark.parametrize(
    ("target", "golden"),
    [
        ("cursor", "json-existing.before.json"),
        ("claude-code", "json-configured-differently.before.json"),
        ("windsurf", "json-existing.before.json"),
        ("vscode", "vscode-comments.before.jsonc"),
        ("codex", "codex-existing.before.toml"),
    ],
)
@pytest.mark.parametrize(
    "flow",
    [(), ("--url", "http://127.0.0.1:8765"), ("--url", "http://127.0.0.1:8765", "--store-token")],
    ids=["local", "remote", "remote-store-token"],
)
def test_every_file_init_edits_keeps_crlf_whatever_the_target_and_the_entry(
    place: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    target: str,
    golden: str,
    flow: tuple[str, ...],
) -> None:
    """Issue 37 (Low): a CRLF file came back with LF endings. Every target, a local
    entry, a remote one, and a remote one whose token the application keeps (Codex's
    ``.env``, a header, VS Code's prompt): each file init writes keeps CRLF."""
    monkeypatch.setenv("MCP_CLIENT_PROFILES_JSON", json.dumps([READER]))
    monkeypatch.setenv("CODEX_HOME", str(place / "codex"))
    (place / "codex").mkdir()
    dotenv = place / "codex" / ".env"
    dotenv.write_bytes(b"EDITOR=vim\r\n")
    config = place / f"config.{golden.rsplit('.', 1)[1]}"
    copy(golden, config)
    config.write_bytes(config.read_bytes().replace(b"\n", b"\r\n"))

    code, out = run_init(capsys, target, config, *flow, "--yes")

    assert code == 0, out
    for written in (config.read_bytes(), dotenv.read_bytes()):
        assert written.count(b"\n") == written.count(b"\r\n")
    assert config.read_bytes().count(b"\r\n") > 10


def test_a_file_mixing_line_endings_keeps_each_lines_own(
    place: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = place / "mcp.json"
    lines = copy("json-existing.before.json", config).decode().split("\n")
    mixed = "".join(line + ("\r\n" if index < 3 else "\n") for index, line in enumerate(lines[:-1]))
    config.write_text(mixed, newline="")

    code, out = run_init(capsys, "cursor", config, "--yes")

    assert code == 0, out
    written = config.read_bytes().decode()
    assert written.split("\n")[:3] == mixed.split("\n")[:3]  # the CRLF lines as they were
    assert written.count("\r\n") == 3  # new lines take the file's usual ending, "\n"


def test_a_hostile_file_is_refused_before_a_remote_client_is_made(
    place: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    victim = place / "victim.json"
    victim.write_text("{}\n")
    link = place / "mcp.json"
    link.symlink_to(victim)

    code, out = run_init(capsys, "cursor", link, "--yes", "--url", "http://127.0.0.1:8765")

    assert code == 2
    assert "is a symbolic link" in out
    assert "Created client" not in out
    assert not (place / "data").exists()
    assert victim.read_text() == "{}\n"
