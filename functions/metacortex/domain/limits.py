"""Validation limits for writes and queries, with errors that say exactly what is wrong."""

from __future__ import annotations

import re
import unicodedata
from datetime import UTC, datetime
from typing import Final

from metacortex.errors import InvalidArgument

MAX_CONTENT_CHARS: Final = 20_000
MAX_TOPIC_CHARS: Final = 64
MAX_ARTIFACT_REFS: Final = 16
MAX_ARTIFACT_REF_CHARS: Final = 1_024
MAX_SOURCE_SESSION_CHARS: Final = 200
MAX_DERIVED_FROM: Final = 50
MAX_ID_CHARS: Final = 128
MAX_QUERY_CHARS: Final = 2_000
# search_context's keyword: a ticket number, a version, a code; never a paragraph.
MAX_KEYWORD_CHARS: Final = 200
# The HTTP request body limit (METACORTEX_MAX_BODY_BYTES defaults to it). A
# save_context call must fit it whole, so the image limit is derived from it:
# what is left after an allowance for the JSON-RPC envelope and the other
# arguments, as base64 characters (a multiple of 4), then as decoded bytes.
DEFAULT_MAX_BODY_BYTES: Final = 1024 * 1024
IMAGE_REQUEST_ALLOWANCE_BYTES: Final = 64 * 1024
MAX_IMAGE_BASE64_CHARS: Final = (DEFAULT_MAX_BODY_BYTES - IMAGE_REQUEST_ALLOWANCE_BYTES) // 4 * 4
MAX_IMAGE_BYTES: Final = MAX_IMAGE_BASE64_CHARS // 4 * 3
MAX_SEARCH_LIMIT: Final = 20
MAX_LIST_LIMIT: Final = 100
DEFAULT_LIST_LIMIT: Final = 20
# The wip queue consolidate_context takes without explicit ids, oldest first.
MAX_CONSOLIDATE_SOURCES: Final = 50

# Patterns are always applied with ``fullmatch`` (``$`` alone would let a trailing
# newline through).
TOPIC_PATTERN: Final = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:/-]*")
_NOT_IN_TOPIC: Final = re.compile(r"[^A-Za-z0-9._:/-]+")
_DASH_BESIDE_SEPARATOR: Final = re.compile(r"-*([._:/])-*")
ID_PATTERN: Final = re.compile(r"[A-Za-z0-9_-]+")
ARTIFACT_REF_PATTERN: Final = re.compile(r"[a-z][a-z0-9+.-]*://\S+")
# The one rule for every string a client sends: no control characters (Unicode
# category Cc) other than tab, line feed and carriage return, and no lone
# surrogates (they cannot be stored as UTF-8).
_DISALLOWED_CHARS: Final = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ud800-\udfff]")


def without_disallowed(value: str) -> str:
    """``value`` without the characters ``check_string`` refuses (text read from a file
    the person gave, such as an export, rather than refused whole for them)."""
    return _DISALLOWED_CHARS.sub("", value)


def check_string(value: str, field_name: str) -> str:
    """Refuse NUL, other control characters and lone surrogates in any client string."""
    found = _DISALLOWED_CHARS.search(value)
    if found is not None:
        raise InvalidArgument(
            f"{field_name} contains the disallowed character U+{ord(found.group()):04X} at "
            f"position {found.start()}; control characters other than tab and line breaks "
            "are not accepted"
        )
    return value


def check_topic(topic: str, field_name: str = "topic") -> str:
    topic = check_string(topic, field_name).strip()
    if not topic:
        raise InvalidArgument(f"{field_name} must not be empty")
    if len(topic) > MAX_TOPIC_CHARS:
        raise InvalidArgument(
            f"{field_name} is {len(topic)} characters; the limit is {MAX_TOPIC_CHARS}"
        )
    if not TOPIC_PATTERN.fullmatch(topic):
        accepted = accepted_topic(topic)
        raise InvalidArgument(
            f"{field_name} {topic!r} may use only letters, digits and . _ : / - "
            "and must start with a letter or digit"
            + (f"; for example {accepted!r}" if accepted else "")
        )
    return topic


def accepted_topic(topic: str) -> str | None:
    """The nearest topic name the rule accepts: accents dropped, every run of other
    characters one ``-`` (none beside a ``. _ : /``), leading separators dropped; None when
    nothing is left ("architecture decisions" -> "architecture-decisions")."""
    ascii_only = unicodedata.normalize("NFKD", topic).encode("ascii", "ignore").decode()
    dashed = _NOT_IN_TOPIC.sub("-", ascii_only)
    joined = _DASH_BESIDE_SEPARATOR.sub(r"\1", dashed)
    accepted = joined.lstrip("._:/-")[:MAX_TOPIC_CHARS].rstrip("-")
    return accepted if accepted and TOPIC_PATTERN.fullmatch(accepted) else None


