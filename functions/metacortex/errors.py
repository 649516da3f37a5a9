"""Domain errors. Each carries its error code (``docs/SERVER.md``, "Tools and results");
the MCP/HTTP edge translates them.

Transient errors (worth a retry by the caller) are marked with ``retryable``.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

ErrorCode = Literal[
    "invalid_argument",
    "not_found",
    "forbidden",
    "conflict",
    "failed_precondition",
    "unavailable",
    "rate_limited",
    "resource_exhausted",
]


class MetaCortexError(Exception):
    """Base of every error a client may see; ``str(err)`` is safe to show."""

    code: ClassVar[ErrorCode]
    retryable: ClassVar[bool] = False

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def to_payload(self) -> dict[str, dict[str, Any]]:
        return {"error": {"code": self.code, "message": self.message}}


class InvalidArgument(MetaCortexError):
    code = "invalid_argument"


class NotFound(MetaCortexError):
    code = "not_found"


class Forbidden(MetaCortexError):
    code = "forbidden"


class Conflict(MetaCortexError):
    code = "conflict"


class FailedPrecondition(MetaCortexError):
    code = "failed_precondition"


class Unavailable(MetaCortexError):
    code = "unavailable"
    retryable = True


class StoreBusy(Unavailable):
    """Another connection held the store's write lock longer than the store waits for it
    (SQLite's busy timeout): an expected condition under contention, worth a retry."""


class Busy(Unavailable):
    """The server is doing as much of this work at once as it is allowed to (documents
    read and embedded at a time): retry after ``retry_after_seconds``. HTTP 503 with
    ``Retry-After``; a tool error carrying ``retry_after_seconds`` beside the message."""

    def __init__(self, message: str, retry_after_seconds: int) -> None:
        super().__init__(message)
        self.retry_after_seconds = retry_after_seconds

    def to_payload(self) -> dict[str, dict[str, Any]]:
        payload = super().to_payload()
        payload["error"]["retry_after_seconds"] = self.retry_after_seconds
        return payload


class CallerGone(Unavailable):
    """The caller disconnected or cancelled the request: the work stopped where it was
    and nothing was kept. Nobody reads the answer; the server's log and events do."""


class RateLimited(MetaCortexError):
    code = "rate_limited"
    retryable = True

    def __init__(self, message: str, retry_after_seconds: int = 1) -> None:
        super().__init__(message)
        self.retry_after_seconds = retry_after_seconds


class StorageFull(MetaCortexError):
    """The store has no room left (a full disk): not worth a retry until an operator acts."""

    code = "resource_exhausted"


class ConfigurationError(Exception):
    """Bad operator configuration, found at start-up. Never shown to MCP clients."""


DocumentRefusal = Literal[
    "too_large",
    "too_many_pages",
    "too_much_text",
    "too_many_passages",
    "too_slow",
    "encrypted",
    "corrupt",
    "bomb",
    "unsupported_type",
    "not_text",
]


class DocumentRefused(InvalidArgument):
    """A document that will not be read (``metacortex.documents``): ``reason`` names the
    limit or fault, the message says what the person can do about it."""

    def __init__(self, reason: DocumentRefusal, message: str) -> None:
        super().__init__(message)
        self.reason: DocumentRefusal = reason
