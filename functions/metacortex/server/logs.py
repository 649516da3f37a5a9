"""Structured JSON logs, one object per line, in the shape Cloud Logging understands.

``severity`` and ``message`` are the keys Cloud Logging maps to a log entry's
level and summary; ``httpRequest`` renders as a request line; other keys land
in ``jsonPayload``. Secrets never reach a log line: the server logs a request's
path and only the length and digest of its (redacted, ``redact_query``) query,
and never a credential or memory body. What a client sends is bounded before it
is logged (``bounded_text``, ``server.rejections.bounded_request``).
"""

from __future__ import annotations

import json
import logging
import sys
from datetime import UTC, datetime
from typing import Any, Final, TextIO
from urllib.parse import parse_qsl, urlencode

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


def configure_logging(level: str = "INFO", stream: TextIO | None = None) -> None:
    """Send MetaCortex and SDK logs to ``stream`` (stderr) as JSON lines.

    Called by composition roots (``metacortex serve``, the Cloud Functions entry);
    the library itself never configures logging.
    """
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.setFormatter(JsonFormatter())
    root = logging.getLogger()
    for existing in list(root.handlers):
        if isinstance(existing.formatter, JsonFormatter):
            root.removeHandler(existing)
    root.addHandler(handler)
    root.setLevel(level.upper())
    # The SDK logs every request at INFO; keep its warnings and errors only.
    logging.getLogger("mcp").setLevel(max(logging.WARNING, root.level))
