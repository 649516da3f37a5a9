"""Finding and resolving time expressions in a text, with ``dateparser``.

``dateparser`` (BSD) finds date and time expressions in running text
(``search_dates``, its "split" strategy) and resolves relative ones ("yesterday",
"two weeks ago") against a reference instant. It returns points ("October 2023" is
read as a day of October); the period an expression names (an instant, a day, a
week, a month, a year) comes from parsing the expression found again with
``DateDataParser.get_date_data``, whose ``period`` says it.

Languages are fixed (``METACORTEX_TIME_LANGUAGES``, English by default), never
detected: detection costs seconds on the first call and tens of megabytes.

Guards, because the search reads some ordinary words as dates:

- before searching, words it misreads are masked (same length, so offsets hold):
  "we" (an abbreviation of Wednesday), the lower-case words "may", "march", "sat",
  "sun" and "now", "before", "after", "since" and "until" (it read "before 3 March
  2024" as "March" and "2024"; ``question`` reads them itself), and tokens mixing
  letters and digits ("v2", "b12x"), which make it drop the date next to them
  ("deployed v2 on 2024-03-10" found nothing);
- an expression found is trimmed of leading and trailing stop words ("in", "of",
  "a": "of September 2022 a" was read as a day) and kept only if it has a digit, a
  relative word ("last", "next", "ago", "yesterday", ...) or a capitalised word
  that does not start a sentence ("in May"); a bare number is kept only as a year
  between 1900 and 2100 ("ticket 4521" is no year, "18th" no day);
- a text read is at most ``MAX_CHARS`` characters from its start.

The masked words and the relative words are English: with other languages only
the letter-digit mask, the number rule and the length bound apply.

``dateparser`` is not known to be thread-safe: calls are serialized (each takes
about 1-4 ms).
"""

from __future__ import annotations

import re
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Final

from metacortex.domain.occurrence import Precision
from metacortex.retrieval.text import STOP_WORDS

# How much of a text is searched: a memory says when it happened near its start, and
# the search's cost grows with the text (about 0.02 ms a character).
MAX_CHARS: Final = 1000

# dateparser's periods, as a memory's precision ("part_of_day": "last night").
_PERIODS: Final = {
    "time": Precision.INSTANT,
    "part_of_day": Precision.DAY,
    "day": Precision.DAY,
    "week": Precision.WEEK,
    "month": Precision.MONTH,
    "year": Precision.YEAR,
}
_ENGLISH_MASK: Final = re.compile(
    r"\b(?:[Ww]e|may|march|sat|sun|now|[Bb]efore|[Aa]fter|[Ss]ince|[Uu]ntil)\b"
)
# Letters and digits mixed in one token, except ordinals and times ("3rd", "10am").
_MIXED: Final = re.compile(
    r"\b(?![0-9]+(?:st|nd|rd|th|am|pm|h)\b)"
    r"(?:[A-Za-z]+[0-9][A-Za-z0-9]*|[0-9]+[A-Za-z][A-Za-z0-9]*)\b"
)
_RELATIVE: Final = frozenset(
    """
    last next this past previous coming ago yesterday today tonight tomorrow
    """.split()
)
_TOKEN: Final = re.compile(r"[^\W_]+", re.UNICODE)
_YEAR: Final = re.compile(r"\b(1[0-9]{3}|2[0-9]{3})\b")
_NUMBER_ONLY: Final = re.compile(r"[0-9]+(?:st|nd|rd|th)?")
_SENTENCE_END: Final = re.compile(r"[.!?:]\s*$")
# A quick look before dateparser: a text with no digit and none of these words names no
# time dateparser would read in English.
_MAYBE_TIME: Final = re.compile(
    r"[0-9]|\b(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?"
    r"|sept?(?:ember)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?|mon(?:day)?|tue(?:s(?:day)?)?"
    r"|wed(?:nesday)?|thu(?:rs(?:day)?)?|fri(?:day)?|sat(?:urday)?|sun(?:day)?|yesterday"
    r"|today|tonight|tomorrow|ago|last|next|weeks?|months?|years?|weekends?|noon|morning"
    r"|evening|night)\b",
    re.IGNORECASE,
)


@dataclass(frozen=True, slots=True)
class TimeExpression:
    """One expression found: where it is in the text (``start``/``end``), what it
    resolves to (``at``, aware UTC: dateparser's point, e.g. a day of a month), the period
    it names, whether it names a year (``absolute``: it does not depend on the
    reference instant) and whether it is said relative to the reference ("yesterday",
    "last week", "two weeks ago"); a date without a year is neither ("in June")."""

    text: str
    start: int
    end: int
    at: datetime
    precision: Precision
    absolute: bool
    relative: bool = False


