"""One log line and one ``memory_events`` record per MCP request that reaches a handler:
a tool call (``tool_call``), a resource read (``resource_read``) or a prompt get
(``prompt_get``), over HTTP and stdio alike. What the request carried is summarized
(``mcp_surface/summaries.py``): never a memory body, a query or a credential.

The log line names who acted where: the space (the one named, when the credential
holds it, else its default: a name it does not hold is any string a caller sent, so
the line says ``not held`` instead), the person's id and their role (``owner``,
``writer``, ``reader``). Never an argument's value beyond that key, never memory text."""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from typing import Any, Final

from metacortex.access.profiles import Profile
from metacortex.kernel.logs import log
from metacortex.kernel.runtime import Runtime
from metacortex.mcp_surface.summaries import summarize_arguments

# What the log line says of a space the credential does not hold (its name is not logged).
NOT_HELD: Final = "not held"
_LABELS = {"tool_call": "tool", "resource_read": "resource read", "prompt_get": "prompt"}


def record_request(
    runtime: Runtime,
    profile: Profile,
    event_type: str,
    name: str,
    arguments: Mapping[str, Any],
    started: float,
    protocol_version: str | None,
    *,
    response: Mapping[str, Any] | None = None,
    error: Mapping[str, str] | None = None,
) -> None:
    """Log and record one request (``name``: the tool, resource or prompt, already bounded)."""
    latency_ms = (time.perf_counter() - started) * 1000
    status = "ok" if error is None else "error"
    failed_badly = error is not None and error["code"] == "unavailable"
    space = _space_named(arguments, profile)
    person = profile.directory.person(profile.person)
    log(
        logging.ERROR if failed_badly else logging.INFO,
        f"{_LABELS.get(event_type, event_type)} {name} {status}",
        client_id=profile.id,
        tool_name=name,
        status=status,
        error_code=error["code"] if error is not None else None,
        latency_ms=round(latency_ms, 3),
        space=space if space in profile.levels else NOT_HELD,
        person=profile.person,
        role=person.role.value if person is not None else None,
    )
    if runtime.events is not None:
        runtime.events.mcp_request(
            event_type=event_type,
            client_id=profile.id,
            name=name,
            status=status,
            latency_ms=latency_ms,
            request_summary=summarize_arguments(arguments),
            response_summary=response,
            error=error,
            protocol_version=protocol_version,
            space=space,
            person=profile.person,
        )


def _space_named(arguments: Mapping[str, Any], profile: Profile) -> str:
    """The space a request named, else its credential's default (bounded: it may be
    any string a caller sent)."""
    named = arguments.get("space")
    uri = arguments.get("uri")
    if named is None and isinstance(uri, str) and "?space=" in uri:
        named = uri.partition("?space=")[2]
    return named[:64] if isinstance(named, str) and named else profile.grants.default
