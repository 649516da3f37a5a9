"""Count every Firestore RPC a store issues: a gRPC client interceptor on the client's channel.

``CountingClient`` is a ``firestore.Client`` whose emulator channel is wrapped in
``RpcRecorder`` (a unary-unary and unary-stream interceptor). Each RPC is
recorded with its kind (``RunQuery``, ``RunQuery(find_nearest)``,
``RunAggregationQuery``, ``BatchGetDocuments``, ``BeginTransaction``,
``Commit``, ...), start and end (monotonic), the documents it returned and the
serialized bytes of its responses.

Sequential depth is the longest chain of RPCs in which each starts after the
previous one ended: RPCs that overlap in time count as one level. To make
overlap independent of how fast the emulator answers and how fast a busy
machine issues a fan-out, the recorder can hold every response (a simulated
network round trip, like a delay proxy) until ``hold_s`` seconds have passed
since the latest RPC started, whichever it was: RPCs issued together (each
within ``hold_s`` of the previous) then always overlap, and an RPC issued after
another's answer still starts after it ended, so holding never hides a chain.
Tests assert counts and depths only, never durations.
"""

from __future__ import annotations

import math
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import grpc  # type: ignore[import-untyped]
from google.cloud import firestore


@dataclass(frozen=True, slots=True)
class Rpc:
    kind: str
    start: float
    end: float
    documents: int
    bytes: int
    aggregated: int = 0  # index entries an aggregation counted (billable per 1,000)
    writes: int = 0  # documents a Commit wrote (its write results)


@dataclass(frozen=True, slots=True)
class Tally:
    """What one operation cost."""

    rpcs: int
    depth: int
    documents: int
    bytes: int
    billable_reads: int
    kinds: dict[str, int] = field(default_factory=dict)
    writes: int = 0

    def row(self) -> dict[str, Any]:
        return {
            "rpcs": self.rpcs,
            "depth": self.depth,
            "documents": self.documents,
            "billable_reads": self.billable_reads,
            "bytes": self.bytes,
            "writes": self.writes,
            "kinds": dict(sorted(self.kinds.items())),
        }


def sequential_depth(rpcs: list[Rpc]) -> int:
    """Longest chain of RPCs where each starts after the previous one ended."""
    ordered = sorted(rpcs, key=lambda rpc: rpc.end)
    depth: list[int] = []
    for index, rpc in enumerate(ordered):
        before = [depth[j] for j in range(index) if ordered[j].end <= rpc.start]
        depth.append(1 + max(before, default=0))
    return max(depth, default=0)


def _kind(method: str, request: Any) -> str:
    name = method.rsplit("/", 1)[-1]
    if name == "RunQuery":
        query = getattr(request, "structured_query", None)
        if query is not None and "find_nearest" in query:
            return "RunQuery(find_nearest)"
    return name


def _size(message: Any) -> int:
    try:
        return int(type(message).pb(message).ByteSize())
    except (AttributeError, TypeError):
        serialize = getattr(message, "SerializeToString", None)
        return len(serialize()) if serialize is not None else 0


def _documents(message: Any) -> int:
    for name in ("document", "found"):
        try:
            if name in message:
                return 1
        except (AttributeError, TypeError):
            continue
    return 0


def _aggregated(message: Any) -> int:
    try:
        if "result" not in message:
            return 0
        fields = message.result.aggregate_fields
    except (AttributeError, TypeError):
        return 0
    return sum(int(value.integer_value) for value in fields.values() if "integer_value" in value)


class _Stream:
    """A server stream, recorded message by message: a caller may stop reading early
    (``DocumentReference.get`` takes the first result), so the RPC ends at its last
    message read. The hold applies before the first message (the round trip)."""

    def __init__(self, recorder: RpcRecorder, kind: str, start: float, inner: Any) -> None:
        self._recorder = recorder
        self._inner = inner
        self._live = recorder.open(kind, start)
        self._first = True

    def __iter__(self) -> Iterator[Any]:
        return self

    def __next__(self) -> Any:
        if self._first:
            self._first = False
            self._recorder.hold()
        try:
            message = next(self._inner)
        except (StopIteration, grpc.RpcError):
            self._live.end = time.monotonic()
            raise
        self._live.end = time.monotonic()
        self._live.documents += _documents(message)
        self._live.bytes += _size(message)
        self._live.aggregated += _aggregated(message)
        return message

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


