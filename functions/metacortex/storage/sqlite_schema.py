"""SQLite schema migrations, applied in order and recorded in the database itself."""

from __future__ import annotations

import sqlite3
from typing import Final

from metacortex.domain.records import to_wire_time, utc_now

# Append only: never edit a released migration, add the next version instead.
MIGRATIONS: Final[tuple[tuple[int, str], ...]] = (
    (
        1,
        """
        CREATE TABLE store_meta (
            key   TEXT PRIMARY KEY,
            value TEXT NOT NULL
        );
        INSERT INTO store_meta (key, value) VALUES ('change_seq', '0');

        CREATE TABLE memories (
            seq                 INTEGER PRIMARY KEY,
            id                  TEXT NOT NULL UNIQUE,
            content             TEXT NOT NULL,
            retrieval_text      TEXT NOT NULL,
            module_name         TEXT NOT NULL,
            branch_state        TEXT NOT NULL,
            modality            TEXT NOT NULL,
            created_at          INTEGER NOT NULL,
            updated_at          INTEGER NOT NULL,
            valid_from          INTEGER,
            valid_until         INTEGER,
            superseded_by       TEXT,
            supersession_reason TEXT,
            initiator           TEXT,
            origin              TEXT,
            source_session      TEXT,
            derived_from        TEXT NOT NULL DEFAULT '[]',
            confidence          REAL,
            artifact_refs       TEXT NOT NULL DEFAULT '[]',
            merge_method        TEXT,
            embedding           BLOB NOT NULL,
            change_seq          INTEGER NOT NULL
        );
        CREATE INDEX memories_by_state_time ON memories (branch_state, created_at, id);
        CREATE INDEX memories_by_topic_time ON memories (module_name, branch_state, created_at, id);
        CREATE INDEX memories_by_change ON memories (change_seq);

        -- The analyzed term stream of retrieval_text (metacortex.retrieval.text.terms),
        -- rowid = memories.seq. Terms are pre-analyzed, so FTS5 only splits on spaces.
        CREATE VIRTUAL TABLE memory_terms
            USING fts5 (terms, tokenize = 'unicode61 remove_diacritics 0');

        CREATE TABLE write_fingerprints (
            fingerprint TEXT PRIMARY KEY,
            memory_id   TEXT NOT NULL,
            written_at  INTEGER NOT NULL
        );
        CREATE INDEX write_fingerprints_by_time ON write_fingerprints (written_at);

        CREATE TABLE events (
            seq        INTEGER PRIMARY KEY,
            collection TEXT NOT NULL,
            timestamp  INTEGER NOT NULL,
            expires_at INTEGER,
            fields     TEXT NOT NULL
        );
        CREATE INDEX events_by_collection_time ON events (collection, timestamp);
        CREATE INDEX events_by_expiry ON events (expires_at);
        """,
    ),
    (
        2,
        """
        -- OAuth and owner sign-in state (storage.base: auth_*), keyed by (kind, key).
        CREATE TABLE auth_state (
            kind       TEXT NOT NULL,
            key        TEXT NOT NULL,
            data       TEXT NOT NULL,
            expires_at INTEGER,
            consumed   INTEGER NOT NULL DEFAULT 0,
            PRIMARY KEY (kind, key)
        );
        CREATE INDEX auth_state_by_expiry ON auth_state (expires_at);
        """,
    ),
    (
        3,
        """
        -- Tombstones of erased memories (storage.base: erase): id, when, by whom; never
        -- content. seq is the erased row's: no new record takes it again (so a vector
        -- mirror or FTS rowid can never confuse the two), and mirrors in other processes
        -- drop it when they see its change_seq.
        CREATE TABLE erased_memories (
            id         TEXT PRIMARY KEY,
            seq        INTEGER NOT NULL UNIQUE,
            erased_at  INTEGER NOT NULL,
            erased_by  TEXT NOT NULL,
            change_seq INTEGER NOT NULL
        );
        CREATE INDEX erased_memories_by_change ON erased_memories (change_seq);
        """,
    ),
    (
        4,
        """
        -- What a record replaced (storage.base: superseded_by_any; the console's record
        -- page): only deprecated records have a replacement, so the index holds those.
        CREATE INDEX memories_by_replacement ON memories (superseded_by)
            WHERE superseded_by IS NOT NULL;
        """,
    ),
    (
        5,
        """
        -- Keyword search (SQLiteStore.lexical_search) looks up every FTS match's filter
        -- columns; from the table that reads a large row (content, vector) per match
        -- (tens of milliseconds at 100,000 memories: docs/benchmarks.md, "Scale"). This
        -- index holds only the columns of storage.sqlite._where_sql, so the lookups stay
        -- in it.
        CREATE INDEX memories_filter ON memories (
            seq, branch_state, module_name, origin, created_at, valid_from, valid_until,
            supersession_reason
        );
        """,
    ),
    (
        6,
        """
        -- The state an erased record was in: its tombstone is described only to a caller
        -- that could have read the record (usecases.access.not_found); NULL for tombstones
        -- written before, described only to callers that read every state.
        ALTER TABLE erased_memories ADD COLUMN branch_state TEXT;
        """,
    ),
    (
        7,
        """
        -- Spaces and attribution (metacortex.spaces, docs/SPACES.md). Every record is in
        -- one space; what existed before is the space 'default' (a constant default:
        -- SQLite adds the column without rewriting a row). created_by / changed_by are
        -- 'person|credential', NULL on records written before attribution.
        ALTER TABLE memories ADD COLUMN space TEXT NOT NULL DEFAULT 'default';
        ALTER TABLE memories ADD COLUMN created_by TEXT;
        ALTER TABLE memories ADD COLUMN changed_by TEXT;
        ALTER TABLE erased_memories ADD COLUMN space TEXT NOT NULL DEFAULT 'default';
        -- Every listing and count filters on one space first.
        DROP INDEX memories_by_state_time;
        DROP INDEX memories_by_topic_time;
        CREATE INDEX memories_by_state_time ON memories (space, branch_state, created_at, id);
        CREATE INDEX memories_by_topic_time
            ON memories (space, module_name, branch_state, created_at, id);
        DROP INDEX memories_filter;
        CREATE INDEX memories_filter ON memories (
            seq, space, branch_state, module_name, origin, created_at, valid_from,
            valid_until, supersession_reason
        );
        """,
    ),
    (
        8,
        """
        -- Documents (docs/DOCUMENTS.md, storage.sqlite_documents). A passage is a record of
        -- origin 'document': document_id and document_start (its place in the document's
        -- text) are columns for the lookups by document; the rest of its reference (title,
        -- pages, section, end, content hash) is JSON in document_ref.
        ALTER TABLE memories ADD COLUMN document_id TEXT;
        ALTER TABLE memories ADD COLUMN document_start INTEGER;
        ALTER TABLE memories ADD COLUMN document_ref TEXT;
        CREATE INDEX memories_by_document ON memories (space, document_id, document_start, id)
            WHERE document_id IS NOT NULL;
        -- One row per version of a document; the fields the store looks up are columns,
        -- the rest is JSON in data. superseded_by is NULL on the current version.
        CREATE TABLE documents (
            id            TEXT PRIMARY KEY,
            space         TEXT NOT NULL,
            sha256        TEXT NOT NULL,
            source        TEXT,
            created_at    INTEGER NOT NULL,
            superseded_by TEXT,
            data          TEXT NOT NULL
        );
        CREATE INDEX documents_current_by_time ON documents (space, created_at, id)
            WHERE superseded_by IS NULL;
        CREATE INDEX documents_by_hash ON documents (space, sha256);
        CREATE INDEX documents_by_source ON documents (space, source) WHERE source IS NOT NULL;
        -- Every sha256 some version holds: the original bytes are a file named by it.
        CREATE INDEX documents_by_bytes ON documents (sha256);
        -- The extracted text, apart from the record so listings never read it.
        CREATE TABLE document_texts (
            document_id TEXT PRIMARY KEY,
            text        TEXT NOT NULL
        );
        """,
    ),
    (
        9,
        """
        -- Typed relations between memories (domain/relations.py, docs/RELATIONS.md): one row per
        -- (space, source, type, target), invalidated (invalid_at) rather than deleted;
        -- erase deletes every row touching an erased memory (they hold its summary).
        CREATE TABLE relations (
            id             TEXT PRIMARY KEY,
            space          TEXT NOT NULL,
            source         TEXT NOT NULL,
            target         TEXT NOT NULL,
            type           TEXT NOT NULL,
            note           TEXT NOT NULL DEFAULT '',
            created_at     INTEGER NOT NULL,
            created_by     TEXT,
            source_summary TEXT NOT NULL DEFAULT '',
            target_summary TEXT NOT NULL DEFAULT '',
            invalid_at     INTEGER,
            invalidated_by TEXT,
            source_state   TEXT NOT NULL DEFAULT '',
            target_state   TEXT NOT NULL DEFAULT ''
        );
        CREATE INDEX relations_by_source ON relations (space, source);
        CREATE INDEX relations_by_target ON relations (space, target);
        """,
    ),
    (
        10,
        """
        -- When a memory happened (domain/occurrence.py, issue 39): the start of its period
        -- (ms), its precision and where it came from. NULL on records saved before, which
        -- read as happening when they were saved: every query uses
        -- COALESCE(occurred_at, created_at), so no row is rewritten here.
        ALTER TABLE memories ADD COLUMN occurred_at INTEGER;
        ALTER TABLE memories ADD COLUMN occurred_precision TEXT;
        ALTER TABLE memories ADD COLUMN occurred_source TEXT;
        -- list_context ordered by when memories happened, as by creation (migration 7).
        CREATE INDEX memories_by_state_occurrence
            ON memories (space, branch_state, COALESCE(occurred_at, created_at), id);
        CREATE INDEX memories_by_topic_occurrence
            ON memories (space, module_name, branch_state, COALESCE(occurred_at, created_at), id);
        """,
    ),
)

