"""The embedded default store: one SQLite file (WAL) in the data directory.

- Records in ``memories``; the analyzed term stream in the FTS5 table
  ``memory_terms`` (BM25); vectors mirrored in memory for exact cosine search
  over the prefiltered set (see ``sqlite_vectors``).
- Writes run in ``BEGIN IMMEDIATE`` transactions, so SQLite's single writer
  lock makes dedupe and lifecycle rules atomic across threads and processes.
- One connection per thread; the store is safe to share between threads.
- Erasure (``erase``) leaves no copy of a record's text in the files: every
  connection runs with ``secure_delete`` (deleted and rewritten cells are
  zeroed, so no stale copy survives an earlier update either), the FTS5 index
  is optimized (a delete only adds a tombstone segment; the old segments keep
  the terms until merged), and the WAL is checkpointed and truncated, the last
  two without making any writer wait (``sqlite_erasure``, ``sqlite_scrub``: a
  reader from before the erase keeps the WAL until it ends). Every process
  drops erased records from memory within a second of any erase.
- A file that cannot be a store is refused with what to do (``sqlite_faults``);
  a lock kept past the busy timeout is ``StoreBusy``, retryable.
"""

from __future__ import annotations

import json
import logging
import os
import sqlite3
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import closing, contextmanager
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, TypeVar

import numpy as np
import numpy.typing as npt

from metacortex.domain.documents import Document
from metacortex.domain.occurrence import stored as stored_occurrence
from metacortex.domain.records import (
    DEFAULT_SPACE,
    Attribution,
    BranchState,
    Initiator,
    Memory,
    Modality,
    Origin,
    Provenance,
    SupersessionReason,
    Tombstone,
    utc_now,
)
from metacortex.domain.relations import Relation
from metacortex.errors import FailedPrecondition, StorageFull, StoreBusy
from metacortex.retrieval import typos as spelling
from metacortex.retrieval.text import forget_texts
from metacortex.retrieval.text import terms as analyze
from metacortex.storage import sqlite_faults, sqlite_files, sqlite_relations
from metacortex.storage.base import (
    MAX_ERASE_BATCH,
    DocumentOutcome,
    DocumentWrite,
    EmbeddingIdentity,
    Event,
    InsertOutcome,
    ListOrder,
    MemoryFilter,
    Neighbours,
    PageKey,
    Scored,
    TermStats,
)
from metacortex.storage.sqlite_document_files import DocumentFiles
from metacortex.storage.sqlite_documents import SQLiteDocuments, ref_columns, ref_of
from metacortex.storage.sqlite_erasure import erase_rows, reuse_wal, scrub_pending
from metacortex.storage.sqlite_keyword_keeper import INLINE_BELOW as KEYWORDS_INLINE_BELOW
from metacortex.storage.sqlite_keyword_keeper import KeywordKeeper
from metacortex.storage.sqlite_keywords import KeywordHit
from metacortex.storage.sqlite_locks import describe_holders
from metacortex.storage.sqlite_mirror_rows import changes, empty_rows, everything
from metacortex.storage.sqlite_schema import NewerSchema, migrate
from metacortex.storage.sqlite_scrub import Scrubber
from metacortex.storage.sqlite_spelling import corrections
from metacortex.storage.sqlite_vectors import VectorMirror

if TYPE_CHECKING:
    from metacortex.storage.base import Vector

T = TypeVar("T")
logger = logging.getLogger(__name__)

_BUSY_TIMEOUT_MS: Final = sqlite_faults.BUSY_TIMEOUT_MS
_BUSY_TIMEOUT_S: Final = sqlite_faults.BUSY_TIMEOUT_S
# Bound parameters per IN (...) list, well under SQLite's limit.
_IN_CHUNK: Final = 500
_MEMORY_COLUMNS: Final = (
    "seq, id, content, retrieval_text, module_name, branch_state, modality, created_at,"
    " updated_at, valid_from, valid_until, superseded_by, supersession_reason, initiator,"
    " origin, source_session, derived_from, confidence, artifact_refs, merge_method,"
    " space, created_by, changed_by, document_id, document_start, document_ref,"
    " occurred_at, occurred_precision, occurred_source"
)
# When a record happened, for filters and order: a record from before schema 10 keeps no
# time of its own and happened when it was saved (the expression its indexes hold).
OCCURRED: Final = "COALESCE({alias}.occurred_at, {alias}.created_at)"
# The same columns for queries that alias memories as ``m``.
_M_COLUMNS: Final = ", ".join(f"m.{column.strip()}" for column in _MEMORY_COLUMNS.split(","))


_EPOCH: Final = datetime(1970, 1, 1, tzinfo=UTC)
_MS: Final = timedelta(milliseconds=1)


def _ms(value: datetime) -> int:
    # Exact integer arithmetic: float seconds lose milliseconds near year 9999.
    return (value - _EPOCH) // _MS


def _ms_or_none(value: datetime | None) -> int | None:
    return None if value is None else _ms(value)


def _dt(value: int) -> datetime:
    return _EPOCH + value * _MS


def _dt_or_none(value: int | None) -> datetime | None:
    return None if value is None else _dt(value)


_STATES: Final = {state.value: state for state in BranchState}
_MODALITIES: Final = {modality.value: modality for modality in Modality}
_ORIGINS: Final = {origin.value: origin for origin in Origin}


def _json_tuple(text: str) -> tuple[Any, ...]:
    # Most records have no artifacts and derive from nothing: skip the parser for those.
    return () if text == "[]" else tuple(json.loads(text))


def _row_to_memory(row: sqlite3.Row) -> Memory:
    # Called for a few hundred rows per search: dict lookups, not Enum(value) calls.
    origin = row["origin"]
    reason = row["supersession_reason"]
    initiator = row["initiator"]
    return Memory(
        id=row["id"],
        content=row["content"],
        retrieval_text=row["retrieval_text"],
        topic=row["module_name"],
        branch_state=_STATES[row["branch_state"]],
        modality=_MODALITIES[row["modality"]],
        created_at=_dt(row["created_at"]),
        updated_at=_dt(row["updated_at"]),
        artifact_refs=_json_tuple(row["artifact_refs"]),
        valid_from=_dt_or_none(row["valid_from"]),
        valid_until=_dt_or_none(row["valid_until"]),
        superseded_by=row["superseded_by"],
        supersession_reason=SupersessionReason(reason) if reason else None,
        initiator=Initiator(initiator) if initiator else None,
        provenance=Provenance(
            origin=_ORIGINS[origin] if origin else None,
            source_session=row["source_session"],
            derived_from=_json_tuple(row["derived_from"]),
            confidence=row["confidence"],
        ),
        merge_method=row["merge_method"],
        space=row["space"],
        created_by=Attribution.decode(row["created_by"]),
        changed_by=Attribution.decode(row["changed_by"]),
        document=ref_of(row),
        occurred=stored_occurrence(
            _dt_or_none(row["occurred_at"]), row["occurred_precision"], row["occurred_source"]
        ),
    )


