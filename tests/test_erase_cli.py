"""``metacortex erase`` as an operator runs it: in a terminal (a real pseudo-terminal),
in a script with and without ``--yes``, on a real data directory."""

from __future__ import annotations

import os
import pty
import select
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Final

import pytest

from metacortex.access.registry import Registry
from metacortex.cli.main import main
from metacortex.config import Settings
from metacortex.kernel.events import MEMORY_EVENTS
from metacortex.providers.offline_merge import SentenceUnionMerger
from metacortex.service import Access, MemoryService
from metacortex.storage.sqlite import SQLiteStore
from tests.fakes import HashingEmbedder

ADMIN: Final = Access.admin()
PROMPT: Final = b"Type yes to confirm: "


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.chdir(tmp_path)  # no stray .env
    for name in list(os.environ):
        if name.startswith("METACORTEX_"):
            monkeypatch.delenv(name)


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    return tmp_path / "data"


@pytest.fixture
def service(data_dir: Path) -> Iterator[MemoryService]:
    settings = Settings(_env_file=None, metacortex_data_dir=data_dir)  # type: ignore[call-arg]
    store = SQLiteStore(settings.sqlite_path)
    yield MemoryService(store, HashingEmbedder(), merger=SentenceUnionMerger())
    store.close()


def _save(service: MemoryService, content: str, access: Access = ADMIN, **kw: object) -> str:
    return str(service.save(access, content=content, **kw)["item"]["id"])  # type: ignore[arg-type]


def _argv(data_dir: Path, *args: str) -> list[str]:
    return [
        sys.executable,
        "-m",
        "metacortex.cli.main",
        "erase",
        *args,
        "--data-dir",
        str(data_dir),
    ]


def _env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("METACORTEX_")}


