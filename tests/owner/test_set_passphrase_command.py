"""``metacortex owner set-passphrase`` run as an operator runs it (issue 21 §4).

Counterpart: the real command in its own process, started in a session of its own
so it has no controlling terminal, as under a script, CI, ``docker exec`` without
``-t`` or a pipe: what ``getpass`` meets there (it falls back to standard input, and
ended in an ``EOFError`` traceback when that ran dry).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from metacortex.owner import verify_passphrase
from metacortex.storage.sqlite import SQLiteStore

PASSPHRASE = "a long owner passphrase"
_OWN_PREFIXES = ("MCP_", "METACORTEX_", "GOOGLE_", "GCLOUD_", "FIRESTORE_")


def run_command(
    *args: str, stdin: str | None, home: Path, cwd: Path, **env: str
) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(_OWN_PREFIXES)}
    return subprocess.run(  # noqa: S603 (our own interpreter and arguments)
        [sys.executable, "-m", "metacortex.cli.main", "owner", "set-passphrase", *args],
        input=stdin,
        stdin=subprocess.DEVNULL if stdin is None else None,
        capture_output=True,
        text=True,
        cwd=cwd,
        env={**clean, "HOME": str(home), **env},
        start_new_session=True,  # no controlling terminal: /dev/tty cannot be opened
        timeout=120,
        check=False,
    )


def passphrase_in(data_dir: Path) -> bool:
    store = SQLiteStore(data_dir / "metacortex.sqlite3")
    try:
        return verify_passphrase(store, PASSPHRASE)
    finally:
        store.close()


@pytest.fixture
def home(tmp_path: Path) -> Path:
    (tmp_path / "home").mkdir()
    return tmp_path / "home"


def test_without_a_terminal_the_piped_passphrase_is_read(tmp_path: Path, home: Path) -> None:
    data = tmp_path / "data"
    done = run_command("--data-dir", str(data), stdin=PASSPHRASE + "\n", home=home, cwd=tmp_path)

    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    assert passphrase_in(data)


def test_with_nothing_to_read_it_says_so_in_one_line_and_exits_2(
    tmp_path: Path, home: Path
) -> None:
    done = run_command("--data-dir", str(tmp_path / "data"), stdin=None, home=home, cwd=tmp_path)

    assert done.returncode == 2
    assert "Traceback" not in done.stderr
    [line] = done.stderr.strip().splitlines()
    assert "ended before a passphrase; nothing was changed" in line
    assert "--stdin" in line
    assert not (tmp_path / "data").exists()


def test_it_names_the_store_it_wrote_to(tmp_path: Path, home: Path) -> None:
    data = tmp_path / "server-data"
    SQLiteStore(data / "metacortex.sqlite3").close()  # the server's store exists

    done = run_command(
        "--stdin", "--data-dir", str(data), stdin=PASSPHRASE + "\n", home=home, cwd=tmp_path
    )

    assert done.returncode == 0, done.stderr
    assert f"owner passphrase set in the SQLite store in {data} " in done.stderr
    assert "held no store before" not in done.stderr
    # No server recorded its address there: the default bind's console.
    assert "sign in at http://127.0.0.1:8765/console" in done.stderr


def test_run_without_the_servers_data_dir_it_warns_that_the_store_is_new(
    tmp_path: Path, home: Path
) -> None:
    """The issue's case: a server runs with --data-dir X; this runs without it."""
    server_data = tmp_path / "server-data"
    SQLiteStore(server_data / "metacortex.sqlite3").close()

    done = run_command("--stdin", stdin=PASSPHRASE + "\n", home=home, cwd=tmp_path)

    default = home / ".local" / "share" / "metacortex"
    assert done.returncode == 0, done.stderr
    assert f"in the SQLite store in {default} " in done.stderr
    assert f"{default} held no store before" in done.stderr
    assert "run this again with that server's --data-dir" in done.stderr
    assert passphrase_in(default)


def test_a_data_dir_with_a_tilde_or_a_relative_path_is_found_as_serve_finds_it(
    tmp_path: Path, home: Path
) -> None:
    """METACORTEX_DATA_DIR=~/x is the home directory's x (not a folder named "~"), and a
    relative --data-dir is taken from where the command runs, both as for serve."""
    done = run_command(
        "--stdin", stdin=PASSPHRASE + "\n", home=home, cwd=tmp_path, METACORTEX_DATA_DIR="~/mc"
    )
    assert done.returncode == 0, done.stderr
    assert passphrase_in(home / "mc")
    assert not (tmp_path / "~").exists()

    done = run_command(
        "--stdin", "--data-dir", "rel", stdin=PASSPHRASE + "\n", home=home, cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr
    assert f"in the SQLite store in {tmp_path / 'rel'} " in done.stderr


def test_its_help_says_the_passphrase_opens_the_console_and_oauth_consent(
    tmp_path: Path, home: Path
) -> None:
    done = run_command("--help", stdin=None, home=home, cwd=tmp_path)
    text = " ".join(done.stdout.split())
    assert "memory console (/console)" in text
    assert "OAuth consent page" in text
    assert "give the server's --data-dir" in text
