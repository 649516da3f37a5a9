"""What time a question names, as a range to search in.

"in October 2023" is October 2023; "last week" the week before the reference (now,
or the search's ``valid_at``); "on 9 November, 2022" that day; several expressions
make one range from the first's start to the last's end ("between August 11 and
August 15 2023"). A word just before a lone expression opens the range: "before",
"until" and "by" end it where the expression starts, "after" begins it where the
expression ends, "since" where it starts; "the week before" (day, weekend, fortnight,
month) also bounds its other side. "before the launch", where no date is
written, names a memory instead: ``event_words`` are the words to look that memory
up by (``usecases/search.py`` reads its time).

The question's words that named the time are left out of its keywords
(``QuestionTime.keywords``): "in October 2023" names a month, and the words "october"
and "2023" would otherwise favour every memory that merely mentions one.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Final

from metacortex.domain.occurrence import period_end, period_start
from metacortex.timeline.reader import TimeExpression, TimeReader

_OPENING: Final = {
    "before": "until",
    "until": "until",
    "till": "until",
    "by": "until",
    "after": "after",
    "since": "since",
}
_WORD_BEFORE: Final = re.compile(r"([A-Za-z]+)\W*$")
# "the week before 3 August": a span ending (or starting, with "after") at the date.
_UNITS: Final = {
    "day": timedelta(days=1),
    "weekend": timedelta(days=3),
    "week": timedelta(days=7),
    "fortnight": timedelta(days=14),
    "month": timedelta(days=31),
}
_SPAN_BEFORE: Final = re.compile(r"\b(?:the|a)\s+(day|weekend|week|fortnight|month)\s*$", re.I)
# "before the launch", "after our trip to Rome": a memory named instead of a date.
_EVENT: Final = re.compile(
    r"\b(before|after|since)\s+((?:the|our|my|his|her|their|your|we)\s+)?"
    r"([A-Za-z][\w'-]*(?:\s+(?!and\b|or\b|but\b|when\b|did\b|was\b|were\b)[A-Za-z][\w'-]*){0,3})",
    re.IGNORECASE,
)
# Prepositions left dangling once a time expression is taken out of a question.
_DANGLING: Final = re.compile(
    r"\b(?:in|on|during|of|at|from|since|before|after|until|by)\s*$", re.IGNORECASE
)
_WHEN: Final = re.compile(
    r"^\s*(?:when\b|what\s+(?:time|date|day|year|month)\b|which\s+(?:day|date|year|month)\b|"
    r"how\s+long\s+ago\b|on\s+what\s+(?:date|day)\b|in\s+what\s+(?:year|month)\b)",
    re.IGNORECASE,
)


@dataclass(frozen=True, slots=True)
class QuestionTime:
    """The range a question names, ``[start, end)``; ``None`` leaves that side open.
    ``spans``: where its expressions are in the question."""

    start: datetime | None
    end: datetime | None
    spans: tuple[tuple[int, int], ...]
    # Named without a year and not relative to now ("in June", "on March 3"): read as
    # the last such time before now, which the caller may move to an earlier year.
    yearless: bool = False

    def earlier(self, years: int) -> QuestionTime:
        """The same range ``years`` years earlier."""
        return QuestionTime(
            _years_back(self.start, years), _years_back(self.end, years), self.spans, self.yearless
        )

    def keywords(self, query: str) -> str:
        """``query`` without the words that named the time (and a preposition left
        hanging before them)."""
        out = query
        for start, end in sorted(self.spans, reverse=True):
            head = _DANGLING.sub("", out[:start])
            out = head + " " + out[end:]
        return " ".join(out.split())


def question_time(reader: TimeReader, query: str, now: datetime) -> QuestionTime | None:
    """The range ``query`` names, relative to ``now``; None when it names no time."""
    found = reader.expressions(query, now)
    if not found:
        return None
    first, last = found[0], found[-1]
    start: datetime | None = period_start(first.at, first.precision)
    end: datetime | None = period_end(period_start(last.at, last.precision), last.precision)
    if len(found) == 1:
        opening, unit = _opening(query, first)
        if opening == "until":
            start, end = (None if unit is None else _shifted(start, -unit)), start
        elif opening == "after":
            start, end = end, (None if unit is None else _shifted(end, unit))
        elif opening == "since":
            end = None
    spans = tuple((e.start, e.end) for e in found)
    yearless = not any(e.absolute or e.relative for e in found)
    return QuestionTime(start, end, spans, yearless and start is not None and end is not None)


def _years_back(instant: datetime | None, years: int) -> datetime | None:
    if instant is None:
        return None
    try:
        return instant.replace(year=instant.year - years)
    except ValueError:  # 29 February
        return instant.replace(year=instant.year - years, day=28)


def _opening(query: str, expression: TimeExpression) -> tuple[str | None, timedelta | None]:
    """How the word before ``expression`` opens the range, and over what span when the
    question bounds it ("the week before": the seven days before the date)."""
    head = query[: expression.start]
    match = _WORD_BEFORE.search(head)
    if match is None:
        return None, None
    opening = _OPENING.get(match.group(1).lower())
    if opening not in ("until", "after"):
        return opening, None
    span = _SPAN_BEFORE.search(head[: match.start(1)])
    return opening, _UNITS[span.group(1).lower()] if span else None


def _shifted(instant: datetime | None, by: timedelta) -> datetime | None:
    return None if instant is None else instant + by


def event_reference(query: str) -> tuple[str, str, tuple[int, int]] | None:
    """("before" | "after" | "since", the words naming an event, their span) for a
    question that places itself against an event rather than a date ("what did we
    decide before the launch"), or None."""
    match = _EVENT.search(query)
    if match is None:
        return None
    return match.group(1).lower(), match.group(3), (match.start(), match.end())


def asks_when(query: str) -> bool:
    """Whether the question asks for a time ("When did...", "What year...")."""
    return _WHEN.search(query) is not None