LATEST_VERSION: Final = MIGRATIONS[-1][0]


class NewerSchema(Exception):
    """The database was written by a newer MetaCortex (a schema version past ours)."""

    def __init__(self, version: int) -> None:
        super().__init__(f"schema version {version}, newer than {LATEST_VERSION}")
        self.version = version


def migrate(conn: sqlite3.Connection) -> int:
    """Bring the schema up to date; returns the version now in force.

    Refuses a database written by a newer MetaCortex rather than guess at it.
    """
    conn.execute("BEGIN IMMEDIATE")
    try:
        conn.execute(
            "CREATE TABLE IF NOT EXISTS schema_migrations ("
            " version INTEGER PRIMARY KEY, applied_at TEXT NOT NULL)"
        )
        row = conn.execute("SELECT COALESCE(MAX(version), 0) FROM schema_migrations").fetchone()
        current = int(row[0])
        if current > LATEST_VERSION:
            raise NewerSchema(current)
        for version, script in MIGRATIONS:
            if version <= current:
                continue
            for statement in _statements(script):
                conn.execute(statement)
            conn.execute(
                "INSERT INTO schema_migrations (version, applied_at) VALUES (?, ?)",
                (version, to_wire_time(utc_now())),
            )
            current = version
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    return current


def _statements(script: str) -> list[str]:
    """Split a migration script on statement ends (no triggers with inner semicolons)."""
    lines = [line for line in script.splitlines() if not line.strip().startswith("--")]
    return [part.strip() for part in "\n".join(lines).split(";") if part.strip()]
