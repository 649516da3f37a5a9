"""An in-process mirror of the SQLite store's vectors and filter columns for exact search.

Exact cosine search over the prefiltered set: every filter of ``MemoryFilter`` is
applied as a numpy mask before scoring, so ``limit`` results come back whenever
that many records match. It catches up with writes from any connection or
process through the ``change_seq`` counter every write bumps: changed rows are
upserted, erased ones (``erased_memories``, same counter) removed, their
vectors overwritten with zeros.

Sized for 100,000 memories and more (docs/benchmarks.md, "Scale"):
rows arrive as columns (``VectorRows``), never one Python object per row; the
arrays grow by a quarter, not by doubling; a search that keeps most rows scores
the whole contiguous matrix in one product and masks the scores, instead of
copying the matching rows first (150 MB at 100,000 rows); one that keeps fewer
gathers and scores them a slice at a time (a space of 20,000 rows would be a
30 MB copy, which glibc keeps in the heap once its mmap threshold has grown past
it: the server's RSS grew 20-60 MB; docs/benchmarks.md, "Spaces at 100,000").
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

NONE: Final = -1
NO_LOWER: Final = np.iinfo(np.int64).min
NO_UPPER: Final = np.iinfo(np.int64).max
STATE_CODES: Final = {state: code for code, state in enumerate(BranchState)}
ORIGIN_CODES: Final = {origin: code for code, origin in enumerate(Origin)}
# Below this share of matching rows, the matching rows are gathered and scored;
# above it, scoring every row in one product is cheaper than the copy.
_GATHER_BELOW: Final = 0.25
# Rows are gathered and scored in slices of at most this many bytes.
_GATHER_BYTES: Final = 2 << 20
_MIN_CAPACITY: Final = 1024


@dataclass(frozen=True, slots=True)
class VectorRows:
    """Rows to upsert, as columns (one entry per row, in the same order)."""

    seqs: npt.NDArray[np.int64]
    embeddings: npt.NDArray[np.float32]  # (rows, dimension)
    topics: list[str]
    spaces: list[str]
    states: npt.NDArray[np.int8]  # STATE_CODES
    origins: npt.NDArray[np.int8]  # ORIGIN_CODES or NONE
    created: npt.NDArray[np.int64]
    valid_from: npt.NDArray[np.int64]  # NO_LOWER when open
    valid_until: npt.NDArray[np.int64]  # NO_UPPER when open
    corrected: npt.NDArray[np.bool_]
    occurred: npt.NDArray[np.int64]  # start of the record's occurrence (ms)

    def __len__(self) -> int:
        return int(self.seqs.shape[0])


class VectorMirror:
    def __init__(self, dimension: int) -> None:
        self._lock = threading.Lock()
        self._size = 0
        self._topics: dict[str, int] = {}
        self._spaces: dict[str, int] = {}
        self.change_seq = 0
        self.matrix = np.zeros((0, dimension), dtype=np.float32)
        self.seqs = np.zeros(0, dtype=np.int64)
        self.topic_ids = np.zeros(0, dtype=np.int32)
        self.space_ids = np.zeros(0, dtype=np.int32)
        self.states = np.zeros(0, dtype=np.int8)
        self.origins = np.zeros(0, dtype=np.int8)
        self.created = np.zeros(0, dtype=np.int64)
        self.valid_from = np.zeros(0, dtype=np.int64)
        self.valid_until = np.zeros(0, dtype=np.int64)
        self.corrected = np.zeros(0, dtype=np.bool_)
        self.occurred = np.zeros(0, dtype=np.int64)
        # Row position of each seq (NONE when absent), indexed by seq.
        self._position_of = np.zeros(0, dtype=np.int64)

    @property
    def size(self) -> int:
        return self._size

    def reserve(self, rows: int) -> None:
        """Make room for ``rows`` rows in all (one allocation when loading a whole store)."""
        with self._lock:
            self._reserve(rows)

    def _reserve(self, rows: int) -> None:
        capacity = self.seqs.shape[0]
        if rows <= capacity:
            return
        capacity = max(rows, _MIN_CAPACITY, capacity + capacity // 4)
        self.matrix = _grown(self.matrix, capacity)
        self.seqs = _grown(self.seqs, capacity)
        self.topic_ids = _grown(self.topic_ids, capacity)
        self.space_ids = _grown(self.space_ids, capacity)
        self.states = _grown(self.states, capacity)
        self.origins = _grown(self.origins, capacity)
        self.created = _grown(self.created, capacity)
        self.valid_from = _grown(self.valid_from, capacity)
        self.valid_until = _grown(self.valid_until, capacity)
        self.corrected = _grown(self.corrected, capacity)
        self.occurred = _grown(self.occurred, capacity)

    def _index_seqs(self, highest: int) -> None:
        length = self._position_of.shape[0]
        if highest < length:
            return
        grown = np.full(max(highest + 1, length + length // 4, _MIN_CAPACITY), NONE, np.int64)
        grown[:length] = self._position_of
        self._position_of = grown

    def positions(self, seqs: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
        """Row positions of ``seqs`` (NONE for seqs the mirror does not hold)."""
        inside = (seqs >= 0) & (seqs < self._position_of.shape[0])
        found = np.full(seqs.shape[0], NONE, np.int64)
        found[inside] = self._position_of[seqs[inside]]
        return found

    def apply(self, rows: VectorRows, erased: list[int], change_seq: int) -> None:
        """Upsert ``rows``, remove the rows of the ``erased`` seqs, and note that the
        mirror is current up to ``change_seq``. Seqs are never reused (``sqlite_schema``),
        so an erased seq is never among the rows."""
        with self._lock:
            if len(rows):
                self._upsert(rows)
            for seq in erased:
                self._remove(seq)
            self.change_seq = max(self.change_seq, change_seq)

    def _upsert(self, rows: VectorRows) -> None:
        self._index_seqs(int(rows.seqs.max()))
        take: npt.NDArray[np.int64] | slice
        if len(rows) == 1 or bool(np.all(rows.seqs[1:] > rows.seqs[:-1])):
            seqs, take = rows.seqs, slice(None)  # each seq once (a table scan)
        else:
            # A seq may come twice in one batch only if written twice; the last one wins.
            seqs, last = np.unique(rows.seqs[::-1], return_index=True)
            take = len(rows) - 1 - last
        positions = self._position_of[seqs]
        fresh = positions == NONE
        count = int(fresh.sum())
        target: npt.NDArray[np.int64] | slice = positions
        if count:
            self._reserve(self._size + count)
            if count == seqs.shape[0] and isinstance(take, slice):
                target = slice(self._size, self._size + count)  # appended in order: no copy
            positions[fresh] = np.arange(self._size, self._size + count)
            self._position_of[seqs[fresh]] = positions[fresh]
            self._size += count
        topics = rows.topics if isinstance(take, slice) else [rows.topics[i] for i in take]
        self.topic_ids[target] = _codes(topics, self._topics)
        spaces = rows.spaces if isinstance(take, slice) else [rows.spaces[i] for i in take]
        self.space_ids[target] = _codes(spaces, self._spaces)
        self.matrix[target] = rows.embeddings[take]
        self.seqs[target] = seqs
        self.states[target] = rows.states[take]
        self.origins[target] = rows.origins[take]
        self.created[target] = rows.created[take]
        self.valid_from[target] = rows.valid_from[take]
        self.valid_until[target] = rows.valid_until[take]
        self.corrected[target] = rows.corrected[take]
        self.occurred[target] = rows.occurred[take]

    def _remove(self, seq: int) -> None:
        """Move the last row into the erased row's place and zero the vacated row."""
        if seq >= self._position_of.shape[0] or self._position_of[seq] == NONE:
            return  # erased before this mirror ever loaded it
        position = int(self._position_of[seq])
        self._position_of[seq] = NONE
        last = self._size - 1
        if position != last:
            for column in self._columns():
                column[position] = column[last]
            self._position_of[int(self.seqs[position])] = position
        for column in self._columns():
            column[last] = 0
        self._size = last

    def _columns(self) -> tuple[npt.NDArray[np.generic], ...]:
        return (
            self.matrix,
            self.seqs,
            self.topic_ids,
            self.space_ids,
            self.states,
            self.origins,
            self.created,
            self.valid_from,
            self.valid_until,
            self.corrected,
            self.occurred,
        )

    def _mask(self, where: MemoryFilter) -> npt.NDArray[np.bool_] | None:
        """Which of the first ``size`` rows pass ``where``; None when none can."""
        size = self._size
        space_id = self._spaces.get(where.space)
        if space_id is None:
            return None
        mask = np.isin(self.states[:size], [STATE_CODES[s] for s in where.states])
        if len(self._spaces) > 1:
            mask &= self.space_ids[:size] == space_id
        if where.topic is not None:
            topic_id = self._topics.get(where.topic)
            if topic_id is None:
                return None
            mask &= self.topic_ids[:size] == topic_id
        if where.origin is not None:
            mask &= self.origins[:size] == ORIGIN_CODES[where.origin]
        if where.valid_at is not None:
            instant = _ms(where.valid_at.timestamp())
            mask &= (self.valid_from[:size] <= instant) & (self.valid_until[:size] > instant)
            mask &= ~self.corrected[:size]
        if where.created_after is not None:
            mask &= self.created[:size] >= _ms(where.created_after.timestamp())
        if where.created_before is not None:
            mask &= self.created[:size] < _ms(where.created_before.timestamp())
        if where.occurred_after is not None:
            mask &= self.occurred[:size] >= _ms(where.occurred_after.timestamp())
        if where.occurred_before is not None:
            mask &= self.occurred[:size] < _ms(where.occurred_before.timestamp())
        return mask

    def search(self, vector: Vector, where: MemoryFilter, limit: int) -> list[tuple[int, float]]:
        """(seq, cosine similarity) of the best ``limit`` matching rows, best first."""
        query = vector.astype(np.float32, copy=False)
        with self._lock:
            size = self._size
            if size == 0:
                return []
            mask = self._mask(where)
            if mask is None:
                return []
            positions = np.flatnonzero(mask)
            if positions.size == 0:
                return []
            if positions.size < _GATHER_BELOW * size:
                scores = self._gathered_scores(positions, query)
            else:
                scores = (self.matrix[:size] @ query)[positions]
            seqs = self.seqs[positions]
        return _best(seqs, scores, limit)

    def _gathered_scores(
        self, positions: npt.NDArray[np.intp], query: npt.NDArray[np.float32]
    ) -> npt.NDArray[np.float32]:
        """The scores of the rows at ``positions``, gathered a slice at a time (each row's
        score is the same dot product as in one gather, to the bit)."""
        step = max(1, _GATHER_BYTES // self.matrix[0].nbytes)
        if positions.size <= step:
            return self.matrix[positions] @ query
        scores = np.empty(positions.size, dtype=np.float32)
        for start in range(0, positions.size, step):
            part = positions[start : start + step]
            scores[start : start + step] = self.matrix[part] @ query
        return scores

    def in_space(self, seqs: npt.NDArray[np.int64], space: str) -> npt.NDArray[np.bool_]:
        """Which of ``seqs`` the mirror holds in ``space``, whatever their state (reads
        only those rows: no mask over the whole mirror)."""
        with self._lock:
            positions = self.positions(seqs)
            held: npt.NDArray[np.bool_] = positions != NONE
            space_id = self._spaces.get(space)
            if space_id is None:
                return np.zeros(seqs.shape[0], dtype=np.bool_)
            if len(self._spaces) > 1:
                held[held] = self.space_ids[positions[held]] == space_id
            return held

    def matching(self, seqs: npt.NDArray[np.int64], where: MemoryFilter) -> npt.NDArray[np.bool_]:
        """Which of ``seqs`` the mirror holds and ``where`` lets through."""
        with self._lock:
            positions = self.positions(seqs)
            held = positions != NONE
            mask = self._mask(where)
            if mask is None:
                return np.zeros(seqs.shape[0], dtype=np.bool_)
            passed = np.zeros(seqs.shape[0], dtype=np.bool_)
            passed[held] = mask[positions[held]]
            return passed


def _best(
    seqs: npt.NDArray[np.int64], scores: npt.NDArray[np.float32], limit: int
) -> list[tuple[int, float]]:
    """The best ``limit`` by score, ties by seq."""
    if scores.size > limit:
        top = np.argpartition(-scores, limit - 1)[:limit]
        # Rows tied with the last one kept may have been cut arbitrarily: take them all.
        floor = scores[top].min()
        top = np.flatnonzero(scores >= floor)
    else:
        top = np.arange(scores.size)
    order = top[np.lexsort((seqs[top], -scores[top]))][:limit]
    return [(int(seqs[i]), float(scores[i])) for i in order]


def _codes(names: list[str], codes: dict[str, int]) -> npt.NDArray[np.int32]:
    """The code of each of ``names``, a new name getting the next free code. Python
    runs once per distinct name, not once per row (a whole store at start)."""
    for name in dict.fromkeys(names):
        codes.setdefault(name, len(codes))
    return np.fromiter(map(codes.__getitem__, names), np.int32, len(names))


def _ms(seconds: float) -> int:
    return round(seconds * 1000)


A = TypeVar("A", bound=np.generic)


def _grown(array: npt.NDArray[A], capacity: int) -> npt.NDArray[A]:
    new = np.zeros((capacity, *array.shape[1:]), dtype=array.dtype)
    new[: array.shape[0]] = array
    return new
