"""Portable backup: a deterministic NDJSON archive plus a manifest, and its restore.

The archive holds every memory in every state (no vectors), ordered by
(created_at, id), one canonical JSON object per line, so the same corpus always
gives the same bytes. Restore re-embeds with the configured model and keeps ids,
so supersession links and provenance survive. A full backup with vectors is the
store's own: for SQLite, ``backup_sqlite_file`` (an online, consistent copy);
for Firestore, a managed export (docs/DEPLOYMENT.md).
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, TextIO

from metacortex.domain.record_rules import supersession_loops
from metacortex.domain.records import DEFAULT_SPACE, Memory
from metacortex.errors import Conflict
from metacortex.operations.archive_records import (
    RecordReader,
    read_lines,
    read_original,
    read_portable,
)
from metacortex.operations.progress import progress
from metacortex.operations.walk import all_memories, count_memories
from metacortex.providers.base import Embedder
from metacortex.spaces.registry import Registry, read_directory
from metacortex.storage import sqlite_files
from metacortex.storage.base import MemoryStore, StoreTransaction

if TYPE_CHECKING:
    from metacortex.storage.base import Vector

FORMAT: Final = "metacortex-portable"
FORMAT_VERSION: Final = 1
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


class BackupError(Exception):
    """An archive that cannot be restored; the message says why and what to do."""


def _record(memory: Memory) -> dict[str, Any]:
    # Authors by id: names belong to the people of a store, not to its memories.
    return {"id": memory.id, "content": memory.content, "retrieval_text": memory.retrieval_text} | {
        "metadata": memory.metadata()
    }


def _canonical(value: dict[str, Any]) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


@dataclass(frozen=True, slots=True)
class BackupSummary:
    count: int
    sha256: str
    directory: Path


def _private_text(path: Path) -> TextIO:
    """A file only its owner can read (0600 whatever the umask): backups hold every memory.

    Never through a symbolic link: one planted where the archive goes would otherwise
    have the backup overwrite whatever it points at."""
    try:
        descriptor = os.open(
            path,
            os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW,
            sqlite_files.FILE_MODE,
        )
    except OSError as error:
        if error.errno == errno.ELOOP:
            raise BackupError(
                f"{path} is a symbolic link: a backup never writes through one. Remove it, "
                "or choose another folder"
            ) from None
        raise
    os.fchmod(descriptor, sqlite_files.FILE_MODE)
    return os.fdopen(descriptor, "w", encoding="utf-8", newline="\n")


def export_portable(store: MemoryStore, directory: Path, embedding_key: str) -> BackupSummary:
    if directory.is_symlink():
        raise BackupError(
            f"{directory} is a symbolic link: a backup never writes through one. Give the "
            f"folder's real path ({directory.resolve()}) if that is where it should go"
        )
    sqlite_files.make_private_directory(directory)
    digest = hashlib.sha256()
    count = 0
    total = count_memories(store)
    archive = directory / ARCHIVE
    with _private_text(archive) as out, progress("backup", total) as bar:
        for page in all_memories(store):
            for memory in page:
                line = _canonical(_record(memory)) + "\n"
                out.write(line)
                digest.update(line.encode("utf-8"))
                count += 1
            bar.advance(len(page))
    manifest = {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "archive": ARCHIVE,
        "count": count,
        "sha256": digest.hexdigest(),
        "source_embedding": embedding_key,
        "vectors": False,
        # The spaces' names and descriptions, so a restore into a new store makes them.
        "spaces": [
            {"key": space.key, "name": space.name, "description": space.description}
            for space in sorted(read_directory(store).spaces.values(), key=lambda s: s.key)
        ],
    }
    with _private_text(directory / MANIFEST) as out:
        out.write(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
    return BackupSummary(count=count, sha256=digest.hexdigest(), directory=directory)


@dataclass(frozen=True, slots=True)
class RestoreSummary:
    restored: int
    skipped_existing: int
    refused: tuple[str, ...] = ()
    source: str = FORMAT


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
    if manifest.get("format") != FORMAT or manifest.get("format_version") != FORMAT_VERSION:
        raise BackupError(
            f"{path} is not a {FORMAT} v{FORMAT_VERSION} manifest "
            f"(format={manifest.get('format')!r}, version={manifest.get('format_version')!r})"
        )
    return manifest


def _archive_file(directory: Path, name: Any) -> Path:
    """The manifest's ``archive``: a file IN the backup folder, never elsewhere."""
    if (
        not isinstance(name, str)
        or not name
        or name in (".", "..")
        or Path(name).name != name
        or "\\" in name
    ):
        raise BackupError(
            f"the manifest's archive {name!r} is not a file name in {directory}: a backup's "
            "archive lives beside its manifest"
        )
    path = directory / name
    if path.is_symlink() or not path.is_file():
        raise BackupError(f"{path} is not a regular file in the backup folder")
    return path


def _archive_lines(directory: Path, manifest: dict[str, Any]) -> tuple[list[str], RecordReader]:
    if is_original_manifest(manifest):
        archive = _archive_file(directory, ORIGINAL_ARCHIVE)
        lines = [line for line in archive.read_text(encoding="utf-8").splitlines() if line.strip()]
        expected = manifest["document_count"]
        reader: RecordReader = read_original
    else:
        archive = _archive_file(directory, manifest.get("archive"))
        data = archive.read_bytes()
        if hashlib.sha256(data).hexdigest() != manifest.get("sha256"):
            raise BackupError(
                f"{archive} does not match the sha256 in its manifest: it was changed"
            )
        lines = data.decode("utf-8").splitlines()
        expected = manifest.get("count")
        reader = read_portable
    if len(lines) != expected:
        raise BackupError(f"{archive} has {len(lines)} records; its manifest says {expected}")
    return lines, reader


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


def _put_absent(memories: list[Memory], vectors: list[Vector], txn: StoreTransaction) -> int:
    """Write the memories whose ids are still absent; how many were written."""
    written = 0
    for memory, vector in zip(memories, vectors, strict=True):
        if txn.get(memory.id) is None:
            txn.put(memory, vector)
            written += 1
    return written


def restore_portable(store: MemoryStore, embedder: Embedder, directory: Path) -> RestoreSummary:
    """Restore every acceptable memory of the archive, re-embedded; ids already present are
    skipped, records the tools would refuse are refused and named."""
    manifest = _read_manifest(directory)
    try:
        lines, reader = _archive_lines(directory, manifest)
    except UnicodeDecodeError:
        raise BackupError(f"the archive in {directory} is not UTF-8 text") from None
    memories, refused = _accepted(store, lines, reader)
    _make_spaces(store, manifest, {m.space for m in memories})
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
    source = ORIGINAL_FORMAT if is_original_manifest(manifest) else FORMAT
    return RestoreSummary(restored, skipped, tuple(refused), source)


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
