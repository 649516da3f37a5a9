"""Portable backup: deterministic NDJSON files plus a manifest, and their restore.

A backup folder holds ``memories.ndjson`` (every memory in every state, passages of
documents included, no vectors), ``relations.ndjson`` (every relation, valid or
invalidated: ``backup_relations``), ``documents.ndjson`` (every version of every
document with its text and bytes: ``backup_documents``) and ``manifest.json`` naming
each file with its line count and sha256. Memories are ordered by (created_at, id) per
space, one canonical JSON object per line, so the same store always gives the same
bytes. Restore checks every file first, then writes the documents, the memories
(re-embedded with the configured model, ids kept, so supersession links and
provenance survive; a passage only when its document was restored or is stored: the
passages of a document refused are refused with it) and the relations (their
summaries rebuilt from what the store holds). A full backup with vectors is the store's own:
for SQLite, ``backup_sqlite_file`` (an online, consistent copy); for Firestore, a
managed export (docs/DEPLOYMENT.md).
"""

from __future__ import annotations

import contextlib
import json
from collections import defaultdict
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from metacortex.access.registry import Registry, read_directory
from metacortex.domain.record_rules import supersession_loops
from metacortex.domain.records import DEFAULT_SPACE, Memory
from metacortex.domain.relations import Relation
from metacortex.errors import Conflict
from metacortex.operations.archive_records import (
    RecordReader,
    passage_line,
    read_lines,
    read_original,
    read_portable,
)
from metacortex.operations.backup_documents import (
    DOCUMENTS,
    DocumentsRestored,
    document_line,
    restore_documents,
    versions,
)
from metacortex.operations.backup_files import (
    BackupError,
    LineWriter,
    backup_file,
    checked_file,
    named_file,
    private_text,
    text_lines,
)
from metacortex.operations.backup_relations import (
    RELATIONS,
    RelationsRestored,
    ordered,
    relation_line,
    restore_relations,
)
from metacortex.operations.progress import progress
from metacortex.operations.walk import all_memories, count_memories, spaces_of
from metacortex.providers.base import Embedder
from metacortex.storage import sqlite_files
from metacortex.storage.base import MemoryStore, StoreTransaction

if TYPE_CHECKING:
    from metacortex.storage.base import Vector

__all__ = ["BackupError", "export_portable", "restore_portable"]

FORMAT: Final = "metacortex-portable"
# 2: relations.ndjson and documents.ndjson beside the memories, and each passage's
# reference to its document; version 1 backups (memories only) restore as they are.
FORMAT_VERSION: Final = 2
READABLE_VERSIONS: Final = (1, 2)
ARCHIVE: Final = "memories.ndjson"
MANIFEST: Final = "manifest.json"
# The TypeScript MetaCortex's archive (archive.ts, backup-memories.ts): its manifest has
# no format name; its records file is always memories.ndjson beside it.
ORIGINAL_FORMAT: Final = "the TypeScript MetaCortex's portable archive"
ORIGINAL_ARCHIVE: Final = "memories.ndjson"
_BATCH: Final = 64  # memories per write transaction
# Memories per call to the embedder: the local model sorts a call's texts by token
# length, so a larger call pads less (docs/benchmarks.md "Bulk ingest").
EMBED_CHUNK: Final = 512
_MAX_MANIFEST_BYTES: Final = 1024 * 1024


def is_original_manifest(manifest: dict[str, Any]) -> bool:
    """archive.ts ``ArchiveManifest``: ``schema_version`` 1, ``document_count``, no ``format``."""
    return (
        "format" not in manifest
        and manifest.get("schema_version") == 1
        and isinstance(manifest.get("document_count"), int)
        and isinstance(manifest.get("collection"), str)
    )


def _record(memory: Memory) -> dict[str, Any]:
    # Authors by id: names belong to the people of a store, not to its memories.
    record: dict[str, Any] = {
        "id": memory.id,
        "content": memory.content,
        "retrieval_text": memory.retrieval_text,
    }
    if memory.document is not None:
        record["document"] = passage_line(memory.document)
    return record | {"metadata": memory.metadata()}


@dataclass(frozen=True, slots=True)
class BackupSummary:
    count: int
    sha256: str
    directory: Path
    relations: int = 0
    documents: int = 0


