"""The commands a new user runs in the first hour, run as they run them (issue 29 §1, §2).

Counterparts: a real ``metacortex serve`` in its own process on a SQLite data
directory (``tests.processes``); every command the user types in a fresh
subprocess of its own, with the ``PATH`` of a fresh clone (the venv's ``bin`` not
on it) unless a test puts it there; prompts answered in a real pseudo-terminal
(``tests.terminal_support.window``); ``metacortex smoke`` speaking to the server
with the official ``mcp`` client over loopback HTTP.
"""

from __future__ import annotations

import json
import socket
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import pytest

from metacortex.cli.smoke import SMOKE_TOPIC
from metacortex.storage.sqlite import SQLiteStore
from tests.commands import BY_PATH, COMMAND, fresh_clone, fresh_clone_env, run_command
from tests.processes import WatchedProcess, serve
from tests.terminal_support import window

pytestmark = pytest.mark.slow

PASSPHRASE: Final = "first steps owner passphrase"


@dataclass
class Server:
    url: str
    data_dir: Path
    env: dict[str, str]
    cwd: Path

    def run(self, *args: str, **extra: str) -> subprocess.CompletedProcess[str]:
        return run_command([*COMMAND, *args], env={**self.env, **extra}, cwd=self.cwd)

    def new_client(self, client_id: str) -> tuple[str, str]:
        """``metacortex client add`` as the user runs it: the endpoint and its token."""
        done = self.run("client", "add", client_id, "--json", "--data-dir", str(self.data_dir))
        assert done.returncode == 0, done.stderr
        created = json.loads(done.stdout)
        url = f"{self.url}/clients/{client_id}/mcp"
        assert created["url"] == url  # this server's port, which serve recorded
        return url, str(created["token"])

    def smoke_topic_count(self) -> int:
        store = SQLiteStore(self.data_dir / "metacortex.sqlite3")
        try:
            return sum(store.topic_counts().get(SMOKE_TOPIC, {}).values())
        finally:
            store.close()


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    root, env = fresh_clone(tmp_path_factory, "first-steps")
    data_dir = root / "data"
    # A client added, paused or removed is seen by the next request (no waiting).
    served_env = {**env, "METACORTEX_CLIENT_REFRESH_SECONDS": "0"}
    process = WatchedProcess(
        [*COMMAND, "serve", "--port", "0", "--data-dir", str(data_dir)],
        "is ready at ",
        env=served_env,
        cwd=root,
    )
    try:
        process.wait_ready(180, "metacortex serve")
        ready = next(line for line in process.log if "is ready at " in line)
        yield Server(ready.split("is ready at ", 1)[1].split()[0], data_dir, env, root)
    finally:
        process.stop()


# ------------------------------------------------------------------------ smoke
def test_smoke_on_a_fresh_local_store_erases_its_memory_and_warns_of_nothing(
    server: Server,
) -> None:
    done = server.run("smoke", "--url", f"{server.url}/mcp", "--data-dir", str(server.data_dir))

    assert done.returncode == 0, done.stderr
    assert "warn" not in done.stderr
    assert "the smoke memory is gone" in done.stderr
    assert server.smoke_topic_count() == 0


def test_smoke_against_a_client_just_created_runs_what_it_offers_and_says_which(
    server: Server,
) -> None:
    url, token = server.new_client("smoke-fresh")

    done = server.run(
        "smoke", "--url", url, "--data-dir", str(server.data_dir), **{"MCP_SMOKE_TOKEN": token}
    )

    assert done.returncode == 0, done.stderr
    assert "smoke test passed" in done.stdout
    ran = next(line for line in done.stderr.splitlines() if line.startswith("checks run: "))
    assert "save_context" in ran
    assert "search_context" in ran
    assert "fetch_context" in ran
    assert "list_context" not in ran
    assert "not offered here: " in done.stderr
    assert "warn" not in done.stderr
    assert server.smoke_topic_count() == 0

    read = server.run(
        "smoke",
        "--url",
        url,
        "--mode",
        "search-only",
        "--data-dir",
        str(server.data_dir),
        MCP_SMOKE_TOKEN=token,
    )
    assert read.returncode == 0, read.stderr
    assert "FAIL" not in read.stderr
    assert "save_context" not in next(
        line for line in read.stderr.splitlines() if line.startswith("checks run: ")
    )


