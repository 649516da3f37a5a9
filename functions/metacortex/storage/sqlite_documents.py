"""Documents in the SQLite store: the ``documents`` and ``document_texts`` tables
(``sqlite_schema`` migration 8), the passages' reference columns on ``memories``, and the
original bytes as files (``sqlite_document_files``).

``add`` is one ``BEGIN IMMEDIATE`` transaction: the document, its text, its passages
(records with their vectors and keyword-index entries), the kept and retired passages of
the previous version, the passages' relations (``part_of``, ``next``, and the previous
version's invalidated) and the previous version's ``superseded_by`` commit together or
not at all; the bytes' file is written inside it (under the write lock) and removed when
the transaction fails, so a failed document leaves no memories and no stored bytes.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, Final

from metacortex.domain.documents import Document, DocumentState
from metacortex.domain.records import DocumentRef, Memory
from metacortex.errors import Conflict
from metacortex.storage import sqlite_relations
from metacortex.storage.base import DocumentOutcome, DocumentWrite, PageKey, checked_relations
from metacortex.storage.sqlite_document_files import DocumentFiles
from metacortex.storage.sqlite_erasure import mark_wal_scrub

if TYPE_CHECKING:
    from metacortex.storage.base import Vector

_EPOCH: Final = datetime(1970, 1, 1, tzinfo=UTC)
_MS: Final = timedelta(milliseconds=1)
_DOCUMENT_COLUMNS: Final = "id, space, sha256, source, created_at, superseded_by, data"
# A current version: the newest of its source, not being erased (its state is in ``data``).
_CURRENT: Final = (
    f"superseded_by IS NULL AND json_extract(data, '$.state') IS NOT '{DocumentState.ERASING}'"
)

WriteRecord = Callable[[sqlite3.Connection, Memory, "Vector | None"], int]
WriteTransaction = Callable[[], AbstractContextManager[sqlite3.Connection]]


def _ms(value: datetime) -> int:
    return (value - _EPOCH) // _MS


# ------------------------------------------------------------- passage columns
def ref_columns(memory: Memory) -> dict[str, Any]:
    """The ``memories`` columns holding a passage's document reference (NULLs otherwise)."""
    ref = memory.document
    if ref is None:
        return {"document_id": None, "document_start": None, "document_ref": None}
    return {
        "document_id": ref.id,
        "document_start": ref.start,
        "document_ref": _json(ref.details()),
    }


def ref_of(row: sqlite3.Row) -> DocumentRef | None:
    document_id = row["document_id"]
    if document_id is None:
        return None
    details = json.loads(row["document_ref"])
    return DocumentRef.from_details(document_id, int(row["document_start"]), details)


# ------------------------------------------------------------------ documents
def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _encode(document: Document) -> tuple[Any, ...]:
    return (
        document.id,
        document.space,
        document.sha256,
        document.source,
        _ms(document.created_at),
        document.superseded_by,
        _json(document.details()),
    )


def _decode(row: sqlite3.Row) -> Document:
    return Document.from_details(
        json.loads(row["data"]),
        id=row["id"],
        space=row["space"],
        sha256=row["sha256"],
        source=row["source"],
        created_at=_EPOCH + int(row["created_at"]) * _MS,
        superseded_by=row["superseded_by"],
    )