def _occurred_columns(memory: Memory) -> dict[str, Any]:
    # Every record written from schema 10 on keeps its time (the time it was saved when
    # it has none of its own), as the Firestore store writes it.
    occurred = memory.occurrence
    return {
        "occurred_at": _ms(occurred.at),
        "occurred_precision": occurred.precision.value,
        "occurred_source": occurred.source.value,
    }


def _where_sql(where: MemoryFilter, alias: str = "m") -> tuple[str, list[Any]]:
    clauses = [
        f"{alias}.space = ?",
        f"{alias}.branch_state IN ({','.join('?' * len(where.states))})",
    ]
    params: list[Any] = [where.space, *(state.value for state in where.states)]
    if where.topic is not None:
        clauses.append(f"{alias}.module_name = ?")
        params.append(where.topic)
    if where.origin is not None:
        clauses.append(f"{alias}.origin = ?")
        params.append(where.origin.value)
    if where.valid_at is not None:
        instant = _ms(where.valid_at)
        clauses.append(
            f"({alias}.valid_from IS NULL OR {alias}.valid_from <= ?)"
            f" AND ({alias}.valid_until IS NULL OR {alias}.valid_until > ?)"
            f" AND ({alias}.supersession_reason IS NULL OR {alias}.supersession_reason <> ?)"
        )
        params.extend([instant, instant, SupersessionReason.CORRECTED.value])
    if where.created_after is not None:
        clauses.append(f"{alias}.created_at >= ?")
        params.append(_ms(where.created_after))
    if where.created_before is not None:
        clauses.append(f"{alias}.created_at < ?")
        params.append(_ms(where.created_before))
    if where.occurred_after is not None:
        clauses.append(OCCURRED.format(alias=alias) + " >= ?")
        params.append(_ms(where.occurred_after))
    if where.occurred_before is not None:
        clauses.append(OCCURRED.format(alias=alias) + " < ?")
        params.append(_ms(where.occurred_before))
    return " AND ".join(clauses), params


# Keyword search over a broad filter ranks this many times ``limit`` before filtering
# (SQLiteStore._broad_lexical); fewer passing falls back to ranking with the filter.
_BROAD_FACTOR: Final = 2


def _term_stats(stream: Sequence[str], wanted: Sequence[str]) -> TermStats:
    counts = {term: count for term in wanted if (count := stream.count(term))}
    return TermStats(length=len(stream), freqs=counts)


def _fts_query(query_terms: Sequence[str]) -> str:
    # Terms are analyzed words (letters/digits only); quote them so FTS5 never
    # reads one as an operator (AND, OR, NEAR) or a column filter.
    return " OR ".join(f'"{term}"' for term in query_terms if term)


class _Transaction:
    def __init__(self, store: SQLiteStore, conn: sqlite3.Connection, space: str) -> None:
        self._store = store
        self._conn = conn
        self._space = space
        self._pending: dict[str, tuple[Memory, Vector | None]] = {}
        self._relations: list[Relation] = []
        self._invalidations: list[tuple[str, datetime, Attribution | None]] = []

    def get(self, memory_id: str) -> Memory | None:
        pending = self._pending.get(memory_id)
        if pending is not None:
            return pending[0]
        return self._store._select_one(self._conn, memory_id, self._space)

    def get_many(self, memory_ids: Sequence[str]) -> list[Memory | None]:
        return [self.get(memory_id) for memory_id in memory_ids]

    def put(self, memory: Memory, embedding: Vector | None = None) -> None:
        if memory.space != self._space:
            raise ValueError(f"a transaction in space {self._space!r} wrote to {memory.space!r}")
        self._pending[memory.id] = (memory, embedding)

    def relate(self, relation: Relation) -> None:
        if relation.space != self._space:
            raise ValueError(f"a transaction in space {self._space!r} related {relation.space!r}")
        self._relations.append(relation)

    def invalidate_relation(self, relation_id: str, at: datetime, by: Attribution | None) -> None:
        self._invalidations.append((relation_id, at, by))

    def commit_writes(self) -> list[int]:
        seqs = [self._store._write(self._conn, m, e) for m, e in self._pending.values()]
        sqlite_relations.write(self._conn, self._relations)
        for relation_id, at, by in self._invalidations:
            sqlite_relations.invalidate(self._conn, self._space, [relation_id], at, by)
        return seqs


