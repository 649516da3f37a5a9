"""Operator tasks: portable backup and restore, re-embedding, full SQLite copies."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from metacortex.errors import FailedPrecondition
from metacortex.operations.backup import BackupError, export_portable, restore_portable
from metacortex.operations.reembed import reembed
from metacortex.providers.offline_merge import SentenceUnionMerger
from metacortex.service import Access, MemoryService
from metacortex.storage.base import MemoryStore
from metacortex.storage.sqlite import SQLiteStore
from tests.backup_stores import OpenStore, backup_stores
from tests.fakes import HashingEmbedder

__all__ = ["backup_stores"]  # the fixture, used by name

ADMIN = Access.admin()
ALL = ["active", "wip", "merged", "deprecated"]


def _corpus(path: Path | MemoryStore) -> MemoryService:
    store = SQLiteStore(path) if isinstance(path, Path) else path
    service = MemoryService(store, HashingEmbedder(), merger=SentenceUnionMerger())
    old = service.save(ADMIN, content="Deploy from the main branch.", topic="ops")["item"]["id"]
    new = service.save(ADMIN, content="Deploy from release branches.", topic="ops")["item"]["id"]
    service.deprecate(ADMIN, id=old, superseding_id=new, supersession_reason="corrected")
    drafts = [
        service.save(ADMIN, content=f"Note {i}: ünïcode ☕", draft=True, origin="agent_inferred")[
            "item"
        ]["id"]
        for i in range(3)
    ]
    service.consolidate(ADMIN, source_ids=drafts[:2])
    service.save(ADMIN, content="valid window", valid_from="2026-01-01T00:00:00Z")
    return service


def _everything(service: MemoryService) -> list[dict[str, object]]:
    return [
        service.fetch(ADMIN, id=item["id"])["item"]
        for item in service.list_memories(ADMIN, filter_state=ALL, limit=100)["items"]
    ]


def test_a_portable_backup_restores_every_record_with_its_id_and_links(
    backup_stores: OpenStore, tmp_path: Path
) -> None:
    source = _corpus(backup_stores("source"))
    summary = export_portable(source.store, tmp_path / "backup", "test-hashing:64")
    target_store = backup_stores("target")
    target = MemoryService(target_store, HashingEmbedder(), merger=SentenceUnionMerger())

    restored = restore_portable(target_store, HashingEmbedder(), tmp_path / "backup")

    assert summary.count == restored.restored == len(_everything(source))
    # The records, ids, lineage fields and relations (each result's `related`) come
    # back whole.
    assert any(item["related"] for item in _everything(source))
    assert _everything(target) == _everything(source)
    hit = target.search(ADMIN, query="release branches")["matches"][0]
    assert hit["summary"] == "Deploy from release branches."


def test_a_portable_backup_is_readable_by_its_owner_only(tmp_path: Path) -> None:
    source = _corpus(tmp_path / "a.sqlite3")
    previous = os.umask(0o022)  # the usual umask: default permissions would be 0755/0644
    try:
        export_portable(source.store, tmp_path / "backup", "k")
    finally:
        os.umask(previous)
    assert stat.S_IMODE((tmp_path / "backup").stat().st_mode) == 0o700
    for written in (tmp_path / "backup").iterdir():
        assert stat.S_IMODE(written.stat().st_mode) == 0o600, written.name


def test_restoring_twice_skips_what_is_already_there(tmp_path: Path) -> None:
    source = _corpus(tmp_path / "a.sqlite3")
    export_portable(source.store, tmp_path / "backup", "k")
    store = SQLiteStore(tmp_path / "b.sqlite3")
    MemoryService(store, HashingEmbedder(), merger=SentenceUnionMerger())
    first = restore_portable(store, HashingEmbedder(), tmp_path / "backup")
    second = restore_portable(store, HashingEmbedder(), tmp_path / "backup")
    assert second.restored == 0
    assert second.skipped_existing == first.restored


def test_the_archive_is_byte_for_byte_deterministic(tmp_path: Path) -> None:
    source = _corpus(tmp_path / "a.sqlite3")
    export_portable(source.store, tmp_path / "one", "k")
    export_portable(source.store, tmp_path / "two", "k")
    for name in ("memories.ndjson", "manifest.json"):
        assert (tmp_path / "one" / name).read_bytes() == (tmp_path / "two" / name).read_bytes()
    manifest = json.loads((tmp_path / "one" / "manifest.json").read_text())
    assert manifest["vectors"] is False


def test_a_tampered_archive_is_refused(tmp_path: Path) -> None:
    source = _corpus(tmp_path / "a.sqlite3")
    export_portable(source.store, tmp_path / "backup", "k")
    archive = tmp_path / "backup" / "memories.ndjson"
    archive.write_text(archive.read_text().replace("main branch", "evil branch"))
    with pytest.raises(BackupError, match="sha256"):
        restore_portable(
            SQLiteStore(tmp_path / "b.sqlite3"), HashingEmbedder(), tmp_path / "backup"
        )
    with pytest.raises(BackupError, match=r"manifest\.json not found"):
        restore_portable(SQLiteStore(tmp_path / "c.sqlite3"), HashingEmbedder(), tmp_path)


def test_reembedding_lets_the_store_open_with_the_new_model(tmp_path: Path) -> None:
    path = tmp_path / "a.sqlite3"
    before = _everything(_corpus(path))
    new_model = HashingEmbedder(32, "model-b")
    with pytest.raises(FailedPrecondition, match="model-b:32"):
        MemoryService(SQLiteStore(path), new_model, merger=SentenceUnionMerger())

    summary = reembed(SQLiteStore(path), new_model)

    reopened = MemoryService(SQLiteStore(path), new_model, merger=SentenceUnionMerger())
    assert summary.count == len(before)
    assert summary.identity == "model-b:32"
    assert _everything(reopened) == before
    assert reopened.search(ADMIN, query="release branches")["matches"][0]["summary"].startswith(
        "Deploy from release"
    )


def test_a_full_sqlite_copy_keeps_vectors_and_events(tmp_path: Path) -> None:
    source = _corpus(tmp_path / "a.sqlite3")
    assert isinstance(source.store, SQLiteStore)
    source.store.copy_to(tmp_path / "copy.sqlite3")
    copy = MemoryService(
        SQLiteStore(tmp_path / "copy.sqlite3"), HashingEmbedder(), merger=SentenceUnionMerger()
    )
    assert _everything(copy) == _everything(source)
    assert copy.search(ADMIN, query="release branches")["matches"]


@pytest.mark.parametrize("separator", ["\u2028", "\u2029"])
def test_a_memory_holding_a_unicode_line_separator_survives_backup_and_restore(
    tmp_path: Path, separator: str
) -> None:
    # JSON leaves U+2028 and U+2029 unescaped; a reader that split the archive on every
    # Unicode line boundary (str.splitlines) saw two records in that line.
    service = _corpus(tmp_path / "a.sqlite3")
    saved = service.save(ADMIN, content=f"first line{separator}second line")["item"]
    export_portable(service.store, tmp_path / "backup", "k")
    store = SQLiteStore(tmp_path / "b.sqlite3")
    MemoryService(store, HashingEmbedder(), merger=SentenceUnionMerger())

    restored = restore_portable(store, HashingEmbedder(), tmp_path / "backup")

    assert restored.refused == ()
    memory = store.get(saved["id"])
    assert memory is not None
    assert memory.content == f"first line{separator}second line"
