"""The ranking experiment of issue 32: let relations move search results.

Applied to a search's matches (best first, with their scores and the ``related``
neighbours every result carries: no read beyond the one the search already made), two
rules:

1. Linked evidence: every memory linked to one of the ``top`` matches gains
   ``weight`` times that match's score, summed over the top matches it is linked to,
   so a memory linked to several of them rises most. A neighbour the search did not
   return enters the ranking with the gain alone.
2. Supersession: a match whose ``related`` names what replaced it (an incoming
   ``supersedes``: ``related`` shows only neighbours the caller may read) yields to it:
   the replacement is placed just above it.

Bench-only (``bench/locomo.py --relation-ranking``): measured against the product's
ranking in docs/benchmarks.md, "Relations and ranking (issue 32)", and not kept in
``usecases/search.py`` because it did not improve LoCoMo (see there).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

TOP: Final = 5
WEIGHT: Final = 0.2
# How far above the superseded match its replacement is placed.
_ABOVE: Final = 1e-6


@dataclass(frozen=True, slots=True)
class LinkedRanking:
    top: int = TOP
    weight: float = WEIGHT

    def rerank(self, matches: Sequence[Mapping[str, Any]]) -> list[str]:
        """The ids of ``matches`` (search results, best first) in their new order, with
        the neighbours they name that the search did not return."""
        scores = {str(m["id"]): float(m["score"]) for m in matches}
        final = dict(scores)
        replaced_by: dict[str, str] = {}
        for match in matches[: self.top]:
            memory_id, score = str(match["id"]), float(match["score"])
            for neighbour in match.get("related", ()):
                other = str(neighbour["id"])
                if neighbour["type"] == "supersedes":
                    if neighbour["direction"] == "incoming":
                        replaced_by[memory_id] = other
                    continue
                if other != memory_id:
                    final[other] = final.get(other, 0.0) + self.weight * score
        for old, new in replaced_by.items():
            final[new] = max(final.get(new, 0.0), final[old] + _ABOVE)
        return sorted(final, key=lambda memory_id: -final[memory_id])
