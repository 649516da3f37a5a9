"""The HTTP guard's refusals (``request_guard.py``), each with its status, JSON error,
event reason and the message a client shows.

Every refusal is a small JSON body ``{"error": {"code", "message"}}``; those of the
JSON-RPC message itself (a batch, an unknown protocol version, the rate limit) are a
JSON-RPC error an MCP client reads.
"""

from __future__ import annotations

from typing import Final

from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, MODERN_PROTOCOL_VERSIONS

from metacortex.kernel.rejections import Rejection
from metacortex.kernel.runtime import UNAVAILABLE_MESSAGE

UNAVAILABLE: Final = Rejection(
    503, "unavailable", "unavailable", UNAVAILABLE_MESSAGE, headers={"retry-after": "30"}
)


def not_found() -> Rejection:
    return Rejection(
        404,
        "not_found",
        "unknown_route",
        "no such endpoint; MCP is served at POST /mcp and POST /clients/<id>/mcp",
    )


def method_not_allowed(allowed: str) -> Rejection:
    return Rejection(
        405,
        "method_not_allowed",
        "method_not_allowed",
        f"this endpoint accepts {allowed} only (stateless MCP: no SSE stream, no session to delete)"
        if "POST" in allowed
        else f"this endpoint accepts {allowed} only",
        {"allow": allowed},
    )


# JSON-RPC code of the rate-limit refusal. MCP 2026-07-28 reserves -32020..-32099 for
# the specification's own codes and asks for new ones outside -32768..-32000; 429 is
# HTTP's Too Many Requests, as other MCP servers chose. What a client shows is the
# message: the official SDKs raise it as the tool call's error.
RATE_LIMITED_JSONRPC_CODE: Final = 429


def rate_limited(seconds: int, per_minute: int) -> Rejection:
    """A JSON-RPC error (not the plain form): the MCP SDK client reads a non-2xx body
    only when it is one, else it raises a bare "Server returned an error response"
    and the caller never learns it was a rate limit (Retry-After stays in the HTTP
    headers, which the SDK does not pass on)."""
    return Rejection(
        429,
        "rate_limited",
        "rate_limited",
        f"rate limited: this endpoint takes {per_minute} requests a minute; "
        f"retry after {seconds} s",
        {"retry-after": str(seconds)},
        jsonrpc_code=RATE_LIMITED_JSONRPC_CODE,
        jsonrpc_data={"code": "rate_limited", "retry_after_seconds": seconds},
    )


def too_large(max_body: int) -> Rejection:
    return Rejection(
        413,
        "payload_too_large",
        "payload_too_large",
        f"request body is larger than {max_body} bytes; send less content "
        "(split long text into several memories, or reference large files through "
        "artifact_refs)",
    )


def too_slow(deadline: float) -> Rejection:
    return Rejection(
        408,
        "request_timeout",
        "body_timeout",
        f"the request body did not arrive within {deadline:g} s; send it "
        "at once (the operator sets METACORTEX_BODY_DEADLINE_SECONDS)",
        # Whatever is still on its way is not read: the connection ends here.
        {"connection": "close"},
    )


UNAUTHORIZED: Final = Rejection(
    401,
    "unauthorized",
    "unauthorized",
    "missing or invalid credential; send Authorization: Bearer <token> (or X-Api-Key: <token>)",
    {"www-authenticate": "Bearer"},
)
CONFLICTING_CREDENTIALS: Final = Rejection(
    400,
    "invalid_request",
    "conflicting_credentials",
    "the request carries two different credentials, in Authorization: Bearer and in "
    "X-Api-Key; send one of them (or the same token in both)",
)
PAUSED: Final = Rejection(
    403,
    "forbidden",
    "client_paused",
    "this client is paused by the server's owner; it is refused until the owner resumes it",
)
PERSON_INACTIVE: Final = Rejection(
    403,
    "forbidden",
    "person_inactive",
    "the person this credential belongs to was deactivated by the server's owner; "
    "it is refused until the owner reactivates them",
)
ORIGIN_NOT_ALLOWED: Final = Rejection(
    403,
    "forbidden",
    "origin_not_allowed",
    "this Origin is not allowed for this endpoint",
)
HOST_NOT_ALLOWED: Final = Rejection(
    421,
    "host_not_allowed",
    "host_not_allowed",
    "this Host is not served here; the operator can add it to METACORTEX_ALLOWED_HOSTS",
)
UNSUPPORTED_MEDIA_TYPE: Final = Rejection(
    415,
    "unsupported_media_type",
    "unsupported_media_type",
    "send the JSON-RPC message with Content-Type: application/json",
)
NOT_ACCEPTABLE: Final = Rejection(
    406,
    "not_acceptable",
    "not_acceptable",
    "this server answers with JSON: send Accept: application/json, text/event-stream",
)
BATCH_NOT_SUPPORTED: Final = Rejection(
    400,
    "invalid_request",
    "batch_not_supported",
    "JSON-RPC batches are not supported: send one message per request",
    jsonrpc_code=-32600,
)

PROTOCOL_VERSIONS: Final = (*HANDSHAKE_PROTOCOL_VERSIONS, *MODERN_PROTOCOL_VERSIONS)


def unsupported_version(version: str) -> Rejection:
    return Rejection(
        400,
        "invalid_request",
        "unsupported_protocol_version",
        f"unsupported MCP-Protocol-Version header {version[:40]!r}; "
        f"this server speaks {', '.join(PROTOCOL_VERSIONS)}",
        jsonrpc_code=-32600,
    )
