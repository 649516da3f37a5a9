"""An in-process mirror of the SQLite store's vectors and filter columns for exact search.

Exact cosine search over the prefiltered set: every filter of ``MemoryFilter`` is
applied as a numpy mask before scoring, so ``limit`` results come back whenever
that many records match. It catches up with writes from any connection or
process through the ``change_seq`` counter every write bumps: changed rows are
upserted, erased ones (``erased_memories``, same counter) removed, their
vectors overwritten with zeros.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final, TypeVar

import numpy as np
import numpy.typing as npt

from metacortex.domain.records import BranchState, Origin
from metacortex.storage.base import MemoryFilter

if TYPE_CHECKING:
    from metacortex.storage.base import Vector

_NONE: Final = -1
_NO_LOWER: Final = np.iinfo(np.int64).min
_NO_UPPER: Final = np.iinfo(np.int64).max
_STATE_CODES: Final = {state: code for code, state in enumerate(BranchState)}
_ORIGIN_CODES: Final = {origin: code for code, origin in enumerate(Origin)}


@dataclass(frozen=True, slots=True)
class VectorRow:
    seq: int
    embedding: Vector
    topic: str
    state: BranchState
    origin: Origin | None
    created_at_ms: int
    valid_from_ms: int | None
    valid_until_ms: int | None
    corrected: bool


class VectorMirror:
    def __init__(self, dimension: int) -> None:
        self._lock = threading.Lock()
        self._size = 0
        self._positions: dict[int, int] = {}
        self._topics: dict[str, int] = {}
        self.change_seq = 0
        self.matrix = np.zeros((0, dimension), dtype=np.float32)
        self.seqs = np.zeros(0, dtype=np.int64)
        self.topic_ids = np.zeros(0, dtype=np.int32)
        self.states = np.zeros(0, dtype=np.int8)
        self.origins = np.zeros(0, dtype=np.int8)
        self.created = np.zeros(0, dtype=np.int64)
        self.valid_from = np.zeros(0, dtype=np.int64)
        self.valid_until = np.zeros(0, dtype=np.int64)
        self.corrected = np.zeros(0, dtype=np.bool_)

    def _grow(self) -> None:
        capacity = max(1024, 2 * self.seqs.shape[0])
        self.matrix = _grown(self.matrix, capacity)
        self.seqs = _grown(self.seqs, capacity)
        self.topic_ids = _grown(self.topic_ids, capacity)
        self.states = _grown(self.states, capacity)
        self.origins = _grown(self.origins, capacity)
        self.created = _grown(self.created, capacity)
        self.valid_from = _grown(self.valid_from, capacity)
        self.valid_until = _grown(self.valid_until, capacity)
        self.corrected = _grown(self.corrected, capacity)

    def apply(self, rows: list[VectorRow], erased: list[int], change_seq: int) -> None:
        """Upsert ``rows``, remove the rows of the ``erased`` seqs, and note that the
        mirror is current up to ``change_seq``. Seqs are never reused (``sqlite_schema``),
        so an erased seq is never among the rows."""
        with self._lock:
            for row in rows:
                position = self._positions.get(row.seq)
                if position is None:
                    if self._size == self.seqs.shape[0]:
                        self._grow()
                    position = self._size
                    self._size += 1
                    self._positions[row.seq] = position
                self.matrix[position] = row.embedding
                self.seqs[position] = row.seq
                self.topic_ids[position] = self._topics.setdefault(row.topic, len(self._topics))
                self.states[position] = _STATE_CODES[row.state]
                self.origins[position] = _ORIGIN_CODES[row.origin] if row.origin else _NONE
                self.created[position] = row.created_at_ms
                self.valid_from[position] = (
                    _NO_LOWER if row.valid_from_ms is None else row.valid_from_ms
                )
                self.valid_until[position] = (
                    _NO_UPPER if row.valid_until_ms is None else row.valid_until_ms
                )
                self.corrected[position] = row.corrected
            for seq in erased:
                self._remove(seq)
            self.change_seq = max(self.change_seq, change_seq)

    def _remove(self, seq: int) -> None:
        """Move the last row into the erased row's place and zero the vacated row."""
        position = self._positions.pop(seq, None)
        if position is None:
            return  # erased before this mirror ever loaded it
        last = self._size - 1
        if position != last:
            for column in self._columns():
                column[position] = column[last]
            self._positions[int(self.seqs[position])] = position
        for column in self._columns():
            column[last] = 0
        self._size = last

    def _columns(self) -> tuple[npt.NDArray[np.generic], ...]:
        return (
            self.matrix,
            self.seqs,
            self.topic_ids,
            self.states,
            self.origins,
            self.created,
            self.valid_from,
            self.valid_until,
            self.corrected,
        )

    def search(self, vector: Vector, where: MemoryFilter, limit: int) -> list[tuple[int, float]]:
        """(seq, cosine similarity) of the best ``limit`` matching rows, best first."""
        with self._lock:
            size = self._size
            if size == 0:
                return []
            mask = np.isin(self.states[:size], [_STATE_CODES[s] for s in where.states])
            if where.topic is not None:
                topic_id = self._topics.get(where.topic)
                if topic_id is None:
                    return []
                mask &= self.topic_ids[:size] == topic_id
            if where.origin is not None:
                mask &= self.origins[:size] == _ORIGIN_CODES[where.origin]
            if where.valid_at is not None:
                instant = _ms(where.valid_at.timestamp())
                mask &= (self.valid_from[:size] <= instant) & (self.valid_until[:size] > instant)
                mask &= ~self.corrected[:size]
            if where.created_after is not None:
                mask &= self.created[:size] >= _ms(where.created_after.timestamp())
            if where.created_before is not None:
                mask &= self.created[:size] < _ms(where.created_before.timestamp())
            positions = np.flatnonzero(mask)
            if positions.size == 0:
                return []
            scores = self.matrix[positions] @ vector.astype(np.float32, copy=False)
            seqs = self.seqs[positions]
        if scores.size > limit:
            top = np.argpartition(-scores, limit - 1)[:limit]
        else:
            top = np.arange(scores.size)
        order = top[np.lexsort((seqs[top], -scores[top]))]
        return [(int(seqs[i]), float(scores[i])) for i in order]


def _ms(seconds: float) -> int:
    return round(seconds * 1000)


A = TypeVar("A", bound=np.generic)


def _grown(array: npt.NDArray[A], capacity: int) -> npt.NDArray[A]:
    new = np.zeros((capacity, *array.shape[1:]), dtype=array.dtype)
    new[: array.shape[0]] = array
    return new