def export_portable(store: MemoryStore, directory: Path, embedding_key: str) -> BackupSummary:
    if directory.is_symlink():
        raise BackupError(
            f"{directory} is a symbolic link: a backup never writes through one. Give the "
            f"folder's real path ({directory.resolve()}) if that is where it should go"
        )
    sqlite_files.make_private_directory(directory)
    spaces = spaces_of(store)
    relations: list[Relation] = []
    cited: dict[str, set[str]] = defaultdict(set)
    with (
        LineWriter(directory / ARCHIVE) as memories,
        progress("backup", count_memories(store)) as bar,
    ):
        for page in all_memories(store):
            space = page[0].space
            for memory in page:
                memories.write(_record(memory))
                if memory.document is not None:
                    cited[space].add(memory.document.id)
            relations += store.relations_of([m.id for m in page], space=space, include_invalid=True)
            bar.advance(len(page))
    with LineWriter(directory / RELATIONS) as relation_file:
        for relation in ordered(relations, spaces):
            relation_file.write(relation_line(relation))
    with LineWriter(directory / DOCUMENTS) as document_file:
        for space in spaces:
            for version in versions(store, space, sorted(cited[space])):
                document_file.write(document_line(version))
    manifest = {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "archive": ARCHIVE,
        "count": memories.count,
        "sha256": memories.sha256,
        "relations": relation_file.entry(),
        "documents": document_file.entry(),
        "source_embedding": embedding_key,
        "vectors": False,
        # The spaces' names and descriptions, so a restore into a new store makes them.
        "spaces": [
            {"key": space.key, "name": space.name, "description": space.description}
            for space in sorted(read_directory(store).spaces.values(), key=lambda s: s.key)
        ],
    }
    with private_text(directory / MANIFEST) as out:
        out.write(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
    return BackupSummary(
        memories.count, memories.sha256, directory, relation_file.count, document_file.count
    )


@dataclass(frozen=True, slots=True)
class RestoreSummary:
    restored: int
    skipped_existing: int
    refused: tuple[str, ...] = ()
    source: str = FORMAT
    relations: RelationsRestored = field(default_factory=RelationsRestored)
    documents: DocumentsRestored = field(default_factory=DocumentsRestored)

    @property
    def all_refused(self) -> tuple[str, ...]:
        """Every refusal: the memories', then the documents' and the relations' lines."""
        return self.refused + self.documents.refused + self.relations.refused


def _read_manifest(directory: Path) -> dict[str, Any]:
    path = directory / MANIFEST
    if not path.is_file():
        raise BackupError(
            f"{path} not found: point restore at a folder made by `metacortex backup` "
            "(or by the TypeScript MetaCortex's backup:memories)"
        )
    with path.open("rb") as stream:
        data = stream.read(_MAX_MANIFEST_BYTES + 1)
    if len(data) > _MAX_MANIFEST_BYTES:
        raise BackupError(f"{path} is larger than a manifest can be: it is not one")
    try:
        manifest = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError):
        raise BackupError(f"{path} is not a JSON manifest") from None
    if not isinstance(manifest, dict):
        raise BackupError(f"{path} is not a JSON object")
    if is_original_manifest(manifest):
        return manifest
    version = manifest.get("format_version")
    if manifest.get("format") != FORMAT or version not in READABLE_VERSIONS or version is True:
        raise BackupError(
            f"{path} is not a {FORMAT} manifest of version "
            f"{' or '.join(map(str, READABLE_VERSIONS))} "
            f"(format={manifest.get('format')!r}, version={version!r}); a newer MetaCortex "
            "wrote it, or it is not a backup"
        )
    return manifest


@dataclass(frozen=True, slots=True)
class _Files:
    """A backup's files, each checked against its manifest before anything is written."""

    memories: list[str]
    reader: RecordReader
    relations: Path | None
    documents: Path | None


def _checked_files(directory: Path, manifest: dict[str, Any]) -> _Files:
    if is_original_manifest(manifest):
        archive = backup_file(directory, ORIGINAL_ARCHIVE, "archive")
        lines = [line for line in text_lines(archive) if line.strip()]
        expected = manifest["document_count"]
        if len(lines) != expected:
            raise BackupError(f"{archive} has {len(lines)} records; its manifest says {expected}")
        return _Files(lines, read_original, None, None)
    archive = backup_file(directory, manifest.get("archive"), "archive")
    checked_file(archive, manifest.get("count"), manifest.get("sha256"))
    whole = manifest.get("format_version") != 1
    return _Files(
        list(text_lines(archive)),
        read_portable,
        named_file(directory, manifest, "relations", required=whole),
        named_file(directory, manifest, "documents", required=whole),
    )


def _accepted(
    store: MemoryStore, lines: list[str], reader: RecordReader
) -> tuple[list[Memory], list[str]]:
    """The archive's records that the tools' rules accept, and why the others are refused."""
    memories: dict[str, tuple[int, Memory]] = {}
    refused: list[str] = []
    for line in read_lines(lines, reader):
        if line.memory is None:
            refused.append(str(line.refusal))
        elif line.memory.id in memories:
            first = memories[line.memory.id][0]
            refused.append(f"line {line.number}: id {line.memory.id!r} was already on line {first}")
        else:
            memories[line.memory.id] = (line.number, line.memory)

    def stored_successor(memory_id: str) -> str | None:
        space = memories[memory_id][1].space if memory_id in memories else DEFAULT_SPACE
        existing = store.get(memory_id, space=space)
        return existing.superseded_by if existing is not None else None

    loops = supersession_loops(
        {memory_id: m.superseded_by for memory_id, (_, m) in memories.items()}, stored_successor
    )
    for memory_id, loop in loops.items():
        number, _ = memories.pop(memory_id)
        refused.append(
            f"line {number} (id {memory_id!r}): its superseded_by chain loops back to it "
            f"({' -> '.join([*loop, loop[0]])}); deprecate_context refuses such a loop"
        )
    return [memory for _, memory in memories.values()], refused


