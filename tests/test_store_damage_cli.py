"""``metacortex serve`` and ``metacortex backup`` on damaged store files, ``serve
--start-fresh`` on an empty one, and ``restore``'s exit status: the real commands in a
fresh subprocess, on real files damaged the way disks and people damage them.

Each damaged store ends the command with one message naming the file, what is wrong
and what to do, exit status 2, and no traceback. The counterpart for the lock is a
second process holding the file in SQLite's exclusive locking mode
(``tests/sqlite_holders.py``).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import sqlite3
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Final

import pytest

from metacortex.config import Settings
from metacortex.domain.records import ALL_STATES
from metacortex.operations.backup import export_portable
from metacortex.providers.local import DIMENSION, MODEL_NAME
from metacortex.providers.offline_merge import SentenceUnionMerger
from metacortex.service import Access, MemoryService
from metacortex.storage.base import MemoryFilter
from metacortex.storage.sqlite import SQLiteStore
from metacortex.storage.sqlite_schema import LATEST_VERSION
from tests.fakes import HashingEmbedder
from tests.processes import WatchedProcess
from tests.sqlite_holders import EXCLUSIVE, holding

ADMIN: Final = Access.admin()
RESTORE_OR_RECOVER: Final = (
    "Then restore your latest backup (move the damaged file aside and run `metacortex "
    "restore FOLDER`, or put a `metacortex backup --full` copy in its place), or recover "
    "what SQLite can still read: `sqlite3 {db} .recover | sqlite3 recovered.sqlite3`"
)
_GARBAGE: Final = bytes(range(256)) * 16  # one page of it: no valid page type


def _env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith(("METACORTEX_", "MCP_"))}


# ``serve`` loads the model on a thread while it opens the store: a refusal reached while
# onnxruntime builds the session used to end the process with SIGABRT ("terminate called
# without an active exception") after the refusal was printed, on a loaded machine only.
# Held here so that it always is: the process may exit only once the loader thread is
# inside onnxruntime's session build (the runtime's own class, observed, not changed).
_LOADER_HELD: Final = """
import atexit, sys, threading
import onnxruntime

building = threading.Event()


class Observed(onnxruntime.InferenceSession):
    def __init__(self, *args, **kwargs):
        building.set()
        super().__init__(*args, **kwargs)


onnxruntime.InferenceSession = Observed
atexit.register(building.wait, 120)
from metacortex.cli.main import main

sys.exit(main(sys.argv[1:]))
"""


def _run(*argv: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    entry = ["-c", _LOADER_HELD] if argv[0] == "serve" else ["-m", "metacortex.cli.main"]
    return subprocess.run(  # noqa: S603 - our own entry point
        [sys.executable, *entry, *argv],
        cwd=cwd,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )


def _database(data_dir: Path) -> Path:
    return Settings(_env_file=None, metacortex_data_dir=data_dir).sqlite_path  # type: ignore[call-arg]


def _store(data_dir: Path, count: int = 200) -> Path:
    """A real store of the local model's identity (so `serve` opens it), then closed."""
    database = _database(data_dir)
    store = SQLiteStore(database)
    service = MemoryService(
        store, HashingEmbedder(DIMENSION, MODEL_NAME), merger=SentenceUnionMerger()
    )
    for i in range(count):
        service.save(ADMIN, content=f"Note {i}: the meeting moved to room {i % 17}.")
    store.close()
    return database


