"""A portable backup carries relations and documents whole (issues 31, 32).

Counterparts: real SQLite files and the real Firestore emulator (``backup_stores``), real
documents read by the product's reader process (Markdown, a PDF made by fpdf2, a scanned
PDF), and the ``metacortex restore`` command as an operator runs it.
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from metacortex.access.registry import Registry
from metacortex.cli.main import main
from metacortex.documents.isolation import shut_down
from metacortex.domain.documents import Document
from metacortex.domain.records import ALL_STATES, Memory
from metacortex.domain.relations import Relation
from metacortex.operations.backup import BackupError, export_portable, restore_portable
from metacortex.providers.offline_merge import SentenceUnionMerger
from metacortex.service import Access, MemoryService
from metacortex.storage.base import MemoryFilter, MemoryStore
from metacortex.storage.sqlite import SQLiteStore
from tests.backup_stores import OpenStore, backup_stores
from tests.documents.craft import pdf_of_pages
from tests.fakes import HashingEmbedder

__all__ = ["backup_stores"]  # the fixture, used by name

ADMIN = Access.admin(spaces=("default", "work"))
SPACES = ("default", "work")
GARDEN = """# Garden plan

## Tomatoes

Plant the tomatoes in May, once the last frost is over. Stake them early.

## Beans