class SQLiteStore:
    def __init__(self, path: Path, *, keyword_inline_below: int = KEYWORDS_INLINE_BELOW) -> None:
        self._path = Path(path)
        if not sqlite_files.prepare(self._path):
            sqlite_faults.check_file(self._path)
        self._local = threading.local()
        self._connections: list[sqlite3.Connection] = []
        self._connections_lock = threading.Lock()
        self._closed = False
        self._mirror: VectorMirror | None = None
        self._bound: EmbeddingIdentity | None = None
        self._vector_loader: threading.Thread | None = None
        self._mirror_lock = threading.Lock()
        self._keywords = KeywordKeeper(self._path, self._conn, keyword_inline_below)
        # Finishes what an erase leaves (files, memory) in this process (sqlite_scrub).
        self._scrubber = Scrubber(self._path, self._conn, self._forget_erased, _BUSY_TIMEOUT_MS)
        try:
            conn = self._conn()
            conn.execute("PRAGMA journal_mode = WAL")
            migrate(conn)
            pending = scrub_pending(conn)
        except NewerSchema as newer:
            self.close()
            raise sqlite_faults.newer_schema(self._path, newer.version) from None
        except sqlite3.Error as error:
            self.close()
            if sqlite_files.out_of_room(self._path, error):
                raise sqlite_files.full_at_open(self._path) from None
            raise sqlite_faults.unusable(self._path, error) or error from None
        sqlite_files.keep_reserve(self._path)
        self._scrubber.opened(conn, unfinished=pending)
        self._documents = SQLiteDocuments(
            DocumentFiles(self._path),
            self._conn,
            self._write_txn,
            self._write,
            _row_to_memory,
            _M_COLUMNS,
        )
        removed = self._documents.remove_orphan_files()
        if removed:
            logger.info("removed %d document file(s) no record names (an add cut short)", removed)

    @property
    def path(self) -> Path:
        return self._path

    def check_integrity(self) -> None:
        """SQLite's ``quick_check`` over every page of the file (0.34 s at 100,000
        memories once cached, 5.3 s from a cold disk); the damage named, as the error
        of a damaged store, when it finds any."""
        with sqlite_faults.refused_if_unusable(self._path):
            found = [str(row[0]) for row in self._conn().execute("PRAGMA quick_check(3)")]
        if found != ["ok"]:
            raise sqlite_faults.damaged(
                self._path, f"is damaged (SQLite's quick_check: {'; '.join(found)})"
            )

    # -------------------------------------------------------------- plumbing
    def _conn(self) -> sqlite3.Connection:
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is not None:
            return conn
        if self._closed:
            raise RuntimeError("store is closed")
        conn = sqlite3.connect(
            self._path, isolation_level=None, check_same_thread=False, timeout=30
        )
        conn.row_factory = sqlite3.Row
        try:
            conn.execute(f"PRAGMA busy_timeout = {_BUSY_TIMEOUT_MS}")
            conn.execute("PRAGMA synchronous = NORMAL")
            conn.execute("PRAGMA foreign_keys = ON")
            # Zero deleted and rewritten content (erase, and the old copy an update leaves).
            conn.execute("PRAGMA secure_delete = ON")
        except sqlite3.Error:
            conn.close()  # not a database, most likely: the opener says so
            raise
        self._local.conn = conn
        with self._connections_lock:
            self._connections.append(conn)
        return conn

    @contextmanager
    def _write_txn(self) -> Iterator[sqlite3.Connection]:
        conn = self._conn()
        try:
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield conn
                conn.execute("COMMIT")
            except BaseException:
                if conn.in_transaction:  # SQLite may already have rolled back (e.g. disk full)
                    conn.execute("ROLLBACK")
                raise
        except sqlite3.OperationalError as error:
            if sqlite_files.out_of_room(self._path, error):
                raise sqlite_files.full_error(self._path) from None
            if sqlite_faults.is_busy(error):
                raise self._busy() from None
            raise

    def _busy(self) -> StoreBusy:
        """The write lock stayed taken for the whole busy timeout: an expected condition
        under contention (a long write elsewhere, a sqlite3 shell in a transaction)."""
        who = describe_holders(self._path, "writer") or "another connection"
        logger.warning(
            "the memory store %s stayed locked by %s for %g s; the write was refused as "
            "busy (the caller may retry)",
            self._path,
            who,
            _BUSY_TIMEOUT_S,
        )
        return StoreBusy(
            f"the memory store is busy: {who} has held its write lock for more than "
            f"{_BUSY_TIMEOUT_S:g} seconds; nothing was changed. Retry in a moment."
        )

    def copy_to(self, destination: Path) -> None:
        """A consistent online copy of the whole database (vectors, events and all) into a
        NEW file: ``FileExistsError`` if anything (a file, a link) is already there."""
        destination.parent.mkdir(parents=True, exist_ok=True)
        # A full copy holds every memory: private from its first byte, like the store.
        # O_EXCL also refuses a symbolic link, dangling or not, so nothing is followed.
        descriptor = os.open(
            destination,
            os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW,
            sqlite_files.FILE_MODE,
        )
        try:
            os.fchmod(descriptor, sqlite_files.FILE_MODE)
            target = sqlite3.connect(destination)
            try:
                # sqlite opens by name: make sure the name is still the file created above.
                if (
                    os.stat(destination, follow_symlinks=False).st_ino
                    != os.fstat(descriptor).st_ino
                ):
                    raise FileExistsError(f"{destination} was replaced while the copy started")
                self._conn().backup(target)
            finally:
                target.close()
        finally:
            os.close(descriptor)

    def close(self) -> None:
        if not self._closed:
            self._scrubber.close()
        self._closed = True
        # The loaders' threads first: a connection closed under a running query crashes.
        if self._vector_loader is not None:
            self._vector_loader.join()
        self._keywords.close()
        with self._connections_lock:
            for conn in self._connections:
                conn.close()
            self._connections.clear()
        self._local = threading.local()

    def _meta(self, conn: sqlite3.Connection, key: str) -> str | None:
        row = conn.execute("SELECT value FROM store_meta WHERE key = ?", (key,)).fetchone()
        return None if row is None else str(row[0])

    # -------------------------------------------------------------- identity
    def bind_embedding(self, identity: EmbeddingIdentity, *, replace: bool = False) -> None:
        with self._write_txn() as conn:
            model = self._meta(conn, "embedding_model")
            dimension = self._meta(conn, "embedding_dimension")
            if replace or model is None or dimension is None:
                conn.executemany(
                    "INSERT OR REPLACE INTO store_meta (key, value) VALUES (?, ?)",
                    [
                        ("embedding_model", identity.model),
                        ("embedding_dimension", str(identity.dimension)),
                    ],
                )
            else:
                stored = EmbeddingIdentity(model, int(dimension))
                if stored != identity:
                    raise FailedPrecondition(
                        f"the store at {self._path} holds vectors from {stored.key()}, but this "
                        f"server is configured for {identity.key()}. Configure {stored.key()} "
                        f"again, or run `metacortex reembed` to re-embed every memory with "
                        f"{identity.key()}."
                    )
        if not replace and self._bound == identity:
            # Bound again to the same model (the service binds what the server bound
            # early, see ``load_vectors_in_background``): the vectors loaded or loading
            # stay, and this does not wait for the load (it holds the mirror's lock).
            return
        with self._mirror_lock:
            self._mirror = VectorMirror(identity.dimension)
            self._bound = identity

    def load_vectors_in_background(self, identity: EmbeddingIdentity) -> None:
        """Bind ``identity`` and load the vector mirror on a thread, so that a server's
        start reads the vectors while it loads the model (``composition.build_service``);
        a search meanwhile waits for the load. An error here is left to that search,
        which loads again and raises it (e.g. vectors of another dimension)."""
        self.bind_embedding(identity)
        self._vector_loader = threading.Thread(
            target=self._load_vectors_quietly, name="metacortex-vector-mirror", daemon=True
        )
        self._vector_loader.start()

    def _load_vectors_quietly(self) -> None:
        try:
            self._synced_mirror()
        except Exception as error:  # noqa: BLE001 - the first search raises it again
            logger.debug("loading the vector mirror ahead failed: %s", error)

    def recorded_embedding(self) -> EmbeddingIdentity | None:
        conn = self._conn()
        model = self._meta(conn, "embedding_model")
        dimension = self._meta(conn, "embedding_dimension")
        if model is None or dimension is None:
            return None
        return EmbeddingIdentity(model, int(dimension))

    # ----------------------------------------------------------------- reads
    def _select_one(self, conn: sqlite3.Connection, memory_id: str, space: str) -> Memory | None:
        row = conn.execute(
            f"SELECT {_MEMORY_COLUMNS} FROM memories WHERE id = ? AND space = ?",
            (memory_id, space),
        ).fetchone()
        return None if row is None else _row_to_memory(row)

    def get(self, memory_id: str, *, space: str = DEFAULT_SPACE) -> Memory | None:
        return self._select_one(self._conn(), memory_id, space)

    def _by_seq(self, seqs: Sequence[int]) -> dict[int, Memory]:
        if not seqs:
            return {}
        rows = self._conn().execute(
            f"SELECT {_MEMORY_COLUMNS} FROM memories WHERE seq IN ({','.join('?' * len(seqs))})",
            list(seqs),
        )
        return {row["seq"]: _row_to_memory(row) for row in rows}

    def find_duplicate(self, fingerprint: str, not_before: datetime) -> Memory | None:
        row = (
            self._conn()
            .execute(
                f"SELECT {_M_COLUMNS} FROM write_fingerprints f"
                " JOIN memories m ON m.id = f.memory_id"
                " WHERE f.fingerprint = ? AND f.written_at > ?",
                (fingerprint, _ms(not_before)),
            )
            .fetchone()
        )
        return None if row is None else _row_to_memory(row)

    # ---------------------------------------------------------------- writes
    def _write(self, conn: sqlite3.Connection, memory: Memory, embedding: Vector | None) -> int:
        """Insert or update one record inside the caller's transaction; returns its seq."""
        change = conn.execute(
            "UPDATE store_meta SET value = CAST(value AS INTEGER) + 1"
            " WHERE key = 'change_seq' RETURNING value"
        ).fetchone()[0]
        values: dict[str, Any] = {
            "id": memory.id,
            "content": memory.content,
            "retrieval_text": memory.retrieval_text,
            "module_name": memory.topic,
            "branch_state": memory.branch_state.value,
            "modality": memory.modality.value,
            "created_at": _ms(memory.created_at),
            "updated_at": _ms(memory.updated_at),
            "valid_from": _ms_or_none(memory.valid_from),
            "valid_until": _ms_or_none(memory.valid_until),
            "superseded_by": memory.superseded_by,
            "supersession_reason": (
                memory.supersession_reason.value if memory.supersession_reason else None
            ),
            "initiator": memory.initiator.value if memory.initiator else None,
            "origin": memory.provenance.origin.value if memory.provenance.origin else None,
            "source_session": memory.provenance.source_session,
            "derived_from": json.dumps(list(memory.provenance.derived_from)),
            "confidence": memory.provenance.confidence,
            "artifact_refs": json.dumps(list(memory.artifact_refs)),
            "merge_method": memory.merge_method,
            "space": memory.space,
            "created_by": memory.created_by.encode() if memory.created_by else None,
            "changed_by": memory.changed_by.encode() if memory.changed_by else None,
            **ref_columns(memory),
            **_occurred_columns(memory),
            "change_seq": int(change),
        }
        existing = conn.execute(
            "SELECT seq, retrieval_text, branch_state FROM memories WHERE id = ?", (memory.id,)
        ).fetchone()
        if existing is None:
            if embedding is None:
                raise ValueError(f"a new memory ({memory.id}) needs an embedding")
            values["embedding"] = np.asarray(embedding, dtype=np.float32).tobytes()
            # Never the seq of an erased record (see sqlite_schema, migration 3).
            values["seq"] = conn.execute(
                "SELECT MAX(COALESCE((SELECT MAX(seq) FROM memories), 0),"
                " COALESCE((SELECT MAX(seq) FROM erased_memories), 0)) + 1"
            ).fetchone()[0]
            columns = ", ".join(values)
            seq = int(
                conn.execute(
                    f"INSERT INTO memories ({columns}) VALUES ({', '.join('?' * len(values))})"
                    " RETURNING seq",
                    list(values.values()),
                ).fetchone()[0]
            )
            conn.execute(
                "INSERT INTO memory_terms (rowid, terms) VALUES (?, ?)",
                (seq, " ".join(analyze(memory.retrieval_text))),
            )
            return seq
        seq = int(existing["seq"])
        if embedding is not None:
            values["embedding"] = np.asarray(embedding, dtype=np.float32).tobytes()
        assignments = ", ".join(f"{column} = ?" for column in values)
        conn.execute(f"UPDATE memories SET {assignments} WHERE seq = ?", [*values.values(), seq])
        if existing["branch_state"] != memory.branch_state.value:
            sqlite_relations.state_changed(conn, memory.space, memory.id, memory.branch_state.value)
        if existing["retrieval_text"] != memory.retrieval_text:
            conn.execute(
                "UPDATE memory_terms SET terms = ? WHERE rowid = ?",
                (" ".join(analyze(memory.retrieval_text)), seq),
            )
        return seq

    def insert(
        self,
        memory: Memory,
        embedding: Vector,
        fingerprint: str,
        not_before: datetime,
        relations: Sequence[Relation] = (),
    ) -> InsertOutcome:
        with self._write_txn() as conn:
            row = conn.execute(
                "SELECT memory_id FROM write_fingerprints WHERE fingerprint = ? AND written_at > ?",
                (fingerprint, _ms(not_before)),
            ).fetchone()
            if row is not None:
                existing = self._select_one(conn, row["memory_id"], memory.space)
                if existing is not None and existing.branch_state is memory.branch_state:
                    return InsertOutcome(existing, created=False)
            self._write(conn, memory, embedding)
            if relations:
                sqlite_relations.write(conn, relations)
            conn.execute(
                "INSERT OR REPLACE INTO write_fingerprints (fingerprint, memory_id, written_at)"
                " VALUES (?, ?, ?)",
                (fingerprint, memory.id, _ms(memory.created_at)),
            )
            # Fingerprints older than the window can never match again.
            conn.execute("DELETE FROM write_fingerprints WHERE written_at < ?", (_ms(not_before),))
        return InsertOutcome(memory, created=True)

    def transaction(self, fn: Callable[[_Transaction], T], *, space: str = DEFAULT_SPACE) -> T:
        with self._write_txn() as conn:
            txn = _Transaction(self, conn, space)
            result = fn(txn)
            txn.commit_writes()
        return result

    # ---------------------------------------------------------------- search
    def _synced_mirror(self) -> VectorMirror:
        mirror = self._mirror
        if mirror is None:
            raise RuntimeError("bind_embedding must be called before searching")
        conn = self._conn()
        current = int(self._meta(conn, "change_seq") or 0)
        if current == mirror.change_seq:
            return mirror
        with self._mirror_lock:
            since, dimension = mirror.change_seq, mirror.matrix.shape[1]
            first = since == 0 and mirror.size == 0
            if first:
                # The first load: room for every row at once, not grown row by row.
                mirror.reserve(int(conn.execute("SELECT COUNT(*) FROM memories").fetchone()[0]))
            newest = since
            reads = everything(conn, dimension) if first else changes(conn, since, dimension)
            with closing(reads):
                for chunk in reads:
                    newest = max(newest, chunk.newest)
                    # The mirror's change_seq moves only once every chunk is in.
                    mirror.apply(chunk.rows, chunk.erased, since)
            mirror.apply(empty_rows(dimension), [], newest)
        # Records are in this process's memory now: watch for erasures from elsewhere.
        self._scrubber.watch()
        return mirror

    def vector_search(self, vector: Vector, where: MemoryFilter, limit: int) -> list[Scored]:
        hits = self._synced_mirror().search(vector, where, limit)
        return self._scored(hits, where)

    def _scored(
        self,
        hits: Sequence[tuple[int, float]],
        where: MemoryFilter,
        memories: Mapping[int, Memory] | None = None,
    ) -> list[Scored]:
        if memories is None:
            memories = self._by_seq([seq for seq, _ in hits])
        # A record changed between the first read and this fetch may no longer match.
        return [
            Scored(memories[seq], score)
            for seq, score in hits
            if seq in memories and where.matches(memories[seq])
        ]

    def _keyword_hits(
        self,
        terms: Sequence[str],
        where: MemoryFilter,
        limit: int,
        weights: Mapping[str, float] | None = None,
    ) -> list[KeywordHit] | None:
        """The keyword index's ranking, or ``None`` when FTS5 has to answer (see
        ``sqlite_keyword_keeper``). The vector mirror's filter columns filter, so
        only a store bound to an embedding model uses the index."""
        index = self._keywords.current() if self._mirror is not None else None
        if index is None:
            return None
        mirror = self._synced_mirror()
        return index.search(terms, lambda seqs: mirror.matching(seqs, where), limit, weights)

    def _typo_expansions(
        self, terms: Sequence[str], where: MemoryFilter, dense: Sequence[tuple[int, float]]
    ) -> dict[str, float]:
        """Expansion term -> weight for the query terms no record of the space holds,
        drawn from the semantic candidates' term streams (``retrieval/typos.py``).
        Nothing while the keyword index is loading (FTS5 answers then, unweighted)."""
        wanted = [term for term in dict.fromkeys(terms) if spelling.eligible(term)]
        index = self._keywords.current() if self._mirror is not None and wanted else None
        if index is None or not dense:
            return {}
        mirror = self._synced_mirror()
        # Held by any record of the space, whatever its state: the space's vocabulary.
        unknown = index.unheld(wanted, lambda seqs: mirror.in_space(seqs, where.space))
        if not unknown:
            return {}
        rows = self._conn().execute(
            f"SELECT terms FROM memory_terms WHERE rowid IN ({','.join('?' * len(dense))})",
            [seq for seq, _ in dense],
        )
        vocabulary = spelling.vocabulary_of(str(row[0]).split() for row in rows)
        return spelling.expansions(unknown, vocabulary, set(terms))

    def spelling_corrections(
        self,
        terms: Sequence[str],
        space: str,
        meant: Callable[[str], Mapping[str, int]] | None = None,
    ) -> dict[str, str]:
        """Against the space's whole vocabulary (``sqlite_spelling.py``); none while the
        keyword index is loading."""
        index = self._keywords.current() if self._mirror is not None else None
        if index is None or not terms:
            return {}
        mirror = self._synced_mirror()

        def in_space(seqs: npt.NDArray[np.int64]) -> npt.NDArray[np.bool_]:
            return mirror.in_space(seqs, space)

        def texts_holding(term: str) -> list[str]:
            seq = index.holder(term, in_space)
            rows = self._conn().execute(
                "SELECT retrieval_text FROM memories WHERE seq = ? AND space = ?", (seq, space)
            )
            return [str(row[0]) for row in rows]

        return corrections(terms, index, in_space, texts_holding, meant)

    @staticmethod
    def _keyword_scored(
        hits: Sequence[KeywordHit], where: MemoryFilter, memories: Mapping[int, Memory]
    ) -> list[Scored]:
        return [
            Scored(memories[hit.seq], hit.score, hit.terms)
            for hit in hits
            if hit.seq in memories and where.matches(memories[hit.seq])
        ]

    def lexical_search(self, terms: Sequence[str], where: MemoryFilter, limit: int) -> list[Scored]:
        query = _fts_query(terms)
        if not query:
            return []
        found = self._keyword_hits(terms, where, limit)
        if found is not None:
            return self._keyword_scored(found, where, self._by_seq([hit.seq for hit in found]))
        clause, params = _where_sql(where)
        ranked = None
        if where.topic is None and where.origin is None:
            ranked = self._broad_lexical(query, clause, params, limit)
        if ranked is None:
            # Rank on the filter columns alone (the covering index memories_filter, see
            # sqlite_schema migration 5): every match is looked up, and the table's rows
            # (content, vector) are large. Only the best ``limit`` are then read in full.
            rows = self._conn().execute(
                "SELECT m.seq, -bm25(memory_terms) AS score"
                " FROM memory_terms JOIN memories m INDEXED BY memories_filter"
                " ON m.seq = memory_terms.rowid"
                f" WHERE memory_terms MATCH ? AND {clause}"
                " ORDER BY bm25(memory_terms), m.seq LIMIT ?",
                [query, *params, limit],
            )
            ranked = [(int(row[0]), float(row[1])) for row in rows]
        hits = self._scored(ranked, where)
        # Fusion needs each candidate's term-stream length and query-term counts: read
        # them from the stream as written to the index (the terms joined by spaces)
        # rather than analyze (stem) every candidate's text again at search time.
        streams = self._term_streams([hit.memory for hit in hits])
        wanted = list(dict.fromkeys(terms))
        return [
            Scored(hit.memory, hit.score, _term_stats(streams[hit.memory.id], wanted))
            if hit.memory.id in streams
            else hit
            for hit in hits
        ]

    def keyword_index_loaded(self) -> None:
        """Return once a background load of the keyword index has finished (tests and
        benchmarks; searches never wait for it, FTS5 answers meanwhile)."""
        self._keywords.wait()

    def _broad_lexical(
        self, query: str, clause: str, params: list[Any], limit: int
    ) -> list[tuple[int, float]] | None:
        """The filtered BM25 top ``limit`` for a filter most records pass (states and
        time only), or ``None`` when it cannot be told this way.

        Ranks the matches by (bm25, seq) without looking each one up in the filter
        index (about a third of the query's CPU at 100,000 records, ~28,000 matches),
        then filters the best ``_BROAD_FACTOR * limit``. The filtered ranking is a
        subsequence of that order, so if ``limit`` of them pass (or every match was
        read) they are exactly its top ``limit``; else ``None`` (rank with the join)."""
        wide = _BROAD_FACTOR * limit
        conn = self._conn()
        top = [
            (int(row[0]), float(row[1]))
            for row in conn.execute(
                "SELECT rowid, -bm25(memory_terms) FROM memory_terms"
                " WHERE memory_terms MATCH ? ORDER BY bm25(memory_terms), rowid LIMIT ?",
                [query, wide],
            )
        ]
        if not top:
            return []
        passing = {
            int(row[0])
            for row in conn.execute(
                "SELECT m.seq FROM memories m INDEXED BY memories_filter"
                f" WHERE m.seq IN ({','.join('?' * len(top))}) AND {clause}",
                [*(seq for seq, _ in top), *params],
            )
        }
        kept = [hit for hit in top if hit[0] in passing]
        if len(kept) >= limit or len(top) < wide:
            return kept[:limit]
        return None

    def _term_streams(self, memories: Sequence[Memory]) -> dict[str, list[str]]:
        if not memories:
            return {}
        rows = self._conn().execute(
            "SELECT m.id, t.terms FROM memories m JOIN memory_terms t ON t.rowid = m.seq"
            f" WHERE m.id IN ({','.join('?' * len(memories))})",
            [memory.id for memory in memories],
        )
        return {str(row[0]): str(row[1]).split() for row in rows}

    def get_many(
        self, memory_ids: Sequence[str], *, space: str = DEFAULT_SPACE
    ) -> list[Memory | None]:
        return [self.get(memory_id, space=space) for memory_id in memory_ids]

    def hybrid_search(
        self,
        vector: Vector,
        terms: Sequence[str],
        where: MemoryFilter,
        limit: int,
        *,
        typos: bool = False,
    ) -> tuple[list[Scored], list[Scored]]:
        dense = self._synced_mirror().search(vector, where, limit)
        found: list[KeywordHit] | None = []
        if _fts_query(terms):
            weights = self._typo_expansions(terms, where, dense) if typos else {}
            found = self._keyword_hits([*terms, *weights], where, limit, weights)
        if found is None:
            return self._scored(dense, where), self.lexical_search(terms, where, limit)
        # Both rankings' records in one read (they share many).
        seqs = dict.fromkeys([seq for seq, _ in dense] + [hit.seq for hit in found])
        memories = self._by_seq(list(seqs))
        return self._scored(dense, where, memories), self._keyword_scored(found, where, memories)

    def neighbours(
        self,
        anchors: Sequence[Memory],
        where: MemoryFilter,
        span: int,
        known: Sequence[Memory] = (),  # reads are local: nothing to save
    ) -> dict[str, Neighbours]:
        found: dict[str, Neighbours] = {}
        for anchor in anchors:
            scoped = replace(where, topic=anchor.topic)
            key = PageKey(created_at=anchor.created_at, id=anchor.id)
            found[anchor.id] = Neighbours(
                older=self.list_page(scoped, span, key),
                newer=self.list_page(scoped, span, key, oldest_first=True),
            )
        return found

    def list_page(
        self,
        where: MemoryFilter,
        limit: int,
        after: PageKey | None,
        *,
        oldest_first: bool = False,
        order: ListOrder = "created",
    ) -> list[Memory]:
        clause, params = _where_sql(where)
        direction = "ASC" if oldest_first else "DESC"
        # The expression the time indexes hold (migrations 7 and 10).
        key = "m.created_at" if order == "created" else OCCURRED.format(alias="m")
        if after is not None:
            op = ">" if oldest_first else "<"
            # The first bound is implied by the second; it lets the time index seek to
            # the key instead of scanning the topic from its end (an OR is no range).
            clause += f" AND {key} {op}= ? AND ({key} {op} ? OR ({key} = ? AND m.id {op} ?))"
            at = _ms(after.created_at)
            params.extend([at, at, at, after.id])
        rows = self._conn().execute(
            f"SELECT {_M_COLUMNS} FROM memories m"
            f" WHERE {clause} ORDER BY {key} {direction}, m.id {direction} LIMIT ?",
            [*params, limit],
        )
        return [_row_to_memory(row) for row in rows]

    # ---------------------------------------------------------------- events
    def record_events(self, events: Sequence[Event]) -> None:
        if not events:
            return
        with self._write_txn() as conn:
            conn.executemany(
                "INSERT INTO events (collection, timestamp, expires_at, fields)"
                " VALUES (?, ?, ?, ?)",
                [
                    (
                        event.collection,
                        _ms(event.timestamp),
                        _ms_or_none(event.expires_at),
                        json.dumps(event.fields, default=str, ensure_ascii=False),
                    )
                    for event in events
                ],
            )
            newest = max(_ms(event.timestamp) for event in events)
            conn.execute(
                "DELETE FROM events WHERE expires_at IS NOT NULL AND expires_at < ?", (newest,)
            )

    def read_events(
        self, collection: str, limit: int = 1000, *, since: datetime | None = None
    ) -> list[dict[str, Any]]:
        rows = self._conn().execute(
            "SELECT fields FROM events WHERE collection = ? AND timestamp >= ?"
            " ORDER BY seq LIMIT ?",
            (collection, _ms(since) if since is not None else -(2**62), limit),
        )
        return [json.loads(row["fields"]) for row in rows]

    def topic_counts(self, *, space: str = DEFAULT_SPACE) -> dict[str, dict[BranchState, int]]:
        rows = self._conn().execute(
            "SELECT module_name, branch_state, COUNT(*) AS n FROM memories WHERE space = ?"
            " GROUP BY module_name, branch_state ORDER BY module_name",
            (space,),
        )
        counts: dict[str, dict[BranchState, int]] = {}
        for row in rows:
            counts.setdefault(row["module_name"], {})[BranchState(row["branch_state"])] = row["n"]
        return counts

    def count_memories(self, where: MemoryFilter) -> int:
        clause, params = _where_sql(where)
        row = self._conn().execute(f"SELECT COUNT(*) FROM memories m WHERE {clause}", params)
        return int(row.fetchone()[0])

    def superseded_by_any(
        self, memory_ids: Sequence[str], *, space: str = DEFAULT_SPACE
    ) -> list[Memory]:
        wanted = list(dict.fromkeys(memory_ids))
        found: list[Memory] = []
        for start in range(0, len(wanted), _IN_CHUNK):
            chunk = wanted[start : start + _IN_CHUNK]
            rows = self._conn().execute(
                f"SELECT {_M_COLUMNS} FROM memories m WHERE m.superseded_by IS NOT NULL"
                f" AND m.superseded_by IN ({','.join('?' * len(chunk))}) AND m.space = ?",
                [*chunk, space],
            )
            found += [_row_to_memory(row) for row in rows]
        return sorted(found, key=lambda m: (m.created_at, m.id))

    # ----------------------------------------------------------------- erase
    def erase(
        self,
        memory_ids: Sequence[str],
        erased_by: str,
        erased_at: datetime,
        *,
        space: str = DEFAULT_SPACE,
    ) -> list[str]:
        """Erase, then scrub the files (``sqlite_erasure``): the rows first, so that on a
        full disk, where the reserve beside the database makes room for them, the records
        go even when the scrub has to wait for space or for readers."""
        wanted = list(dict.fromkeys(memory_ids))
        if len(wanted) > MAX_ERASE_BATCH:
            raise ValueError(f"erase takes at most {MAX_ERASE_BATCH} ids at a time")
        if not wanted:
            return []
        try:
            erased = self._erase_rows(wanted, erased_by, erased_at, space)
        except StorageFull:
            if not sqlite_files.release_reserve(self._path):
                raise sqlite_files.full_error(self._path, erased=0) from None
            logger.warning(
                "the disk holding %s is full: the erase reserve beside it was released to "
                "make room for the erase",
                self._path,
            )
            erased = self._erase_on_a_full_disk(wanted, erased_by, erased_at, space)
        if erased:
            self._scrubber.erased()
        return erased

    def _erase_rows(
        self, wanted: list[str], erased_by: str, erased_at: datetime, space: str
    ) -> list[str]:
        with self._write_txn() as conn:
            return erase_rows(conn, wanted, erased_by, _ms(erased_at), space)

    def _erase_on_a_full_disk(
        self, wanted: list[str], erased_by: str, erased_at: datetime, space: str
    ) -> list[str]:
        """The batch at once if the released reserve holds it, else one record per
        transaction, checkpointing between them so the WAL reuses its space."""
        try:
            return self._erase_rows(wanted, erased_by, erased_at, space)
        except StorageFull:
            pass
        erased: list[str] = []
        for memory_id in wanted:
            reuse_wal(self._conn(), _BUSY_TIMEOUT_MS)
            try:
                erased += self._erase_rows([memory_id], erased_by, erased_at, space)
            except StorageFull:
                raise sqlite_files.full_error(self._path, erased=len(erased)) from None
        return erased

    def _forget_erased(self) -> None:
        """Drop what this process holds in memory of every record erased so far (by any
        connection): the vector mirror's rows, a keyword index holding their terms, and
        the texts kept for analysis (``retrieval.text.forget_texts``)."""
        mirror = self._mirror
        if mirror is not None and mirror.change_seq > 0:
            self._synced_mirror()
        self._keywords.forget_erased()
        forget_texts()

    def erasures_forgotten(self, timeout: float) -> bool:
        """Wait until this process holds nothing in memory of any record erased so far
        (by any process); False if ``timeout`` seconds pass first."""
        return self._scrubber.forgotten(timeout)

    def scrubbed(self, timeout: float) -> bool:
        """Wait until the files are scrubbed after every erase this process made or saw
        (keyword index merged, WAL empty); False if ``timeout`` seconds pass first."""
        return self._scrubber.done(timeout)

    def tombstones(
        self, memory_ids: Sequence[str], *, space: str = DEFAULT_SPACE
    ) -> dict[str, Tombstone]:
        wanted = list(dict.fromkeys(memory_ids))
        found: dict[str, Tombstone] = {}
        for start in range(0, len(wanted), _IN_CHUNK):
            chunk = wanted[start : start + _IN_CHUNK]
            rows = self._conn().execute(
                "SELECT id, erased_at, erased_by, branch_state FROM erased_memories"
                f" WHERE id IN ({','.join('?' * len(chunk))}) AND space = ?",
                [*chunk, space],
            )
            for row in rows:
                state = row["branch_state"]
                found[row["id"]] = Tombstone(
                    row["id"], _dt(row["erased_at"]), row["erased_by"], _STATES.get(state)
                )
        return found

    def derived_from_any(
        self, memory_ids: Sequence[str], *, space: str = DEFAULT_SPACE
    ) -> list[Memory]:
        wanted = list(dict.fromkeys(memory_ids))
        found: dict[str, Memory] = {}
        for start in range(0, len(wanted), _IN_CHUNK):
            chunk = wanted[start : start + _IN_CHUNK]
            rows = self._conn().execute(
                f"SELECT {_M_COLUMNS} FROM memories m WHERE m.derived_from <> '[]'"
                " AND m.space = ? AND EXISTS (SELECT 1 FROM json_each(m.derived_from) AS d"
                f" WHERE d.value IN ({','.join('?' * len(chunk))}))",
                [space, *chunk],
            )
            for row in rows:
                found[row["id"]] = _row_to_memory(row)
        return sorted(found.values(), key=lambda m: (m.created_at, m.id))

    def move(self, memory_id: str, from_space: str, to_space: str) -> Memory | None:
        with self._write_txn() as conn:
            current = self._select_one(conn, memory_id, from_space)
            if current is None:
                return None
            change = conn.execute(
                "UPDATE store_meta SET value = CAST(value AS INTEGER) + 1"
                " WHERE key = 'change_seq' RETURNING value"
            ).fetchone()[0]
            conn.execute(
                "UPDATE memories SET space = ?, change_seq = ? WHERE id = ?",
                (to_space, int(change), memory_id),
            )
            # A write fingerprint names its space: one left behind would find the record
            # from the space it left.
            conn.execute("DELETE FROM write_fingerprints WHERE memory_id = ?", (memory_id,))
            sqlite_relations.moved(conn, memory_id, from_space)
        return replace(current, space=to_space)

    # ------------------------------------------------------------- documents
    # sqlite_documents.py: tables, the passages' reference columns, the bytes' files.
    def add_document(self, write: DocumentWrite) -> DocumentOutcome:
        return self._documents.add(write)

    def get_document(self, document_id: str, *, space: str = DEFAULT_SPACE) -> Document | None:
        return self._documents.get(document_id, space)

    def find_document(
        self, *, space: str = DEFAULT_SPACE, sha256: str | None = None, source: str | None = None
    ) -> Document | None:
        return self._documents.find(space, sha256, source)

    def list_documents(
        self, limit: int, after: PageKey | None, *, space: str = DEFAULT_SPACE
    ) -> list[Document]:
        return self._documents.page(space, limit, after)

    def document_text(
        self, document_id: str, start: int, end: int, *, space: str = DEFAULT_SPACE
    ) -> str:
        return self._documents.text(document_id, start, end, space)

    def document_bytes(self, document_id: str, *, space: str = DEFAULT_SPACE) -> bytes | None:
        return self._documents.data(document_id, space)

    def document_passages(self, document_id: str, *, space: str = DEFAULT_SPACE) -> list[Memory]:
        return self._documents.passages(document_id, space)

    def passage_neighbours(self, anchor: Memory, where: MemoryFilter, span: int) -> Neighbours:
        clause, params = _where_sql(where)
        return Neighbours(
            older=self._documents.beside(anchor, clause, params, span, after=False),
            newer=self._documents.beside(anchor, clause, params, span, after=True),
        )

    def remove_document(self, document_id: str, *, space: str = DEFAULT_SPACE) -> bool:
        removed = self._documents.remove(document_id, space)
        if removed:
            self._scrubber.scrub()  # the text's pages, zeroed in the file, are still in the WAL
        return removed

    def document_versions(
        self, *, space: str = DEFAULT_SPACE, topic: str | None = None, erasing: bool = False
    ) -> list[Document]:
        return self._documents.versions(space, topic, erasing)

    def count_documents(self, *, space: str = DEFAULT_SPACE) -> int:
        return self._documents.count(space)

    def mark_erasing(self, document_ids: Sequence[str], *, space: str = DEFAULT_SPACE) -> None:
        if len(document_ids) > MAX_ERASE_BATCH:
            raise ValueError(f"mark_erasing takes at most {MAX_ERASE_BATCH} ids at a time")
        self._documents.mark_erasing(document_ids, space)

    # ------------------------------------------------------------- relations
    def relate(self, relations: Sequence[Relation]) -> None:
        if relations:
            with self._write_txn() as conn:
                sqlite_relations.write(conn, relations)

    def invalidate_relations(
        self,
        relation_ids: Sequence[str],
        at: datetime,
        by: Attribution | None,
        *,
        space: str = DEFAULT_SPACE,
    ) -> list[str]:
        with self._write_txn() as conn:
            return sqlite_relations.invalidate(conn, space, list(relation_ids), at, by)

    def relations_of(
        self,
        memory_ids: Sequence[str],
        *,
        space: str = DEFAULT_SPACE,
        include_invalid: bool = False,
    ) -> list[Relation]:
        if not memory_ids:
            return []
        return sqlite_relations.touching(self._conn(), space, memory_ids, include_invalid)

    # ----------------------------------------------------------- OAuth state
    def auth_put(
        self, kind: str, key: str, data: Mapping[str, Any], expires_at: datetime | None
    ) -> None:
        with self._write_txn() as conn:
            conn.execute(
                "INSERT OR REPLACE INTO auth_state (kind, key, data, expires_at, consumed)"
                " VALUES (?, ?, ?, ?, 0)",
                (kind, key, json.dumps(dict(data)), _ms_or_none(expires_at)),
            )
            conn.execute(
                "DELETE FROM auth_state WHERE expires_at IS NOT NULL AND expires_at <= ?",
                (_ms(utc_now()),),
            )

    def auth_get(self, kind: str, key: str) -> dict[str, Any] | None:
        row = (
            self._conn()
            .execute(
                "SELECT data FROM auth_state WHERE kind = ? AND key = ?"
                " AND (expires_at IS NULL OR expires_at > ?)",
                (kind, key, _ms(utc_now())),
            )
            .fetchone()
        )
        return None if row is None else dict(json.loads(row["data"]))

    def auth_consume(
        self, kind: str, key: str, mark: Mapping[str, Any] | None = None
    ) -> tuple[dict[str, Any], bool] | None:
        with self._write_txn() as conn:
            row = conn.execute(
                "SELECT data, consumed FROM auth_state WHERE kind = ? AND key = ?"
                " AND (expires_at IS NULL OR expires_at > ?)",
                (kind, key, _ms(utc_now())),
            ).fetchone()
            if row is None:
                return None
            data = dict(json.loads(row["data"]))
            if not row["consumed"]:
                marked = json.dumps({**data, **mark}) if mark else row["data"]
                conn.execute(
                    "UPDATE auth_state SET consumed = 1, data = ? WHERE kind = ? AND key = ?",
                    (marked, kind, key),
                )
            return data, not row["consumed"]

    def auth_delete(self, kind: str, key: str) -> bool:
        with self._write_txn() as conn:
            cursor = conn.execute("DELETE FROM auth_state WHERE kind = ? AND key = ?", (kind, key))
            return cursor.rowcount > 0

    def auth_list(self, kind: str) -> list[tuple[str, dict[str, Any]]]:
        rows = self._conn().execute(
            "SELECT key, data FROM auth_state WHERE kind = ?"
            " AND (expires_at IS NULL OR expires_at > ?) ORDER BY key",
            (kind, _ms(utc_now())),
        )
        return [(str(row["key"]), dict(json.loads(row["data"]))) for row in rows]

    def auth_create(
        self, kind: str, key: str, data: Mapping[str, Any], expires_at: datetime | None
    ) -> bool:
        with self._write_txn() as conn:
            if self._auth_live_data(conn, kind, key) is not None:
                return False
            conn.execute(
                "INSERT OR REPLACE INTO auth_state (kind, key, data, expires_at, consumed)"
                " VALUES (?, ?, ?, ?, 0)",
                (kind, key, json.dumps(dict(data)), _ms_or_none(expires_at)),
            )
            return True

    def auth_update(self, kind: str, key: str, changes: Mapping[str, Any]) -> dict[str, Any] | None:
        with self._write_txn() as conn:
            current = self._auth_live_data(conn, kind, key)
            if current is None:
                return None
            updated = {**current, **changes}
            conn.execute(
                "UPDATE auth_state SET data = ? WHERE kind = ? AND key = ?",
                (json.dumps(updated), kind, key),
            )
            return updated

    def auth_extend(self, kind: str, key: str, expires_at: datetime) -> bool:
        with self._write_txn() as conn:
            cursor = conn.execute(
                "UPDATE auth_state SET expires_at = ? WHERE kind = ? AND key = ?",
                (_ms(expires_at), kind, key),
            )
            return cursor.rowcount > 0

    @staticmethod
    def _auth_live_data(conn: sqlite3.Connection, kind: str, key: str) -> dict[str, Any] | None:
        row = conn.execute(
            "SELECT data FROM auth_state WHERE kind = ? AND key = ?"
            " AND (expires_at IS NULL OR expires_at > ?)",
            (kind, key, _ms(utc_now())),
        ).fetchone()
        return None if row is None else dict(json.loads(row["data"]))
