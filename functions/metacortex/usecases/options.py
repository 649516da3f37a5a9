"""The service's tuning knobs, set by the composition root from ``Settings``."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import TYPE_CHECKING

from metacortex.retrieval.fusion import DENSE_WEIGHT

if TYPE_CHECKING:
    from metacortex.documents import DocumentLimits

# The passage size (characters) measured best on LoCoMo (docs/DOCUMENTS.md, "Passage size").
DEFAULT_PASSAGE_CHARS = 1000


@dataclass(frozen=True, slots=True)
class ServiceOptions:
    search_result_limit: int = 5
    dedupe_window: timedelta = timedelta(minutes=15)
    # Ranking knobs (retrieval/fusion.py, retrieval/context.py; docs/benchmarks.md).
    dense_weight: float = DENSE_WEIGHT
    conversational_context: bool = True
    typo_tolerance: bool = True
    # Documents (usecases/documents.py): what one may cost to read, built at the first
    # document (importing the readers costs 0.1 s a server that reads none need not pay;
    # None: the defaults), and the size of the passages it is cut into.
    document_limits: Callable[[], DocumentLimits] | None = None
    passage_chars: int = DEFAULT_PASSAGE_CHARS
