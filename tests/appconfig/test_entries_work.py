"""The entries ``metacortex init`` writes, read by their real counterparts: Codex's own
CLI (npm ``@openai/codex``, the connector matrix's pinned install) lists the server it
wrote into ``config.toml``, and the command of a written entry, started by the MCP
SDK's stdio client as an application would, serves MetaCortex."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Final

import pytest
from mcp import Client, StdioServerParameters

from metacortex.cli.main import main
from tests.connectors.npm_tools import install

pytestmark = pytest.mark.slow
ENV_PREFIXES: Final = ("MCP_", "METACORTEX_", "GEMINI_", "SEARCH_", "DEFAULT_FILTER", "RETRIEVAL_")


@pytest.fixture
def place(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for name in list(os.environ):
        if name.startswith(ENV_PREFIXES):
            monkeypatch.delenv(name)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_codex_lists_the_stdio_server_init_wrote(
    place: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tools = install()
    if isinstance(tools, str):
        pytest.skip(f"CODEX CLI NOT AVAILABLE: {tools}")
    home = place / "codex-home"
    home.mkdir()
    (home / "config.toml").write_text('model = "gpt-5-codex"  # mine\n')
    argv = ["init", "--target", "codex", "--config", str(home / "config.toml")]
    code = main([*argv, "--data-dir", "data", "--yes"])
    assert code == 0, capsys.readouterr()
    environment = {"CODEX_HOME": str(home), "HOME": str(home), "PATH": "/usr/bin:/bin"}

    done = subprocess.run(  # noqa: S603 (the pinned Codex binary, fixed arguments)
        [str(tools.codex), "mcp", "get", "metacortex", "--json"],
        env=environment,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )

    assert done.returncode == 0, done.stderr[-1500:]
    server = json.loads(done.stdout)
    assert server["enabled"] is True
    assert server["transport"]["type"] == "stdio"
    assert server["transport"]["args"] == ["stdio", "--data-dir", str(place / "data")]
    assert Path(server["transport"]["command"]).is_file()


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.mark.anyio
async def test_the_written_command_starts_a_working_server(
    place: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip(
        "metacortex.providers.local", reason="LOCAL EMBEDDER NOT AVAILABLE: stdio cannot start"
    )
    config = place / "claude_desktop_config.json"
    argv = ["init", "--target", "claude-desktop", "--config", str(config), "--data-dir", "data"]
    assert main([*argv, "--yes"]) == 0
    capsys.readouterr()
    entry = json.loads(config.read_text())["mcpServers"]["metacortex"]

    server = StdioServerParameters(command=entry["command"], args=entry["args"], cwd=place)
    async with Client(server, mode="legacy") as client:
        tools = [tool.name for tool in (await client.list_tools()).tools]

    assert "save_context" in tools
    assert (place / "data" / "metacortex.sqlite3").exists()
