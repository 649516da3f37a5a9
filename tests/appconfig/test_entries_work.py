"""The entries ``metacortex init`` writes, read by their real counterparts: Codex's own
CLI (npm ``@openai/codex``, the connector matrix's pinned install) lists the servers it
wrote into ``config.toml`` (stdio and remote) and sends the token ``--store-token``
kept in its ``.env``, the command of a written entry, started by the MCP SDK's stdio
client as an application would, serves MetaCortex, and a remote entry, with the token
of its printed export line, reaches a running ``metacortex serve`` through the SDK's
streamable-HTTP client."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
import tomllib
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Final

import httpx2
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from metacortex.access.profiles import token_digest
from metacortex.cli.main import main
from metacortex.clients.lookup import profiles_with_stored
from metacortex.config import Settings
from tests.appconfig.conftest import ENV_PREFIXES
from tests.connectors.npm_tools import install
from tests.processes import WatchedProcess

pytestmark = pytest.mark.slow
EXPORT: Final = re.compile(r"^  export (?P<variable>[A-Z0-9_]+)='(?P<token>[^']+)'$", re.M)


def codex_get(codex: Path, home: Path) -> subprocess.CompletedProcess[str]:
    """``codex mcp get metacortex --json`` with ``home`` as Codex's home; it succeeded."""
    environment = {"CODEX_HOME": str(home), "HOME": str(home), "PATH": "/usr/bin:/bin"}
    done = subprocess.run(  # noqa: S603 (the pinned Codex binary, fixed arguments)
        [str(codex), "mcp", "get", "metacortex", "--json"],
        env=environment,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-1500:]
    return done


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

    done = codex_get(tools.codex, home)

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


# ------------------------------------------------------------------ remote entries
@pytest.fixture
def served(place: Path) -> Iterator[tuple[Path, str]]:
    """A real ``metacortex serve`` on ``data`` (clients re-read on every request, so one
    created meanwhile is accepted at once): the data directory and the server's base URL."""
    pytest.importorskip(
        "metacortex.providers.local", reason="LOCAL EMBEDDER NOT AVAILABLE: serve cannot start"
    )
    data_dir = place / "data"
    env = {k: v for k, v in os.environ.items() if not k.startswith(ENV_PREFIXES)}
    env["METACORTEX_CLIENT_REFRESH_SECONDS"] = "0"
    command = [sys.executable, "-m", "metacortex.cli.main", "serve", "--port=0"]
    process = WatchedProcess(
        [*command, f"--data-dir={data_dir}"], "is ready at ", env=env, cwd=place
    )
    process.wait_ready(180, "metacortex serve")
    try:
        line = next(line for line in process.log if "is ready at " in line)
        yield data_dir, line.split("is ready at ", 1)[1].split()[0]
    finally:
        process.stop()


@pytest.mark.anyio
async def test_the_remote_entry_init_wrote_reaches_the_running_server(
    place: Path, served: tuple[Path, str], capsys: pytest.CaptureFixture[str]
) -> None:
    data_dir, base = served
    config = place / "config.toml"
    argv = ["init", "--target", "codex", "--url", base, "--config", str(config)]
    assert main([*argv, "--data-dir", str(data_dir), "--yes"]) == 0
    printed = capsys.readouterr().out
    entry = tomllib.loads(config.read_text())["mcp_servers"]["metacortex"]
    exported = EXPORT.search(printed)
    assert exported is not None, printed
    assert exported["variable"] == entry["bearer_token_env_var"]
    assert entry["url"] == f"{base}/clients/codex/mcp"

    # As Codex does with bearer_token_env_var: Authorization: Bearer <the variable's value>.
    headers = {"authorization": f"Bearer {exported['token']}"}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=60) as http,
        Client(streamable_http_client(entry["url"], http_client=http)) as client,
    ):
        saved = await client.call_tool(
            "save_context", {"content": "The remote entry works: Codex saves here."}
        )
        found = await client.call_tool("search_context", {"query": "does the remote entry work"})

    assert not saved.is_error, saved.content
    assert not found.is_error, found.content
    assert saved.structured_content is not None
    assert found.structured_content is not None
    memory_id = saved.structured_content["item"]["id"]
    assert found.structured_content["matches"][0]["id"] == memory_id


