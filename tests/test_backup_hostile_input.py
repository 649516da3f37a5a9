"""``backup`` and ``restore`` against an attacker's (or a damaged disk's) input.

Counterpart: hostile input. A backup folder is a file anyone may hand the
operator; its manifest and records are checked as the tools check a client's
arguments, and a backup never writes through a symbolic link or over a file.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from metacortex.cli.main import main
from metacortex.domain.records import ALL_STATES
from metacortex.operations.backup import BackupError, export_portable, restore_portable
from metacortex.providers.offline_merge import SentenceUnionMerger
from metacortex.service import Access, MemoryService
from metacortex.storage.base import MemoryFilter
from metacortex.storage.sqlite import SQLiteStore
from tests.fakes import HashingEmbedder

ADMIN = Access.admin()


def _backup(tmp_path: Path) -> tuple[Path, list[dict[str, Any]]]:
    """A real backup of a small corpus, and its records."""
    service = MemoryService(
        SQLiteStore(tmp_path / "source.sqlite3"), HashingEmbedder(), merger=SentenceUnionMerger()
    )
    old = service.save(ADMIN, content="The boiler is serviced in May.", topic="house")
    new = service.save(ADMIN, content="The boiler is serviced in June.", topic="house")
    service.deprecate(ADMIN, id=old["item"]["id"], superseding_id=new["item"]["id"])
    folder = tmp_path / "backup"
    export_portable(service.store, folder, "test-hashing:64")
    service.store.close()
    lines = (folder / "memories.ndjson").read_text().splitlines()
    return folder, [json.loads(line) for line in lines]


def _rewrite(folder: Path, records: list[dict[str, Any]], **manifest_changes: Any) -> None:
    """The records as an attacker writes them, with a manifest that matches them."""
    data = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records).encode()
    (folder / "memories.ndjson").write_bytes(data)
    manifest = json.loads((folder / "manifest.json").read_text())
    manifest.update(count=len(records), sha256=hashlib.sha256(data).hexdigest())
    manifest.update(manifest_changes)
    (folder / "manifest.json").write_text(json.dumps(manifest))


def _like(record: dict[str, Any], memory_id: str, **metadata: Any) -> dict[str, Any]:
    copy: dict[str, Any] = json.loads(json.dumps(record))
    copy["id"] = memory_id
    copy["metadata"].update(metadata)
    return copy


def _target(tmp_path: Path) -> SQLiteStore:
    store = SQLiteStore(tmp_path / "target.sqlite3")
    MemoryService(store, HashingEmbedder(), merger=SentenceUnionMerger())
    return store


@pytest.mark.parametrize("where", ["../outside.ndjson", "absolute", "sub/memories.ndjson", ".."])
def test_a_manifest_naming_an_archive_outside_its_folder_is_refused(
    tmp_path: Path, where: str
) -> None:
    folder, records = _backup(tmp_path)
    elsewhere = tmp_path / "outside.ndjson"
    elsewhere.write_bytes((folder / "memories.ndjson").read_bytes())
    (folder / "sub").mkdir()
    (folder / "sub" / "memories.ndjson").write_bytes(elsewhere.read_bytes())
    name = str(elsewhere) if where == "absolute" else where
    _rewrite(folder, records, archive=name)
    (folder / "memories.ndjson").unlink()  # only the file the manifest points at remains
    with pytest.raises(BackupError, match="not a file name in"):
        restore_portable(_target(tmp_path), HashingEmbedder(), folder)


def test_records_the_tools_would_refuse_are_refused_counted_and_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder, records = _backup(tmp_path)
    good = records[0]
    hostile = [
        _like(good, "has space"),
        _like(good, "trailing-newline\n"),
        {**_like(good, "nul-content"), "content": "before\x00after"},
        {**_like(good, "huge-content"), "content": "x" * 600_000},
        _like(good, "agent-origin", provenance={"origin": "agent"}),
        _like(good, "year-zero", created_at="0001-01-01T00:00:00+14:00"),
        _like(good, "loop-a", superseded_by="loop-b", branch_state="deprecated"),
        _like(good, "loop-b", superseded_by="loop-a", branch_state="deprecated"),
        _like(good, "letters", provenance={"derived_from": "abc"}),
        _like(good, "listed-topic", topic=["x"]),
        _like(good, "no-state", branch_state=None),
    ]
    _rewrite(folder, [*records, *hostile, _like(good, "fine-extra")])
    data_dir = tmp_path / "data"

    assert main(["restore", str(folder), "--data-dir", str(data_dir)]) == 1

    printed = capsys.readouterr()
    out = printed.out
    assert "11 of the backup's records were refused" in printed.err
    assert "restored 3 memories" in out
    assert "11 refused" in out
    for named in ("has space", "trailing-newline\\n", "nul-content", "huge-content"):
        assert named in out
    assert "'agent' is not one of user_asserted, agent_inferred, legacy_import" in out
    assert "outside the supported range" in out
    assert "loop-a -> loop-b -> loop-a" in out
    assert "derived_from is a string, not a list of strings" in out
    assert "metadata.topic is a list, not a string" in out
    assert "metadata.branch_state is missing" in out
    store = SQLiteStore(data_dir / "metacortex.sqlite3")
    kept = {m.id for m in store.list_page(_everything_filter(), 100, None)}
    assert kept == {r["id"] for r in records} | {"fine-extra"}
    [deprecated] = [store.get(r["id"]) for r in records if r["metadata"]["superseded_by"]]
    assert deprecated is not None
    assert deprecated.superseded_by in kept


def _everything_filter() -> MemoryFilter:
    return MemoryFilter(states=ALL_STATES)


def test_a_portable_backup_never_writes_through_a_symbolic_link(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    planted = tmp_path / "planted"
    planted.mkdir()
    (planted / "memories.ndjson").symlink_to(victim)
    linked_folder = tmp_path / "linked"
    linked_folder.symlink_to(tmp_path / "elsewhere", target_is_directory=True)
    data_dir = str(tmp_path / "data")

    assert main(["backup", str(planted), "--data-dir", data_dir]) == 2
    assert "is a symbolic link" in capsys.readouterr().err
    assert main(["backup", str(linked_folder), "--data-dir", data_dir]) == 2
    assert "is a symbolic link" in capsys.readouterr().err
    assert victim.read_text() == "precious\n"
    assert not (tmp_path / "elsewhere").exists()


@pytest.mark.parametrize("existing", ["file", "link"])
def test_a_full_backup_onto_an_existing_file_or_link_is_one_clear_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], existing: str
) -> None:
    victim = tmp_path / "notes.txt"
    victim.write_text("not a database\n")
    destination = victim if existing == "file" else tmp_path / "copy.sqlite3"
    if existing == "link":
        destination.symlink_to(victim)

    status = main(["backup", str(destination), "--full", "--data-dir", str(tmp_path / "data")])

    err = capsys.readouterr().err
    assert status == 2
    assert "already exists" in err
    assert len(err.strip().splitlines()) == 1
    assert victim.read_text() == "not a database\n"
