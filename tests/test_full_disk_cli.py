"""A nearly full disk under every command that opens the store (issue 37, Low).

With 16 KiB left, SQLite cannot size its shared-memory file (``-shm``, 32 KiB) and
reports "disk I/O error", not SQLITE_FULL: every command printed
``sqlite3.OperationalError: disk I/O error`` with a traceback. Each now prints one line
saying the disk is full and where. The counterpart is a real file system: a tmpfs of 2
MiB (root mounts it, as CI runs), filled by a real file but for 16 KiB, and each command
a fresh ``metacortex`` process as an operator runs it.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.filesystems import can_mount, filled, tmpfs
from tests.owner_commands import Operator

LEFT = 16 * 1024


@pytest.fixture
def operator(tmp_path: Path) -> Iterator[Operator]:
    if not can_mount():
        pytest.skip("FULL-DISK COMMAND TESTS SKIPPED: needs root to mount a small tmpfs")
    with tmpfs(tmp_path / "small", size_kib=2048) as root:
        operator = Operator(root)
        operator.json("space", "add", "work")  # a store, made while there was room
        (root / "note.txt").write_text("A note to add as a document.\n")
        yield operator


@pytest.mark.parametrize(
    "words",
    [
        pytest.param(("space", "list"), id="space"),
        pytest.param(("person", "list"), id="person"),
        pytest.param(("client", "list"), id="client"),
        pytest.param(("erase", "--topic", "general", "--yes"), id="erase"),
        pytest.param(("backup", "{root}/backup"), id="backup"),
        pytest.param(("ingest", "{root}/note.txt"), id="ingest"),
        pytest.param(("stdio",), id="stdio"),
        pytest.param(("serve", "--port", "0"), id="serve"),
    ],
)
def test_with_16_kib_free_a_command_that_opens_the_store_says_in_one_line_the_disk_is_full(
    operator: Operator, words: tuple[str, ...]
) -> None:
    argv = [word.format(root=operator.root) for word in words]
    operator.env  # noqa: B018 - its home folder made while there is room

    with filled(operator.root, leave=LEFT):
        ran = operator.run(*argv, stdin="")

    assert ran.returncode == 2, ran.stderr
    assert "Traceback" not in ran.stderr + ran.stdout
    [refusal] = [line for line in ran.stderr.splitlines() if "full" in line]
    assert refusal.startswith("metacortex: ")
    assert f"the disk holding {operator.data_dir}/" in refusal
    assert "is full" in refusal
    assert "Free space on that disk" in refusal
