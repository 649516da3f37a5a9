"""``metacortex import`` as a person runs it: a fresh process on an export file, the real
local embedding model, a real SQLite store read back afterwards."""

from __future__ import annotations

import os
import sys
import zipfile
from pathlib import Path
from typing import Final

import pytest

from metacortex.domain.records import BranchState
from metacortex.providers.offline_merge import SentenceUnionMerger
from metacortex.service import Access, MemoryService
from metacortex.storage.base import MemoryFilter
from metacortex.storage.sqlite import SQLiteStore
from tests.commands import run_command
from tests.documents.test_ingest_cli import _in_a_window
from tests.importing.exports import (
    Turn,
    chatgpt_export,
    claude_export,
    generated_chats,
    zipped,
)

pytest.importorskip(
    "metacortex.providers.local", reason="LOCAL EMBEDDER NOT AVAILABLE: import cannot embed"
)
ADMIN: Final = Access.admin()


def _env(**settings: str) -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("METACORTEX_")} | settings


def _import(data_dir: Path, cwd: Path, *args: str, **settings: str) -> tuple[int, list[str], str]:
    done = run_command(
        [sys.executable, "-m", "metacortex.cli.main", "import", *args, "--data-dir", str(data_dir)],
        env=_env(**settings),
        cwd=cwd,
    )
    return done.returncode, done.stdout.splitlines(), done.stderr


def _service(data_dir: Path) -> MemoryService:
    from metacortex.providers.local import MiniLMEmbedder

    store = SQLiteStore(data_dir / "metacortex.sqlite3")
    return MemoryService(store, MiniLMEmbedder.load(), merger=SentenceUnionMerger())


def test_a_claude_export_is_imported_once_and_found_by_its_words(tmp_path: Path) -> None:
    chats = generated_chats(4, 6)
    chats[1].turns[3] = Turn(
        "assistant",
        "Your sister's wedding is in Lisbon on the ninth of June.",
        chats[1].turns[3].at,
    )
    export = tmp_path / "claude-data.zip"
    export.write_bytes(claude_export(chats))
    data = tmp_path / "data"

    status, lines, err = _import(data, tmp_path, "claude", str(export), "--topic", "history")
    assert status == 0, err
    assert lines[:3] == [
        "imported: 4 conversations as new documents (24 messages, 24 passages added)",
        "updated: 0 conversations continued since they were imported (new versions; "
        "0 passages kept)",
        "unchanged: 0 conversations already imported",
    ]
    assert "skipped: 4 files: its bytes are not in the export" in lines

    status, lines, err = _import(data, tmp_path, "claude", str(export))
    assert status == 0, err
    assert lines[2] == "unchanged: 4 conversations already imported"
    assert lines[0].startswith("imported: 0 conversations")

    service = _service(data)
    try:
        [hit] = service.search(ADMIN, query="when is my sister getting married", limit=1)["matches"]
        assert hit["summary"].startswith("Assistant: Your sister's wedding is in Lisbon")
        assert hit["metadata"]["occurred_at"] == "2023-03-02T09:03:00.000Z"
        assert hit["metadata"]["document"]["title"] == "Chat 1"
        assert hit["metadata"]["topic"] == "history"
        documents = service.list_documents(ADMIN)["documents"]
        assert {d["added_by"]["client"] for d in documents} == {"cli"}
    finally:
        service.store.close()


def test_a_hostile_archive_is_refused_and_writes_nothing(tmp_path: Path) -> None:
    buffer = tmp_path / "evil.zip"
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("conversations.json", "[]")
        archive.writestr("../../.ssh/authorized_keys", "ssh-ed25519 AAAA attacker")
    data = tmp_path / "data"
    status, lines, err = _import(data, tmp_path, "chatgpt", str(buffer))
    assert status == 2
    assert lines == []
    assert err.startswith("metacortex: the archive names an entry outside itself")
    assert not (data / "metacortex.sqlite3").exists()
    assert not (tmp_path.parent / ".ssh").exists()


def test_a_conversation_over_a_document_limit_is_refused_alone_and_named(tmp_path: Path) -> None:
    chats = generated_chats(3, 4)
    chats[0].turns *= 3  # twelve messages: more passages than the limit
    export = tmp_path / "chatgpt.zip"
    export.write_bytes(chatgpt_export(chats))
    data = tmp_path / "data"
    status, lines, err = _import(
        data, tmp_path, "chatgpt", str(export), METACORTEX_DOCUMENT_MAX_PASSAGES="8"
    )
    assert status == 1, err
    assert lines[0] == "imported: 2 conversations as new documents (8 messages, 8 passages added)"
    assert lines[-1].startswith("refused: 'Chat 0': too_many_passages: the document cuts into 12")
    service = _service(data)
    try:
        titles = {d["title"] for d in service.list_documents(ADMIN)["documents"]}
        assert titles == {"Chat 1", "Chat 2"}
        active = MemoryFilter(states=(BranchState.ACTIVE,))
        assert len(service.store.list_page(active, 100, None)) == 8
    finally:
        service.store.close()


def test_on_a_terminal_a_bar_counts_the_messages(tmp_path: Path) -> None:
    export = tmp_path / "chatgpt.zip"
    export.write_bytes(chatgpt_export(generated_chats(3, 10)))
    argv = [sys.executable, "-m", "metacortex.cli.main", "import", "chatgpt", str(export)]
    status, shown = _in_a_window([*argv, "--data-dir", str(tmp_path / "data")], tmp_path)
    assert status == 0, shown
    assert "30/30" in shown
    assert " message/s]" in shown


def test_the_zip_of_another_service_is_refused_saying_whose_it_looks(tmp_path: Path) -> None:
    export = tmp_path / "export.zip"
    export.write_bytes(zipped({"conversations.json": b'[{"uuid": "x", "chat_messages": []}]'}))
    status, _, err = _import(tmp_path / "data", tmp_path, "chatgpt", str(export))
    assert status == 2
    assert "it looks like a Claude export" in err
