"""Logs: JSON lines where logs are collected, readable lines on a terminal.

Where logs are collected (Cloud Functions, a pipe, a file) each record is one
JSON object in the shape Cloud Logging understands: ``severity`` and
``message`` are the keys it maps to a log entry's level and summary;
``httpRequest`` renders as a request line; other keys land in ``jsonPayload``.
On a terminal (``METACORTEX_LOG_FORMAT=auto``, the default, when standard error
is a TTY; ``text`` forces it, ``json`` the other way) each record is one short
line, and a tool call's line is folded into its request's line, so one call is
one line (``request_lines``). Secrets never reach a log line: the server logs a request's
path and only the length and digest of its (redacted, ``redact_query``) query,
and never a credential or memory body. What a client sends is bounded before it
is logged (``bounded_text``, ``kernel.rejections.bounded_request``).
"""

from __future__ import annotations

import json
import logging
import re
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from datetime import UTC, datetime
from typing import Any, Final, TextIO
from urllib.parse import parse_qsl, urlencode

from metacortex.config import LogFormat
from metacortex.domain.records import to_wire_time

SERVER_LOGGER: Final = "metacortex.server"
# Query parameters that carry credentials and must never be written anywhere.
SECRET_QUERY_PARAMS: Final = frozenset({"auth_token", "token", "access_token", "key"})
_FIELDS_ATTR: Final = "metacortex_fields"
MAX_LOGGED_CHARS: Final = 200


def logger() -> logging.Logger:
    return logging.getLogger(SERVER_LOGGER)


def log(level: int, message: str, **fields: Any) -> None:
    """Log ``message`` with structured ``fields`` (rendered as JSON keys by JsonFormatter)."""
    logger().log(level, message, extra={_FIELDS_ATTR: fields})


def bounded_text(value: str | None, limit: int = MAX_LOGGED_CHARS) -> str | None:
    """``value`` cut at ``limit`` characters, an ellipsis marking the cut (a header
    anyone can send, such as User-Agent, is logged through this)."""
    if value is None or len(value) <= limit:
        return value
    return value[:limit] + "…"


def redact_query(query_string: str) -> str:
    """The query string with credential parameters' values replaced by ``REDACTED``."""
    if not query_string:
        return ""
    pairs = parse_qsl(query_string, keep_blank_values=True)
    return urlencode(
        [(key, "REDACTED" if key.lower() in SECRET_QUERY_PARAMS else value) for key, value in pairs]
    )


class JsonFormatter(logging.Formatter):
    """Cloud Logging compatible JSON lines."""

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "severity": _severity(record.levelno),
            "message": record.getMessage(),
            "time": to_wire_time(datetime.fromtimestamp(record.created, UTC)),
            "logger": record.name,
        }
        fields = getattr(record, _FIELDS_ATTR, None)
        if isinstance(fields, dict):
            entry.update({key: value for key, value in fields.items() if value is not None})
        if record.exc_info:
            # Operators need the trace; it goes to the server log only, never to a client.
            entry["stack_trace"] = self.formatException(record.exc_info)
        return json.dumps(entry, default=str, ensure_ascii=False)


def _severity(level: int) -> str:
    if level >= logging.CRITICAL:
        return "CRITICAL"
    if level >= logging.ERROR:
        return "ERROR"
    if level >= logging.WARNING:
        return "WARNING"
    if level >= logging.INFO:
        return "INFO"
    return "DEBUG"


def configure_logging(
    level: str = "INFO", log_format: LogFormat = "auto", stream: TextIO | None = None
) -> None:
    """Send MetaCortex and SDK logs to ``stream`` (stderr): JSON lines, or readable
    lines when ``log_format`` is ``text`` (``auto``: when the stream is a terminal).

    Called by composition roots (``metacortex serve``, the Cloud Functions entry);
    the library itself never configures logging.
    """
    target = stream or sys.stderr
    handler: logging.StreamHandler[TextIO] = (
        logging.StreamHandler(stream) if stream is not None else _StandardError()
    )
    if log_format == "text" or (log_format == "auto" and _is_terminal(target)):
        handler.setFormatter(TextFormatter())
        handler.addFilter(_FoldToolCalls(handler))
    else:
        handler.setFormatter(JsonFormatter())
    root = logging.getLogger()
    for existing in list(root.handlers):
        if isinstance(existing.formatter, JsonFormatter | TextFormatter):
            root.removeHandler(existing)
    root.addHandler(handler)
    root.setLevel(level.upper())
    # The SDK logs every request at INFO; keep its warnings and errors only.
    logging.getLogger("mcp").setLevel(max(logging.WARNING, root.level))


class _StandardError(logging.StreamHandler[TextIO]):
    """Writes to whatever ``sys.stderr`` is when a record is emitted, not the stream it
    was when logging was configured: a server started by a test (or by any host that
    swaps stderr) keeps logging after that stream is closed and replaced."""

    def __init__(self) -> None:
        super().__init__(sys.stderr)

    @property
    def stream(self) -> TextIO:
        return sys.stderr

    @stream.setter
    def stream(self, value: TextIO) -> None:
        pass  # always the current sys.stderr


