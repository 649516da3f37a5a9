"""Relations on SQLite: the ``relations`` table (schema 8), read and written in the
caller's connection (so a lifecycle change and its relation commit together)."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime, timedelta
from typing import Final

from metacortex.domain.records import Attribution
from metacortex.domain.relations import Relation, RelationType

_EPOCH: Final = datetime(1970, 1, 1, tzinfo=UTC)
_MS: Final = timedelta(milliseconds=1)
_IN_CHUNK: Final = 400
COLUMNS: Final = (
    "id, space, source, target, type, note, created_at, created_by, source_summary,"
    " target_summary, invalid_at, invalidated_by, source_state, target_state"
)


def _ms(value: datetime) -> int:
    return (value - _EPOCH) // _MS


def _row(relation: Relation) -> tuple[object, ...]:
    return (
        relation.id,
        relation.space,
        relation.source,
        relation.target,
        relation.type.value,
        relation.note,
        _ms(relation.created_at),
        relation.created_by.encode() if relation.created_by else None,
        relation.source_summary,
        relation.target_summary,
        _ms(relation.invalid_at) if relation.invalid_at else None,
        relation.invalidated_by.encode() if relation.invalidated_by else None,
        relation.source_state,
        relation.target_state,
    )


def _relation(row: Sequence[object]) -> Relation:
    invalid = row[10]
    return Relation(
        source=str(row[2]),
        target=str(row[3]),
        type=RelationType(str(row[4])),
        space=str(row[1]),
        note=str(row[5]),
        created_at=_EPOCH + int(str(row[6])) * _MS,
        created_by=Attribution.decode(row[7] if isinstance(row[7], str) else None),
        source_summary=str(row[8]),
        target_summary=str(row[9]),
        invalid_at=_EPOCH + int(str(invalid)) * _MS if invalid is not None else None,
        invalidated_by=Attribution.decode(row[11] if isinstance(row[11], str) else None),
        source_state=str(row[12]),
        target_state=str(row[13]),
    )


def write(conn: sqlite3.Connection, relations: Iterable[Relation]) -> None:
    """Create each relation, or replace the one of the same id (reviving it)."""
    conn.executemany(
        f"INSERT OR REPLACE INTO relations ({COLUMNS}) VALUES ({', '.join('?' * 14)})",
        [_row(relation) for relation in relations],
    )


def invalidate(
    conn: sqlite3.Connection, space: str, ids: Sequence[str], at: datetime, by: Attribution | None
) -> list[str]:
    """Mark the valid relations among ``ids`` invalid; the ids that were."""
    changed: list[str] = []
    for start in range(0, len(ids), _IN_CHUNK):
        chunk = list(ids[start : start + _IN_CHUNK])
        rows = conn.execute(
            f"UPDATE relations SET invalid_at = ?, invalidated_by = ? WHERE space = ?"
            f" AND invalid_at IS NULL AND id IN ({','.join('?' * len(chunk))}) RETURNING id",
            [_ms(at), by.encode() if by else None, space, *chunk],
        )
        changed += [str(row[0]) for row in rows]
    return changed


def touching(
    conn: sqlite3.Connection, space: str, memory_ids: Sequence[str], include_invalid: bool
) -> list[Relation]:
    """Every relation of ``space`` with one end among ``memory_ids``, oldest first."""
    found: dict[str, Relation] = {}
    wanted = list(dict.fromkeys(memory_ids))
    valid = "" if include_invalid else " AND invalid_at IS NULL"
    for start in range(0, len(wanted), _IN_CHUNK):
        chunk = wanted[start : start + _IN_CHUNK]
        marks = ",".join("?" * len(chunk))
        rows = conn.execute(
            f"SELECT {COLUMNS} FROM relations WHERE space = ?{valid}"
            f" AND (source IN ({marks}) OR target IN ({marks}))",
            [space, *chunk, *chunk],
        )
        for row in rows:
            relation = _relation(row)
            found[relation.id] = relation
    return sorted(found.values(), key=lambda r: (r.created_at, r.id))


def erase_touching(conn: sqlite3.Connection, space: str, memory_ids: Sequence[str]) -> int:
    """Delete every relation touching an erased memory (they hold its summary)."""
    deleted = 0
    for start in range(0, len(memory_ids), _IN_CHUNK):
        chunk = list(memory_ids[start : start + _IN_CHUNK])
        marks = ",".join("?" * len(chunk))
        deleted += conn.execute(
            "DELETE FROM relations WHERE space = ?"
            f" AND (source IN ({marks}) OR target IN ({marks}))",
            [space, *chunk, *chunk],
        ).rowcount
    return deleted


def moved(conn: sqlite3.Connection, memory_id: str, from_space: str) -> int:
    """A memory moved to another space takes none of its relations along (relations never
    cross a space): they are invalidated where they were, never deleted."""
    return conn.execute(
        "UPDATE relations SET invalid_at = COALESCE(invalid_at, CAST(strftime('%s','now') AS"
        " INTEGER) * 1000) WHERE space = ? AND (source = ? OR target = ?)",
        (from_space, memory_id, memory_id),
    ).rowcount


def state_changed(conn: sqlite3.Connection, space: str, memory_id: str, state: str) -> None:
    """Keep the relations' copy of a memory's state current (what readers filter on)."""
    conn.execute(
        "UPDATE relations SET source_state = ? WHERE space = ? AND source = ?",
        (state, space, memory_id),
    )
    conn.execute(
        "UPDATE relations SET target_state = ? WHERE space = ? AND target = ?",
        (state, space, memory_id),
    )