def _in_a_script(argv: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    """Run ``argv`` without a terminal (standard input closed), as a script does."""
    return subprocess.run(  # noqa: S603 - our own entry point
        argv,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        cwd=cwd,
        env=_env(),
        timeout=120,
        check=False,
    )


def _on_a_terminal(argv: list[str], cwd: Path, answer: bytes) -> tuple[int, str]:
    """Run ``argv`` on a pseudo-terminal, answer its question, return (status, output)."""
    controller, terminal = pty.openpty()
    process = subprocess.Popen(  # noqa: S603 - our own entry point
        argv, stdin=terminal, stdout=terminal, stderr=terminal, cwd=cwd, env=_env()
    )
    os.close(terminal)
    output = b""
    try:
        while PROMPT not in output:
            ready, _, _ = select.select([controller], [], [], 60)
            assert ready, f"no question within a minute: {output.decode(errors='replace')}"
            chunk = os.read(controller, 4096)
            assert chunk, output.decode(errors="replace")
            output += chunk
        os.write(controller, answer + b"\n")
        while True:
            try:
                chunk = os.read(controller, 4096)
            except OSError:  # EIO: the child closed the terminal
                break
            if not chunk:
                break
            output += chunk
        return process.wait(timeout=60), output.decode(errors="replace")
    finally:
        os.close(controller)
        if process.poll() is None:
            process.kill()


def test_without_a_terminal_and_without_yes_erase_refuses_with_a_clear_line(
    service: MemoryService, data_dir: Path
) -> None:
    kept = _save(service, "A note that must survive a script's mistake")

    ran = _in_a_script(_argv(data_dir, kept), data_dir)

    assert ran.returncode == 2
    assert "1 memory will be erased for good:" in ran.stdout
    assert ran.stderr.strip() == (
        "metacortex erase: not erasing 1 memory without a confirmation: standard input is "
        "not a terminal. Run it in a terminal, or pass --yes."
    )
    assert service.store.get(kept) is not None


def test_on_a_terminal_erase_shows_the_count_and_erases_after_yes(
    service: MemoryService, data_dir: Path
) -> None:
    ids = [_save(service, f"Scratch {i}", topic="scratch") for i in range(3)]

    status, output = _on_a_terminal(_argv(data_dir, "--topic", "scratch"), data_dir, b"yes")

    assert status == 0, output
    assert "3 memories of topic 'scratch' will be erased for good:" in output
    assert "Erase 3 memories? This cannot be undone." in output
    assert "erased 3 memories; a tombstone (id, time, who) stays for each" in output
    assert all(service.store.get(memory_id) is None for memory_id in ids)


def test_on_a_terminal_any_answer_but_yes_erases_nothing(
    service: MemoryService, data_dir: Path
) -> None:
    kept = _save(service, "Not this one")

    status, output = _on_a_terminal(_argv(data_dir, kept), data_dir, b"y")

    assert status == 1
    assert "nothing was erased" in output
    assert service.store.get(kept) is not None


def test_erase_with_yes_names_the_consolidated_memories_built_from_the_erased_text(
    service: MemoryService, data_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    leaked = _save(service, "Dana's passport number is X1234567.", topic="travel", draft=True)
    _save(service, "Dana flies on Monday.", topic="travel", draft=True)
    merged = service.consolidate(ADMIN, topic="travel")["item"]["merged_id"]

    assert main(["erase", leaked, "--yes", "--data-dir", str(data_dir)]) == 0

    out = capsys.readouterr().out
    assert "1 memory would keep text from them" in out
    assert "erased 1 memory" in out
    assert "1 memory kept text from them (consolidated from them, or from such a memory)" in out
    assert f"  {merged}  [travel]  " in out
    assert service.store.get(leaked) is None
    assert service.store.get(merged) is not None


def test_erase_records_an_owner_event_with_ids_and_counts_and_never_content(
    service: MemoryService, data_dir: Path
) -> None:
    secret = _save(service, "The wifi password is heron-lantern-42")

    assert main(["erase", secret, "--yes", "--data-dir", str(data_dir)]) == 0

    [event] = [e for e in service.store.read_events(MEMORY_EVENTS) if e["tool_name"] == "erase"]
    assert event["event_type"] == "owner_action"
    assert event["initiator"] == "owner"
    assert event["status"] == "ok"
    assert event["request"] == {"via": "cli", "selection": "ids", "count": 1}
    assert event["response"] == {
        "erased_count": 1,
        "erased_ids": [secret],
        "erased_document_ids": [],
        "already_erased_count": 0,
        "derived_ids": [],
    }
    assert "heron" not in repr(service.store.read_events(MEMORY_EVENTS))


def test_erasing_what_was_already_erased_says_so_and_changes_nothing(
    service: MemoryService, data_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    gone = _save(service, "Once")
    assert main(["erase", gone, "--yes", "--data-dir", str(data_dir)]) == 0
    capsys.readouterr()

    assert main(["erase", gone, "--yes", "--data-dir", str(data_dir)]) == 0

    out = capsys.readouterr().out
    assert f"{gone} was already erased on " in out
    assert "by owner (metacortex erase)" in out
    assert out.rstrip().endswith("nothing to erase")


def test_erase_needs_ids_or_a_topic_and_refuses_an_unknown_id(
    service: MemoryService, data_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    kept = _save(service, "Kept")

    assert main(["erase", "--data-dir", str(data_dir)]) == 2
    assert main(["erase", kept, "--topic", "general", "--data-dir", str(data_dir)]) == 2
    assert main(["erase", kept, "zz-unknown", "--yes", "--data-dir", str(data_dir)]) == 2

    err = capsys.readouterr().err
    assert "give memory ids or --topic TOPIC (one of them)" in err
    assert "metacortex: no memory with id 'zz-unknown'; nothing was erased" in err
    assert service.store.get(kept) is not None


def _spaces(data_dir: Path, *keys: str) -> Access:
    """The owner's access once ``keys`` exist in the store (made as the owner would)."""
    store = SQLiteStore(data_dir / "metacortex.sqlite3")
    try:
        registry = Registry(store)
        for key in keys:
            registry.add_space(key)
        return Access.admin(directory=registry.directory())
    finally:
        store.close()


def test_erase_with_a_space_erases_that_spaces_topic_and_leaves_the_same_topic_elsewhere(
    service: MemoryService, data_dir: Path
) -> None:
    owner = _spaces(data_dir, "work")
    at_work = [
        _save(service, f"Standup note {i}", topic="notes", space="work", access=owner)
        for i in range(2)
    ]
    at_home = _save(service, "Shopping note", topic="notes")

    ran = _in_a_script(_argv(data_dir, "--topic", "notes", "--space", "work", "--yes"), data_dir)

    assert ran.returncode == 0, ran.stderr
    assert "2 memories of topic 'notes' in the space 'work' will be erased for good:" in (
        ran.stdout
    )
    assert all(service.store.get(i, space="work") is None for i in at_work)
    assert service.store.get(at_home) is not None
    [event] = [e for e in service.store.read_events(MEMORY_EVENTS) if e["tool_name"] == "erase"]
    assert event["space"] == "work"


def test_erase_in_a_space_that_does_not_exist_says_how_to_list_them(
    service: MemoryService, data_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    kept = _save(service, "Kept")

    assert main(["erase", kept, "--space", "nowhere", "--yes", "--data-dir", str(data_dir)]) == 2

    err = capsys.readouterr().err.strip()
    assert err.startswith("metacortex: no space 'nowhere'; ")
    assert err.endswith(f"space list --data-dir {data_dir}` shows the spaces")
    assert service.store.get(kept) is not None
