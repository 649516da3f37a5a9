"""The vector mirror's reads of the ``memories`` table: every row (a mirror's first
load), or the rows changed and the seqs erased since a ``change_seq``, as columns.

A server's start reads every row (100,000 at the scale target) on a thread while
the main thread imports the app (docs/benchmarks.md, "Start-up after spaces").
``sqlite3`` releases the GIL around each step of a statement, so a thread reading
row by row hands the GIL back and waits to get it again 100,000 times: beside a
busy thread each wait lasts a switch interval, and the two convoy. So the first
load asks SQLite for a few thousand rows per step, as one row of aggregates (the
vectors concatenated into one blob, every other column a delimited list), and
SQLite reads the pages with the GIL released; Python only splits and converts
those lists, in C loops (numpy, ``map`` over dict lookups). Catching up with a few
changed rows reads them row by row, through the ``change_seq`` index.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Generator, Sequence
from dataclasses import dataclass
from typing import Any, Final

import numpy as np
import numpy.typing as npt

from metacortex.domain.records import SupersessionReason
from metacortex.storage.sqlite_vectors import (
    NO_LOWER,
    NO_UPPER,
    NONE,
    ORIGIN_CODES,
    STATE_CODES,
    VectorRows,
)

_STATES: Final = {state.value: code for state, code in STATE_CODES.items()}
_ORIGINS: Final[dict[str | None, int]] = {
    None: NONE,
    "": NONE,
    **{origin.value: code for origin, code in ORIGIN_CODES.items()},
}
# Rows per chunk: 1.5 MB of MiniLM vectors. At 4,096 rows (6 MB) glibc's mmap
# threshold grew past the chunk's blocks, which then came from the loading thread's
# heap and stayed there: 11-16 MB more RSS at 100,000 memories after malloc_trim.
CHUNK: Final = 1024
# One statement, so changed and erased rows come from one snapshot. An erased seq's
# row has no embedding (NULL), which is how ``changes`` tells the two apart.
_ROW: Final = (
    "seq, embedding, module_name, branch_state, origin, created_at,"
    f" COALESCE(valid_from, {NO_LOWER}), COALESCE(valid_until, {NO_UPPER}),"
    " supersession_reason IS ?, change_seq, space, COALESCE(occurred_at, created_at)"
)
# One statement, so changed and erased rows come from one snapshot. An erased seq's
# row has no embedding (NULL), which is how ``changes`` tells the two apart.
_CHANGES: Final = (
    f"SELECT {_ROW} FROM memories WHERE change_seq > ?"
    " UNION ALL SELECT seq, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,"
    " change_seq, NULL, NULL FROM erased_memories WHERE change_seq > ?"
)
_RANGE: Final = f"SELECT {_ROW} FROM memories WHERE seq >= ? AND seq < ?"
# A range of seqs as one row: the aggregates see the rows in the same order, so the
# nth entry of every list is the same row's. Topic and space keys never hold the
# unit separator (their rules allow neither it nor a comma); a list that splits
# into the wrong count is read again row by row all the same.
_SEPARATOR: Final = "\x1f"
_AGGREGATED: Final = (
    "SELECT count(*), min(length(embedding)), max(length(embedding)), max(change_seq),"
    " group_concat(seq), CAST(group_concat(embedding, '') AS BLOB),"
    " group_concat(module_name, char(31)), group_concat(space, char(31)),"
    " group_concat(branch_state, char(31)), group_concat(COALESCE(origin, ''), char(31)),"
    " group_concat(created_at),"
    f" group_concat(COALESCE(valid_from, {NO_LOWER})),"
    f" group_concat(COALESCE(valid_until, {NO_UPPER})),"
    " group_concat(supersession_reason IS ?),"
    " group_concat(COALESCE(occurred_at, created_at))"
    " FROM memories WHERE seq >= ? AND seq < ?"
)
_SEQ, _EMBEDDING, _TOPIC, _STATE, _ORIGIN, _CREATED = range(6)
_VALID_FROM, _VALID_UNTIL, _CORRECTED, _CHANGE_SEQ, _SPACE, _OCCURRED = range(6, 12)


@dataclass(frozen=True, slots=True)
class Changes:
    """One chunk of changes: rows to upsert, seqs erased, the highest change_seq seen."""

    rows: VectorRows
    erased: list[int]
    newest: int


def changes(conn: sqlite3.Connection, since: int, dimension: int) -> Generator[Changes, None, None]:
    """The rows changed and the seqs erased after ``since``, a chunk at a time."""
    cursor = conn.cursor()
    cursor.row_factory = None
    cursor.execute(_CHANGES, (SupersessionReason.CORRECTED.value, since, since))
    while chunk := cursor.fetchmany(CHUNK):
        columns = list(zip(*chunk, strict=True))
        newest = int(max(columns[_CHANGE_SEQ]))
        erased: list[int] = []
        if None in columns[_EMBEDDING]:
            erased = [row[_SEQ] for row in chunk if row[_EMBEDDING] is None]
            kept = [row for row in chunk if row[_EMBEDDING] is not None]
            columns = list(zip(*kept, strict=True))
        yield Changes(mirror_rows(columns, dimension), erased, newest)


def everything(conn: sqlite3.Connection, dimension: int) -> Generator[Changes, None, None]:
    """Every row, a range of ``CHUNK`` seqs at a time, in one read transaction (one
    snapshot); the last chunk has no rows and the highest change_seq of any row,
    erased ones included (an empty mirror has nothing of theirs to remove)."""
    cursor = conn.cursor()
    cursor.row_factory = None
    own = not conn.in_transaction
    if own:
        cursor.execute("BEGIN")
    try:
        lowest, highest = cursor.execute("SELECT MIN(seq), MAX(seq) FROM memories").fetchone()
        [newest] = cursor.execute(
            "SELECT COALESCE(MAX(change_seq), 0) FROM erased_memories"
        ).fetchone()
        if lowest is not None:
            for start in range(lowest, highest + 1, CHUNK):
                chunk = _aggregated(cursor, start, dimension)
                if chunk is not None:
                    newest = max(newest, chunk.newest)
                    yield chunk
        yield Changes(empty_rows(dimension), [], int(newest))
    finally:
        if own:
            cursor.execute("COMMIT")


def _aggregated(cursor: sqlite3.Cursor, start: int, dimension: int) -> Changes | None:
    """The rows of seqs ``start`` to ``start + CHUNK`` (None: there are none)."""
    corrected = SupersessionReason.CORRECTED.value
    row = cursor.execute(_AGGREGATED, (corrected, start, start + CHUNK)).fetchone()
    count, shortest, longest, newest = row[0], row[1], row[2], row[3]
    if not count:
        return None
    topics, spaces, states, origins = (str(row[i]).split(_SEPARATOR) for i in range(6, 10))
    width = 4 * dimension
    if shortest != width or longest != width or {len(topics), len(spaces)} != {count}:
        # Read row by row: its checks name the row (a vector of another dimension).
        rows = cursor.execute(_RANGE, (corrected, start, start + CHUNK)).fetchall()
        return Changes(mirror_rows(list(zip(*rows, strict=True)), dimension), [], int(newest))
    return Changes(
        VectorRows(
            seqs=_integers(row[4], count),
            embeddings=np.frombuffer(row[5], dtype=np.float32).reshape(count, dimension),
            topics=topics,
            spaces=spaces,
            states=np.fromiter(map(_STATES.__getitem__, states), np.int8, count),
            origins=np.fromiter(map(_ORIGINS.__getitem__, origins), np.int8, count),
            created=_integers(row[10], count),
            valid_from=_integers(row[11], count),
            valid_until=_integers(row[12], count),
            corrected=_integers(row[13], count).astype(np.bool_),
            occurred=_integers(row[14], count),
        ),
        [],
        int(newest),
    )


def _integers(listed: str, count: int) -> npt.NDArray[np.int64]:
    """A comma-separated list of ``count`` integers, parsed in C."""
    values = np.fromstring(listed, dtype=np.int64, sep=",")
    if values.shape[0] != count:
        raise ValueError(f"expected {count} integers from SQLite, read {values.shape[0]}")
    return values


def mirror_rows(columns: Sequence[Sequence[Any]], dimension: int) -> VectorRows:
    """``VectorRows`` of columns as ``_CHANGES`` reads them (none: no rows)."""
    if not columns:
        return empty_rows(dimension)
    count = len(columns[_SEQ])
    blobs = columns[_EMBEDDING]
    width = 4 * dimension
    if set(map(len, blobs)) != {width}:
        seq, blob = next(
            pair for pair in zip(columns[_SEQ], blobs, strict=True) if len(pair[1]) != width
        )
        raise ValueError(
            f"memory seq {seq} has a {len(blob)}-byte vector; the store's "
            f"dimension {dimension} needs {width}: run `metacortex reembed`"
        )
    return VectorRows(
        seqs=np.fromiter(columns[_SEQ], np.int64, count),
        embeddings=np.frombuffer(b"".join(blobs), dtype=np.float32).reshape(count, dimension),
        topics=list(columns[_TOPIC]),
        spaces=list(columns[_SPACE]),
        states=np.fromiter(map(_STATES.__getitem__, columns[_STATE]), np.int8, count),
        origins=np.fromiter(map(_ORIGINS.__getitem__, columns[_ORIGIN]), np.int8, count),
        created=np.fromiter(columns[_CREATED], np.int64, count),
        valid_from=np.fromiter(columns[_VALID_FROM], np.int64, count),
        valid_until=np.fromiter(columns[_VALID_UNTIL], np.int64, count),
        corrected=np.fromiter(columns[_CORRECTED], np.bool_, count),
        occurred=np.fromiter(columns[_OCCURRED], np.int64, count),
    )


def empty_rows(dimension: int) -> VectorRows:
    return VectorRows(
        seqs=np.zeros(0, np.int64),
        embeddings=np.zeros((0, dimension), np.float32),
        topics=[],
        spaces=[],
        states=np.zeros(0, np.int8),
        origins=np.zeros(0, np.int8),
        created=np.zeros(0, np.int64),
        valid_from=np.zeros(0, np.int64),
        valid_until=np.zeros(0, np.int64),
        corrected=np.zeros(0, np.bool_),
        occurred=np.zeros(0, np.int64),
    )
