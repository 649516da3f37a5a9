"""How the console shows records: headings, human times, topic names in any case."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from metacortex.console.present import ago, exact, first_line, match_topic

NOW = datetime(2026, 12, 4, 15, 30, tzinfo=UTC)


def test_the_heading_is_the_first_line_with_text_cut_with_an_ellipsis() -> None:
    assert first_line("\n\n  Checklist 12  \n- rotate keys") == "Checklist 12"
    assert first_line("a  b\tc") == "a b c"
    assert first_line("x" * 200, limit=10) == "x" * 9 + "…"
    assert first_line("   ") == "(image)"


def test_times_read_as_people_say_them_and_exactly_in_utc() -> None:
    assert ago(NOW - timedelta(seconds=20), NOW) == "just now"
    assert ago(NOW - timedelta(minutes=5), NOW) == "5 min ago"
    assert ago(NOW - timedelta(hours=3, minutes=59), NOW) == "3 h ago"
    assert ago(NOW - timedelta(days=1, hours=2), NOW) == "yesterday"
    assert ago(NOW - timedelta(days=4), NOW) == "4 days ago"
    assert ago(datetime(2026, 3, 12, tzinfo=UTC), NOW) == "12 Mar"
    assert ago("2025-11-02T08:00:00.000Z", NOW) == "2 Nov 2025"
    assert ago(NOW + timedelta(days=3, hours=1), NOW) == "in 3 days"
    assert ago(None, NOW) == "—"
    assert exact("2026-03-12T14:03:22.123Z") == "2026-03-12 14:03:22 UTC"
    assert exact(datetime(2026, 3, 12, 16, 3, 22, tzinfo=UTC)) == "2026-03-12 16:03:22 UTC"


def test_a_typed_topic_names_itself_then_its_only_match_in_another_case() -> None:
    names = ["Work", "garden", "Garden-Roses", "work-travel"]

    assert match_topic("Work", names).topic == "Work"
    assert match_topic("WORK", names).topic == "Work"
    assert match_topic("GARDEN", names).topic == "garden"


def test_a_typed_topic_that_names_none_or_several_suggests_instead() -> None:
    several = match_topic("work", ["Work", "WORK", "work-travel"])
    containing = match_topic("gard", ["Work", "garden", "Garden-Roses"])
    nothing = match_topic("zzz", ["Work"])

    assert (several.topic, several.suggestions) == (None, ["WORK", "Work"])
    assert (containing.topic, containing.suggestions) == (None, ["garden", "Garden-Roses"])
    assert (nothing.topic, nothing.suggestions) == (None, [])
