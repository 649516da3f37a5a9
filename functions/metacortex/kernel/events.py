"""Usage events (``memory_events``, ``retrieval_query_events``), written off the request path.

Requests only put a small record on a bounded in-memory queue; one background
thread drains it and writes whatever has accumulated in one
``store.record_events`` batch. So an event write never adds its latency to a
tool call, a slow store delays only the writer, and ``close()`` (the app's
lifespan exit) writes every event queued before it, so a clean shutdown loses
nothing. If the store keeps failing and the queue fills up, new events are
dropped and counted rather than blocking or exhausting memory.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Mapping, Sequence
from datetime import timedelta
from typing import Any, Final, Protocol

from metacortex.domain.records import to_wire_time, utc_now
from metacortex.errors import MetaCortexError
from metacortex.kernel.logs import log
from metacortex.kernel.rejections import (
    MAX_RECORDED_PATH,
    WINDOW_SECONDS,
    RejectionBudget,
    bounded_request,
)
from metacortex.storage.base import Event

MEMORY_EVENTS: Final = "memory_events"
RETRIEVAL_QUERY_EVENTS: Final = "retrieval_query_events"
_STOP: Final = object()


class EventSink(Protocol):
    """The one store method the recorder needs (every MemoryStore has it)."""

    def record_events(self, events: Sequence[Event]) -> None: ...


class EventRecorder:
    """Events are queued at once and written by a thread, in batches, from ``start(store)``
    on (events recorded before that, while the service is built, wait in the queue)."""

    def __init__(
        self,
        *,
        retention: timedelta,
        retrieval_logging: bool,
        max_queue: int = 10_000,
        batch_size: int = 200,
        rejection_budget: RejectionBudget | None = None,
    ) -> None:
        self._store: EventSink | None = None
        self._rejection_budget = rejection_budget or RejectionBudget(60)
        self._retention = retention
        self.retrieval_logging = retrieval_logging
        self._queue: queue.Queue[Event | object] = queue.Queue(maxsize=max_queue)
        self._batch_size = batch_size
        self._thread: threading.Thread | None = None
        self._closed = False
        self.dropped = 0

    # ------------------------------------------------------------ lifecycle
    def start(self, store: EventSink) -> None:
        if self._thread is None:
            self._store = store
            self._thread = threading.Thread(
                target=self._drain, name="metacortex-events", daemon=True
            )
            self._thread.start()

    def flush(self) -> None:
        """Block until every event queued so far has been handed to the store."""
        self._queue.join()

    def close(self, timeout: float = 30.0) -> None:
        """Write everything queued, then stop the writer thread."""
        if self._closed:
            return
        self._aggregate_rejections(self._rejection_budget.drain())
        self._closed = True
        if self._thread is None:
            return
        self._queue.put(_STOP)
        self._thread.join(timeout)
        if self._thread.is_alive():
            log(logging.ERROR, "event writer did not finish in time; some events may be lost")

    # ------------------------------------------------------------- recording
    def tool_call(
        self,
        *,
        client_id: str,
        tool_name: str,
        status: str,
        latency_ms: float,
        request_summary: Mapping[str, Any],
        response_summary: Mapping[str, Any] | None = None,
        error: Mapping[str, str] | None = None,
        protocol_version: str | None = None,
    ) -> None:
        self.mcp_request(
            event_type="tool_call",
            client_id=client_id,
            name=tool_name,
            status=status,
            latency_ms=latency_ms,
            request_summary=request_summary,
            response_summary=response_summary,
            error=error,
            protocol_version=protocol_version,
        )

    def mcp_request(
        self,
        *,
        event_type: str,
        client_id: str,
        name: str,
        status: str,
        latency_ms: float,
        request_summary: Mapping[str, Any],
        response_summary: Mapping[str, Any] | None = None,
        error: Mapping[str, str] | None = None,
        protocol_version: str | None = None,
        space: str | None = None,
        person: str | None = None,
    ) -> None:
        """One MCP request: a tool call (``tool_call``), a resource read
        (``resource_read``) or a prompt get (``prompt_get``); ``tool_name`` holds the
        tool, resource or prompt name; ``space`` the space it named (or the credential's
        default), ``person`` whose credential it was."""
        self._memory_event(
            {
                "client_id": client_id,
                "space": space,
                "person": person,
                "event_type": event_type,
                "tool_name": name,
                "status": status,
                "latency_ms": round(latency_ms, 3),
                "request": dict(request_summary),
                "response": dict(response_summary) if response_summary is not None else None,
                "error": dict(error) if error is not None else None,
                "protocol_version": protocol_version,
            }
        )

    def owner_action(
        self,
        *,
        action: str,
        status: str,
        latency_ms: float,
        request_summary: Mapping[str, Any],
        response_summary: Mapping[str, Any] | None = None,
        error: Mapping[str, str] | None = None,
        space: str | None = None,
        person: str = "owner",
    ) -> None:
        """A change made in the console (``metacortex.console``) by the owner or, in
        their spaces, a signed-in person."""
        self._memory_event(
            {
                "client_id": "owner" if person == "owner" else "console",
                "space": space,
                "person": person,
                "initiator": "owner" if person == "owner" else "user",
                "event_type": "owner_action",
                "tool_name": action,
                "status": status,
                "latency_ms": round(latency_ms, 3),
                "request": dict(request_summary),
                "response": dict(response_summary) if response_summary is not None else None,
                "error": dict(error) if error is not None else None,
            }
        )

    def rejection(
        self,
        *,
        client_id: str | None,
        reason: str,
        http_status: int,
        method: str,
        path: str,
        query: str,
        latency_ms: float,
    ) -> None:
        admitted, suppressed = self._rejection_budget.admit()
        self._aggregate_rejections(suppressed)
        if not admitted:
            return
        self._memory_event(
            {
                "client_id": client_id[:MAX_RECORDED_PATH] if client_id else client_id,
                "event_type": "request_rejected",
                "tool_name": None,
                "status": "rejected",
                "reason": reason,
                "http_status": http_status,
                "latency_ms": round(latency_ms, 3),
                "request": bounded_request(method, path, query),
            }
        )

    def _aggregate_rejections(self, count: int) -> None:
        if count:
            self._memory_event(
                {
                    "client_id": None,
                    "event_type": "requests_rejected_aggregate",
                    "tool_name": None,
                    "status": "rejected",
                    "count": count,
                    "window_seconds": WINDOW_SECONDS,
                }
            )

    def search(
        self,
        *,
        client_id: str,
        query: str,
        filters: Mapping[str, Any],
        matches: list[Mapping[str, Any]],
    ) -> None:
        if not self.retrieval_logging:
            return
        self._put(
            RETRIEVAL_QUERY_EVENTS,
            {
                "client_id": client_id,
                "event_type": "search",
                "query": query,
                "filters": dict(filters),
                "result_ids": [str(match["id"]) for match in matches],
                "scores": [match["score"] for match in matches],
            },
        )

    def fetch(self, *, client_id: str, fetched_ids: list[str]) -> None:
        if not self.retrieval_logging:
            return
        self._put(
            RETRIEVAL_QUERY_EVENTS,
            {"client_id": client_id, "event_type": "fetch", "fetched_ids": fetched_ids},
        )

    # -------------------------------------------------------------- plumbing
    def _memory_event(self, fields: dict[str, Any]) -> None:
        self._put(MEMORY_EVENTS, fields)

    def _put(self, collection: str, fields: dict[str, Any]) -> None:
        now = utc_now()
        expires = now + self._retention
        event = Event(
            collection=collection,
            timestamp=now,
            expires_at=expires,
            fields={
                **fields,
                "timestamp": to_wire_time(now),
                "expires_at": to_wire_time(expires),
            },
        )
        if self._closed:
            self._write([event])  # late event during shutdown: write it inline
            return
        try:
            self._queue.put_nowait(event)
        except queue.Full:
            self.dropped += 1
            if self.dropped == 1 or self.dropped % 1000 == 0:
                log(
                    logging.ERROR,
                    "event queue is full; dropping events",
                    dropped=self.dropped,
                )

    def _drain(self) -> None:
        stopping = False
        while not stopping:
            first = self._queue.get()
            items: list[Event | object] = [first]
            while len(items) < self._batch_size:
                try:
                    items.append(self._queue.get_nowait())
                except queue.Empty:
                    break
            batch = [item for item in items if isinstance(item, Event)]
            stopping = any(item is _STOP for item in items)
            try:
                self._write(batch)
            finally:
                for _ in items:
                    self._queue.task_done()
        # Anything queued after the stop marker (a race with close) is written too.
        leftovers: list[Event] = []
        while True:
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                break
            if isinstance(item, Event):
                leftovers.append(item)
            self._queue.task_done()
        self._write(leftovers)

    def _write(self, batch: list[Event]) -> None:
        if not batch or self._store is None:
            return
        try:
            self._store.record_events(batch)
        except MetaCortexError as error:  # expected (a busy or full store): said, no traceback
            log(logging.WARNING, f"writing {len(batch)} events failed; they are lost: {error}")
        except Exception:  # a failing event store must never take the server down
            logging.getLogger("metacortex.server").exception(
                "writing %d events failed; they are lost", len(batch)
            )
