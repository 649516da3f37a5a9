"""An answer for every stdin line that is no JSON-RPC message, as over HTTP.

The official SDK's stdio transport hands a line it cannot validate (junk, a
batch, a lone surrogate escape, an object that is no message) to the server as
an exception on its read stream, and the SDK's server drops it with a debug log:
the client, whose request got no answer, waits until it times out. HTTP answers
such a body with a JSON-RPC error. ``AnsweringReadStream`` sits at the seam
between the two (the SDK's ``stdio_server`` streams and ``Server.run``): it
passes every message on and answers each exception on the write stream, so the
SDK still reads, validates, dispatches and writes everything.

The answers follow JSON-RPC 2.0 and the HTTP endpoint: ``-32700`` for a line that
is not JSON as the protocol reads it, ``-32600`` for a batch (MCP has none since
2025-06-18; HTTP says the same) and for JSON that is no message. The id is the
request's whenever one can be read (a lone surrogate escape is refused by the
SDK's strict parser but the rest of the line is readable JSON), so the client's
request fails at once; else null. Each refusal is logged at WARNING with what
was wrong, never with the line's content.
"""

from __future__ import annotations

import contextvars
import json
import logging
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Final

import anyio
import mcp_types as types
from mcp.shared._stream_protocols import ReadStream, WriteStream
from mcp.shared.message import SessionMessage
from pydantic import ValidationError
from pydantic_core import ErrorDetails

from metacortex.kernel.logs import bounded_text, log

_HINT: Final = "each line must be one JSON-RPC message in JSON"


@dataclass(frozen=True)
class LineRefusal:
    """What a refused line is answered with, and the reason logged."""

    code: int
    reason: str
    message: str
    request_id: types.RequestId | None

    def answer(self) -> SessionMessage:
        error = types.ErrorData(code=self.code, message=self.message, data={"code": self.reason})
        return SessionMessage(types.JSONRPCError(jsonrpc="2.0", id=self.request_id, error=error))


def refusal_for(exc: Exception) -> LineRefusal | None:
    """The refusal of the line the SDK's transport could not read as a message; None
    for a blank line (no message, nothing to answer)."""
    if not isinstance(exc, ValidationError):
        return LineRefusal(types.PARSE_ERROR, "parse_error", f"Parse error: {_HINT}", None)
    errors = exc.errors(include_url=False, include_context=False)
    invalid_json = next((e for e in errors if e["type"] == "json_invalid"), None)
    if invalid_json is not None:
        line = invalid_json["input"]
        return None if isinstance(line, str) and not line.strip() else _parse_error(invalid_json)
    root = _root_value(errors)
    if isinstance(root, list):
        return LineRefusal(
            types.INVALID_REQUEST,
            "batch_not_supported",
            "JSON-RPC batches are not supported: send one message per line",
            None,
        )
    return LineRefusal(
        types.INVALID_REQUEST,
        "invalid_request",
        f"Invalid Request: {_first_problem(errors, root)}",
        _request_id(root),
    )


def _parse_error(error: ErrorDetails) -> LineRefusal:
    detail = error["msg"].removeprefix("Invalid JSON: ")
    line = error["input"]
    # Python's parser takes what the SDK's strict one refuses (lone surrogate escapes
    # such as \ud800, NaN), so the request's id can still be read and answered.
    try:
        lenient = json.loads(line) if isinstance(line, str) else None
    except (ValueError, RecursionError):
        lenient = None
    if isinstance(lenient, dict):
        detail += " (a \\ud800-\\udfff escape must be half of a surrogate pair)"
    return LineRefusal(
        types.PARSE_ERROR, "parse_error", f"Parse error: {detail}; {_HINT}", _request_id(lenient)
    )


def _root_value(errors: list[ErrorDetails]) -> Any:
    """The line's parsed value, as the union's errors carry it: a member's own error
    (``("JSONRPCRequest",)``) or a missing field's (``("JSONRPCError", "error")``)
    has the whole value as its input."""
    for error in errors:
        if len(error["loc"]) == 1 or (len(error["loc"]) == 2 and error["type"] == "missing"):
            return error["input"]
    return None


def _first_problem(errors: list[ErrorDetails], root: Any) -> str:
    """What is wrong, read as the kind of message the object looks like (a request
    when it has a method, a response otherwise)."""
    member = "JSONRPCRequest" if isinstance(root, dict) and "method" in root else "JSONRPCResponse"
    error = next((e for e in errors if e["loc"][:1] == (member,)), errors[0])
    field = ".".join(str(part) for part in error["loc"][1:]) or "the line"
    return f"{field}: {error['msg']}; expected a JSON-RPC 2.0 request, notification or response"


def _request_id(value: Any) -> types.RequestId | None:
    """The id of a request-shaped object, when it is a valid one."""
    if not isinstance(value, dict) or "method" not in value:
        return None
    request_id = value.get("id")
    if isinstance(request_id, str) or (
        isinstance(request_id, int) and not isinstance(request_id, bool)
    ):
        return request_id
    return None


class AnsweringReadStream:
    """The SDK's read stream with its exceptions answered instead of passed on."""

    def __init__(
        self,
        inner: ReadStream[SessionMessage | Exception],
        answers: WriteStream[SessionMessage],
    ) -> None:
        self._inner = inner
        self._answers = answers

    @property
    def last_context(self) -> contextvars.Context | None:
        """The sender's context of the last message (the SDK's dispatcher restores it)."""
        context: contextvars.Context | None = getattr(self._inner, "last_context", None)
        return context

    async def receive(self) -> SessionMessage | Exception:
        while True:
            item = await self._inner.receive()
            if not isinstance(item, Exception):
                return item
            refusal = refusal_for(item)
            if refusal is None:
                continue
            log(
                logging.WARNING,
                f"stdio: refused a line that is no JSON-RPC message: {refusal.message}",
                reason=refusal.reason,
                jsonrpc_code=refusal.code,
                request_id=bounded_text(
                    None if refusal.request_id is None else str(refusal.request_id)
                ),
            )
            await self._answers.send(refusal.answer())

    async def aclose(self) -> None:
        await self._inner.aclose()

    def __aiter__(self) -> AnsweringReadStream:
        return self

    async def __aenter__(self) -> AnsweringReadStream:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc_val: BaseException | None,
        exc_tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def __anext__(self) -> SessionMessage | Exception:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None
