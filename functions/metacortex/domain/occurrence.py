"""When a memory happened: its ``occurred_at``, apart from when it is true (validity) and
when it was stored (``created_at``).

A memory's time is an instant or a calendar period (a day, an ISO week, a month, a
year), in UTC, and says where it came from: ``given`` by the caller, ``stated`` in the
text (read by ``metacortex.timeline``), or ``saved`` (none of those: the time it was
saved). On the wire it is ISO 8601 at the precision it has: ``2023-05-08T13:56:00.000Z``
(an instant), ``2023-05-08`` (a day), ``2023-W19`` (a week), ``2023-05`` (a month),
``2023`` (a year).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from enum import StrEnum
from typing import Final

from metacortex.domain import limits
from metacortex.domain.instants import to_wire_time
from metacortex.errors import InvalidArgument


class Precision(StrEnum):
    INSTANT = "instant"
    DAY = "day"
    WEEK = "week"
    MONTH = "month"
    YEAR = "year"


class TimeSource(StrEnum):
    GIVEN = "given"
    STATED = "stated"
    SAVED = "saved"


_MS: Final = timedelta(milliseconds=1)
_DAY: Final = re.compile(r"(\d{4})-(\d{2})-(\d{2})")
_WEEK: Final = re.compile(r"(\d{4})-W(\d{2})")
_MONTH: Final = re.compile(r"(\d{4})-(\d{2})")
_YEAR: Final = re.compile(r"(\d{4})")
OCCURRED_HELP: Final = (
    "an ISO 8601 instant (2026-01-31T12:00:00Z) or a calendar day (2026-01-31), "
    "week (2026-W05), month (2026-01) or year (2026)"
)


def _utc_midnight(day: date) -> datetime:
    return datetime(day.year, day.month, day.day, tzinfo=UTC)


def period_start(instant: datetime, precision: Precision) -> datetime:
    """The first instant of the period of ``precision`` that holds ``instant`` (UTC)."""
    instant = instant.astimezone(UTC)
    if precision is Precision.INSTANT:
        return instant.replace(microsecond=(instant.microsecond // 1000) * 1000)
    day = instant.date()
    if precision is Precision.WEEK:
        day -= timedelta(days=day.weekday())
    elif precision is Precision.MONTH:
        day = day.replace(day=1)
    elif precision is Precision.YEAR:
        day = day.replace(month=1, day=1)
    return _utc_midnight(day)


def period_end(start: datetime, precision: Precision) -> datetime:
    """The first instant after the period that starts at ``start`` (exclusive end)."""
    if precision is Precision.INSTANT:
        return start + _MS
    if precision is Precision.DAY:
        return start + timedelta(days=1)
    if precision is Precision.WEEK:
        return start + timedelta(days=7)
    if precision is Precision.MONTH:
        year, month = (start.year + 1, 1) if start.month == 12 else (start.year, start.month + 1)
        return start.replace(year=year, month=month)
    try:
        return start.replace(year=start.year + 1)
    except ValueError:  # year 9999: the period runs to the end of representable time
        return datetime.max.replace(tzinfo=UTC)


@dataclass(frozen=True, slots=True)
class Occurrence:
    """``at``: the start of the period (the instant itself for ``INSTANT``), aware UTC,
    millisecond precision."""

    at: datetime
    precision: Precision
    source: TimeSource

    @classmethod
    def of(cls, instant: datetime, precision: Precision, source: TimeSource) -> Occurrence:
        """The period of ``precision`` holding ``instant``."""
        return cls(period_start(instant, precision), precision, source)

    @property
    def end(self) -> datetime:
        """The exclusive end of the period."""
        return period_end(self.at, self.precision)

    def overlap(self, start: datetime, end: datetime) -> float:
        """The share of this period that falls in [start, end): 1.0 for an instant or a
        day inside it, 31/365 for a year that a month range covers part of, 0 outside."""
        own_end = self.end
        if own_end <= start or self.at >= end:
            return 0.0
        if self.precision is Precision.INSTANT:
            return 1.0
        inside = min(own_end, end) - max(self.at, start)
        return inside / (own_end - self.at)

    def to_wire(self) -> str:
        at = self.at
        if self.precision is Precision.INSTANT:
            return to_wire_time(at)
        if self.precision is Precision.DAY:
            return f"{at.year:04d}-{at.month:02d}-{at.day:02d}"
        if self.precision is Precision.WEEK:
            year, week, _ = at.date().isocalendar()
            return f"{year:04d}-W{week:02d}"
        if self.precision is Precision.MONTH:
            return f"{at.year:04d}-{at.month:02d}"
        return f"{at.year:04d}"


def parse_occurred(value: str | datetime, field_name: str = "occurred_at") -> Occurrence:
    """A caller's ``occurred_at`` (given): the forms ``Occurrence.to_wire`` writes, and any
    ISO 8601 date-time ``limits.parse_instant`` takes (an instant)."""
    if isinstance(value, datetime):
        instant = limits.parse_instant(value, field_name)
        assert instant is not None
        return Occurrence(instant, Precision.INSTANT, TimeSource.GIVEN)
    text = limits.check_string(value, field_name).strip()
    try:
        if match := _DAY.fullmatch(text):
            day = date(int(match[1]), int(match[2]), int(match[3]))
            return Occurrence(_utc_midnight(day), Precision.DAY, TimeSource.GIVEN)
        if match := _WEEK.fullmatch(text):
            monday = date.fromisocalendar(int(match[1]), int(match[2]), 1)
            return Occurrence(_utc_midnight(monday), Precision.WEEK, TimeSource.GIVEN)
        if match := _MONTH.fullmatch(text):
            first = date(int(match[1]), int(match[2]), 1)
            return Occurrence(_utc_midnight(first), Precision.MONTH, TimeSource.GIVEN)
        if match := _YEAR.fullmatch(text):
            return Occurrence(
                _utc_midnight(date(int(match[1]), 1, 1)), Precision.YEAR, TimeSource.GIVEN
            )
    except ValueError:
        raise InvalidArgument(f"{field_name} {text[:40]!r} is not a real date") from None
    try:
        instant = limits.parse_instant(text, field_name)
    except InvalidArgument:
        raise InvalidArgument(f"{field_name} must be {OCCURRED_HELP}") from None
    assert instant is not None
    return Occurrence(instant, Precision.INSTANT, TimeSource.GIVEN)


def stored(at: datetime | None, precision: str | None, source: str | None) -> Occurrence | None:
    """An occurrence as a store keeps it (three fields; None on records from before)."""
    if at is None:
        return None
    return Occurrence(
        at,
        Precision(precision) if precision else Precision.INSTANT,
        TimeSource(source) if source else TimeSource.SAVED,
    )


def parse_bound(value: str | datetime | None, field_name: str) -> datetime | None:
    """An ``after`` / ``before`` bound on when memories happened: any form ``occurred_at``
    takes, meaning its first instant ("2023-10" is 1 October 2023, 00:00 UTC)."""
    if value is None:
        return None
    return parse_occurred(value, field_name).at