def _with_their_documents(
    store: MemoryStore, memories: list[Memory]
) -> tuple[list[Memory], list[str]]:
    """The memories to restore, without the passages of a document the store does not hold
    after the documents' restore (refused there, or not in the backup): each is refused
    with it, never written citing a document that does not exist."""
    held: dict[tuple[str, str], bool] = {}
    kept: list[Memory] = []
    refused: list[str] = []
    for memory in memories:
        ref = memory.document
        if ref is not None:
            key = (memory.space, ref.id)
            if key not in held:
                held[key] = store.get_document(ref.id, space=memory.space) is not None
            if not held[key]:
                refused.append(
                    f"id {memory.id!r}: a passage of the document {ref.id!r}, which was not "
                    "restored (refused above, or not in the backup); refused with it"
                )
                continue
        kept.append(memory)
    return kept, refused


def _put_absent(memories: list[Memory], vectors: list[Vector], txn: StoreTransaction) -> int:
    """Write the memories whose ids are still absent; how many were written."""
    written = 0
    for memory, vector in zip(memories, vectors, strict=True):
        if txn.get(memory.id) is None:
            txn.put(memory, vector)
            written += 1
    return written


def restore_portable(store: MemoryStore, embedder: Embedder, directory: Path) -> RestoreSummary:
    """Restore every acceptable record of the backup: its documents, its memories
    (re-embedded) and its relations. Ids already present are skipped; records the tools
    would refuse are refused and named; relations whose ends are missing are counted."""
    manifest = _read_manifest(directory)
    files = _checked_files(directory, manifest)
    memories, refused = _accepted(store, files.memories, files.reader)
    _make_spaces(store, manifest, {m.space for m in memories})
    documents = (
        restore_documents(store, text_lines(files.documents), read_directory(store).spaces)
        if files.documents is not None
        else DocumentsRestored()
    )
    memories, orphans = _with_their_documents(store, memories)
    refused += orphans
    restored, skipped = _restore_memories(store, embedder, memories)
    relations = (
        restore_relations(store, text_lines(files.relations))
        if files.relations is not None
        else RelationsRestored()
    )
    source = ORIGINAL_FORMAT if is_original_manifest(manifest) else FORMAT
    return RestoreSummary(restored, skipped, tuple(refused), source, relations, documents)


def _restore_memories(
    store: MemoryStore, embedder: Embedder, memories: list[Memory]
) -> tuple[int, int]:
    """Write the memories whose ids are absent, re-embedded: (written, already present)."""
    # Space by space (a transaction acts in one), in archive order within each.
    memories.sort(key=lambda m: (m.space != DEFAULT_SPACE, m.space))
    restored = skipped = 0
    with progress("restore", len(memories)) as bar:
        for chunk in _chunks_by_space(memories):
            space = chunk[0].space
            present = store.get_many([m.id for m in chunk], space=space)
            fresh = [m for m, stored in zip(chunk, present, strict=True) if stored is None]
            # One call for the whole chunk: the model sorts it by length, so its batches
            # pad little; the writes stay in transactions of _BATCH.
            vectors = embedder.embed_documents([m.retrieval_text for m in fresh]) if fresh else []
            for first in range(0, len(fresh), _BATCH):
                written = store.transaction(
                    partial(
                        _put_absent, fresh[first : first + _BATCH], vectors[first : first + _BATCH]
                    ),
                    space=space,
                )
                restored += written
                skipped += min(_BATCH, len(fresh) - first) - written
            skipped += len(chunk) - len(fresh)
            bar.advance(len(chunk))
    return restored, skipped


def _chunks_by_space(memories: list[Memory]) -> Iterator[list[Memory]]:
    """Chunks of at most ``EMBED_CHUNK`` memories of one space each (input sorted by space)."""
    start = 0
    while start < len(memories):
        space = memories[start].space
        end = start
        while end < len(memories) and end - start < EMBED_CHUNK and memories[end].space == space:
            end += 1
        yield memories[start:end]
        start = end


def _make_spaces(store: MemoryStore, manifest: Mapping[str, Any], used: set[str]) -> None:
    """The spaces the archive names (with their names) or its records use, made where
    this store has none of that key; an existing space keeps its own name."""
    registry = Registry(store)
    known = set(registry.directory().spaces)
    named: dict[str, Mapping[str, Any]] = {}
    listed = manifest.get("spaces")
    if isinstance(listed, list):
        for entry in listed:
            if isinstance(entry, Mapping) and isinstance(entry.get("key"), str):
                named[str(entry["key"])] = entry
    for key in sorted((used | set(named)) - known):
        entry = named.get(key, {})
        name, description = entry.get("name"), entry.get("description")
        with contextlib.suppress(Conflict):  # made meanwhile by someone else: theirs stays
            registry.add_space(
                key,
                name if isinstance(name, str) and name.strip() else None,
                description if isinstance(description, str) else "",
            )
