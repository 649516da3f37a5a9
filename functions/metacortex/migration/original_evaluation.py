"""The original's evaluation data: its usage events as evidence, its saved cases as cases.

Its events are flat documents with a numeric ``timestamp`` (epoch ms) and no
``fields`` map (observability.ts), so this server's ``read_events`` sees nothing in
them. They are read here and put into the vocabulary ``cases_from_events`` speaks
(``event_type`` search with ``query``, ``filters``, ``result_ids``; fetch with
``fetched_ids``; ``client_id``; ``timestamp`` as ISO text):

* ``retrieval_query_events`` (RETRIEVAL_EVENT_LOGGING_ENABLED): a search carries the
  full ``query``, ``filter_topic``, ``filter_state`` and ranked ``results``; a fetch
  ``memory_id`` and ``found``;
* ``memory_events`` (always on): a ``search_context`` tool call carries
  ``request.query_preview`` (the query cut at 160 characters) and
  ``response.result_ids``; a ``fetch_context`` call ``response.id``. A preview shorter
  than ``request.query_length`` is not the query, so that search is not used; a call
  also logged in ``retrieval_query_events`` (its ``tool_event_id``) is used once.

Its ``retrieval_eval_cases`` (retrievalEvaluation.ts) have ``positive_ids``,
``filters.filter_topic``/``filter_state``, ``source``, numeric ``created_at`` and no
``saved_at``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, Final

from metacortex.domain.records import BranchState, to_wire_time
from metacortex.domain.stored_values import Refused, instant
from metacortex.operations.evaluation import Case

if TYPE_CHECKING:  # the Google library is the cloud extra
    from google.cloud import firestore

MEMORY_EVENTS: Final = "memory_events"
RETRIEVAL_QUERY_EVENTS: Final = "retrieval_query_events"
_DEFAULT_STATE: Final = BranchState.ACTIVE.value


@dataclass(slots=True)
class OriginalEvidence:
    events: list[dict[str, Any]] = field(default_factory=list)
    read: int = 0
    truncated_queries: int = 0


def read_original_events(
    client: firestore.Client, *, since: datetime | None, limit: int
) -> OriginalEvidence:
    """The original's search and fetch events, oldest first, in ``cases_from_events``' terms.

    A range on a number matches only numbers, so this server's own events (whose
    ``timestamp`` is a Timestamp) are never read here.
    """
    from google.cloud.firestore_v1.base_query import FieldFilter

    floor = 0 if since is None else int(since.timestamp() * 1000)
    found: dict[str, list[dict[str, Any]]] = {}
    for collection in (RETRIEVAL_QUERY_EVENTS, MEMORY_EVENTS):
        query = (
            client.collection(collection)
            .where(filter=FieldFilter("timestamp", ">=", floor))
            .order_by("timestamp")
            .limit(limit)
        )
        found[collection] = [snapshot.to_dict() or {} for snapshot in query.stream()]
    return evidence(found[RETRIEVAL_QUERY_EVENTS], found[MEMORY_EVENTS])


def evidence(
    retrieval_events: Iterable[Mapping[str, Any]], tool_events: Iterable[Mapping[str, Any]]
) -> OriginalEvidence:
    result = OriginalEvidence()
    logged_twice: set[str] = set()
    for event in retrieval_events:
        result.read += 1
        translated = _from_retrieval_event(event)
        if translated is not None:
            result.events.append(translated)
            logged_twice.add(str(event.get("tool_event_id")))
    for event in tool_events:
        result.read += 1
        if event.get("event_type") != "tool_call" or event.get("event_id") in logged_twice:
            continue
        translated = _from_tool_call(event, result)
        if translated is not None:
            result.events.append(translated)
    result.events.sort(key=lambda item: item["timestamp"])
    return result


def _when(event: Mapping[str, Any]) -> str | None:
    try:
        at = instant(event.get("timestamp"), "timestamp")
    except Refused:
        return None
    return None if at is None else to_wire_time(at)


def _filters(topic: Any, state: Any) -> dict[str, Any]:
    return {
        "topic": topic if isinstance(topic, str) else None,
        "state": state if isinstance(state, str) and state != _DEFAULT_STATE else None,
    }


def _from_retrieval_event(event: Mapping[str, Any]) -> dict[str, Any] | None:
    at = _when(event)
    if at is None or event.get("status") != "success":
        return None
    common = {"client_id": str(event.get("client_id", "")), "timestamp": at}
    if event.get("event_type") == "search" and isinstance(event.get("query"), str):
        ranked = [r for r in event.get("results") or [] if isinstance(r, Mapping)]
        ranked.sort(key=_rank)
        return common | {
            "event_type": "search",
            "query": event["query"],
            "filters": _filters(event.get("filter_topic"), event.get("filter_state")),
            "result_ids": [str(r["id"]) for r in ranked if isinstance(r.get("id"), str)],
        }
    if event.get("event_type") == "fetch" and event.get("found") is True:
        memory_id = event.get("memory_id")
        if isinstance(memory_id, str) and memory_id:
            return common | {"event_type": "fetch", "fetched_ids": [memory_id]}
    return None


def _rank(result: Mapping[str, Any]) -> int:
    rank = result.get("rank")
    return rank if isinstance(rank, int) else 0


def _from_tool_call(event: Mapping[str, Any], result: OriginalEvidence) -> dict[str, Any] | None:
    at = _when(event)
    request = event.get("request")
    response = event.get("response")
    if at is None or event.get("status") != "success":
        return None
    if not isinstance(request, Mapping) or not isinstance(response, Mapping):
        return None
    common = {"client_id": str(event.get("client_id", "")), "timestamp": at}
    if event.get("tool_name") == "search_context":
        preview = request.get("query_preview")
        if not isinstance(preview, str) or request.get("query_length") != len(preview):
            result.truncated_queries += 1
            return None
        ids = response.get("result_ids")
        return common | {
            "event_type": "search",
            "query": preview,
            "filters": _filters(request.get("filter_topic"), request.get("filter_state")),
            "result_ids": [i for i in ids if isinstance(i, str)] if isinstance(ids, list) else [],
        }
    if event.get("tool_name") == "fetch_context" and isinstance(response.get("id"), str):
        return common | {"event_type": "fetch", "fetched_ids": [response["id"]]}
    return None


def original_case(document_id: str, data: Mapping[str, Any]) -> Case | None:
    """A ``retrieval_eval_cases`` document of the original's, or None if it is not one."""
    positive = data.get("positive_ids")
    query = data.get("query")
    if data.get("schema_version") != 1 or not isinstance(query, str) or not query.strip():
        return None
    if not isinstance(positive, list) or not positive:
        return None
    filters = data.get("filters") if isinstance(data.get("filters"), Mapping) else {}
    assert isinstance(filters, Mapping)
    picked = _filters(filters.get("filter_topic"), filters.get("filter_state"))
    return Case(
        query=query,
        expected_ids=tuple(str(i) for i in positive),
        topic=picked["topic"],
        label=f"original {data.get('source', 'case')} {data.get('case_id', document_id)}",
        state=picked["state"],
    )
