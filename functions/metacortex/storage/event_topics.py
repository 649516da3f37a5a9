"""Erased topics in ``memory_events``: the one name an event keeps verbatim.

Events never hold a memory's content (``server/summaries.py``), but they keep a
topic as given: ``save_context`` (its argument and its result), ``search_context``
and ``list_context`` (``filter_topic``), ``consolidate_context``, the ``context``
prompt, the console's consolidation. A topic can itself be private ("alice-divorce").
When an erase leaves a topic with no memory, both stores replace its name in
every ``memory_events`` record with ``ERASED_TOPIC`` (in the erase's own
transaction on SQLite, right after it on Firestore). A topic that still holds
memories keeps its name: the store shows it anyway.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any, Final

MEMORY_EVENTS: Final = "memory_events"
# Not a topic (topics never hold brackets), so never confused with one.
ERASED_TOPIC: Final = "[erased]"
# The keys whose value is a topic, at any depth of an event's fields.
TOPIC_KEYS: Final = frozenset({"topic", "filter_topic"})
# The places those keys sit in the events the server writes (Firestore queries each).
TOPIC_PATHS: Final = ("request.topic", "request.filter_topic", "response.topic")


def scrubbed(fields: Any, topics: Collection[str]) -> Any:
    """``fields`` with every topic value among ``topics`` replaced by ``ERASED_TOPIC``
    (the same object when nothing was)."""
    if isinstance(fields, dict):
        changed = {
            key: ERASED_TOPIC
            if key in TOPIC_KEYS and isinstance(value, str) and value in topics
            else scrubbed(value, topics)
            for key, value in fields.items()
        }
        same = all(changed[key] is value for key, value in fields.items())
        return fields if same else changed
    if isinstance(fields, list):
        items = [scrubbed(item, topics) for item in fields]
        return fields if all(a is b for a, b in zip(items, fields, strict=True)) else items
    return fields
