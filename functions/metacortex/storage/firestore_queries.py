"""Every query shape the Firestore store issues, and the indexes they need.

The store builds its queries only through ``native_filters`` and the shapes
below, and ``firestore_index_specs`` derives ``firestore.indexes.json`` from
the same definitions, so the deployed indexes can be generated from (and
checked against) the code.

What runs inside Firestore and what is checked afterwards:

- ``branch_state`` (``==`` for one state, ``in`` for several), ``module_name``
  (topic) and ``origin`` are equality prefilters in every query, including
  ``find_nearest``.
- ``created_after``/``created_before`` are a range on ``created_at`` in list and
  lexical queries (both are ordered by ``created_at``). Vector queries never
  use a range prefilter (see ``firestore.md``): there they are checked after.
- ``occurred_after``/``occurred_before`` are a range on ``occurred_at`` in a
  listing ordered by it (``list_page(order="occurred")``); every other query
  checks them after (a second range field would need other indexes).
- ``valid_at`` (valid_from <= t < valid_until with open ends, not corrected)
  needs OR-with-null logic Firestore cannot express in one query; it is always
  checked after the query, with over-fetching so pages stay full.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import product
from typing import Any, Final, Literal

from google.cloud.firestore_v1.base_query import FieldFilter
from google.cloud.firestore_v1.collection import CollectionReference
from google.cloud.firestore_v1.query import Query

from metacortex.storage.base import MemoryFilter
from metacortex.storage.firestore_codec import (
    EMBEDDING,
    OCCURRED_AT,
    TERM_COUNT,
    TERMS,
    to_stored_time,
)

# Firestore limits.
MAX_NEAREST: Final = 1000  # find_nearest limit
MAX_DISJUNCTIONS: Final = 30  # after expanding `in` x `array_contains_any`
MAX_ARRAY_CONTAINS_ANY: Final = 30

Direction = Literal["ASCENDING", "DESCENDING"]

# The optional equality prefilters, in the order indexes list them.
_OPTIONAL_EQUALITIES: Final = ("module_name", "origin")


def native_filters(
    where: MemoryFilter, *, created_range: bool, occurred_range: bool = False
) -> list[FieldFilter]:
    """The part of ``where`` Firestore evaluates itself."""
    states = [state.value for state in where.states]
    filters = [
        FieldFilter("branch_state", "==", states[0])
        if len(states) == 1
        else FieldFilter("branch_state", "in", states)
    ]
    if where.topic is not None:
        filters.append(FieldFilter("module_name", "==", where.topic))
    if where.origin is not None:
        filters.append(FieldFilter("origin", "==", where.origin.value))
    if created_range:
        if where.created_after is not None:
            filters.append(FieldFilter("created_at", ">=", to_stored_time(where.created_after)))
        if where.created_before is not None:
            filters.append(FieldFilter("created_at", "<", to_stored_time(where.created_before)))
    if occurred_range:
        if where.occurred_after is not None:
            filters.append(FieldFilter(OCCURRED_AT, ">=", to_stored_time(where.occurred_after)))
        if where.occurred_before is not None:
            filters.append(FieldFilter(OCCURRED_AT, "<", to_stored_time(where.occurred_before)))
    return filters


def filtered(collection: CollectionReference, filters: list[FieldFilter]) -> Query:
    """``collection`` with ``filters`` (never empty: ``branch_state`` is always one)."""
    query: Query = collection.where(filter=filters[0])
    for item in filters[1:]:
        query = query.where(filter=item)
    return query


def needs_post_filter(
    where: MemoryFilter, *, created_range: bool, occurred_range: bool = False
) -> bool:
    """Whether some of ``where`` is left for ``MemoryFilter.matches`` after the query."""
    if where.valid_at is not None:
        return True
    if not occurred_range and (
        where.occurred_after is not None or where.occurred_before is not None
    ):
        return True
    return not created_range and (
        where.created_after is not None or where.created_before is not None
    )


# ------------------------------------------------------------- index specs
@dataclass(frozen=True, slots=True)
class QueryShape:
    """One composite index: equality prefilters, then an array or order field, or the vector."""

    purpose: str
    equalities: tuple[str, ...]
    array_contains: str | None = None
    order: tuple[str, Direction] | None = None
    vector: bool = False


def query_shapes() -> list[QueryShape]:
    """Every composite index shape the store's queries can need.

    ``branch_state`` is always present; ``module_name`` and ``origin`` each may be.
    """
    combos = [
        (
            "branch_state",
            *(field for field, on in zip(_OPTIONAL_EQUALITIES, mask, strict=True) if on),
        )
        for mask in product((False, True), repeat=len(_OPTIONAL_EQUALITIES))
    ]
    shapes: list[QueryShape] = []
    for equalities in combos:
        shapes.append(QueryShape("vector_search", equalities, vector=True))
        for direction in ("DESCENDING", "ASCENDING"):
            shapes.append(QueryShape("list_page", equalities, order=("created_at", direction)))
        sides: tuple[Direction, ...] = ("DESCENDING", "ASCENDING")
        for side in sides:
            shapes.append(
                QueryShape("list_page_by_occurrence", equalities, order=(OCCURRED_AT, side))
            )
        shapes.append(
            QueryShape(
                "lexical_candidates",
                equalities,
                array_contains=TERMS,
                order=("created_at", "DESCENDING"),
            )
        )
        shapes.append(
            QueryShape(
                "lexical_common_terms",
                equalities,
                array_contains=TERMS,
                order=(TERM_COUNT, "ASCENDING"),
            )
        )
    return shapes


def document_index_specs(collection: str) -> list[dict[str, Any]]:
    """The composite indexes of the document queries (``firestore_documents``):

    - ``passage_order``: a document's passages in the states a caller reads, in the
      document's order both ways (``fetch_context``'s neighbours);
    - ``current_documents``: a space's ready, current versions, newest first
      (``list_documents``).
    """
    passage_order = [
        {
            "collectionGroup": collection,
            "queryScope": "COLLECTION",
            "fields": [
                {"fieldPath": "branch_state", "order": "ASCENDING"},
                {"fieldPath": "document_id", "order": "ASCENDING"},
                {"fieldPath": "document_start", "order": direction},
            ],
        }
        for direction in ("ASCENDING", "DESCENDING")
    ]
    current_documents = {
        "collectionGroup": collection + "_documents",
        "queryScope": "COLLECTION",
        "fields": [
            {"fieldPath": "state", "order": "ASCENDING"},
            {"fieldPath": "superseded_by", "order": "ASCENDING"},
            {"fieldPath": "created_at", "order": "DESCENDING"},
        ],
    }
    return [*passage_order, current_documents]


_TTL_COLLECTIONS_SUFFIX: Final = "_write_fingerprints"
EVENT_COLLECTIONS: Final = ("memory_events", "retrieval_query_events")


def firestore_index_specs(dimension: int, collection: str = "memory_vectors") -> dict[str, Any]:
    """The ``firestore.indexes.json`` document these queries need in production.

    - one composite index per ``query_shapes()`` entry (vector indexes use a
      flat index of ``dimension``);
    - single-field index exemptions for large texts and the ``term_freqs`` map,
      which nobody filters on (a long record would otherwise add thousands of
      index entries and their write cost);
    - TTL on ``expires_at`` of the fingerprint and event collections.
    """
    if not 1 <= dimension <= 2048:
        raise ValueError(f"Firestore vector indexes take 1..2048 dimensions; got {dimension}")
    indexes: list[dict[str, Any]] = []
    for shape in query_shapes():
        fields: list[dict[str, Any]] = []
        if shape.array_contains is not None:
            fields.append({"fieldPath": shape.array_contains, "arrayConfig": "CONTAINS"})
        fields.extend({"fieldPath": name, "order": "ASCENDING"} for name in shape.equalities)
        if shape.order is not None:
            fields.append({"fieldPath": shape.order[0], "order": shape.order[1]})
        if shape.vector:
            fields.append(
                {"fieldPath": EMBEDDING, "vectorConfig": {"dimension": dimension, "flat": {}}}
            )
        indexes.append(
            {"collectionGroup": collection, "queryScope": "COLLECTION", "fields": fields}
        )

    indexes += document_index_specs(collection)

    # ``embedding`` keeps its default: the vector index is what serves find_nearest,
    # and exempting a vector field is not something we could verify offline. A passage's
    # ``document`` map (title, section, pages) is only read, never queried.
    unindexed = ("content", "retrieval_text", "term_freqs", "document")
    overrides: list[dict[str, Any]] = [
        {"collectionGroup": collection, "fieldPath": name, "indexes": []} for name in unindexed
    ]
    # An erase asks whether any space still holds a topic: one collection-group query
    # over every space's collection (``FirestoreStore._holds_topic``). Firestore's
    # automatic single-field indexes serve collection scope only, so the topic field
    # keeps them and adds its collection-group one.
    overrides.append(
        {
            "collectionGroup": collection,
            "fieldPath": "module_name",
            "indexes": [
                {"order": "ASCENDING", "queryScope": "COLLECTION"},
                {"order": "DESCENDING", "queryScope": "COLLECTION"},
                {"arrayConfig": "CONTAINS", "queryScope": "COLLECTION"},
                {"order": "ASCENDING", "queryScope": "COLLECTION_GROUP"},
            ],
        }
    )
    # A document's text and bytes parts and its page offsets are read by id, never
    # queried: without indexes a 900 KB part or 1,000 page offsets cost no index writes.
    overrides += [
        {"collectionGroup": group, "fieldPath": name, "indexes": []}
        for group, names in (
            (collection + "_documents", ("page_starts", "pages_without_text", "text_parts")),
            (collection + "_document_parts", ("text", "data", "records")),
        )
        for name in names
    ]
    for ttl_collection in (
        collection + _TTL_COLLECTIONS_SUFFIX,
        collection + "_auth_state",
        *EVENT_COLLECTIONS,
    ):
        overrides.append(
            {
                "collectionGroup": ttl_collection,
                "fieldPath": "expires_at",
                "ttl": True,
                "indexes": [],
            }
        )
    return {"indexes": indexes, "fieldOverrides": overrides}
