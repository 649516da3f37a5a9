"""The service's tuning knobs, set by the composition root from ``Settings``."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from metacortex.retrieval.fusion import DENSE_WEIGHT


@dataclass(frozen=True, slots=True)
class ServiceOptions:
    search_result_limit: int = 5
    dedupe_window: timedelta = timedelta(minutes=15)
    # Ranking knobs (retrieval/fusion.py, retrieval/context.py; docs/benchmarks.md).
    dense_weight: float = DENSE_WEIGHT
    conversational_context: bool = True
