"""Dense retrieval on Firestore: ``find_nearest`` (COSINE) with the filter as prefilter.

``branch_state``, topic and origin are ``where`` clauses of the vector query
itself, so they apply before ranking. ``valid_at`` and a creation range cannot
be prefilters (see ``firestore_queries``); when they are set, results are
checked with ``MemoryFilter.matches`` and the query is repeated with a larger
limit (x4, up to Firestore's 1000) until ``limit`` records pass or the
prefiltered set is exhausted. Past 1000 every prefiltered record is scored
exactly here (``_scan``), so a page is never short while enough records match.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final

import numpy as np
from google.cloud.firestore_v1.base_vector_query import DistanceMeasure
from google.cloud.firestore_v1.collection import CollectionReference

from metacortex.domain.records import Memory
from metacortex.storage.base import MemoryFilter, Scored
from metacortex.storage.firestore_codec import (
    EMBEDDING,
    FILTER_FIELDS,
    MEMORY_FIELDS,
    decode_memory,
    fields_of,
    vector_value,
)
from metacortex.storage.firestore_queries import (
    MAX_NEAREST,
    filtered,
    native_filters,
    needs_post_filter,
)

if TYPE_CHECKING:
    from metacortex.storage.base import Vector

DISTANCE_FIELD: Final = "vector_distance"
_OVERFETCH: Final = 4

# (ids, space) -> the records found, by id
ReadMany = Callable[[Iterable[str], str], dict[str, Memory]]


def _ranked(hits: list[Scored], limit: int) -> list[Scored]:
    # Ties in any order from Firestore; break them by age like SQLite (insertion order).
    hits.sort(key=lambda hit: (-hit.score, hit.memory.created_at, hit.memory.id))
    return hits[:limit]


class VectorIndex:
    def __init__(
        self,
        memories: Callable[[str], CollectionReference],
        read_many: ReadMany,
        nearest_limit: int = MAX_NEAREST,
    ) -> None:
        if not 1 <= nearest_limit <= MAX_NEAREST:
            raise ValueError(f"nearest_limit must be 1..{MAX_NEAREST}; got {nearest_limit}")
        self._memories = memories  # a space's memory collection
        self._read_many = read_many
        self._nearest_limit = nearest_limit

    def search(
        self,
        vector: Vector,
        where: MemoryFilter,
        limit: int,
        extra_fields: Sequence[str] = (),
        fields_out: dict[str, Mapping[str, Any]] | None = None,
    ) -> list[Scored]:
        """Top ``limit`` by cosine similarity (1 - cosine distance) among matching records.

        ``extra_fields`` are read too (one ``find_nearest``, no more reads) and, for
        each record returned, put in ``fields_out`` by id (the exact-scan fallback
        reads none)."""
        if limit <= 0:
            return []
        cap = self._nearest_limit
        if limit > cap:
            return self._scan(vector, where, limit)
        post_filter = needs_post_filter(where, created_range=False)
        count = min(cap, max(limit * _OVERFETCH, limit + 20)) if post_filter else limit
        while True:
            found = self._nearest(vector, where, count, extra_fields, fields_out)
            kept = [hit for hit in found if where.matches(hit.memory)] if post_filter else found
            if len(kept) >= limit or len(found) < count:
                return _ranked(kept, limit)
            if count == cap:
                return self._scan(vector, where, limit)
            count = min(cap, count * _OVERFETCH)

    def _nearest(
        self,
        vector: Vector,
        where: MemoryFilter,
        count: int,
        extra_fields: Sequence[str],
        fields_out: dict[str, Mapping[str, Any]] | None,
    ) -> list[Scored]:
        """One ``find_nearest`` with the equality part of ``where`` as prefilter."""
        query = filtered(self._memories(where.space), native_filters(where, created_range=False))
        # Typed Any: the client annotates find_nearest as returning the VectorQuery class.
        projection = [*MEMORY_FIELDS, DISTANCE_FIELD, *extra_fields]
        nearest: Any = query.select(projection).find_nearest(
            vector_field=EMBEDDING,
            query_vector=vector_value(vector),
            limit=count,
            distance_measure=DistanceMeasure.COSINE,
            distance_result_field=DISTANCE_FIELD,
        )
        hits: list[Scored] = []
        for snapshot in nearest.get():
            data = fields_of(snapshot)
            if fields_out is not None:
                fields_out[snapshot.id] = data
            # COSINE distance is 1 - cosine similarity; report similarity, as SQLite does.
            hits.append(
                Scored(
                    decode_memory(snapshot.id, data, where.space), 1.0 - float(data[DISTANCE_FIELD])
                )
            )
        return hits

    def _scan(self, vector: Vector, where: MemoryFilter, limit: int) -> list[Scored]:
        """Exact cosine over every record matching ``where`` (reads them all: the rare path)."""
        query = filtered(self._memories(where.space), native_filters(where, created_range=True))
        target = np.asarray(vector, dtype=np.float64)
        ids: list[str] = []
        rows: list[list[float]] = []
        for snapshot in query.select([EMBEDDING, *FILTER_FIELDS]).stream():
            data = snapshot.to_dict() or {}
            stored = data.get(EMBEDDING)
            if stored is None or not where.matches(decode_memory(snapshot.id, data, where.space)):
                continue
            values = [float(x) for x in stored]
            if len(values) == target.size:  # other dimensions are invisible, as in find_nearest
                ids.append(snapshot.id)
                rows.append(values)
        if not rows:
            return []
        matrix = np.asarray(rows, dtype=np.float64)
        norms = np.linalg.norm(matrix, axis=1) * np.linalg.norm(target)
        scores = (matrix @ target) / np.where(norms == 0, 1.0, norms)
        best = np.argsort(-scores, kind="stable")[: limit * 2]
        memories = self._read_many((ids[i] for i in best), where.space)
        # A record changed since the scan may no longer match.
        hits = [
            Scored(memories[ids[i]], float(scores[i]))
            for i in best
            if ids[i] in memories and where.matches(memories[ids[i]])
        ]
        return _ranked(hits, limit)
