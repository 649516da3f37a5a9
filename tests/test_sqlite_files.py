"""The embedded store's files on real disks: private modes whatever the umask, a warning for
loose ones, a read-only data directory refused at start, a full disk reported as such."""

from __future__ import annotations

import contextlib
import logging
import os
import stat
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from metacortex.cli.admin_token import ensure_admin_token
from metacortex.cli.main import main
from metacortex.config import Settings
from metacortex.errors import ConfigurationError, StorageFull
from metacortex.providers.offline_merge import SentenceUnionMerger
from metacortex.service import Access, MemoryService
from metacortex.storage.sqlite import SQLiteStore
from tests.fakes import HashingEmbedder
from tests.filesystems import can_mount, tmpfs
from tests.server.conftest import ADMIN_TOKEN, make_settings, started
from tests.tool_results import error_code


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.fixture
def open_umask() -> Iterator[None]:
    """The loosest umask: whatever is created private is private by our own doing."""
    previous = os.umask(0)
    yield
    os.umask(previous)


@pytest.mark.usefixtures("open_umask")
def test_the_data_directory_is_0700_and_every_store_file_0600_whatever_the_umask(
    tmp_path: Path,
) -> None:
    data = tmp_path / "fresh" / "data"
    settings = Settings(_env_file=None, metacortex_data_dir=data)  # type: ignore[call-arg]
    store = SQLiteStore(settings.sqlite_path)
    try:
        service = MemoryService(store, HashingEmbedder(), merger=SentenceUnionMerger())
        service.save(Access.admin(), content="a private memory")  # -wal and -shm now exist
        token = ensure_admin_token(settings)
        files = [
            settings.sqlite_path,
            *(Path(f"{settings.sqlite_path}{s}") for s in ("-wal", "-shm")),
        ]
        assert token.path is not None
        assert _mode(data) == 0o700
        assert {str(f.name): _mode(f) for f in [*files, token.path]} == {
            "metacortex.sqlite3": 0o600,
            "metacortex.sqlite3-wal": 0o600,
            "metacortex.sqlite3-shm": 0o600,
            "admin-token": 0o600,
        }
        full_copy = tmp_path / "backup" / "full.sqlite3"
        store.copy_to(full_copy)
        assert _mode(full_copy) == 0o600
    finally:
        store.close()


