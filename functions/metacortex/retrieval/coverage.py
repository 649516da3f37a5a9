"""Many-part questions: a question asking for a set gathers evidence from several days.

"What activities does Melanie partake in?", "Which cities has Jon visited?", "How many
tournaments has Nate won?" are answered by several memories, usually saved on different
days; the best-ranked ones tend to come from one day, where the question's words cluster.
For such a question (``asks_for_a_set``: English cues, a plural noun after "what" or
"which", "how many", "in what ways", "what are some") each further memory of a day
already represented (the day a memory happened, ``Memory.occurrence``) has its score
discounted, so the best of other days come up between them. A single-fact question is ranked as before.
Measured on LoCoMo per category (docs/benchmarks.md, "Many-part questions").
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import replace
from typing import Final

from metacortex.retrieval.fusion import Ranked, rank_key

# The score of the n-th memory of a day (n >= 2) is multiplied by DAY_DISCOUNT ** (n - 1)
# for a set question (1.0: off).
DAY_DISCOUNT: Final = 1.0

_WORD: Final = re.compile(r"[A-Za-z][A-Za-z'-]*")
_OTHER: Final = re.compile(r"^\s*how\s+many\b|\bin\s+what\s+ways\b|\bwhat\s+are\s+some\b", re.I)
_AUXILIARIES: Final = frozenset(
    "does do did has have had is are was were will can would could should".split()
)
_KIND_OF: Final = frozenset({"kind", "kinds", "type", "types", "sort", "sorts"})


def _plural(word: str) -> bool:
    word = word.lower().split("/")[0]
    return (
        len(word) >= 4
        and word.endswith("s")
        and not word.endswith(("ss", "us", "is"))
        and word not in _AUXILIARIES
    )


def asks_for_a_set(question: str) -> bool:
    """Whether ``question`` asks for several things (see the module's cues)."""
    if _OTHER.search(question):
        return True
    words = [word.lower() for word in _WORD.findall(question)]
    at = 1 if words[:1] == ["in"] else 0
    if len(words) <= at or words[at] not in ("what", "which"):
        return False
    at += 1
    if words[at : at + 1] and words[at] in _KIND_OF and words[at + 1 : at + 2] == ["of"]:
        at += 2
    if len(words) > at and _plural(words[at]):
        return True
    return (
        len(words) > at + 2
        and words[at] not in _AUXILIARIES
        and _plural(words[at + 1])
        and words[at + 2] in _AUXILIARIES
    )


def spread(ranked: Sequence[Ranked], discount: float = DAY_DISCOUNT) -> list[Ranked]:
    """``ranked`` (best first) with each day's second memory's score multiplied by
    ``discount``, its third's by ``discount`` squared, and so on, then sorted again:
    other days come up between them. Unchanged when ``discount`` is 1."""
    if discount >= 1.0 or not ranked:
        return list(ranked)
    seen: Counter[tuple[str, object]] = Counter()
    out: list[Ranked] = []
    for item in ranked:
        day = (item.memory.topic, item.memory.occurrence.at.date())
        factor = discount ** seen[day]
        seen[day] += 1
        out.append(
            replace(
                item,
                score=item.score * factor,
                semantic=item.semantic * factor,
                keyword=item.keyword * factor,
                time=item.time * factor,
            )
        )
    out.sort(key=rank_key)
    return out