class TimeReader:
    def __init__(self, languages: Sequence[str] = ("en",), max_chars: int = MAX_CHARS) -> None:
        if not languages:
            raise ValueError("TimeReader needs at least one language")
        self._languages = list(languages)
        self._english = "en" in self._languages
        self._max_chars = max_chars
        self._lock = threading.Lock()
        self._parser: Any = None
        self._search: Any = None

    def warm(self) -> None:
        """Import dateparser and parse once (its first call loads its locale data)."""
        self.expressions("on 1 May 2024", datetime(2024, 5, 8, tzinfo=UTC))

    def expressions(
        self, text: str, reference: datetime, *, until_absolute: bool = False
    ) -> list[TimeExpression]:
        """The time expressions of ``text`` (its first ``MAX_CHARS``), in order, relative
        ones resolved against ``reference``; dates in the past are preferred ("in June"
        is the last June before the reference). ``until_absolute``: none after the first
        that names its year (each costs a parse)."""
        text = text[: self._max_chars]
        if not text.strip() or (self._english and not _MAYBE_TIME.search(text)):
            return []
        masked = _MIXED.sub(_blank, text)
        if self._english:
            masked = _ENGLISH_MASK.sub(_blank, masked)
        base = reference.astimezone(UTC).replace(tzinfo=None)
        with self._lock:
            found = self._found(masked, base)
            kept: list[TimeExpression] = []
            for span, at in found:
                expression = self._expression(text, masked, span, at, base)
                if expression is not None:
                    kept.append(expression)
                    if until_absolute and expression.absolute:
                        break
        return _with_shared_year(kept)

    def resolved(self, expression: TimeExpression, reference: datetime) -> TimeExpression:
        """``expression`` read again against another reference instant (a relative one
        moves; one naming its year does not)."""
        base = reference.astimezone(UTC).replace(tzinfo=None)
        with self._lock:
            found = self._period(expression.text, base)
        if found is None:
            return expression
        point, precision = found
        return TimeExpression(
            expression.text,
            expression.start,
            expression.end,
            point.replace(tzinfo=UTC),
            precision,
            expression.absolute,
            expression.relative,
        )

    # ------------------------------------------------------------- internals
    def _settings(self, base: datetime) -> dict[str, Any]:
        return {
            "RELATIVE_BASE": base,
            "PREFER_DATES_FROM": "past",
            "RETURN_TIME_AS_PERIOD": True,
            "RETURN_AS_TIMEZONE_AWARE": False,
            "TIMEZONE": "UTC",
            "TO_TIMEZONE": "UTC",
        }

    def _found(self, masked: str, base: datetime) -> list[tuple[str, datetime]]:
        if self._search is None:
            from dateparser.search import search_dates

            self._search = search_dates
        found = self._search(masked, languages=self._languages, settings=self._settings(base))
        return list(found or [])

    def _period(self, span: str, base: datetime) -> tuple[datetime, Precision] | None:
        from dateparser.date import DateDataParser

        parser = DateDataParser(languages=self._languages, settings=self._settings(base))
        data = parser.get_date_data(span)
        if data.date_obj is None:
            return None
        precision = _PERIODS.get(str(data.period))
        if precision is None:
            return None
        return data.date_obj, precision

    def _expression(
        self, text: str, masked: str, span: str, at: datetime, base: datetime
    ) -> TimeExpression | None:
        located = _locate(masked, span)
        if located is None:
            return None
        start, end = _trimmed(masked, *located)
        if start >= end:
            return None
        written = text[start:end]
        if not self._plausible(text, written, start):
            return None
        resolved = self._period(masked[start:end], base)
        if resolved is None:
            return None
        point, precision = resolved
        words = {token.lower() for token in _TOKEN.findall(written)}
        return TimeExpression(
            text=written,
            start=start,
            end=end,
            at=point.replace(tzinfo=UTC),
            precision=precision,
            absolute=_YEAR.search(written) is not None,
            relative=bool(words & _RELATIVE),
        )

    def _plausible(self, text: str, written: str, start: int) -> bool:
        """The guards above (a false date costs more than a missed one)."""
        tokens = _TOKEN.findall(written)
        if not tokens:
            return False
        if len(tokens) == 1 and _NUMBER_ONLY.fullmatch(tokens[0]):
            number = int(re.sub(r"\D", "", tokens[0]))
            return bool(_YEAR.fullmatch(tokens[0])) and 1900 <= number <= 2100
        if any(char.isdigit() for char in written):
            return True
        if not self._english:
            return True
        if any(token.lower() in _RELATIVE for token in tokens):
            return True
        sentence_start = start == 0 or bool(_SENTENCE_END.search(text[:start]))
        capitalised = [token for token in tokens if token[:1].isupper()]
        if sentence_start and capitalised and capitalised[0] == tokens[0]:
            capitalised = capitalised[1:]
        return bool(capitalised)


def _blank(match: re.Match[str]) -> str:
    return "#" * len(match.group(0))


def _locate(text: str, span: str) -> tuple[int, int] | None:
    at = text.find(span)
    return None if at < 0 else (at, at + len(span))


def _trimmed(text: str, start: int, end: int) -> tuple[int, int]:
    """``[start, end)`` without leading and trailing stop words and punctuation."""
    tokens = [
        (match.start() + start, match.end() + start) for match in _TOKEN.finditer(text[start:end])
    ]
    while tokens and text[tokens[0][0] : tokens[0][1]].lower() in STOP_WORDS:
        tokens.pop(0)
    while tokens and text[tokens[-1][0] : tokens[-1][1]].lower() in STOP_WORDS:
        tokens.pop()
    if not tokens:
        return start, start
    return tokens[0][0], tokens[-1][1]


def _with_shared_year(found: list[TimeExpression]) -> list[TimeExpression]:
    """Dates without a year read in the year the same text names alone ("between August
    11 and August 15 2023": both in 2023); the bare year itself is then dropped."""
    years = [e for e in found if e.precision is Precision.YEAR and e.absolute]
    undated = [e for e in found if not e.absolute and not e.relative]
    if len(years) != 1 or not undated or any(e.absolute and e not in years for e in found):
        return found
    year = years[0].at.year
    out: list[TimeExpression] = []
    for expression in found:
        if expression is years[0]:
            continue
        if expression in undated:
            try:
                moved = expression.at.replace(year=year)
            except ValueError:  # 29 February
                out.append(expression)
                continue
            expression = TimeExpression(
                expression.text,
                expression.start,
                expression.end,
                moved,
                expression.precision,
                absolute=True,
            )
        out.append(expression)
    return out