def check_id(value: str, field_name: str = "id") -> str:
    if not value:
        raise InvalidArgument(f"{field_name} must not be empty")
    if len(value) > MAX_ID_CHARS or not ID_PATTERN.fullmatch(value):
        raise InvalidArgument(f"{field_name} is not a memory id (URL-safe characters only)")
    return value


def check_content(content: str, field_name: str = "content") -> str:
    if len(content) > MAX_CONTENT_CHARS:
        raise InvalidArgument(
            f"{field_name} is {len(content)} characters; the limit is {MAX_CONTENT_CHARS}. "
            "Split it into several memories."
        )
    return check_string(content, field_name)


def check_artifact_refs(refs: list[str]) -> tuple[str, ...]:
    if len(refs) > MAX_ARTIFACT_REFS:
        raise InvalidArgument(
            f"artifact_refs has {len(refs)} entries; the limit is {MAX_ARTIFACT_REFS}"
        )
    cleaned: list[str] = []
    for index, ref in enumerate(refs):
        ref = check_string(ref, f"artifact_refs[{index}]").strip()
        if len(ref) > MAX_ARTIFACT_REF_CHARS:
            raise InvalidArgument(
                f"artifact_refs[{index}] is {len(ref)} characters; "
                f"the limit is {MAX_ARTIFACT_REF_CHARS}"
            )
        if not ARTIFACT_REF_PATTERN.fullmatch(ref):
            raise InvalidArgument(
                f"artifact_refs[{index}] must be a URI such as gs://bucket/file.png"
            )
        if ref not in cleaned:
            cleaned.append(ref)
    return tuple(cleaned)


def check_confidence(confidence: float | None) -> float | None:
    if confidence is None:
        return None
    if not 0.0 <= confidence <= 1.0:
        raise InvalidArgument(f"confidence must be between 0 and 1, got {confidence}")
    return float(confidence)


def check_validity(valid_from: datetime | None, valid_until: datetime | None) -> None:
    if valid_from is not None and valid_until is not None and valid_from >= valid_until:
        raise InvalidArgument("valid_from must be earlier than valid_until")


def check_range(
    start: datetime | None, end: datetime | None, start_name: str, end_name: str
) -> None:
    if start is not None and end is not None and start >= end:
        raise InvalidArgument(f"{start_name} must be earlier than {end_name}")


def check_limit(limit: int, maximum: int, field_name: str = "limit") -> int:
    if not 1 <= limit <= maximum:
        raise InvalidArgument(f"{field_name} must be between 1 and {maximum}, got {limit}")
    return limit


EARLIEST_INSTANT: Final = "0001-01-01T00:00:00Z"
LATEST_INSTANT: Final = "9999-12-31T23:59:59.999Z"


def parse_instant(value: str | datetime | None, field_name: str) -> datetime | None:
    """ISO 8601 text (or a datetime) to an aware UTC datetime with ms precision."""
    if value is None:
        return None
    if isinstance(value, datetime):
        parsed = value
    else:
        text = check_string(value, field_name).strip()
        if text.endswith(("Z", "z")):
            text = text[:-1] + "+00:00"
        try:
            parsed = datetime.fromisoformat(text)
        except ValueError:
            raise InvalidArgument(
                f"{field_name} must be an ISO 8601 date-time such as 2026-01-31T12:00:00Z"
            ) from None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    try:
        parsed = parsed.astimezone(UTC)
    except OverflowError:
        # e.g. 0001-01-01T00:00:00+14:00 is before year 1 in UTC.
        raise InvalidArgument(
            f"{field_name} is outside the supported range: in UTC it must fall between "
            f"{EARLIEST_INSTANT} and {LATEST_INSTANT}"
        ) from None
    return parsed.replace(microsecond=(parsed.microsecond // 1000) * 1000)


def check_source_session(value: str | None) -> str | None:
    if value is None:
        return None
    check_string(value, "source_session")
    if len(value) > MAX_SOURCE_SESSION_CHARS:
        raise InvalidArgument(
            f"source_session is {len(value)} characters; the limit is {MAX_SOURCE_SESSION_CHARS}"
        )
    return value or None


def check_query(query: str) -> str:
    query = check_string(query, "query").strip()
    if not query:
        raise InvalidArgument("query must not be empty")
    if len(query) > MAX_QUERY_CHARS:
        raise InvalidArgument(f"query is {len(query)} characters; the limit is {MAX_QUERY_CHARS}")
    return query