def test_looser_existing_data_files_are_warned_about_at_start(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    data = tmp_path / "data"
    SQLiteStore(data / "m.sqlite3").close()
    data.chmod(0o755)
    (data / "m.sqlite3").chmod(0o644)

    with caplog.at_level(logging.WARNING, logger="metacortex.storage"):
        SQLiteStore(data / "m.sqlite3").close()

    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert (
        f"{data} has mode 0o755: other local users may read the memories in it; "
        f"run chmod 700 {data}" in warnings
    )
    assert any(w.startswith(f"{data / 'm.sqlite3'} has mode 0o644") for w in warnings)
    assert _mode(data) == 0o755  # the operator's choice is reported, not overridden


@pytest.fixture
def read_only_dir(tmp_path: Path) -> Iterator[Path]:
    """A real read-only data directory: a read-only tmpfs as root, chmod 0500 otherwise."""
    directory = tmp_path / "readonly"
    if can_mount():
        try:
            with tmpfs(directory, read_only=True) as mounted:
                yield mounted
                return
        except subprocess.CalledProcessError as error:
            if os.geteuid() == 0:
                pytest.skip(
                    "READ-ONLY STORAGE TEST SKIPPED: running as root (chmod cannot refuse root) "
                    f"and mounting a read-only tmpfs failed: {error.stderr!r}"
                )
    if os.geteuid() == 0:
        pytest.skip("READ-ONLY STORAGE TEST SKIPPED: running as root without mount")
    directory.mkdir()
    directory.chmod(0o500)
    yield directory
    directory.chmod(0o700)


def test_a_read_only_data_directory_is_refused_at_start_with_what_to_do(
    read_only_dir: Path,
) -> None:
    with pytest.raises(ConfigurationError) as refused:
        SQLiteStore(read_only_dir / "m.sqlite3")
    message = str(refused.value)
    assert message.startswith(f"the data directory {read_only_dir} ")
    assert "read-only file system" in message or "is not writable" in message
    assert "METACORTEX_DATA_DIR or --data-dir" in message


@pytest.mark.parametrize("with_admin_token", [True, False])
def test_serve_refuses_a_read_only_data_directory_before_saying_ready(
    read_only_dir: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    with_admin_token: bool,
) -> None:
    for name in list(os.environ):
        if name.startswith(("MCP_", "METACORTEX_")):
            monkeypatch.delenv(name)
    monkeypatch.chdir(read_only_dir.parent)
    if with_admin_token:
        monkeypatch.setenv("MCP_ADMIN_TOKEN", ADMIN_TOKEN)
    code = main(["serve", "--port", "0", "--data-dir", str(read_only_dir)])
    err = capsys.readouterr()
    assert code == 2
    assert f"configuration error: the data directory {read_only_dir} " in err.err
    assert "Traceback" not in err.err
    assert "ready" not in err.out + err.err


def _fill_until_full(service: MemoryService) -> tuple[list[str], StorageFull]:
    saved: list[str] = []
    for index in range(10_000):
        try:
            item = service.save(Access.admin(), content=f"{index} " + "filler text " * 1600)
        except StorageFull as error:
            return saved, error
        saved.append(item["item"]["id"])
    raise AssertionError("the store never filled up")


def test_a_full_disk_is_a_distinct_non_retryable_error_and_loses_nothing(
    tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    if can_mount():
        mount = tmpfs(tmp_path / "small", size_kib=1536)
        directory = mount.__enter__()
        request.addfinalizer(lambda: mount.__exit__(None, None, None))
        store = SQLiteStore(directory / "m.sqlite3")
        service = MemoryService(store, HashingEmbedder(), merger=SentenceUnionMerger())
    else:
        print("DISK-FULL TEST: no tmpfs (not root); using SQLite's max_page_count instead")
        store = SQLiteStore(tmp_path / "m.sqlite3")
        service = MemoryService(store, HashingEmbedder(), merger=SentenceUnionMerger())
        store._conn().execute("PRAGMA max_page_count = 400")
    try:
        saved, error = _fill_until_full(service)
        assert saved, "some writes fit before the disk filled"
        assert error.code == "resource_exhausted"
        assert not error.retryable
        assert "full" in error.message
        assert "Retrying will not help until the operator frees disk space" in error.message
        # Every acknowledged write is still there, and reads keep working.
        listed = service.list_memories(Access.admin(), limit=100)["items"]
        assert {item["id"] for item in listed} == set(saved)
    finally:
        store.close()


@pytest.mark.anyio
async def test_a_full_disk_reaches_a_client_as_resource_exhausted(tmp_path: Path) -> None:
    if not can_mount():
        pytest.skip("DISK-FULL EDGE TEST SKIPPED: needs root to mount a small tmpfs")
    with tmpfs(tmp_path / "small", size_kib=1536) as directory:
        store = SQLiteStore(directory / "m.sqlite3")
        service = MemoryService(store, HashingEmbedder(), merger=SentenceUnionMerger())
        try:
            _fill_until_full(service)
            async with (
                started(make_settings(tmp_path / "data"), service) as harness,
                harness.connect() as admin,
            ):
                result = await admin.call_tool("save_context", {"content": "one more " * 2000})
            assert error_code(result) == "resource_exhausted"
        finally:
            store.close()


def test_a_full_disk_at_start_is_refused_with_what_to_do(tmp_path: Path) -> None:
    if not can_mount():
        pytest.skip("DISK-FULL START TEST SKIPPED: needs root to mount a small tmpfs")
    with tmpfs(tmp_path / "small", size_kib=256) as directory:
        filler = directory / "filler"
        with filler.open("wb") as handle, contextlib.suppress(OSError):
            while True:
                handle.write(b"\0" * 65536)
                handle.flush()
        with pytest.raises(ConfigurationError, match=r"is full|is on a full disk") as refused:
            SQLiteStore(directory / "data" / "m.sqlite3")
        assert "METACORTEX_DATA_DIR or --data-dir" in str(refused.value)