@dataclass(slots=True)
class _LiveRpc:
    kind: str
    start: float
    end: float
    documents: int = 0
    bytes: int = 0
    aggregated: int = 0
    writes: int = 0


class RpcRecorder(
    grpc.UnaryUnaryClientInterceptor,  # type: ignore[misc]
    grpc.UnaryStreamClientInterceptor,  # type: ignore[misc]
):
    """Records every RPC through the channel it intercepts (thread-safe)."""

    def __init__(self, hold_s: float = 0.0) -> None:
        self.hold_s = hold_s
        self._lock = threading.Lock()
        self._rpcs: list[_LiveRpc] = []
        self._last_start = 0.0

    def hold(self) -> None:
        """The simulated round trip (see the module docstring): until ``hold_s`` after
        the latest start of any RPC."""
        while self.hold_s > 0:
            with self._lock:
                due = self._last_start + self.hold_s
            wait = due - time.monotonic()
            if wait <= 0:
                return
            time.sleep(wait)

    def open(
        self, kind: str, start: float, end: float | None = None, documents: int = 0, size: int = 0
    ) -> _LiveRpc:
        live = _LiveRpc(kind, start, start if end is None else end, documents, size)
        with self._lock:
            self._rpcs.append(live)
            self._last_start = max(self._last_start, start)
        return live

    def reset(self) -> None:
        with self._lock:
            self._rpcs.clear()

    def rpcs(self) -> list[Rpc]:
        with self._lock:
            return [
                Rpc(r.kind, r.start, r.end, r.documents, r.bytes, r.aggregated, r.writes)
                for r in self._rpcs
            ]

    def tally(self) -> Tally:
        rpcs = self.rpcs()
        reads = 0
        for rpc in rpcs:
            if rpc.kind == "RunAggregationQuery":
                reads += max(1, math.ceil(rpc.aggregated / 1000))
            elif rpc.kind.startswith("RunQuery"):
                reads += max(1, rpc.documents)  # a query returning nothing bills one read
            else:
                reads += rpc.documents
        return Tally(
            rpcs=len(rpcs),
            depth=sequential_depth(rpcs),
            documents=sum(rpc.documents for rpc in rpcs),
            bytes=sum(rpc.bytes for rpc in rpcs),
            billable_reads=reads,
            kinds=dict(Counter(rpc.kind for rpc in rpcs)),
            writes=sum(rpc.writes for rpc in rpcs),
        )

    def measure(self, operation: Callable[[], Any]) -> tuple[Any, Tally]:
        self.reset()
        result = operation()
        return result, self.tally()

    def intercept_unary_unary(
        self, continuation: Callable[..., Any], details: Any, request: Any
    ) -> Any:
        live = self.open(_kind(details.method, request), time.monotonic())
        outcome = continuation(details, request)
        response: Any = None
        try:
            response = outcome.result()
        except grpc.RpcError:
            response = None
        self.hold()
        live.end = time.monotonic()
        if response is not None:
            live.documents = len(getattr(response, "documents", []) or [])
            live.writes = len(getattr(response, "write_results", []) or [])
            live.bytes = _size(response)
        return outcome

    def intercept_unary_stream(
        self, continuation: Callable[..., Any], details: Any, request: Any
    ) -> Any:
        start = time.monotonic()
        inner = continuation(details, request)
        return _Stream(self, _kind(details.method, request), start, inner)


class CountingClient(firestore.Client):
    """A Firestore client (emulator only) whose every RPC goes through ``recorder``."""

    def __init__(self, recorder: RpcRecorder, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.recorder = recorder

    def _emulator_channel(self, transport: Any) -> Any:
        channel = super()._emulator_channel(transport)  # type: ignore[no-untyped-call]
        return grpc.intercept_channel(channel, self.recorder)
