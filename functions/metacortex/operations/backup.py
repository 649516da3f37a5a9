"""Portable backup: a deterministic NDJSON archive plus a manifest, and its restore.

The archive holds every memory in every state (no vectors), ordered by
(created_at, id), one canonical JSON object per line, so the same corpus always
gives the same bytes. Restore re-embeds with the configured model and keeps ids,
so supersession links and provenance survive. A full backup with vectors is the
store's own: for SQLite, ``backup_sqlite_file`` (an online, consistent copy);
for Firestore, a managed export (docs/DEPLOYMENT.md).
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, TextIO

from metacortex.domain.limits import parse_instant
from metacortex.domain.records import (
    BranchState,
    Initiator,
    Memory,
    Modality,
    Origin,
    Provenance,
    SupersessionReason,
)
from metacortex.operations.progress import progress
from metacortex.operations.walk import all_memories, count_memories
from metacortex.providers.base import Embedder
from metacortex.storage import sqlite_files
from metacortex.storage.base import MemoryStore, StoreTransaction

FORMAT: Final = "metacortex-portable"
FORMAT_VERSION: Final = 1
ARCHIVE: Final = "memories.ndjson"
MANIFEST: Final = "manifest.json"
_BATCH: Final = 64


class BackupError(Exception):
    """An archive that cannot be restored; the message says why and what to do."""


def _record(memory: Memory) -> dict[str, Any]:
    return {"id": memory.id, "content": memory.content, "retrieval_text": memory.retrieval_text} | {
        "metadata": memory.metadata()
    }


def _canonical(value: dict[str, Any]) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def _memory(record: dict[str, Any]) -> Memory:
    meta = record["metadata"]
    provenance = meta.get("provenance") or {}

    def instant(name: str) -> Any:
        return parse_instant(meta.get(name), name)

    return Memory(
        id=record["id"],
        content=record["content"],
        retrieval_text=record.get("retrieval_text") or record["content"],
        topic=meta["topic"],
        branch_state=BranchState(meta["branch_state"]),
        modality=Modality(meta["modality"]),
        created_at=instant("created_at"),
        updated_at=instant("updated_at"),
        artifact_refs=tuple(meta.get("artifact_refs") or ()),
        valid_from=instant("valid_from"),
        valid_until=instant("valid_until"),
        superseded_by=meta.get("superseded_by"),
        supersession_reason=(
            SupersessionReason(meta["supersession_reason"])
            if meta.get("supersession_reason")
            else None
        ),
        initiator=Initiator(meta["initiator"]) if meta.get("initiator") else None,
        provenance=Provenance(
            origin=Origin(provenance["origin"]) if provenance.get("origin") else None,
            source_session=provenance.get("source_session"),
            derived_from=tuple(provenance.get("derived_from") or ()),
            confidence=provenance.get("confidence"),
        ),
        merge_method=meta.get("merge_method"),
    )


@dataclass(frozen=True, slots=True)
class BackupSummary:
    count: int
    sha256: str
    directory: Path


def _private_text(path: Path) -> TextIO:
    """A file only its owner can read (0600 whatever the umask): backups hold every memory."""
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, sqlite_files.FILE_MODE)
    os.fchmod(descriptor, sqlite_files.FILE_MODE)
    return os.fdopen(descriptor, "w", encoding="utf-8", newline="\n")


def export_portable(store: MemoryStore, directory: Path, embedding_key: str) -> BackupSummary:
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
    }
    with _private_text(directory / MANIFEST) as out:
        out.write(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
    return BackupSummary(count=count, sha256=digest.hexdigest(), directory=directory)


@dataclass(frozen=True, slots=True)
class RestoreSummary:
    restored: int
    skipped_existing: int


def _read_manifest(directory: Path) -> dict[str, Any]:
    path = directory / MANIFEST
    if not path.is_file():
        raise BackupError(
            f"{path} not found: point restore at a folder made by `metacortex backup`"
        )
    manifest: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    if manifest.get("format") != FORMAT or manifest.get("format_version") != FORMAT_VERSION:
        raise BackupError(
            f"{path} is not a {FORMAT} v{FORMAT_VERSION} manifest "
            f"(format={manifest.get('format')!r}, version={manifest.get('format_version')!r})"
        )
    return manifest


def restore_portable(store: MemoryStore, embedder: Embedder, directory: Path) -> RestoreSummary:
    """Restore every memory of the archive, re-embedded; ids already present are skipped."""
    manifest = _read_manifest(directory)
    archive = directory / str(manifest["archive"])
    data = archive.read_bytes()
    if hashlib.sha256(data).hexdigest() != manifest["sha256"]:
        raise BackupError(f"{archive} does not match the sha256 in its manifest: it was changed")
    lines = data.decode("utf-8").splitlines()
    if len(lines) != manifest["count"]:
        raise BackupError(
            f"{archive} has {len(lines)} records; its manifest says {manifest['count']}"
        )
    restored = skipped = 0
    with progress("restore", len(lines)) as bar:
        for start in range(0, len(lines), _BATCH):
            batch = [_memory(json.loads(line)) for line in lines[start : start + _BATCH]]
            fresh = [m for m in batch if store.get(m.id) is None]
            vectors = embedder.embed_documents([m.retrieval_text for m in fresh]) if fresh else []

            def write(
                txn: StoreTransaction, fresh: list[Memory] = fresh, vectors: Any = vectors
            ) -> int:
                written = 0
                for memory, vector in zip(fresh, vectors, strict=True):
                    if txn.get(memory.id) is None:
                        txn.put(memory, vector)
                        written += 1
                return written

            written = store.transaction(write) if fresh else 0
            restored += written
            skipped += len(batch) - written
            bar.advance(len(batch))
    return RestoreSummary(restored=restored, skipped_existing=skipped)