The runner beans climb the north fence; pick them every other day in August.
"""


@pytest.fixture(scope="module", autouse=True)
def _reader_hosts() -> Iterator[None]:
    """The reader processes these tests start end with them."""
    yield
    shut_down()


def _service(store: MemoryStore) -> MemoryService:
    return MemoryService(store, HashingEmbedder(), merger=SentenceUnionMerger())


def _save(service: MemoryService, content: str, space: str = "default") -> str:
    return str(service.save(ADMIN, content=content, space=space)["item"]["id"])


def _linked(store: MemoryStore) -> MemoryService:
    """Memories in two spaces with relations of every kind: a caller's valid one with a
    note, a caller's invalidated one, the lifecycle's ``supersedes`` and ``derived_from``."""
    service = _service(store)
    Registry(store).add_space("work", "Work", "the office")
    plan = _save(service, "The kitchen plan has an island")
    budget = _save(service, "The kitchen budget is 18,000 euros")
    oven = _save(service, "The oven goes left of the sink")
    service.relate(ADMIN, source_id=budget, target_id=plan, type="relates_to", note="its cost")
    service.relate(ADMIN, source_id=oven, target_id=plan, type="extends", note="a detail")
    service.invalidate_relation(ADMIN, source_id=oven, target_id=plan, type="extends")
    old = _save(service, "Standup is at nine", "work")
    new = _save(service, "Standup is at half past nine", "work")
    service.deprecate(ADMIN, id=old, superseding_id=new, space="work")
    drafts = [
        str(service.save(ADMIN, content=f"Draft {i} about the roof", draft=True)["item"]["id"])
        for i in range(2)
    ]
    service.consolidate(ADMIN, source_ids=drafts)
    return service


def _documented(store: MemoryStore) -> MemoryService:
    """Documents: a Markdown file in two versions (the first superseded, with a retired
    passage), a PDF (binary bytes, pages), a scanned PDF (no text, no passages), and a
    document in another space."""
    service = _service(store)
    Registry(store).add_space("work", "Work", "the office")
    service.create_document(
        ADMIN, content=GARDEN, media_type="text/markdown", source="notes/garden.md"
    )
    service.create_document(
        ADMIN,
        content=GARDEN.replace("north fence", "south fence"),
        media_type="text/markdown",
        source="notes/garden.md",
    )
    pages = ["Invoices are paid within thirty days. " * 12, "Refunds need a receipt. " * 14]
    pdf = pdf_of_pages(pages, title="Shop terms")
    service.create_document(ADMIN, content_base64=base64.b64encode(pdf).decode(), media_type=PDF)
    scanned = pdf_of_pages([None], title="Scan")
    service.create_document(
        ADMIN, content_base64=base64.b64encode(scanned).decode(), media_type=PDF, topic="scans"
    )
    service.create_document(
        ADMIN, content="Desks are booked a week ahead.", media_type="text/plain", space="work"
    )
    return service


PDF = "application/pdf"


def _memories(store: MemoryStore, space: str) -> list[Memory]:
    return store.list_page(MemoryFilter(states=ALL_STATES, space=space), 500, None)


def _relations(store: MemoryStore) -> list[Relation]:
    found: list[Relation] = []
    for space in SPACES:
        ids = [m.id for m in _memories(store, space)]
        found += store.relations_of(ids, space=space, include_invalid=True) if ids else []
    return sorted(found, key=lambda r: (r.space, r.id))


def _documents(store: MemoryStore) -> dict[str, tuple[Document, bytes | None, str, list[Memory]]]:
    """Every document version (current ones listed, older ones through ``supersedes``) with
    its bytes, its whole text and its passages."""
    found: dict[str, tuple[Document, bytes | None, str, list[Memory]]] = {}
    for space in SPACES:
        pending = [d.id for d in store.list_documents(100, None, space=space)]
        while pending:
            document = store.get_document(pending.pop(), space=space)
            assert document is not None
            found[document.id] = (
                document,
                store.document_bytes(document.id, space=space),
                store.document_text(document.id, 0, document.text_chars, space=space),
                store.document_passages(document.id, space=space),
            )
            if document.supersedes:
                pending.append(document.supersedes)
    return found


def _sqlite_backup(
    tmp_path: Path, seed: Callable[[MemoryStore], MemoryService]
) -> tuple[MemoryStore, Path]:
    """A SQLite store seeded by ``seed``, and its backup."""
    source = seed(SQLiteStore(tmp_path / "source.sqlite3")).store
    folder = tmp_path / "backup"
    export_portable(source, folder, "test-hashing:64")
    return source, folder


def _lines(folder: Path, name: str) -> list[str]:
    return (folder / name).read_text(encoding="utf-8").split("\n")[:-1]


def _restore(folder: Path, store: MemoryStore) -> Any:
    embedder = HashingEmbedder()
    store.bind_embedding(embedder.identity)
    return restore_portable(store, embedder, folder)


def _rewrite(folder: Path, name: str, lines: list[str], key: str) -> None:
    """A backup file rewritten, its manifest entry made to match it (as an editor would)."""
    data = "".join(line + "\n" for line in lines).encode()
    (folder / name).write_bytes(data)
    manifest = json.loads((folder / "manifest.json").read_text())
    entry = {"count": len(lines), "sha256": hashlib.sha256(data).hexdigest()}
    if key == "archive":
        manifest.update(entry)
    else:
        manifest[key].update(entry)
    (folder / "manifest.json").write_text(json.dumps(manifest))


# ------------------------------------------------------------------ relations
def test_relations_survive_backup_and_restore_valid_and_invalidated_with_note_author_and_times(
    backup_stores: OpenStore, tmp_path: Path
) -> None:
    source = _linked(backup_stores("source")).store
    export_portable(source, tmp_path / "backup", "test-hashing:64")
    target = backup_stores("target")

    summary = _restore(tmp_path / "backup", target)

    before = _relations(source)
    assert {r.type.value for r in before} >= {"relates_to", "extends", "supersedes"}
    assert {r.type.value for r in before} >= {"derived_from"}
    assert [r for r in before if not r.valid and r.invalidated_by is not None]
    assert [r for r in before if r.note == "its cost" and r.created_by is not None]
    assert _relations(target) == before
    assert (summary.relations.restored, summary.relations.skipped_existing) == (len(before), 0)
    assert summary.relations.missing_ends == 0
    # Results show them as before: `related` on a fetch.
    plan = next(m for m in _memories(source, "default") if "island" in m.content)
    fetched = _service(target).fetch(ADMIN, id=plan.id)["item"]["related"]
    assert [n["note"] for n in fetched] == ["its cost"]


def test_a_relation_whose_end_is_not_in_the_archive_is_skipped_and_counted(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source, folder = _sqlite_backup(tmp_path, _linked)
    lines = _lines(folder, "memories.ndjson")
    budget = next(line for line in lines if "18,000 euros" in line)
    _rewrite(folder, "memories.ndjson", [line for line in lines if line != budget], "archive")
    data_dir = tmp_path / "data"

    assert main(["restore", str(folder), "--data-dir", str(data_dir)]) == 0

    out = capsys.readouterr().out
    assert "relations: restored 4; 0 already present; 1 skipped (an end is not in" in out
    store = SQLiteStore(data_dir / "metacortex.sqlite3")
    budget_id = json.loads(budget)["id"]
    restored = _relations(store)
    assert len(restored) == len(_relations(source)) - 1
    assert not [r for r in restored if r.touches(budget_id)]


def test_a_tampered_relations_file_is_refused_by_its_sha256_and_nothing_is_written(
    tmp_path: Path,
) -> None:
    _source, folder = _sqlite_backup(tmp_path, _linked)
    relations = folder / "relations.ndjson"
    relations.write_text(relations.read_text().replace("its cost", "its price"))
    target = SQLiteStore(tmp_path / "target.sqlite3")

    with pytest.raises(BackupError, match=r"relations\.ndjson does not match the sha256"):
        _restore(folder, target)

    assert _memories(target, "default") == []


@pytest.mark.parametrize("key", ["relations", "documents"])
@pytest.mark.parametrize(
    ("change", "refusal"),
    [
        ({"file": "../elsewhere.ndjson"}, "is not a file name in"),
        ({"file": "sub/relations.ndjson"}, "is not a file name in"),
        ({"count": 99}, "its manifest says 99"),
        ({"sha256": "0" * 64}, "does not match the sha256"),
        (None, "names no"),
    ],
)
def test_a_manifest_entry_that_does_not_match_its_file_is_refused_before_anything_is_written(
    tmp_path: Path, key: str, change: dict[str, Any] | None, refusal: str
) -> None:
    _source, folder = _sqlite_backup(tmp_path, _linked)
    (folder / "sub").mkdir()
    (folder / "sub" / "relations.ndjson").write_bytes((folder / "relations.ndjson").read_bytes())
    manifest = json.loads((folder / "manifest.json").read_text())
    if change is None:
        del manifest[key]
    else:
        manifest[key].update(change)
    (folder / "manifest.json").write_text(json.dumps(manifest))
    target = SQLiteStore(tmp_path / "target.sqlite3")

    with pytest.raises(BackupError, match=refusal):
        _restore(folder, target)

    assert _memories(target, "default") == []


def test_relation_lines_a_backup_would_not_write_are_refused_and_named(tmp_path: Path) -> None:
    _source, folder = _sqlite_backup(tmp_path, _linked)
    lines = _lines(folder, "relations.ndjson")
    good = json.loads(lines[0])
    hostile = [
        "not json",
        json.dumps({**good, "type": "hates"}),
        json.dumps({**good, "note": ["a", "list"]}),
        json.dumps({**good, "note": "x" * 281}),
        json.dumps({**good, "created_at": "yesterday"}),
        json.dumps({k: v for k, v in good.items() if k != "created_at"}),
        json.dumps({**good, "space": "no such space!"}),
    ]
    _rewrite(folder, "relations.ndjson", [*lines, *hostile], "relations")

    summary = _restore(folder, SQLiteStore(tmp_path / "target.sqlite3"))

    refused = summary.relations.refused
    assert len(refused) == len(hostile)
    assert summary.relations.restored == len(lines)
    named = "\n".join(refused)
    for expected in ("not a JSON object", "hates", "note", "280", "created_at", "space"):
        assert expected in named


# ------------------------------------------------------------------ documents
def test_documents_survive_with_their_bytes_text_versions_and_cited_passages(
    backup_stores: OpenStore, tmp_path: Path
) -> None:
    source = _documented(backup_stores("source"))
    export_portable(source.store, tmp_path / "backup", "test-hashing:64")
    target_store = backup_stores("target")

    summary = _restore(tmp_path / "backup", target_store)

    before = _documents(source.store)
    assert len(before) == 5  # two versions, the PDF, the scan, the other space's
    assert _documents(target_store) == before
    assert (summary.documents.restored, summary.documents.skipped_existing) == (5, 0)
    target = _service(target_store)
    for space in SPACES:
        assert target.list_documents(ADMIN, space=space) == source.list_documents(
            ADMIN, space=space
        )
    for document, _, _, _ in before.values():
        key, space = document.id, document.space
        assert target.get_document(ADMIN, id=key, space=space) == source.get_document(
            ADMIN, id=key, space=space
        )
    # A passage found by search still cites its document, and the citation resolves.
    [hit] = target.search(ADMIN, query="refunds receipt", limit=1)["matches"]
    cited = hit["metadata"]["document"]
    assert cited["title"] == "Shop terms"
    passage = target.fetch(ADMIN, id=hit["id"])["item"]["content"]
    shown = target.get_document(ADMIN, id=cited["id"], offset=cited["start"], limit_chars=40)
    assert shown["text"] == passage[:40]
    assert _relations(target_store) == _relations(source.store)  # part_of, next


def test_restoring_twice_duplicates_no_relation_and_no_document(
    backup_stores: OpenStore, tmp_path: Path
) -> None:
    source = _documented(backup_stores("source"))
    _linked_more(source)
    export_portable(source.store, tmp_path / "backup", "test-hashing:64")
    target = backup_stores("target")
    first = _restore(tmp_path / "backup", target)
    relations, documents = _relations(target), _documents(target)

    second = _restore(tmp_path / "backup", target)

    assert (second.relations.restored, second.relations.skipped_existing) == (
        0,
        first.relations.restored,
    )
    assert (second.documents.restored, second.documents.skipped_existing) == (0, 5)
    assert _relations(target) == relations
    assert _documents(target) == documents
    assert len(target.list_documents(100, None)) == len(source.store.list_documents(100, None))


def _linked_more(service: MemoryService) -> None:
    a = _save(service, "The shed roof leaks")
    b = _save(service, "The shed roof was fixed in June")
    service.relate(ADMIN, source_id=b, target_id=a, type="updates", note="fixed")


def test_document_lines_whose_bytes_do_not_match_their_sha256_are_refused_and_named(
    tmp_path: Path,
) -> None:
    _source, folder = _sqlite_backup(tmp_path, _documented)
    lines = _lines(folder, "documents.ndjson")
    record = json.loads(lines[-1])
    record["data_base64"] = base64.b64encode(b"something else").decode()
    _rewrite(folder, "documents.ndjson", [*lines[:-1], json.dumps(record)], "documents")

    summary = _restore(folder, SQLiteStore(tmp_path / "target.sqlite3"))

    [refusal] = summary.documents.refused
    assert f"line {len(lines)}" in refusal
    assert record["id"] in refusal
    assert "sha256" in refusal
    assert summary.documents.restored == len(lines) - 1


def test_the_passages_of_a_document_refused_for_its_sha256_are_refused_with_it(
    tmp_path: Path,
) -> None:
    """Issue 37: they were written citing a document that does not exist."""
    _source, folder = _sqlite_backup(tmp_path, _documented)
    lines = _lines(folder, "documents.ndjson")
    record = json.loads(lines[-1])  # the document of the space "work"
    record["data_base64"] = base64.b64encode(b"something else").decode()
    _rewrite(folder, "documents.ndjson", [*lines[:-1], json.dumps(record)], "documents")
    memories = [json.loads(line) for line in _lines(folder, "memories.ndjson")]
    passages = [m["id"] for m in memories if (m.get("document") or {}).get("id") == record["id"]]
    assert passages
    target = SQLiteStore(tmp_path / "target.sqlite3")

    summary = _restore(folder, target)

    assert len(summary.documents.refused) == 1
    assert len(summary.refused) == len(passages)
    for passage, refusal in zip(passages, summary.refused, strict=True):
        assert passage in refusal
        assert f"a passage of the document {record['id']!r}, which was not restored" in refusal
    assert summary.restored == len(memories) - len(passages)
    assert target.get_many(passages, space="work") == [None] * len(passages)
    for space in SPACES:  # every passage restored cites a document the store holds
        for memory in _memories(target, space):
            if memory.document is not None:
                assert target.get_document(memory.document.id, space=space) is not None


def test_restored_relations_take_their_summaries_from_what_the_store_holds_not_the_archive(
    tmp_path: Path,
) -> None:
    """Issue 37: summaries are a copy of each end's words; the archive's were written as
    they were, whatever they said."""
    source, folder = _sqlite_backup(tmp_path, _documented)
    _linked_more(_service(source))
    export_portable(source, folder, "test-hashing:64")
    lines = [json.loads(line) for line in _lines(folder, "relations.ndjson")]
    for line in lines:
        line["source_summary"] = "words no memory of the archive holds"
        line["target_summary"] = "more words no memory holds"
    _rewrite(folder, "relations.ndjson", [json.dumps(line) for line in lines], "relations")
    target = SQLiteStore(tmp_path / "target.sqlite3")

    summary = _restore(folder, target)

    assert summary.relations.restored == len(lines) > 0
    restored = _relations(target)
    assert {r.id for r in restored} == {r.id for r in _relations(source)}
    assert restored == _relations(source)  # summaries as the source store made them
    assert not [r for r in restored if "no memory" in r.source_summary + r.target_summary]


def test_a_passage_whose_document_reference_a_backup_would_not_write_is_refused_and_named(
    tmp_path: Path,
) -> None:
    _source, folder = _sqlite_backup(tmp_path, _documented)
    lines = _lines(folder, "memories.ndjson")
    records = [json.loads(line) for line in lines]
    [first, second, third, *_] = [r for r in records if "document" in r]
    first["document"]["start"] = "0"
    second["document"]["section"] = "Garden plan > Beans"
    third["document"] = ["not", "a", "map"]
    _rewrite(folder, "memories.ndjson", [json.dumps(r) for r in records], "archive")

    summary = _restore(folder, SQLiteStore(tmp_path / "target.sqlite3"))

    assert len(summary.refused) == 3
    named = "\n".join(summary.refused)
    assert "document.start is not a whole number" in named
    assert "document.section not as a backup writes them" in named
    assert "document is a list, not a map" in named
    assert summary.restored == len(records) - 3


# ---------------------------------------------------------------- the format
def test_a_backup_with_relations_and_documents_is_byte_for_byte_deterministic(
    tmp_path: Path,
) -> None:
    service = _documented(SQLiteStore(tmp_path / "source.sqlite3"))
    _linked_more(service)
    export_portable(service.store, tmp_path / "one", "k")
    export_portable(service.store, tmp_path / "two", "k")

    names = sorted(path.name for path in (tmp_path / "one").iterdir())
    assert names == ["documents.ndjson", "manifest.json", "memories.ndjson", "relations.ndjson"]
    for name in names:
        assert (tmp_path / "one" / name).read_bytes() == (tmp_path / "two" / name).read_bytes()
    manifest = json.loads((tmp_path / "one" / "manifest.json").read_text())
    assert manifest["format_version"] == 2
    for key, name in (("relations", "relations.ndjson"), ("documents", "documents.ndjson")):
        data = (tmp_path / "one" / name).read_bytes()
        assert manifest[key] == {
            "file": name,
            "count": data.count(b"\n"),
            "sha256": hashlib.sha256(data).hexdigest(),
        }
    assert manifest["documents"]["count"] == 5