def _garbage(database: Path) -> None:
    database.write_bytes(_GARBAGE * (database.stat().st_size // len(_GARBAGE)))


def _truncated(database: Path) -> None:
    os.truncate(database, database.stat().st_size // 2)


def _overwritten_page(database: Path) -> None:
    """One page of the records' table, in the middle, overwritten (every search reads it)."""
    with contextlib.closing(sqlite3.connect(database)) as conn:
        pages = [
            int(row[0])
            for row in conn.execute(
                "SELECT pageno FROM dbstat WHERE name = 'memories' AND pagetype = 'leaf'"
                " ORDER BY pageno"
            )
        ]
        page_size = int(conn.execute("PRAGMA page_size").fetchone()[0])
    with database.open("r+b") as stream:
        stream.seek((pages[len(pages) // 2] - 1) * page_size)
        stream.write(_GARBAGE[:page_size])


def _from_the_future(database: Path) -> None:
    with contextlib.closing(sqlite3.connect(database)) as conn, conn:
        conn.execute("INSERT INTO schema_migrations (version, applied_at) VALUES (99, 'later')")


def _emptied(database: Path) -> None:
    database.write_bytes(b"")


DAMAGE: Final[dict[str, tuple[Callable[[Path], None], str]]] = {
    "garbage": (_garbage, "is not an SQLite database"),
    "truncated": (_truncated, "is cut short"),
    "overwritten-page": (_overwritten_page, "is damaged (SQLite"),
}


def _one_message(result: subprocess.CompletedProcess[str]) -> str:
    """The command's refusal: exit status 2, one error line, no traceback."""
    assert result.returncode == 2, result.stdout + result.stderr
    assert "Traceback" not in result.stdout + result.stderr
    [line] = [x for x in result.stderr.splitlines() if x.startswith("metacortex: configuration")]
    return line


@pytest.fixture
def small_store(tmp_path: Path) -> tuple[Path, Path]:
    """A data directory holding a store of three records, and its database file."""
    data = tmp_path / "data"
    return data, _store(data, count=3)


@pytest.fixture(params=["serve", "backup"])
def command(request: pytest.FixtureRequest, tmp_path: Path) -> Callable[[Path], list[str]]:
    """The command line of each command under test, for a data directory."""
    if request.param == "serve":
        return lambda data: ["serve", "--port", "0", "--data-dir", str(data)]
    return lambda data: ["backup", str(tmp_path / "backup"), "--data-dir", str(data)]


@pytest.mark.slow
@pytest.mark.parametrize("kind", list(DAMAGE))
def test_a_damaged_store_is_refused_with_the_file_the_damage_and_what_to_do(
    tmp_path: Path, command: Callable[[Path], list[str]], kind: str
) -> None:
    data = tmp_path / "data"
    database = _store(data)
    damage, what = DAMAGE[kind]
    damage(database)

    line = _one_message(_run(*command(data), cwd=tmp_path))

    assert line.startswith(f"metacortex: configuration error: the memory store {database} {what}")
    assert "Stop every process using it and keep a copy of the file as it is." in line
    assert RESTORE_OR_RECOVER.format(db=database) in line
    assert not (tmp_path / "backup").exists()


@pytest.mark.slow
def test_a_store_from_a_newer_metacortex_is_refused_and_left_as_it_was(
    tmp_path: Path, command: Callable[[Path], list[str]], small_store: tuple[Path, Path]
) -> None:
    data, database = small_store
    _from_the_future(database)
    before = database.read_bytes()

    line = _one_message(_run(*command(data), cwd=tmp_path))

    assert line == (
        f"metacortex: configuration error: {database} was written by a newer MetaCortex "
        f"(schema version 99; this one understands up to {LATEST_VERSION}): run the version "
        "that wrote it (upgrade this install), or point METACORTEX_DATA_DIR or --data-dir at "
        "another store. Nothing was changed in it"
    )
    assert database.read_bytes() == before


@pytest.mark.slow
def test_a_store_locked_by_another_process_is_refused_naming_that_process(
    tmp_path: Path, command: Callable[[Path], list[str]], small_store: tuple[Path, Path]
) -> None:
    data, database = small_store
    with holding(database, EXCLUSIVE) as holder:
        line = _one_message(_run(*command(data), cwd=tmp_path))

    assert line.startswith(
        f"metacortex: configuration error: {database} is locked by process {holder.pid} ("
    )
    assert line.endswith(
        "and stayed locked for 10 seconds: stop that process, or let it finish, then run this again"
    )


@pytest.mark.slow
def test_an_empty_store_file_is_refused_until_the_operator_says_to_start_fresh(
    tmp_path: Path, command: Callable[[Path], list[str]], small_store: tuple[Path, Path]
) -> None:
    data, database = small_store
    _emptied(database)

    line = _one_message(_run(*command(data), cwd=tmp_path))

    assert line == (
        f"metacortex: configuration error: {database} is empty (0 bytes) where a MetaCortex "
        "store was expected: the memories it held are not in this file. Restore your latest "
        "backup into the data directory (move the empty file aside, then run `metacortex "
        "restore FOLDER`), or, to start a new, empty store in it, run `metacortex serve "
        "--start-fresh`"
    )
    assert database.stat().st_size == 0


@contextlib.contextmanager
def _serving(data: Path, *flags: str) -> Iterator[WatchedProcess]:
    command = [sys.executable, "-m", "metacortex.cli.main", "serve", "--port", "0"]
    process = WatchedProcess(
        [*command, "--data-dir", str(data), *flags],
        "Application startup complete",
        env=_env(),
        cwd=data.parent,
    )
    try:
        process.wait_ready(180, "metacortex serve")
        yield process
    finally:
        process.stop()


@pytest.mark.slow
def test_serve_start_fresh_makes_a_new_store_in_place_of_an_empty_file_only(
    small_store: tuple[Path, Path],
) -> None:
    data, database = small_store
    _emptied(database)

    with _serving(data, "--start-fresh") as fresh:
        assert f"metacortex: starting a new, empty store in place of the empty file {database}" in (
            fresh.log
        )
    assert database.stat().st_size > 0
    store = SQLiteStore(database)
    try:
        assert store.count_memories(MemoryFilter(states=ALL_STATES)) == 0
        store.bind_embedding(HashingEmbedder(DIMENSION, MODEL_NAME).identity)
    finally:
        store.close()
    with _serving(data, "--start-fresh") as again:  # a store that holds anything stays
        assert any("--start-fresh ignored" in line for line in again.log)


@pytest.mark.slow
def test_restore_exits_non_zero_with_the_count_when_any_record_was_refused(
    tmp_path: Path,
) -> None:
    source = MemoryService(
        SQLiteStore(tmp_path / "source.sqlite3"), HashingEmbedder(), merger=SentenceUnionMerger()
    )
    source.save(ADMIN, content="The boiler is serviced in May.")
    folder = tmp_path / "backup"
    export_portable(source.store, folder, "test-hashing:64")
    source.store.close()
    [record] = [json.loads(line) for line in (folder / "memories.ndjson").read_text().splitlines()]
    refused = [{**record, "id": bad} for bad in ("has space", "tab\there", "")]
    data = "".join(json.dumps(r) + "\n" for r in refused).encode()
    (folder / "memories.ndjson").write_bytes(data)
    manifest = json.loads((folder / "manifest.json").read_text())
    manifest.update(count=len(refused), sha256=hashlib.sha256(data).hexdigest())
    (folder / "manifest.json").write_text(json.dumps(manifest))

    result = _run("restore", str(folder), "--data-dir", str(tmp_path / "data"), cwd=tmp_path)

    assert result.returncode == 1, result.stdout + result.stderr
    assert "restored 0 memories from metacortex-portable; 0 already present; 3 refused" in (
        result.stdout
    )
    assert (
        "metacortex restore: 3 of the backup's records were refused (listed above) and are "
        "not in the store; the others were restored." in result.stderr
    )
    assert "Traceback" not in result.stderr