def _is_terminal(stream: TextIO) -> bool:
    isatty = getattr(stream, "isatty", None)
    return bool(isatty()) if callable(isatty) else False


# ------------------------------------------------------------------ terminal lines
# Fields the text line shows in its own way, or not at all (bounded forms of what a
# client sent are for collected logs; a terminal line stays short).
_TEXT_SKIPPED: Final = frozenset(
    {"httpRequest", "path_chars", "query", "route", "tool_name", "status", "latency_ms"}
)
# C0 and C1 control characters: a log line must not move a terminal's cursor or
# change its colours, whatever a client put in a header or a name.
_CONTROL: Final = re.compile(r"[\x00-\x1f\x7f-\x9f]")
_TOOL_ATTR: Final = "metacortex_tool_call"
# A tool call's fields that say who acted where (``mcp_surface/recording.py``).
_WHO_ACTED: Final = ("space", "person", "role")


class _PendingRequest:
    """The tool call of the request being served, until its access line is written
    (``handler``: the terminal's, to write it alone if no access line comes)."""

    __slots__ = ("handler", "tool")

    def __init__(self) -> None:
        self.tool: logging.LogRecord | None = None
        self.handler: logging.Handler | None = None


_current_request: ContextVar[_PendingRequest | None] = ContextVar(
    "metacortex_request_lines", default=None
)


@contextmanager
def request_lines() -> Iterator[None]:
    """Around serving one MCP request and writing its access line: on a terminal the
    tool call's line (logged inside, by a task that inherits this context) is folded
    into the access line instead of printed on its own."""
    pending = _PendingRequest()
    token = _current_request.set(pending)
    try:
        yield
    finally:
        _current_request.reset(token)
        if pending.tool is not None and pending.handler is not None:
            pending.handler.handle(pending.tool)  # the request ended without its access line


class _FoldToolCalls(logging.Filter):
    """Holds a tool call's record back and hands it to its request's access record."""

    def __init__(self, handler: logging.Handler) -> None:
        super().__init__()
        self._handler = handler

    def filter(self, record: logging.LogRecord) -> bool:
        pending = _current_request.get()
        fields = getattr(record, _FIELDS_ATTR, None)
        if pending is None or not isinstance(fields, dict):
            return True
        if "tool_name" in fields and "httpRequest" not in fields:
            pending.tool, pending.handler = record, self._handler
            return False
        if "httpRequest" in fields and pending.tool is not None:
            setattr(record, _TOOL_ATTR, pending.tool)
            pending.tool = None
        return True


class TextFormatter(logging.Formatter):
    """One readable line a record: local time, level, message, the fields that matter."""

    def format(self, record: logging.LogRecord) -> str:
        fields = getattr(record, _FIELDS_ATTR, None)
        fields = fields if isinstance(fields, dict) else {}
        tool: logging.LogRecord | None = getattr(record, _TOOL_ATTR, None)
        level = max(record.levelno, tool.levelno if tool is not None else 0)
        parts = [
            datetime.fromtimestamp(record.created).strftime("%H:%M:%S"),
            f"{_severity(level):<7}",
            _printable(record.getMessage(), limit=None),
        ]
        http = fields.get("httpRequest")
        if isinstance(http, dict) and isinstance(http.get("latency"), str):
            parts.append(_milliseconds(float(http["latency"].rstrip("s")) * 1000))
        latency = fields.get("latency_ms")
        if "httpRequest" not in fields and isinstance(latency, int | float):
            parts.append(_milliseconds(latency))
        if tool is not None:
            parts += ["·", *_tool_call(tool)]
        parts += [
            f"{key}={_printable(str(value))}"
            for key, value in fields.items()
            if value is not None and key not in _TEXT_SKIPPED and not isinstance(value, dict)
        ]
        line = " ".join(parts)
        if record.exc_info:
            line += "\n" + self.formatException(record.exc_info)
        return line


def _tool_call(record: logging.LogRecord) -> list[str]:
    """``save_context ok 12 ms space=family person=p-1 role=writer``, ``search_context
    error invalid_argument 3.1 ms …``: who acted where, as the JSON line names them."""
    fields: dict[str, Any] = getattr(record, _FIELDS_ATTR, {})
    shown = [_printable(str(fields.get("tool_name"))), _printable(str(fields.get("status")))]
    if fields.get("error_code"):
        shown.append(_printable(str(fields["error_code"])))
    latency = fields.get("latency_ms")
    if isinstance(latency, int | float):
        shown.append(_milliseconds(latency))
    shown += [
        f"{key}={_printable(str(fields[key]))}" for key in _WHO_ACTED if fields.get(key) is not None
    ]
    return shown


def _milliseconds(value: float) -> str:
    return f"{value:.0f} ms" if value >= 10 else f"{value:.1f} ms"


def _printable(text: str, limit: int | None = MAX_LOGGED_CHARS) -> str:
    if limit is not None:
        text = bounded_text(text, limit) or ""
    return _CONTROL.sub(lambda match: f"\\x{ord(match.group()):02x}", text)