def test_smoke_against_a_paused_client_shows_the_servers_own_reason(server: Server) -> None:
    url, token = server.new_client("smoke-paused")
    paused = server.run("client", "pause", "smoke-paused", "--data-dir", str(server.data_dir))
    assert paused.returncode == 0, paused.stderr

    done = server.run("smoke", "--url", url, MCP_SMOKE_TOKEN=token)

    assert done.returncode == 1
    assert "this client is paused by the server's owner" in done.stderr
    assert "Server returned an error response" not in done.stderr
    assert token not in done.stderr


def test_smoke_with_no_url_checks_the_server_that_last_ran_on_its_data_directory(
    server: Server,
) -> None:
    """Issue 41 §1: the server runs on a port of its own (``--port 0``), not 8765; smoke
    with the server's data directory and no --url finds it where serve recorded it."""
    assert not server.url.endswith(":8765")

    done = server.run("smoke", "--data-dir", str(server.data_dir))

    assert done.returncode == 0, done.stderr
    assert f"smoke test passed (admin-read-write) against {server.url}/mcp" in done.stdout
    assert server.smoke_topic_count() == 0


@contextmanager
def _refusing_port(port: int = 0) -> Iterator[int]:
    """A loopback port held bound and never listening: a connection there is refused,
    and no other process can start listening on it while the test runs."""
    held = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    held.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # past a closed server's
    try:
        held.bind(("127.0.0.1", port))
        yield held.getsockname()[1]
    finally:
        held.close()


def test_smoke_when_the_server_is_gone_says_where_it_last_answered_and_how_to_start_it(
    tmp_path: Path,
) -> None:
    data_dir = tmp_path / "data"
    process, url = serve(data_dir)
    process.stop()
    env = fresh_clone_env(tmp_path)

    with _refusing_port(int(url.rsplit(":", 1)[1])):
        done = run_command([*COMMAND, "smoke", "--data-dir", str(data_dir)], env=env, cwd=tmp_path)

    assert done.returncode == 1
    [failed] = [line for line in done.stderr.splitlines() if line.startswith("FAIL ")]
    assert failed.startswith(f"FAIL admin-read-write against {url}/mcp: ConnectError")
    assert f"the server on {data_dir} last answered at {url}; nothing answers there now" in failed
    assert f"start it again with `{BY_PATH} serve --data-dir {data_dir}`" in failed


def test_smoke_against_another_address_names_where_the_data_directorys_server_answers(
    server: Server,
) -> None:
    """MCP_BASE_URL still wins over the recorded address; when nothing answers there,
    smoke names the command that checks the data directory's server instead."""
    with _refusing_port() as port:
        elsewhere = f"http://127.0.0.1:{port}/mcp"
        done = server.run("smoke", "--data-dir", str(server.data_dir), MCP_BASE_URL=elsewhere)

    assert done.returncode == 1
    assert f"FAIL admin-read-write against {elsewhere}: ConnectError" in done.stderr
    command = f"{BY_PATH} smoke --url {server.url}/mcp --data-dir {server.data_dir}"
    assert (
        f"the server on {server.data_dir} last answered at {server.url}: "
        f"check it there with `{command}`"
    ) in done.stderr


def test_smoke_on_a_data_directory_no_server_ran_on_says_how_to_start_one(
    server: Server, tmp_path: Path
) -> None:
    token = (server.data_dir / "admin-token").read_text().strip()
    with _refusing_port() as port:
        done = server.run(
            "smoke",
            "--url",
            f"http://127.0.0.1:{port}/mcp",
            "--data-dir",
            str(tmp_path),
            MCP_ADMIN_TOKEN=token,
        )

    assert done.returncode == 1
    assert (
        f"no server has run on {tmp_path} (serve records its address there): "
        f"start one with `{BY_PATH} serve --data-dir {tmp_path}`, or give the endpoint with --url"
    ) in done.stderr


