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
from pathlib import Path
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


# After the wall-clock hold, an answer waits until this process has had no runnable thread
# outside ``hold`` for QUIET_CHECKS looks QUIET_CHECK_S apart, and at most
# STARVED_HOLD_CAP_S.
QUIET_CHECKS = 3
QUIET_CHECK_S = 0.01
STARVED_HOLD_CAP_S = 30.0
_TASKS = Path("/proc/self/task")


def _busy_threads(besides: set[int]) -> bool:
    """Whether a thread of this process not in ``besides`` is runnable (Linux: state R
    in ``/proc/self/task/*/stat``): one waiting for a core, or running. A thread blocked
    on a held answer, a lock, the GIL or a sleep is S. Elsewhere: never busy, and the
    wall-clock hold alone applies."""
    try:
        tasks = list(_TASKS.iterdir())
    except OSError:
        return False
    for task in tasks:
        if int(task.name) in besides:
            continue
        try:
            stat = (task / "stat").read_text()
        except OSError:
            continue  # the thread ended
        # The state follows the command name, which is in parentheses and may hold spaces.
        if stat[stat.rindex(")") + 2 :].startswith("R"):
            return True
    return False


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
        # Threads inside ``hold`` (they issue nothing), whether one of them is looking,
        # and the latest RPC start after which the process was seen quiet.
        self._quiet = threading.Condition(self._lock)
        self._holding: set[int] = set()
        self._looking = False
        self._quiet_after = -1.0

    def hold(self) -> None:
        """The simulated round trip (see the module docstring): until ``hold_s`` after
        the latest start of any RPC, and then until no thread of this process outside
        ``hold`` is runnable (``_busy_threads``): on a machine at load 30 a thread of a
        fan-out can wait longer than ``hold_s`` for a core before it issues its RPC,
        and releasing the answers then would count the fan-out as a chain. One waiting
        thread looks (the others sleep on ``_quiet``), so the looking costs no core."""
        if self.hold_s <= 0:
            return
        me = threading.get_native_id()
        with self._quiet:
            self._holding.add(me)
        try:
            self._hold_until_quiet(me)
        finally:
            with self._quiet:
                self._holding.discard(me)

    def _hold_until_quiet(self, me: int) -> None:
        deadline = time.monotonic() + STARVED_HOLD_CAP_S
        while True:
            with self._quiet:
                started = self._last_start
                wait = started + self.hold_s - time.monotonic()
                if wait <= 0 and self._quiet_after >= started:
                    return
                looking = wait <= 0 and not self._looking and time.monotonic() < deadline
                if wait <= 0 and not looking:
                    if time.monotonic() >= deadline:
                        return
                    self._quiet.wait(QUIET_CHECK_S * QUIET_CHECKS)
                    continue
                if looking:
                    self._looking = True
            if not looking:
                time.sleep(wait)
                continue
            try:
                quiet = self._looks_quiet(me)
            finally:
                with self._quiet:
                    self._looking = False
                    if quiet and self._last_start == started:
                        self._quiet_after = started
                    self._quiet.notify_all()

    def _looks_quiet(self, me: int) -> bool:
        """No thread outside ``hold`` runnable for ``QUIET_CHECKS`` looks in a row."""
        for _ in range(QUIET_CHECKS):
            with self._quiet:
                holding = set(self._holding)
            if _busy_threads(holding | {me}):
                return False
            time.sleep(QUIET_CHECK_S)
        return True

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
