"""The ready-to-paste connections, read by the applications' own command-line programs
(npm ``@openai/codex`` and ``@anthropic-ai/claude-code``, installed into ``.cache``; the
tests are skipped loudly without npm or the registry).

Claude Code runs the console's snippet exactly as a user pastes it (through ``bash``,
with the client's token variable set), then connects to a live server's stored client
with it. Codex reads the ``config.toml`` snippet and reports the transport it built.
Both run with a throwaway home directory: nothing of the machine's own configuration
is read or changed.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from metacortex.clients import ClientManager, Endpoint, render, token_variable_for
from tests.console.support import ConsoleLive, console_server
from tests.npm_cache import installed

pytestmark = pytest.mark.slow


@pytest.fixture
def live(tmp_path: Path) -> Iterator[ConsoleLive]:
    with console_server(tmp_path, oauth=False, metacortex_client_refresh_seconds=0) as running:
        yield running


def _snippet(endpoint: Endpoint, key: str) -> str:
    [text] = [snippet.text for snippet in render(endpoint) if snippet.key == key]
    return text


def test_claude_code_connects_to_a_stored_client_with_the_pasted_command(
    live: ConsoleLive, tmp_path: Path
) -> None:
    claude = installed("claude-code", "@anthropic-ai/claude-code", ".bin/claude")
    created = ClientManager(live.store, live.runtime.settings).create("laptop")
    variable = token_variable_for("laptop")
    url = f"{live.url}/clients/laptop/mcp"
    command = _snippet(Endpoint(url, token_variable=variable), "claude-code")
    home = tmp_path / "home"
    home.mkdir()
    env = {"PATH": os.environ["PATH"], "HOME": str(home), variable: created.token}

    added = subprocess.run(  # noqa: S603 - our own snippet, run as the user would
        [shutil.which("bash") or "/bin/bash", "-c", command.replace("claude ", f"{claude} ", 1)],
        env=env,
        cwd=home,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    checked = subprocess.run(  # noqa: S603
        [str(claude), "mcp", "get", "metacortex"],
        env=env,
        cwd=home,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )

    assert added.returncode == 0, added.stderr
    assert checked.returncode == 0, checked.stderr
    assert "✔ Connected" in checked.stdout, checked.stdout
    assert f"URL: {url}" in checked.stdout
    saved = json.loads((home / ".claude.json").read_text())
    server = saved["projects"][str(home)]["mcpServers"]["metacortex"]
    assert server == {
        "type": "http",
        "url": url,
        "headers": {"Authorization": f"Bearer {created.token}"},
    }


def test_codex_reads_the_config_toml_snippet_as_a_bearer_token_http_server(
    tmp_path: Path,
) -> None:
    codex = installed("codex", "@openai/codex", ".bin/codex")
    url = "https://memory.example.com/clients/laptop/mcp"
    home = tmp_path / "codex-home"
    home.mkdir()
    variable = token_variable_for("laptop")
    (home / "config.toml").write_text(
        _snippet(Endpoint(url, token_variable=variable), "codex") + "\n", encoding="utf-8"
    )

    shown = subprocess.run(  # noqa: S603
        [str(codex), "mcp", "get", "metacortex", "--json"],
        env={"PATH": os.environ["PATH"], "HOME": str(tmp_path), "CODEX_HOME": str(home)},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )

    assert shown.returncode == 0, shown.stderr
    transport = json.loads(shown.stdout)["transport"]
    assert transport["type"] == "streamable_http"
    assert transport["url"] == url
    assert transport["bearer_token_env_var"] == variable
