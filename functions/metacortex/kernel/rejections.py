"""What a refused request may cost: bounded fields and a per-minute event budget.

Refusals happen before authentication, so anyone can cause them. Each one used to
be recorded in full (a 14 KB query string kept for 90 days, a billed write on
Firestore). Now a refusal's event holds a truncated path and only the length and
a short digest of its query string, and past ``per_minute`` events in a minute
the rest are counted and written as one ``requests_rejected_aggregate`` event
when the next minute starts (or at shutdown).
"""

from __future__ import annotations

import hashlib
import re
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

MAX_RECORDED_PATH: Final = 200
# A path segment that is a secret: an invitation link's token (owner/invitations.py).
_SECRET_SEGMENT: Final = re.compile(r"(/owner/invite/)[^/?#]+")
WINDOW_SECONDS: Final = 60.0


@dataclass(frozen=True, slots=True)
class Rejection:
    """A refused request: its status, JSON error body and the event's reason."""

    status: int
    code: str  # error.code of the JSON body
    reason: str  # the memory_events reason
    message: str
    headers: Mapping[str, str] = field(default_factory=dict)
    # Set for refusals of the JSON-RPC message itself: the body is then a JSON-RPC
    # error (id null) that an MCP client reads, not the plain {"error": ...} form.
    jsonrpc_code: int | None = None
    jsonrpc_data: Mapping[str, Any] | None = None


def loggable_path(path: str) -> str:
    """``path`` with any secret segment (an invitation's token) replaced by ``REDACTED``."""
    return _SECRET_SEGMENT.sub(r"\1REDACTED", path)


def bounded_request(method: str, path: str, query: str) -> dict[str, Any]:
    """The request fields a refusal event (and a request's log line) keeps: never more
    than a few hundred bytes, and never the secret of an invitation link."""
    path = loggable_path(path)
    request: dict[str, Any] = {"method": method[:16], "path": path[:MAX_RECORDED_PATH]}
    if len(path) > MAX_RECORDED_PATH:
        request["path_chars"] = len(path)
    if query:
        digest = hashlib.sha256(query.encode("utf-8", "surrogatepass")).hexdigest()
        request["query"] = {"chars": len(query), "sha256_prefix": digest[:16]}
    return request


class RejectionBudget:
    """At most ``per_minute`` individual refusal events per window; the rest counted."""

    def __init__(self, per_minute: int, clock: Callable[[], float] = time.monotonic) -> None:
        self._per_minute = per_minute
        self._clock = clock
        self._lock = threading.Lock()
        self._window_start = clock()
        self._admitted = 0
        self._suppressed = 0

    def admit(self) -> tuple[bool, int]:
        """(record this refusal individually?, refusals suppressed in a finished window)."""
        with self._lock:
            now = self._clock()
            finished = 0
            if now - self._window_start >= WINDOW_SECONDS:
                finished, self._suppressed = self._suppressed, 0
                self._window_start, self._admitted = now, 0
            if self._admitted < self._per_minute:
                self._admitted += 1
                return True, finished
            self._suppressed += 1
            return False, finished

    def drain(self) -> int:
        """Refusals suppressed and not yet reported (for shutdown)."""
        with self._lock:
            suppressed, self._suppressed = self._suppressed, 0
            return suppressed
