"""``metacortex migrate profiles``: the original's profiles become ones this server loads."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from pydantic import SecretStr

from metacortex.access.profiles import load_profiles
from metacortex.cli.main import main
from metacortex.config import Settings
from metacortex.errors import ConfigurationError
from metacortex.migration.profiles import migrate_profiles
from metacortex.tool_catalogue import model_tools

STRONG = "k3Jd9fQ2mZx7Lr1Vb8Nc4Wt6Yp0Hs5Ga2Ue9Io3Kq7"
ORIGINAL = [
    {
        "id": "chatgpt",
        "token": "chatgpt-secret",
        "allowedTools": ["search_context", "fetch_context"],
        "allowedOrigins": ["https://chatgpt.com/"],
        "notes": "set up in March",
    },
    {
        "id": "claude",
        "token": STRONG,
        "allowedTools": [],
        "allowedFilterStates": ["active", "wip", "archived"],
        "allowedOrigins": ["https://claude.ai/settings/connectors"],
    },
    {"id": "my agent", "token": STRONG + "x", "allowedTools": ["save_context", "recall"]},
    {"id": "chatgpt", "token": STRONG, "allowedTools": ["search_context"]},
]


def _load(profiles_json: str) -> list[str]:
    settings = Settings(_env_file=None, mcp_client_profiles_json=SecretStr(profiles_json))  # type: ignore[call-arg]
    return [profile.id for profile in load_profiles(settings).all()]


def test_the_original_profiles_are_refused_as_they_are() -> None:
    with pytest.raises(ConfigurationError):
        _load(json.dumps(ORIGINAL))


def test_migrated_profiles_load_and_every_change_is_explained() -> None:
    result = migrate_profiles(json.dumps(ORIGINAL))
    assert _load(result.as_json()) == ["default", "chatgpt", "claude", "my-agent"]
    chatgpt, claude, agent = result.profiles
    notes = "\n".join(result.notes)

    # a weak token is replaced, shown once, and only its digest is kept
    [fresh] = result.new_tokens
    assert fresh.client_id == "chatgpt"
    assert chatgpt["token_sha256"] == hashlib.sha256(fresh.token.encode()).hexdigest()
    assert "token" not in chatgpt
    # a strong token keeps working: same digest
    assert claude["token_sha256"] == hashlib.sha256(STRONG.encode()).hexdigest()
    # an empty allowedTools granted everything in the original: now said explicitly
    assert claude["allowedTools"] == list(model_tools())
    assert "granted every tool" in notes
    # origins lose their slash and path; unknown states, tools and fields go, named
    assert chatgpt["allowedOrigins"] == ["https://chatgpt.com"]
    assert claude["allowedOrigins"] == ["https://claude.ai"]
    assert claude["allowedFilterStates"] == ["active", "wip"]
    assert agent["allowedTools"] == ["save_context"]
    assert "recall" in notes
    assert "notes" in notes
    assert "archived" not in json.dumps(claude)
    # an id that cannot be a URL path is renamed; a duplicate id is skipped
    assert agent["id"] == "my-agent"
    assert "/clients/my-agent/mcp" in notes
    assert "used by an earlier entry" in notes
    # URL tokens are opt-in now
    assert not any(profile.get("allowUrlToken") for profile in result.profiles)
    assert "?auth_token= is no longer accepted" in notes


def test_url_tokens_can_be_kept_for_every_profile() -> None:
    result = migrate_profiles(json.dumps(ORIGINAL), keep_url_tokens=True)
    assert all(profile["allowUrlToken"] is True for profile in result.profiles)


def test_the_command_prints_the_new_json_and_the_new_token_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / "profiles.json"
    source.write_text(json.dumps(ORIGINAL))
    assert main(["migrate", "profiles", str(source)]) == 0
    out, err = capsys.readouterr()
    assert _load(out) == ["default", "chatgpt", "claude", "my-agent"]
    assert err.count("NEW TOKEN for chatgpt") == 1
    assert "chatgpt-secret" not in out + err


def test_profiles_that_are_not_json_are_named_as_such() -> None:
    with pytest.raises(ConfigurationError, match="not valid JSON"):
        migrate_profiles("[{")


def _operator_runs(*args: str, stdin: bytes = b"") -> subprocess.CompletedProcess[str]:
    """The command as an operator runs it, in its own process (a hang is a failure)."""
    return subprocess.run(  # noqa: S603 - fixed argv
        [sys.executable, "-m", "metacortex.cli.main", "migrate", "profiles", *args],
        input=stdin.decode("latin-1"),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


@pytest.mark.parametrize(
    ("make_source", "reason"),
    [
        (lambda d: _written(d / "deep.json", b"[" * 200_000), "nested too deeply"),
        (lambda d: _written(d / "latin1.json", b'[{"id": "caf\xe9"}]'), "not UTF-8 text"),
        (lambda d: d, "is a directory"),
        (lambda d: Path("/dev/zero"), "not a profiles file"),
    ],
    ids=["deeply-nested", "not-utf8", "a-directory", "dev-zero"],
)
def test_unreadable_profile_input_exits_2_with_one_line_and_no_traceback(
    tmp_path: Path, make_source: Callable[[Path], Path], reason: str
) -> None:
    """Counterpart: an operator's bad input, run through the real CLI in a subprocess."""
    finished = _operator_runs(str(make_source(tmp_path)))
    assert finished.returncode == 2
    assert "Traceback" not in finished.stderr
    assert len(finished.stderr.strip().splitlines()) == 1
    assert reason in finished.stderr


def test_profiles_from_standard_input_are_read_bounded() -> None:
    finished = _operator_runs("-", stdin=b" " * (2 * 1024 * 1024))
    assert finished.returncode == 2
    assert "not a profiles file" in finished.stderr


def _written(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


def test_a_profile_without_allowed_tools_keeps_the_originals_three_browser_tools() -> None:
    original: list[dict[str, Any]] = [
        {"id": "browser", "token": STRONG},
        {"id": "everything", "token": STRONG + "y", "allowedTools": []},
    ]

    result = migrate_profiles(json.dumps(original))

    browser, everything = result.profiles
    # What the original gave, and what this server gives the entry as it is: said
    # explicitly, and the server loads it.
    assert browser["allowedTools"] == ["save_context", "search_context", "fetch_context"]
    assert everything["allowedTools"] == list(model_tools())
    notes = "\n".join(result.notes)
    assert "browser: allowedTools was missing" in notes
    assert "everything: allowedTools was empty" in notes
    assert _load(result.as_json()) == ["default", "browser", "everything"]
