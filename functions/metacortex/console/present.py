"""How the console shows records: a heading from the first line, human times, topic names
matched without regard to case.

Pure functions of their inputs (the current time is passed in), given to every template
by ``ConsoleBase.render``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Final

from metacortex.domain.records import to_wire_time

HEADING_CHARS: Final = 160
_WHITESPACE: Final = re.compile(r"\s+")


def first_line(content: str, limit: int = HEADING_CHARS) -> str:
    """The first line with text, whitespace collapsed, cut at ``limit`` (an ellipsis marks
    a cut); "(image)" for a record without text."""
    for line in content.splitlines():
        collapsed = _WHITESPACE.sub(" ", line).strip()
        if collapsed:
            return collapsed if len(collapsed) <= limit else collapsed[: limit - 1] + "…"
    return "(image)"


def _instant(value: datetime | str | None) -> datetime | None:
    if value is None or value == "":
        return None
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=UTC)
    parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def wire(value: datetime | str | None) -> str:
    """The machine form (``<time datetime>``)."""
    instant = _instant(value)
    return to_wire_time(instant) if instant is not None else ""


def exact(value: datetime | str | None) -> str:
    """The exact UTC time, to the second: ``2026-03-12 14:03:22 UTC``."""
    instant = _instant(value)
    return instant.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC") if instant else "—"


def clock(value: datetime | str | None) -> str:
    """The time of day in UTC: ``14:03 UTC`` (an undo's deadline, minutes away)."""
    instant = _instant(value)
    return instant.astimezone(UTC).strftime("%H:%M UTC") if instant else "—"


def ago(value: datetime | str | None, now: datetime) -> str:
    """A relative time: "just now", "5 min ago", "3 h ago", "yesterday", "4 days ago",
    then the date ("12 Mar", with the year when it is not this year's). A future instant
    (a validity window) reads "in 3 days" or as a date."""
    instant = _instant(value)
    if instant is None:
        return "—"
    seconds = (now - instant).total_seconds()
    if seconds < 0:
        days = int(-seconds // 86_400)
        if -seconds < 86_400:
            return f"in {max(1, int(-seconds // 3600))} h"
        return f"in {days} days" if days < 7 else _date(instant, now)
    if seconds < 60:
        return "just now"
    if seconds < 3600:
        return f"{int(seconds // 60)} min ago"
    if seconds < 86_400:
        return f"{int(seconds // 3600)} h ago"
    days = int(seconds // 86_400)
    if days == 1:
        return "yesterday"
    if days < 7:
        return f"{days} days ago"
    return _date(instant, now)


def _date(instant: datetime, now: datetime) -> str:
    day = f"{instant.day} {instant.strftime('%b')}"
    return day if instant.year == now.year else f"{day} {instant.year}"


@dataclass(frozen=True, slots=True)
class TopicMatch:
    """What a typed topic names: ``topic`` to filter by (None: no such topic), and the
    topics worth suggesting when it names none or several."""

    topic: str | None
    suggestions: list[str] = field(default_factory=list)


def match_topic(typed: str, names: Iterable[str], suggest: int = 8) -> TopicMatch:
    """The stored topic a typed name means: itself, else the one that differs only in
    case; several such, or none, give suggestions (those containing the typed text,
    case-insensitively) instead."""
    known = list(names)
    if typed in known:
        return TopicMatch(typed)
    folded = typed.casefold()
    known.sort(key=lambda name: (name.casefold(), name))
    same = [name for name in known if name.casefold() == folded]
    if len(same) == 1:
        return TopicMatch(same[0])
    if same:
        return TopicMatch(None, same[:suggest])
    containing = [name for name in known if folded in name.casefold()]
    return TopicMatch(None, containing[:suggest])
