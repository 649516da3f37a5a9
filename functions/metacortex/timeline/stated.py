"""When a saved text says it happened: the ``stated`` ``occurred_at`` of a memory.

The first date the text names with its year ("on 8 May, 2023", "2024-03-10", "in
2021") is when it happened, at the precision it is written with (a time of day makes
it an instant). A text that names no year but a date ("on March 3") or a relative
time ("yesterday", "two weeks ago") is read against the memory's own time (``reference``:
when it was saved), dates preferring the past. A text naming no time has no stated time.
"""

from __future__ import annotations

from datetime import datetime

from metacortex.domain.occurrence import Occurrence, TimeSource
from metacortex.timeline.reader import TimeExpression, TimeReader


def stated_time(reader: TimeReader, text: str, reference: datetime) -> Occurrence | None:
    """The time ``text`` says it happened, or None."""
    found = reader.expressions(text, reference, until_absolute=True)
    chosen = _first(found)
    if chosen is None:
        return None
    return Occurrence.of(chosen.at, chosen.precision, TimeSource.STATED)


def _first(found: list[TimeExpression]) -> TimeExpression | None:
    for expression in found:
        if expression.absolute:
            return expression
    return found[0] if found else None