def test_codex_lists_the_remote_server_init_wrote(
    place: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tools = install()
    if isinstance(tools, str):
        pytest.skip(f"CODEX CLI NOT AVAILABLE: {tools}")
    home = place / "codex-home"
    home.mkdir()
    argv = ["init", "--target", "codex", "--config", str(home / "config.toml")]
    code = main([*argv, "--url", "https://memory.example.com", "--data-dir", "data", "--yes"])
    assert code == 0, capsys.readouterr()

    done = codex_get(tools.codex, home)

    transport = json.loads(done.stdout)["transport"]
    assert transport["type"] == "streamable_http"
    assert transport["url"] == "https://memory.example.com/clients/codex/mcp"
    assert transport["bearer_token_env_var"] == "METACORTEX_TOKEN_CODEX"


# ------------------------------------------------------------ --store-token, Codex
class _Recorder(BaseHTTPRequestHandler):
    """Answers every request 500 and keeps (path, Authorization) of each."""

    seen: list[tuple[str, str | None]]

    def do_POST(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        self.rfile.read(length)
        self.seen.append((self.path, self.headers.get("authorization")))
        self.send_response(500)
        self.send_header("content-length", "0")
        self.end_headers()

    do_GET = do_POST

    def log_message(self, format: str, *args: object) -> None:
        return


@pytest.fixture
def recorder() -> Iterator[tuple[str, list[tuple[str, str | None]]]]:
    """A loopback HTTP server that records what it is sent: its base URL and the list."""
    seen: list[tuple[str, str | None]] = []
    handler = type("Recorder", (_Recorder,), {"seen": seen})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", seen
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def test_codex_sends_the_token_init_kept_in_its_env_file(
    place: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    recorder: tuple[str, list[tuple[str, str | None]]],
) -> None:
    """``init --url --store-token`` puts the token in ``$CODEX_HOME/.env``; Codex, started
    with nothing in its environment, loads that file and sends the token as its bearer
    (offline: its model provider is the same recorder, so the run ends in an error after
    Codex has started its MCP servers)."""
    tools = install()
    if isinstance(tools, str):
        pytest.skip(f"CODEX CLI NOT AVAILABLE: {tools}")
    base, seen = recorder
    home = place / "codex-home"
    home.mkdir()
    monkeypatch.setenv("CODEX_HOME", str(home))
    (home / "config.toml").write_text(
        'model_provider = "offline"\nmodel = "offline"\n\n[model_providers.offline]\n'
        f'name = "offline"\nbase_url = "{base}/v1"\nwire_api = "responses"\n'
        "request_max_retries = 0\nstream_max_retries = 0\n"
    )
    argv = ["init", "--target", "codex", "--config", str(home / "config.toml"), "--url", base]
    assert main([*argv, "--store-token", "--data-dir", "data", "--yes"]) == 0, capsys.readouterr()
    assert "export " not in capsys.readouterr().out

    environment = {"CODEX_HOME": str(home), "HOME": str(home), "PATH": "/usr/bin:/bin"}
    done = subprocess.run(  # noqa: S603 (the pinned Codex binary, fixed arguments)
        [str(tools.codex), "exec", "--skip-git-repo-check", "say hi"],
        env=environment,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )

    sent = [auth for path, auth in seen if path == "/clients/codex/mcp"]
    assert sent, (seen, done.stderr[-2000:])
    assert sent[0] is not None
    assert sent[0].startswith("Bearer ")
    client = profiles_with_stored(Settings(metacortex_data_dir=place / "data")).get("codex")
    assert client is not None
    assert client.token_sha256 == token_digest(sent[0].removeprefix("Bearer "))