@pytest.mark.parametrize("on_path", [False, True], ids=["fresh-clone", "activated"])
def test_smoke_warnings_spell_the_command_as_it_runs_from_here(
    server: Server, tmp_path: Path, on_path: bool
) -> None:
    """The store smoke could erase from is not the server's (another --data-dir): it
    says what to run, spelled as it runs in this shell."""
    env = fresh_clone_env(Path(server.env["HOME"]), on_path=on_path)
    token = (server.data_dir / "admin-token").read_text().strip()
    done = run_command(
        [*COMMAND, "smoke", "--url", f"{server.url}/mcp", "--data-dir", str(tmp_path / "else")],
        env={**env, "MCP_ADMIN_TOKEN": token},
        cwd=server.cwd,
    )

    assert done.returncode == 0, done.stderr
    [warning] = [line for line in done.stderr.splitlines() if line.startswith("warn ")]
    spelled = "metacortex" if on_path else BY_PATH
    assert f"`{spelled} erase --topic {SMOKE_TOPIC}" in warning


# ------------------------------------------------------------ the owner's prompts
def test_set_passphrase_shows_the_rule_first_and_the_console_of_this_server_last(
    server: Server,
) -> None:
    argv = [*COMMAND, "owner", "set-passphrase", "--data-dir", str(server.data_dir)]
    with window(argv, env=server.env, cwd=server.cwd) as w:
        before = w.expect("New owner passphrase: ")
        assert "at least 12 characters" in before
        w.type(PASSPHRASE + "\n")
        w.expect("Repeat it: ")
        w.type(PASSPHRASE + "\n")
        after = w.expect(f"sign in at {server.url}/console")
        assert w.finish() == 0, w.shown
    assert PASSPHRASE not in w.shown  # typed hidden
    assert "owner passphrase set in the SQLite store" in after


def test_set_passphrase_refuses_a_weak_one_before_asking_for_it_again(server: Server) -> None:
    argv = [*COMMAND, "owner", "set-passphrase", "--data-dir", str(server.data_dir)]
    with window(argv, env=server.env, cwd=server.cwd) as w:
        w.expect("New owner passphrase: ")
        w.type("short\n")
        refused = w.expect("nothing was changed")
        assert w.finish() == 2, w.shown
    assert "the passphrase is 5 characters; use at least 12" in refused
    assert "Repeat it" not in w.shown


@pytest.mark.parametrize("answer", ["y", "Y", "yes"])
def test_client_remove_takes_y_as_yes(server: Server, answer: str) -> None:
    client_id = f"to-remove-{answer.lower()}-{len(answer)}"
    server.new_client(client_id)
    argv = [*COMMAND, "client", "remove", client_id, "--data-dir", str(server.data_dir)]
    with window(argv, env=server.env, cwd=server.cwd) as w:
        w.expect("[y/N] ")
        w.type(answer + "\n")
        w.expect(f"client {client_id!r} removed")
        assert w.finish() == 0, w.shown
    listed = server.run("client", "list", "--data-dir", str(server.data_dir))
    assert client_id not in listed.stdout


# ------------------------------------------------------------------------ stdio
def test_stdio_started_in_a_terminal_says_what_it_waits_for_on_stderr_only(
    server: Server,
) -> None:
    with window(
        [*COMMAND, "stdio", "--data-dir", str(server.data_dir)],
        env=server.env,
        cwd=server.cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    ) as w:
        w.type("\x04")  # Ctrl-D: the person leaves
        assert w.finish() == 0
        assert w.process.stdout is not None
        assert w.process.stderr is not None
        out, err = w.process.stdout.read(), w.process.stderr.read()
    assert out == ""
    assert "waits for an MCP client" in err
    assert f"{BY_PATH} init --target " in err
