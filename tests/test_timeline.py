"""Time expressions read by the real dateparser (metacortex/timeline): what a saved text
states, the range a question names, and the guards against words dateparser misreads."""

from __future__ import annotations

import subprocess
import sys
from datetime import UTC, datetime

import pytest

from metacortex.domain.occurrence import Precision, TimeSource
from metacortex.timeline.question import asks_when, event_reference, question_time
from metacortex.timeline.reader import TimeReader
from metacortex.timeline.stated import stated_time

NOW = datetime(2026, 12, 7, 12, 0, tzinfo=UTC)


@pytest.fixture(scope="module")
def reader() -> TimeReader:
    return TimeReader(("en",))


def at(
    year: int, month: int, day: int, hour: int = 0, minute: int = 0, second: int = 0, us: int = 0
) -> datetime:
    return datetime(year, month, day, hour, minute, second, us, tzinfo=UTC)


def found(reader: TimeReader, text: str) -> list[tuple[str, str]]:
    return [(e.text, e.precision.value) for e in reader.expressions(text, NOW)]


@pytest.mark.parametrize(
    ("text", "wire", "precision"),
    [
        ("We shipped the importer on 8 May, 2023.", "2023-05-08", Precision.DAY),
        ("Caroline (1:56 pm on 8 May, 2023): hi", "2023-05-08T13:56:00.000Z", Precision.INSTANT),
        ("Budget agreed in October 2023 after a long review", "2023-10", Precision.MONTH),
        ("We moved the team to Lisbon in 2021", "2021", Precision.YEAR),
        ("Standup 2024-03-10: we deployed v2 to staging", "2024-03-10", Precision.DAY),
    ],
)
def test_a_text_states_the_date_it_names_at_the_precision_written(
    reader: TimeReader, text: str, wire: str, precision: Precision
) -> None:
    occurrence = stated_time(reader, text, NOW)

    assert occurrence is not None
    assert (occurrence.to_wire(), occurrence.precision) == (wire, precision)
    assert occurrence.source is TimeSource.STATED


def test_a_relative_time_is_read_against_the_memory_s_own_time(reader: TimeReader) -> None:
    saved = at(2023, 5, 8, 13, 56)

    yesterday = stated_time(reader, "I went to a support group yesterday", saved)
    weeks = stated_time(reader, "We decided two weeks ago to drop the cache", saved)

    assert yesterday is not None
    assert yesterday.to_wire() == "2023-05-07"
    assert weeks is not None
    assert weeks.precision is Precision.WEEK
    assert weeks.at == at(2023, 4, 24)  # the ISO week holding 24 April


def test_the_first_date_with_a_year_wins_over_a_relative_one(reader: TimeReader) -> None:
    occurrence = stated_time(reader, "Notes of 8 May 2023: yesterday the build broke", NOW)

    assert occurrence is not None
    assert occurrence.to_wire() == "2023-05-08"


def test_a_text_naming_no_time_states_none(reader: TimeReader) -> None:
    assert stated_time(reader, "The user prefers dark mode in every editor", NOW) is None


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # "we" is an abbreviation of Wednesday to dateparser
        ("What did we decide last week?", [("last week", "week")]),
        # "v2" made it drop the date beside it
        ("We deployed v2 on 2024-03-10.", [("2024-03-10", "day")]),
        # modal verb, verb, lower-case weekday
        ("I may go to the march on sunday", []),
        # a ticket number is no year, an ordinal alone no day
        ("ticket 4521 is done", []),
        ("How long ago was her 18th birthday?", []),
        ("May I ask you something?", []),
        ("What did I do in May?", [("May", "month")]),
        # trailing words would have turned a month into a day
        ("Was the first half of September 2022 a good month?", [("September 2022", "month")]),
    ],
)
def test_words_dateparser_misreads_are_no_times(
    reader: TimeReader, text: str, expected: list[tuple[str, str]]
) -> None:
    assert found(reader, text) == expected


def test_dates_without_a_year_take_the_year_named_beside_them(reader: TimeReader) -> None:
    named = question_time(reader, "Where was John between August 11 and August 15 2023?", NOW)

    assert named is not None
    assert (named.start, named.end) == (at(2023, 8, 11), at(2023, 8, 16))


@pytest.mark.parametrize(
    ("question", "start", "end"),
    [
        ("Which hobby did he pick up in October 2023?", at(2023, 10, 1), at(2023, 11, 1)),
        ("What did we decide last week?", at(2026, 11, 30), at(2026, 12, 7)),
        ("What did we ship before 3 March 2024?", None, at(2024, 3, 3)),
        ("What changed since 2022?", at(2022, 1, 1), None),
        ("Who called after 5 June 2024?", at(2024, 6, 6), None),
        ("What did John do the week before August 3, 2023?", at(2023, 7, 27), at(2023, 8, 3)),
    ],
)
def test_a_question_names_a_range_relative_to_now(
    reader: TimeReader, question: str, start: datetime | None, end: datetime | None
) -> None:
    named = question_time(reader, question, NOW)

    assert named is not None
    assert (named.start, named.end) == (start, end)


def test_the_words_that_named_the_time_leave_the_keywords(reader: TimeReader) -> None:
    question = "Which hobby did he pick up in October 2023?"
    named = question_time(reader, question, NOW)

    assert named is not None
    assert named.keywords(question) == "Which hobby did he pick up ?"


def test_a_month_without_a_year_is_marked_so_search_can_move_it(reader: TimeReader) -> None:
    named = question_time(reader, "What did Joanna visit in May?", NOW)

    assert named is not None
    assert named.yearless
    assert (named.start, named.end) == (at(2026, 5, 1), at(2026, 6, 1))
    earlier = named.earlier(3)
    assert (earlier.start, earlier.end) == (at(2023, 5, 1), at(2023, 6, 1))


def test_a_question_naming_no_time_has_no_range(reader: TimeReader) -> None:
    assert question_time(reader, "What is Caroline's identity?", NOW) is None


@pytest.mark.parametrize(
    ("question", "when"),
    [
        ("When did Melanie paint a sunrise?", True),
        ("What year did they move?", True),
        ("How long ago was the launch?", True),
        ("What did Melanie paint?", False),
    ],
)
def test_a_when_question_is_told_apart(question: str, when: bool) -> None:
    assert asks_when(question) is when


def test_a_question_can_place_itself_against_an_event(reader: TimeReader) -> None:
    assert event_reference("What did we decide before the launch?") == (
        "before",
        "launch",
        (19, 36),
    )
    assert event_reference("What did we decide about the launch?") is None


def test_dateparser_loads_only_when_a_text_may_name_a_time() -> None:
    """Its import and first parse cost 0.3 s and 20 MB (docs/benchmarks.md): a server's
    start and its warm-up query ("warm up") must not pay them."""
    probe = (
        "import sys\n"
        "from datetime import UTC, datetime\n"
        "import metacortex.service\n"
        "from metacortex.timeline.reader import TimeReader\n"
        "reader = TimeReader()\n"
        "reader.expressions('warm up', datetime.now(UTC))\n"
        "print('dateparser' in sys.modules, end=' ')\n"
        "reader.expressions('the launch in May 2024', datetime.now(UTC))\n"
        "print('dateparser' in sys.modules)\n"
    )
    loaded = subprocess.run(  # noqa: S603 (our own interpreter and script)
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    ).stdout

    assert loaded.strip() == "False True"
