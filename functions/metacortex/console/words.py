"""Plain words for what the code names with identifiers: how a memory was merged, why a
request was refused, what each state means. Templates call these; the identifiers stay
in the events, the tools and the docs."""

from __future__ import annotations

import re
from typing import Final

OWNER_EDIT: Final = ", edited by the owner"
OFFLINE_MERGE: Final = "offline_sentence_merge"
# The reasons ``server/guard.py`` and ``auth/resource.py`` record on a refused request.
# The reasons ``server/guard.py`` and ``auth/resource.py`` record on a refused request,
# each short enough for the chart's label (``charts.MAX_BAR_LABEL``).
REFUSALS: Final = {
    "unauthorized": "wrong or no token",
    "client_paused": "client paused",
    "insufficient_scope": "tool not granted",
    "rate_limited": "too many requests",
    "unknown_route": "unknown address",
    "method_not_allowed": "wrong HTTP method",
    "origin_not_allowed": "web origin refused",
    "host_not_allowed": "unknown host name",
    "unsupported_media_type": "not sent as JSON",
    "not_acceptable": "JSON not accepted",
    "batch_not_supported": "batched messages",
    "unsupported_protocol_version": "bad MCP version",
    "payload_too_large": "request too large",
    "body_timeout": "request too slow",
    "parse_error": "malformed request",
    "unavailable": "server not ready",
}
STATES: Final = {
    "active": "active",
    "wip": "draft",
    "merged": "merged",
    "deprecated": "deprecated",
}


def merge_method(method: str) -> str:
    """How a consolidated memory was written, after "Merged by": "joining the sentences,
    without a model" for the offline merge, "the gemini-2.5-flash model" for a model,
    "…, then edited by you"."""
    if method.endswith(OWNER_EDIT):
        return merge_method(method.removesuffix(OWNER_EDIT)) + ", then edited by you"
    if method == OFFLINE_MERGE:
        return "joining the sentences, without a model (no generation model is configured)"
    return f"the {method} model"


# The service's refusals that name a tool or a credential, as the console says them: the
# tools and the CLI keep the service's own words.
IN_CONSOLE: Final = (
    (
        re.compile(
            r"no space ('[^']*') is available to this credential; list_spaces shows the ones "
            r"that are"
        ),
        r"no space \1 is available to you; the Space menu at the top lists the ones that are",
    ),
    (
        re.compile(r"this credential may only read the space ('[^']*'), not write to it"),
        r"you may only read the space \1, not change it",
    ),
    (re.compile(r"\bthis credential\b"), "you"),
    (re.compile(r"\bone credential\b"), "one person"),
)
# A refusal's code, as the refusal page names it.
CODES: Final = {
    "not_found": "Not found",
    "forbidden": "Not allowed",
    "invalid_argument": "Not accepted as it is",
    "failed_precondition": "Not possible now",
    "conflict": "In conflict with a change made meanwhile",
    "unavailable": "Busy: try again in a moment",
    "rate_limited": "Too many requests: try again in a moment",
    "resource_exhausted": "The server is out of disk space",
    "csrf": "The form expired",
}


def in_console(message: str) -> str:
    """A service refusal in console words (``IN_CONSOLE``)."""
    for pattern, words in IN_CONSOLE:
        message = pattern.sub(words, message)
    return message


def code_words(code: str) -> str:
    return CODES.get(code, code.replace("_", " ").capitalize())


def refusal(reason: str) -> str:
    """Why a request was refused, as the owner would say it."""
    return REFUSALS.get(reason, reason.replace("_", " "))
