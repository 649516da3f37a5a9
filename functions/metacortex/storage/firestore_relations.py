"""Relations on Firestore: one collection per space beside its memories.

``memory_vectors_relations`` holds the default space's relations and
``memory_vectors_spaces/S/memory_vectors_relations`` space ``S``'s (as memories
are kept: a query never crosses a space). A document per relation, id =
``Relation.id``, with ``ends`` = [source, target]: the relations of a page of
results are one ``array_contains_any`` query per 30 ids (Firestore's limit), all
in flight at once, served by the automatic single-field index.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import Executor
from datetime import datetime
from typing import Any, Final

from google.cloud.firestore_v1.base_query import FieldFilter
from google.cloud.firestore_v1.collection import CollectionReference
from google.cloud.firestore_v1.transaction import Transaction

from metacortex.domain.records import Attribution
from metacortex.domain.relations import Relation, relation_fields, relation_from_fields
from metacortex.storage.firestore_codec import SCHEMA_VERSION, from_stored_time, to_stored_time

RELATIONS_SUFFIX: Final = "_relations"
ENDS: Final = "ends"
# array_contains_any takes at most 30 values.
_PER_QUERY: Final = 30


def encode(relation: Relation) -> dict[str, Any]:
    return relation_fields(relation, to_stored_time) | {
        ENDS: [relation.source, relation.target],
        "schema_version": SCHEMA_VERSION,
    }


def decode(data: Mapping[str, Any], space: str) -> Relation:
    return relation_from_fields(data, space, from_stored_time)


def invalidation(at: datetime, by: Attribution | None) -> dict[str, Any]:
    return {"invalid_at": to_stored_time(at), "invalidated_by": by.encode() if by else None}


class RelationIndex:
    """The relations of every space, one collection each."""

    def __init__(
        self, collection_of: Callable[[str], CollectionReference], executor: Executor
    ) -> None:
        self._collection_of = collection_of
        self._executor = executor

    def collection(self, space: str) -> CollectionReference:
        return self._collection_of(space)

    def touching(
        self,
        space: str,
        memory_ids: Sequence[str],
        include_invalid: bool,
        transaction: Transaction | None = None,
    ) -> list[tuple[Relation, Any]]:
        """(relation, document reference) of every relation with an end among the ids;
        one query per 30 ids, all at once (in ``transaction`` when given: sequentially,
        as a transaction's reads are)."""
        wanted = list(dict.fromkeys(memory_ids))
        collection = self._collection_of(space)
        queries = [
            collection.where(filter=FieldFilter(ENDS, "array_contains_any", chunk))
            for chunk in (wanted[i : i + _PER_QUERY] for i in range(0, len(wanted), _PER_QUERY))
        ]
        if transaction is not None:
            results: Iterable[list[Any]] = [
                list(q.stream(transaction=transaction)) for q in queries
            ]
        else:
            results = self._executor.map(lambda q: list(q.stream()), queries)
        found: dict[str, tuple[Relation, Any]] = {}
        for snapshots in results:
            for snapshot in snapshots:
                relation = decode(snapshot.to_dict() or {}, space)
                if include_invalid or relation.valid:
                    found[snapshot.id] = (relation, snapshot.reference)
        return sorted(found.values(), key=lambda pair: (pair[0].created_at, pair[0].id))
