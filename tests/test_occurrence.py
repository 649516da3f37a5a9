"""When a memory happened (domain/occurrence.py): its wire forms, the periods they name, and
how much of a period falls in a range."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from metacortex.domain.occurrence import (
    Occurrence,
    Precision,
    TimeSource,
    parse_bound,
    parse_occurred,
)
from metacortex.errors import InvalidArgument


def at(
    year: int, month: int, day: int, hour: int = 0, minute: int = 0, second: int = 0, us: int = 0
) -> datetime:
    return datetime(year, month, day, hour, minute, second, us, tzinfo=UTC)


@pytest.mark.parametrize(
    ("given", "start", "end", "precision"),
    [
        ("2023-05-08", at(2023, 5, 8), at(2023, 5, 9), Precision.DAY),
        ("2023-W19", at(2023, 5, 8), at(2023, 5, 15), Precision.WEEK),
        ("2023-12", at(2023, 12, 1), at(2024, 1, 1), Precision.MONTH),
        ("2023", at(2023, 1, 1), at(2024, 1, 1), Precision.YEAR),
        (
            "2023-05-08T13:56:00+02:00",
            at(2023, 5, 8, 11, 56),
            at(2023, 5, 8, 11, 56, 0, 1000),
            Precision.INSTANT,
        ),
    ],
)
def test_each_wire_form_names_its_period_and_reads_back_as_written(
    given: str, start: datetime, end: datetime, precision: Precision
) -> None:
    occurrence = parse_occurred(given)

    assert (occurrence.at, occurrence.end, occurrence.precision) == (start, end, precision)
    assert occurrence.source is TimeSource.GIVEN
    assert parse_occurred(occurrence.to_wire()) == occurrence


def test_an_instant_is_written_in_utc_with_milliseconds() -> None:
    assert parse_occurred("2023-05-08T13:56:00Z").to_wire() == "2023-05-08T13:56:00.000Z"


@pytest.mark.parametrize(
    ("given", "says"),
    [
        ("2023-13", "not a real date"),
        ("2023-02-30", "not a real date"),
        ("2023-W54", "not a real date"),
        ("yesterday", "ISO 8601 instant"),
        ("8 May 2023", "ISO 8601 instant"),
    ],
)
def test_a_time_that_is_no_wire_form_is_refused_naming_the_forms(given: str, says: str) -> None:
    with pytest.raises(InvalidArgument) as refused:
        parse_occurred(given)

    assert "occurred_at" in refused.value.message
    assert says in refused.value.message


def test_a_period_is_built_around_any_instant_inside_it() -> None:
    wednesday = at(2023, 10, 11, 15, 30)

    assert Occurrence.of(wednesday, Precision.WEEK, TimeSource.STATED).to_wire() == "2023-W41"
    assert Occurrence.of(wednesday, Precision.MONTH, TimeSource.STATED).at == at(2023, 10, 1)
    assert Occurrence.of(wednesday, Precision.DAY, TimeSource.STATED).end == at(2023, 10, 12)


def test_the_overlap_is_the_share_of_the_memory_s_period_inside_the_range() -> None:
    october = (at(2023, 10, 1), at(2023, 11, 1))
    day = Occurrence(at(2023, 10, 13), Precision.DAY, TimeSource.STATED)
    year = Occurrence(at(2023, 1, 1), Precision.YEAR, TimeSource.STATED)
    instant = Occurrence(at(2023, 10, 31, 23, 59), Precision.INSTANT, TimeSource.SAVED)
    after = Occurrence(at(2023, 11, 1), Precision.INSTANT, TimeSource.SAVED)

    assert day.overlap(*october) == 1.0
    assert year.overlap(*october) == pytest.approx(31 / 365)
    assert instant.overlap(*october) == 1.0
    assert after.overlap(*october) == 0.0  # the range's end is exclusive


def test_a_bound_is_the_first_instant_of_the_time_it_names() -> None:
    assert parse_bound("2023-10", "after") == at(2023, 10, 1)
    assert parse_bound(None, "after") is None
    with pytest.raises(InvalidArgument) as refused:
        parse_bound("last week", "before")
    assert refused.value.message.startswith("before must be")
