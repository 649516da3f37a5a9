"""Time in ranking: memories that happened in the time a question names rise.

After fusion and conversational context (``retrieval/context.py``), each candidate
gains ``RANGE_WEIGHT`` times the share of its ``occurred_at`` period that falls in
the question's range (``timeline/question.py``): a memory of a day in October 2023
gains it all for "in October 2023", one dated "2023" a twelfth of it, one outside
nothing. A question asking when something happened ("When did...") favours memories
whose time was given or stated rather than taken from when they were saved, by
``WHEN_WEIGHT``. Scores are rescaled to stay in 0..1. Weights were chosen by
leave-one-conversation-out on LoCoMo's development split (docs/benchmarks.md).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Final

from metacortex.domain.occurrence import TimeSource
from metacortex.retrieval.fusion import Ranked, rank_key

RANGE_WEIGHT: Final = 0.2
WHEN_WEIGHT: Final = 0.05

_EARLIEST: Final = datetime.min.replace(tzinfo=UTC)
_LATEST: Final = datetime.max.replace(tzinfo=UTC)


@dataclass(frozen=True, slots=True)
class TimeWanted:
    """What a question asks of time: a range (either side may be open; both None: none)
    and whether it asks when something happened."""

    start: datetime | None = None
    end: datetime | None = None
    ranged: bool = False
    asks_when: bool = False


def in_time(
    ranked: Sequence[Ranked],
    wanted: TimeWanted,
    range_weight: float = RANGE_WEIGHT,
    when_weight: float = WHEN_WEIGHT,
) -> list[Ranked]:
    """``ranked`` re-scored for ``wanted`` (best first); unchanged when it asks nothing."""
    weight_range = range_weight if wanted.ranged else 0.0
    weight_when = when_weight if wanted.asks_when else 0.0
    if not ranked or (weight_range <= 0 and weight_when <= 0):
        return list(ranked)
    start = wanted.start or _EARLIEST
    end = wanted.end or _LATEST
    scale = 1.0 + weight_range + weight_when
    out: list[Ranked] = []
    for item in ranked:
        occurrence = item.memory.occurrence
        bonus = 0.0
        if weight_range:
            bonus += weight_range * occurrence.overlap(start, end)
        if weight_when and occurrence.source is not TimeSource.SAVED:
            bonus += weight_when
        out.append(
            replace(
                item,
                score=min(1.0, (item.score + bonus) / scale),
                semantic=item.semantic / scale,
                keyword=item.keyword / scale,
                time=bonus / scale,
            )
        )
    out.sort(key=rank_key)
    return out
