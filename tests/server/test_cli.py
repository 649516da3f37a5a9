"""The ``metacortex`` command: serve's safety rules and token handling, tools, client add."""

from __future__ import annotations

import argparse
import gc
import importlib
import json
import os
import signal
import stat
import subprocess
import sys
from pathlib import Path

import httpx2
import pytest
from pydantic import SecretStr

from metacortex.access.profiles import load_profiles
from metacortex.cli.admin_token import ensure_admin_token
from metacortex.cli.main import _COMMANDS, main
from metacortex.cli.surface import surface
from metacortex.config import Settings
from metacortex.storage.base import EmbeddingIdentity
from metacortex.storage.sqlite import SQLiteStore
from tests.server.conftest import ADMIN_TOKEN, client_profiles
from tests.server.surface_snapshot import tool_names

ENV_PREFIXES = ("MCP_", "METACORTEX_", "GEMINI_", "SEARCH_", "DEFAULT_FILTER", "RETRIEVAL_")


pytestmark = pytest.mark.usefixtures("restore_logging")  # serve configures logging


@pytest.fixture
def clean_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """No configuration from the caller's environment or a .env file in the cwd."""
    for name in list(os.environ):
        if name.startswith(ENV_PREFIXES):
            monkeypatch.delenv(name)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_serve_refuses_a_public_bind_without_an_admin_token(
    clean_env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = clean_env / "data"
    public = "0.0.0.0"  # noqa: S104 (the bind being refused)
    code = main(["serve", "--host", public, "--port", "0", "--data-dir", str(data)])
    assert code == 2
    err = capsys.readouterr().err
    assert "refusing to listen on 0.0.0.0 without MCP_ADMIN_TOKEN" in err
    assert "Traceback" not in err
    assert not data.exists()  # nothing was created, no token minted


def test_serve_names_a_bad_configuration_without_a_traceback(
    clean_env: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("MCP_CLIENT_PROFILES_JSON", '[{"id": "x", "allowedTools": []}]')
    code = main(["serve", "--port", "0", "--data-dir", str(clean_env / "data")])
    assert code == 2
    err = capsys.readouterr().err
    assert "configuration error: MCP_CLIENT_PROFILES_JSON[0] (id 'x'): token" in err
    assert "Traceback" not in err


def test_the_admin_token_is_generated_once_with_0600_and_reused(clean_env: Path) -> None:
    settings = Settings(metacortex_data_dir=clean_env / "data")
    first = ensure_admin_token(settings)
    assert first.created
    assert first.path == settings.admin_token_path
    assert stat.S_IMODE(first.path.stat().st_mode) == 0o600
    assert first.path.read_text().strip() == first.value
    assert first.settings.mcp_admin_token is not None
    assert first.settings.mcp_admin_token.get_secret_value() == first.value
    load_profiles(first.settings)  # strong enough for the admin profile
    first.path.chmod(0o644)
    second = ensure_admin_token(settings)
    assert not second.created
    assert second.value == first.value
    assert stat.S_IMODE(first.path.stat().st_mode) == 0o600  # tightened again
    from_env = ensure_admin_token(Settings(mcp_admin_token=SecretStr(ADMIN_TOKEN)))
    assert (from_env.path, from_env.created, from_env.value) == (None, False, ADMIN_TOKEN)


def test_tools_json_prints_the_exact_surface_of_a_profile(
    clean_env: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("MCP_CLIENT_PROFILES_JSON", json.dumps(client_profiles()))
    assert main(["tools", "--json", "--profile", "web"]) == 0
    printed = json.loads(capsys.readouterr().out)
    web = load_profiles(Settings()).get("web")
    assert web is not None
    assert printed == surface(web)
    assert [tool["name"] for tool in printed["tools"]] == [
        "save_context",
        "search_context",
        "fetch_context",
    ]
    assert all("inputSchema" in t and "outputSchema" in t for t in printed["tools"])
    assert [r["uri"] for r in printed["resources"]] == [
        "memory://spaces",
        "memory://topics",
        "memory://graph",
        "memory://recent",
    ]
    assert [t["uriTemplate"] for t in printed["resourceTemplates"]] == ["memory://{id}"]
    assert [p["name"] for p in printed["prompts"]] == ["context"]
    assert main(["tools"]) == 0
    human = capsys.readouterr().out
    assert "search_context  [read-only]" in human
    assert "deprecate_context  [writes, idempotent]" in human
    assert "prompt correct_memory(" in human
    assert "prompt context(topic?, space?, max_chars?)" in human
    assert "resource memory://{id}" in human
    assert main(["tools", "--profile", "nobody"]) == 2
    assert "known profiles: default, reader, web" in capsys.readouterr().err


# ------------------------------------------------------------- serve, for real
def _start(data_dir: Path, env: dict[str, str]) -> subprocess.Popen[str]:
    command = [sys.executable, "-m", "metacortex.cli.main", "serve", "--port", "0"]
    return subprocess.Popen(  # noqa: S603 (our own interpreter and arguments)
        [*command, "--data-dir", str(data_dir)],
        cwd=data_dir.parent,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )


def _banner(process: subprocess.Popen[str]) -> str:
    """stdout up to the banner's last line (printed once the model is loaded)."""
    assert process.stdout is not None
    lines: list[str] = []
    for line in process.stdout:
        lines.append(line)
        if " client snippets" in line:
            return "".join(lines)
    raise AssertionError("serve exited before it was ready:\n" + "".join(lines))


@pytest.fixture
def serve_env(clean_env: Path) -> dict[str, str]:
    pytest.importorskip(
        "metacortex.providers.local", reason="LOCAL EMBEDDER NOT AVAILABLE: serve cannot start"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(ENV_PREFIXES)}
    return env


@pytest.mark.slow
def test_serve_shows_a_new_token_once_then_only_where_it_is(
    clean_env: Path, serve_env: dict[str, str]
) -> None:
    """Between the two starts the owner sets the passphrase: the second banner's next
    step is signing in, and the command names the console the first server had."""
    data_dir = clean_env / "data"
    outputs = []
    signed_up: list[str] = []
    for _ in range(2):
        with _start(data_dir, serve_env) as process:
            try:
                banner = _banner(process)
                url = banner.split("is ready at ", 1)[1].split()[0]
                token = (data_dir / "admin-token").read_text().strip()
                assert httpx2.get(f"{url}/healthz", timeout=30).json() == {"status": "ok"}
                listed = httpx2.post(
                    f"{url}/mcp",
                    json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
                    headers={
                        "authorization": f"Bearer {token}",
                        "accept": "application/json, text/event-stream",
                        "mcp-protocol-version": "2025-11-25",
                    },
                    timeout=30,
                )
                assert len(listed.json()["result"]["tools"]) == len(tool_names("default"))
                outputs.append((banner, token))
            finally:
                process.send_signal(signal.SIGINT)  # Ctrl-C: graceful shutdown
            assert process.wait(timeout=60) == 0
            if not signed_up:
                signed_up.append(_set_passphrase(data_dir, serve_env))
    (first, token), (second, same_token) = outputs
    assert token == same_token
    assert stat.S_IMODE((data_dir / "admin-token").stat().st_mode) == 0o600
    assert first.count(token) == 1
    assert "shown only this once" in first
    assert token not in second
    assert str(data_dir / "admin-token") in second
    first_url = first.split("is ready at ", 1)[1].split()[0]
    second_url = second.split("is ready at ", 1)[1].split()[0]
    assert "Next: set the owner passphrase" in first
    assert signed_up[0].rstrip().endswith(f"sign in at {first_url}/console")
    assert f"Next: sign in at {second_url}/console with the owner passphrase." in second
    assert "set-passphrase" not in second


def _set_passphrase(data_dir: Path, env: dict[str, str]) -> str:
    """``metacortex owner set-passphrase`` with the passphrase piped in: what it says."""
    done = subprocess.run(
        [sys.executable, "-m", "metacortex.cli.main", "owner", "set-passphrase"],
        input="a passphrase of several words\n",
        capture_output=True,
        text=True,
        cwd=data_dir.parent,
        env={**env, "METACORTEX_DATA_DIR": str(data_dir)},
        timeout=120,
        check=True,
    )
    return done.stderr


def test_the_command_table_names_what_each_module_registers() -> None:
    for module_name, names in _COMMANDS.items():
        commands = argparse.ArgumentParser().add_subparsers()
        importlib.import_module(module_name).add_parser(commands)
        assert tuple(commands.choices) == names, module_name


def test_serve_imports_no_other_command() -> None:
    """Only the named command's module is imported (start-up time, issue 23)."""
    others = [module for module in _COMMANDS if module != "metacortex.cli.serve"]
    probe = (
        "import sys\n"
        "from metacortex.cli.main import build_parser\n"
        "build_parser(['serve', '--port', '0'])\n"
        f"print([m for m in {others!r} if m in sys.modules])\n"
    )
    loaded = subprocess.run(  # noqa: S603 (our own interpreter and script)
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    ).stdout
    assert loaded.strip() == "[]"


def test_an_unknown_command_is_refused_with_every_command_listed(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["no-such-command"])
    assert exit_info.value.code == 2
    error = capsys.readouterr().err
    for names in _COMMANDS.values():
        for name in names:
            assert f"'{name}'" in error


def test_a_start_that_fails_after_binding_leaves_the_collector_on(
    clean_env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """serve pauses the garbage collector while it loads; a failed load turns it back on."""
    data = clean_env / "data"
    data.mkdir()
    store = SQLiteStore(data / "metacortex.sqlite3")
    store.bind_embedding(EmbeddingIdentity(model="another-model", dimension=384))
    store.close()
    code = main(["serve", "--port", "0", "--data-dir", str(data)])
    assert code == 2
    assert "holds vectors from another-model" in capsys.readouterr().err
    assert gc.isenabled()
