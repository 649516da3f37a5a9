"""The names of erased topics leave ``memory_events`` on Firestore (``event_topics``).

An event's fields are a map (``firestore_codec.encode_event``), so the events
naming a topic are found with one ``in`` query per place a topic sits
(``event_topics.TOPIC_PATHS``, served by Firestore's automatic single-field
indexes), all at once, and rewritten in batches. The rare event stored as ``fields_json``
(fields holding an array inside an array) cannot be queried this way; none of
the events that name a topic has that shape.
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import Executor
from typing import Any, Final

from google.cloud import firestore
from google.cloud.firestore_v1.base_query import FieldFilter

from metacortex.storage.event_topics import MEMORY_EVENTS, TOPIC_PATHS, scrubbed
from metacortex.storage.firestore_queries import MAX_DISJUNCTIONS

_BATCH_WRITES: Final = 500


def scrub_event_topics(client: firestore.Client, topics: Sequence[str], executor: Executor) -> int:
    """Replace ``topics`` wherever a ``memory_events`` record names them; how many
    records changed. One ``in`` query per place a topic sits, all at once."""
    if not topics:
        return 0
    events = client.collection(MEMORY_EVENTS)
    queries = [
        events.where(filter=FieldFilter(f"fields.{path}", "in", list(chunk)))
        for path in TOPIC_PATHS
        for chunk in _chunks(topics, MAX_DISJUNCTIONS)
    ]
    found: dict[str, tuple[Any, dict[str, Any]]] = {}
    for snapshots in executor.map(lambda query: list(query.stream()), queries):
        for snapshot in snapshots:
            fields = (snapshot.to_dict() or {}).get("fields")
            if isinstance(fields, dict):
                found.setdefault(snapshot.id, (snapshot.reference, fields))
    changes = [
        (reference, clean)
        for reference, fields in found.values()
        if (clean := scrubbed(fields, topics)) is not fields
    ]
    for start in range(0, len(changes), _BATCH_WRITES):
        batch = client.batch()
        for reference, clean in changes[start : start + _BATCH_WRITES]:
            batch.update(reference, {"fields": clean})
        batch.commit()
    return len(changes)


def _chunks(values: Sequence[str], size: int) -> list[Sequence[str]]:
    return [values[start : start + size] for start in range(0, len(values), size)]