class SQLiteDocuments:
    """The document half of ``SQLiteStore`` (which owns the connections and the writes of
    records: ``write_record`` is its ``_write``)."""

    def __init__(
        self,
        files: DocumentFiles,
        connection: Callable[[], sqlite3.Connection],
        write_transaction: WriteTransaction,
        write_record: WriteRecord,
        memory_of: Callable[[sqlite3.Row], Memory],
        memory_columns: str,
    ) -> None:
        self._files = files
        self._conn = connection
        self._write_txn = write_transaction
        self._write = write_record
        self._memory_of = memory_of
        self._columns = memory_columns

    @property
    def files(self) -> DocumentFiles:
        return self._files

    # ----------------------------------------------------------------- reads
    def _one(self, conn: sqlite3.Connection, sql: str, params: Sequence[Any]) -> Document | None:
        row = conn.execute(f"SELECT {_DOCUMENT_COLUMNS} FROM documents WHERE {sql}", params)
        found = row.fetchone()
        return None if found is None else _decode(found)

    def get(self, document_id: str, space: str) -> Document | None:
        return self._one(self._conn(), "id = ? AND space = ?", (document_id, space))

    def find(
        self,
        space: str,
        sha256: str | None,
        source: str | None,
        conn: sqlite3.Connection | None = None,
    ) -> Document | None:
        if (sha256 is None) == (source is None):
            raise ValueError("find a document by sha256 or by source, one of them")
        column, value = ("sha256", sha256) if sha256 is not None else ("source", source)
        return self._one(
            conn or self._conn(),
            f"space = ? AND {column} = ? AND {_CURRENT} ORDER BY created_at DESC, id DESC LIMIT 1",
            (space, value),
        )

    def page(self, space: str, limit: int, after: PageKey | None) -> list[Document]:
        clause = f"space = ? AND {_CURRENT}"
        params: list[Any] = [space]
        if after is not None:
            at = _ms(after.created_at)
            clause += " AND created_at <= ? AND (created_at < ? OR (created_at = ? AND id < ?))"
            params += [at, at, at, after.id]
        rows = self._conn().execute(
            f"SELECT {_DOCUMENT_COLUMNS} FROM documents WHERE {clause}"
            " ORDER BY created_at DESC, id DESC LIMIT ?",
            [*params, limit],
        )
        return [_decode(row) for row in rows]

    def versions(self, space: str, topic: str | None, erasing: bool) -> list[Document]:
        clause = "space = ?"
        params: list[Any] = [space]
        if topic is not None:
            clause += " AND json_extract(data, '$.topic') = ?"
            params.append(topic)
        if erasing:
            clause += " AND json_extract(data, '$.state') = ?"
            params.append(DocumentState.ERASING.value)
        rows = self._conn().execute(
            f"SELECT {_DOCUMENT_COLUMNS} FROM documents WHERE {clause} ORDER BY created_at, id",
            params,
        )
        return [_decode(row) for row in rows]

    def count(self, space: str) -> int:
        row = self._conn().execute("SELECT COUNT(*) FROM documents WHERE space = ?", (space,))
        return int(row.fetchone()[0])

    def text(self, document_id: str, start: int, end: int, space: str) -> str:
        if end <= start:
            return ""
        row = (
            self._conn()
            .execute(
                "SELECT substr(t.text, ?, ?) FROM document_texts t"
                " JOIN documents d ON d.id = t.document_id WHERE d.id = ? AND d.space = ?",
                (start + 1, end - start, document_id, space),
            )
            .fetchone()
        )
        return "" if row is None else str(row[0])

    def data(self, document_id: str, space: str) -> bytes | None:
        document = self.get(document_id, space)
        return None if document is None else self._files.read(document.sha256)

    def passages(self, document_id: str, space: str) -> list[Memory]:
        rows = self._conn().execute(
            f"SELECT {self._columns} FROM memories m WHERE m.space = ? AND m.document_id = ?"
            " ORDER BY m.document_start, m.id",
            (space, document_id),
        )
        return [self._memory_of(row) for row in rows]

    def beside(
        self, anchor: Memory, clause: str, params: list[Any], span: int, *, after: bool
    ) -> list[Memory]:
        """Up to ``span`` passages of the anchor's document just before (or after) it in
        the document's order, nearest first, among the rows ``clause`` keeps."""
        ref = anchor.document
        if ref is None or span <= 0:
            return []
        op, direction = (">", "ASC") if after else ("<", "DESC")
        rows = self._conn().execute(
            f"SELECT {self._columns} FROM memories m WHERE {clause} AND m.document_id = ?"
            f" AND (m.document_start {op} ? OR (m.document_start = ? AND m.id {op} ?))"
            f" ORDER BY m.document_start {direction}, m.id {direction} LIMIT ?",
            [*params, ref.id, ref.start, ref.start, anchor.id, span],
        )
        return [self._memory_of(row) for row in rows]

    # ---------------------------------------------------------------- writes
    def add(self, write: DocumentWrite) -> DocumentOutcome:
        document = write.document
        created_file = False
        try:
            with self._write_txn() as conn:
                existing = self.find(document.space, document.sha256, None, conn)
                if existing is not None:
                    return DocumentOutcome(existing, created=False)
                self._check_version(conn, write)
                created_file = self._files.write(document.sha256, write.data)
                conn.execute(
                    f"INSERT INTO documents ({_DOCUMENT_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?)",
                    _encode(document),
                )
                conn.execute(
                    "INSERT INTO document_texts (document_id, text) VALUES (?, ?)",
                    (document.id, write.text),
                )
                for memory, vector in write.passages:
                    document.check_passage(memory)
                    self._write(conn, memory, vector)
                for memory in write.kept:
                    document.check_passage(memory)
                    self._write(conn, memory, None)
                for memory in write.retired:
                    write.previous_version().check_passage(memory)
                    self._write(conn, memory, None)
                sqlite_relations.write(conn, checked_relations(write))
                if write.previous is not None:
                    conn.execute(
                        "UPDATE documents SET superseded_by = ? WHERE id = ?",
                        (document.id, write.previous.id),
                    )
        except BaseException:
            if created_file:
                self._files.remove(document.sha256)
            raise
        return DocumentOutcome(document, created=True)

    def _check_version(self, conn: sqlite3.Connection, write: DocumentWrite) -> None:
        source = write.document.source
        current = self.find(write.document.space, None, source, conn) if source else None
        expected = write.previous.id if write.previous is not None else None
        if (current.id if current is not None else None) != expected:
            raise Conflict(
                f"another version of {source!r} was added meanwhile; add this one again "
                "to replace it"
            )

    def mark_erasing(self, document_ids: Sequence[str], space: str) -> None:
        if not document_ids:
            return
        marks = ",".join("?" * len(document_ids))
        with self._write_txn() as conn:
            conn.execute(
                "UPDATE documents SET data = json_set(data, '$.state', ?)"
                f" WHERE space = ? AND id IN ({marks})",
                [DocumentState.ERASING.value, space, *document_ids],
            )

    def remove(self, document_id: str, space: str) -> bool:
        with self._write_txn() as conn:
            document = self._one(conn, "id = ? AND space = ?", (document_id, space))
            if document is None:
                return False
            conn.execute("DELETE FROM document_texts WHERE document_id = ?", (document_id,))
            conn.execute("DELETE FROM documents WHERE id = ?", (document_id,))
            mark_wal_scrub(conn)  # the text's old pages: the store empties the WAL after
            still_held = conn.execute(
                "SELECT 1 FROM documents WHERE sha256 = ? LIMIT 1", (document.sha256,)
            ).fetchone()
            if still_held is None:
                # Under the write lock: no add can be recording a document of these bytes.
                self._files.remove(document.sha256)
        return True

    def remove_orphan_files(self) -> int:
        """Files no record names (a crash between writing one and committing its record)."""
        if not self._files.root.exists():
            return 0
        with self._write_txn() as conn:
            held = {str(row[0]) for row in conn.execute("SELECT DISTINCT sha256 FROM documents")}
            return self._files.remove_unreferenced(held)
