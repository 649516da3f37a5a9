"""The first run of a new user, as the README tells it (issue 21 §4, "first-run friction").

Counterparts: the real ``metacortex serve`` in its own process (SQLite store, the
local embedding model) with its standard error on a real pseudo-terminal, as in a
terminal window (``tests.terminal_support``); the commands it prints, run as
printed in processes without a terminal; the console's sign-in over loopback HTTP
as a browser posts it; ``metacortex smoke`` with no variable set.
"""

from __future__ import annotations

import os
import re
import shlex
import signal
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from tests.abuse_support import sign_in
from tests.server.conftest import STATELESS_MODE
from tests.terminal_support import Terminal, terminal

pytestmark = pytest.mark.slow

PASSPHRASE = "first run owner passphrase"
_OWN_PREFIXES = ("MCP_", "METACORTEX_", "GEMINI_", "GOOGLE_", "GCLOUD_", "FIRESTORE_")


@dataclass
class Served:
    url: str
    banner: str
    data_dir: Path
    env: dict[str, str]
    term: Terminal
    cwd: Path


def _clean_env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(_OWN_PREFIXES)}
    return {**env, "HOME": str(home)}


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    pytest.importorskip(
        "metacortex.providers.local", reason="LOCAL EMBEDDER NOT AVAILABLE: serve cannot start"
    )
    root = tmp_path_factory.mktemp("first-run")
    (root / "home").mkdir()
    data_dir = root / "server-data"  # not the default: the passphrase must follow it
    env = _clean_env(root / "home")
    command = [sys.executable, "-m", "metacortex.cli.main", "serve", "--port", "0"]
    with terminal() as term:
        process = subprocess.Popen(  # noqa: S603 (our own interpreter and arguments)
            [*command, "--data-dir", str(data_dir)],
            cwd=root,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=term.follower_fd,
            text=True,
        )
        try:
            assert process.stdout is not None
            lines: list[str] = []
            for line in process.stdout:
                lines.append(line)
                if line.startswith("Scoped endpoints"):
                    break
            banner = "".join(lines)
            match = re.search(r"is ready at (http://\S+)", banner)
            assert match is not None, "serve exited before it was ready:\n" + banner
            yield Served(match.group(1), banner, data_dir, env, term, root)
        finally:
            process.send_signal(signal.SIGINT)  # Ctrl-C: graceful shutdown
            code = process.wait(timeout=60)
            if process.stdout is not None:
                process.stdout.close()
            assert code == 0


def _run(
    argv: list[str], served: Served, stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(  # noqa: S603 (the command serve printed, or our own)
        argv,
        input=stdin,
        stdin=subprocess.DEVNULL if stdin is None else None,
        capture_output=True,
        text=True,
        cwd=served.cwd,
        env=served.env,
        start_new_session=True,
        timeout=180,
        check=False,
    )


def test_the_banner_names_the_console_and_the_command_that_sets_its_passphrase(
    served: Served,
) -> None:
    assert f"  console           {served.url}/console\n" in served.banner
    lines = served.banner.splitlines()
    intro = lines.index("No owner passphrase is set; set one to sign in to the console:")
    command = shlex.split(lines[intro + 1])
    assert command[-4:] == ["owner", "set-passphrase", "--data-dir", str(served.data_dir)]

    done = _run(command, served, stdin=PASSPHRASE + "\n")  # exactly as printed
    assert done.returncode == 0, done.stderr
    assert f"set in the SQLite store in {served.data_dir} " in done.stderr

    with httpx2.Client(base_url=served.url, timeout=30, follow_redirects=False) as http:
        signed_in = sign_in(http, PASSPHRASE)
        assert signed_in.status_code == 303, signed_in.text
        assert http.get("/console").status_code == 200


def test_the_banner_names_the_admin_token_as_the_server_and_smoke_read_it(
    served: Served,
) -> None:
    token_file = served.data_dir / "admin-token"
    assert f'export MCP_ADMIN_TOKEN="$(cat {token_file})"' in served.banner
    assert 'bearer_token_env_var = "MCP_ADMIN_TOKEN"' in served.banner
    assert "METACORTEX_TOKEN" not in served.banner


def test_smoke_passes_against_the_local_server_with_no_variable_set(served: Served) -> None:
    smoke = [sys.executable, "-m", "metacortex.cli.main", "smoke", "--url", f"{served.url}/mcp"]
    done = _run([*smoke, "--data-dir", str(served.data_dir)], served)

    assert done.returncode == 0, done.stderr
    assert "smoke test passed (admin-read-write)" in done.stdout


@pytest.mark.anyio
async def test_serve_on_a_terminal_logs_one_readable_line_per_tool_call(served: Served) -> None:
    token = (served.data_dir / "admin-token").read_text().strip()
    headers = {"authorization": f"Bearer {token}"}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=60) as http,
        Client(
            streamable_http_client(f"{served.url}/mcp", http_client=http), mode=STATELESS_MODE
        ) as client,
    ):
        await client.call_tool("list_context", {"filter_topic": "first-run-log-check"})
        line = served.term.wait_for(lambda text: "list_context" in text)

    assert re.match(
        r"^\d\d:\d\d:\d\d INFO +POST /mcp 200 [\d.]+ ms · list_context ok [\d.]+ ms "
        r"client_id=default$",
        line,
    ), line
    assert not [text for text in served.term.seen if text.startswith("{")]
