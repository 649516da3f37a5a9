"""``metacortex ingest`` as a person runs it: a fresh process on real files and folders,
the real local embedding model, a real SQLite store read back afterwards."""

from __future__ import annotations

import fcntl
import os
import pty
import struct
import subprocess
import sys
import termios
from pathlib import Path
from typing import Final

import pytest

from metacortex.providers.offline_merge import SentenceUnionMerger
from metacortex.service import Access, MemoryService
from metacortex.storage.sqlite import SQLiteStore
from tests.commands import run_command
from tests.documents.craft import pdf_of_pages

pytest.importorskip(
    "metacortex.providers.local", reason="LOCAL EMBEDDER NOT AVAILABLE: ingest cannot embed"
)
ADMIN: Final = Access.admin()


def _env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("METACORTEX_")}


def _ingest(data_dir: Path, cwd: Path, *args: str) -> tuple[int, str, str]:
    done = run_command(
        [sys.executable, "-m", "metacortex.cli.main", "ingest", *args, "--data-dir", str(data_dir)],
        env=_env(),
        cwd=cwd,
    )
    return done.returncode, done.stdout, done.stderr


def _service(data_dir: Path) -> MemoryService:
    from metacortex.providers.local import MiniLMEmbedder

    store = SQLiteStore(data_dir / "metacortex.sqlite3")
    return MemoryService(store, MiniLMEmbedder.load(), merger=SentenceUnionMerger())


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    root = tmp_path / "notes"
    (root / "work" / "deep").mkdir(parents=True)
    (root / "recipes.md").write_text("# Recipes\n\nBake the bread at 220 degrees for 35 minutes.\n")
    (root / "work" / "team.txt").write_text("Ana leads the payments team since January.\n")
    (root / "work" / "deep" / "terms.pdf").write_bytes(
        pdf_of_pages(["Refunds are paid within five working days."], title="Terms")
    )
    (root / "work" / "photo.jpg").write_bytes(b"\xff\xd8\xff not a document")
    (root / ".hidden.md").write_text("# Hidden\n\nNot taken.\n")
    return root


def test_a_folder_is_walked_and_its_documents_become_searchable_citing_their_files(
    folder: Path, tmp_path: Path
) -> None:
    data = tmp_path / "data"
    status, out, err = _ingest(data, tmp_path, str(folder), "--topic", "notes")
    assert status == 0, err
    assert (
        out.splitlines()[-1] == "3 added, 0 replaced, 0 skipped as unchanged, 0 refused; 3 passages"
    )
    service = _service(data)
    try:
        documents = service.list_documents(ADMIN)["documents"]
        assert sorted(d["source"] for d in documents) == sorted(
            str(p.resolve())
            for p in (
                folder / "recipes.md",
                folder / "work/team.txt",
                folder / "work/deep/terms.pdf",
            )
        )
        [hit] = service.search(ADMIN, query="how long to bake bread", limit=1)["matches"]
        assert hit["metadata"]["document"]["title"] == "Recipes"
        assert hit["metadata"]["topic"] == "notes"
        assert {d["added_by"]["client"] for d in documents} == {"cli"}
    finally:
        service.store.close()


def test_unchanged_files_are_skipped_changed_ones_replaced_and_refusals_named(
    folder: Path, tmp_path: Path
) -> None:
    data = tmp_path / "data"
    assert _ingest(data, tmp_path, str(folder))[0] == 0
    (folder / "recipes.md").write_text(
        "# Recipes\n\nBake the bread at 230 degrees for 30 minutes.\n"
    )
    (folder / "broken.pdf").write_bytes(b"%PDF-1.4\nthis is not a PDF at all\n")
    planned = _ingest(data, tmp_path, str(folder), "--dry-run")
    assert planned[0] == 0  # a dry run refuses only by type and size
    assert "replaced: " + str(folder / "recipes.md") in planned[1]
    status, out, err = _ingest(data, tmp_path, str(folder), str(folder / "work" / "photo.jpg"))
    assert status == 1, err
    lines = out.splitlines()
    assert f"replaced: {folder / 'recipes.md'}" in lines
    assert f"skipped (unchanged): {folder / 'work' / 'team.txt'}" in lines
    assert any(line.startswith(f"refused: {folder / 'broken.pdf'}: corrupt:") for line in lines)
    assert f"refused: {folder / 'work' / 'photo.jpg'}: unsupported_type: " in out
    assert lines[-1] == "0 added, 1 replaced, 2 skipped as unchanged, 2 refused; 1 passages"
    service = _service(data)
    try:
        [hit] = service.search(ADMIN, query="bread oven degrees", limit=1)["matches"]
        assert "230 degrees" in hit["summary"]
        assert len(service.list_documents(ADMIN)["documents"]) == 3
    finally:
        service.store.close()


def test_on_a_terminal_a_bar_shows_passages_per_second(folder: Path, tmp_path: Path) -> None:
    long = "\n\n".join(f"Paragraph {n} says something about the garden." * 8 for n in range(40))
    (folder / "long.md").write_text("# Long\n\n" + long)
    argv = [
        sys.executable,
        "-m",
        "metacortex.cli.main",
        "ingest",
        str(folder),
        "--data-dir",
        str(tmp_path / "data"),
    ]
    status, shown = _in_a_window(argv, tmp_path)
    assert status == 0, shown
    assert " passage/s]" in shown
    assert "4 added" in shown


def _in_a_window(argv: list[str], cwd: Path) -> tuple[int, str]:
    """``argv`` in a pseudo-terminal of 24 x 100 characters (a new pty has no size, and a
    bar is drawn to the window's width), everything it showed."""
    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 100, 0, 0))
    process = subprocess.Popen(  # noqa: S603 - our own entry point
        argv, stdin=follower, stdout=follower, stderr=follower, cwd=cwd, env=_env()
    )
    os.close(follower)
    shown = b""
    try:
        while True:
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # EIO: the command ended and closed the terminal
                break
            if not chunk:
                break
            shown += chunk
        return process.wait(timeout=60), shown.decode(errors="replace")
    finally:
        os.close(leader)
        if process.poll() is None:
            process.kill()


def test_an_unknown_space_is_refused_before_anything_is_read(folder: Path, tmp_path: Path) -> None:
    status, _, err = _ingest(tmp_path / "data", tmp_path, str(folder), "--space", "nowhere")
    assert status == 2
    assert "no space 'nowhere'" in err
