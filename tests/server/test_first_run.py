"""The first run of a new user, as the README tells it (issue 21 §4, "first-run friction";
issue 29 §1, "start-up says what to do next").

Counterparts: the real ``metacortex serve`` in its own process (SQLite store, the
local embedding model) from a fresh clone (the venv's bin not on ``PATH``), with
its standard error on a real pseudo-terminal, as in a terminal window
(``tests.terminal_support``); the commands it prints, run exactly as printed in
processes without a terminal; the console's sign-in over loopback HTTP as a
browser posts it; ``metacortex smoke`` with no variable set.
"""

from __future__ import annotations

import re
import shlex
import signal
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from metacortex.clients import Endpoint, render
from tests.abuse_support import sign_in
from tests.commands import BY_PATH, COMMAND, fresh_clone, run_command
from tests.server.conftest import STATELESS_MODE
from tests.terminal_support import Terminal, terminal

pytestmark = pytest.mark.slow

PASSPHRASE = "first run owner passphrase"
# Lines of the first start's banner, the admin token shown once included (issue 29: the
# console and the next step scrolled away behind 64).
BANNER_LINES = 14


@dataclass
class Served:
    url: str
    banner: str
    data_dir: Path
    env: dict[str, str]
    term: Terminal
    cwd: Path


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    root, env = fresh_clone(tmp_path_factory, "first-run")
    data_dir = root / "server-data"  # not the default: the passphrase must follow it
    with terminal() as term:
        process = subprocess.Popen(  # noqa: S603 (our own interpreter and arguments)
            [*COMMAND, "serve", "--port", "0", "--data-dir", str(data_dir)],
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
                if " client snippets" in line:  # the banner's last line
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
    return run_command(argv, env=served.env, cwd=served.cwd, stdin=stdin)


def test_the_banner_fits_a_screen_and_says_the_one_next_step_and_where_clients_are_set_up(
    served: Served,
) -> None:
    lines = served.banner.splitlines()

    assert len(lines) <= BANNER_LINES, served.banner
    assert f"  console           {served.url}/console" in lines
    assert f"Next: set the owner passphrase, then sign in at {served.url}/console:" in lines
    assert f"Connect an application at {served.url}/console/clients, or from here" in (
        served.banner
    )
    init = f"  {BY_PATH} init --target APP --data-dir {served.data_dir}"
    assert init in lines
    assert "bearer_token_env_var" not in served.banner  # the snippets are one command away
    assert lines[-1].endswith(f": {BY_PATH} client snippets --data-dir {served.data_dir}")


def test_the_readme_and_the_operator_page_say_how_many_lines_the_banner_prints(
    served: Served,
) -> None:
    """Issue 41 §1: README said "about a dozen" while 14 printed."""
    printed = len(served.banner.splitlines())
    for page in ("README.md", "docs/OPERATING.md"):
        text = (Path(__file__).resolve().parents[2] / page).read_text(encoding="utf-8")
        said = re.findall(r"prints (\d+) lines", text)
        assert said == [str(printed)], page


def test_the_snippets_command_the_banner_ends_with_prints_every_applications_configuration(
    served: Served,
) -> None:
    command = shlex.split(served.banner.splitlines()[-1].split(": ", 1)[1])

    done = _run(command, served)  # exactly as printed

    assert done.returncode == 0, done.stderr
    token_file = served.data_dir / "admin-token"
    assert f'export MCP_ADMIN_TOKEN="$(cat {token_file})"' in done.stdout
    assert "METACORTEX_TOKEN" not in done.stdout
    for shown in render(Endpoint(f"{served.url}/mcp")):
        assert f"{shown.app} ({shown.where}):" in done.stdout
        for line in shown.text.splitlines():
            assert f"  {line}" in done.stdout
        assert shown.note in done.stdout


def test_the_banner_names_the_console_and_the_command_that_sets_its_passphrase(
    served: Served,
) -> None:
    lines = served.banner.splitlines()
    intro = lines.index(f"Next: set the owner passphrase, then sign in at {served.url}/console:")
    command = shlex.split(lines[intro + 1])
    assert command == [BY_PATH, "owner", "set-passphrase", "--data-dir", str(served.data_dir)]

    done = _run(command, served, stdin=PASSPHRASE + "\n")  # exactly as printed
    assert done.returncode == 0, done.stderr
    assert f"set in the SQLite store in {served.data_dir} " in done.stderr
    assert done.stderr.splitlines()[0].endswith(f"; sign in at {served.url}/console")

    with httpx2.Client(base_url=served.url, timeout=30, follow_redirects=False) as http:
        signed_in = sign_in(http, PASSPHRASE)
        assert signed_in.status_code == 303, signed_in.text
        assert http.get("/console").status_code == 200


def test_the_banner_says_where_the_admin_token_is(served: Served) -> None:
    token_file = served.data_dir / "admin-token"
    assert f"  admin endpoint    POST {served.url}/mcp (token in {token_file})" in served.banner
    assert "METACORTEX_TOKEN" not in served.banner


def test_smoke_passes_against_the_local_server_with_no_variable_set(served: Served) -> None:
    smoke = [*COMMAND, "smoke", "--url", f"{served.url}/mcp"]
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
        r"space=default person=owner role=owner client_id=default$",
        line,
    ), line
    assert not [text for text in served.term.seen if text.startswith("{")]
