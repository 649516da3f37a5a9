"""The service's tuning knobs, set by the composition root from ``Settings``."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import TYPE_CHECKING

from metacortex.retrieval.fusion import DENSE_WEIGHT
from metacortex.retrieval.when import RANGE_WEIGHT, WHEN_WEIGHT

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
    # Time (metacortex/timeline, retrieval/when.py): read when a saved text says it
    # happened and what time a question names, in these languages; how much a memory in
    # the question's time, and one with a time of its own for a "when" question, gains.
    read_times: bool = True
    time_languages: tuple[str, ...] = ("en",)
    time_range_weight: float = RANGE_WEIGHT
    time_when_weight: float = WHEN_WEIGHT
    time_strip_keywords: bool = False
    # Relevance (retrieval/relevance.py): the cosine similarity from which a match is
    # strong on meaning alone (None: the embedding model's measured one, if any).
    strong_similarity: float | None = None
    # Documents (usecases/documents.py): what one may cost to read, built at the first
    # document (importing the readers costs 0.1 s a server that reads none need not pay;
    # None: the defaults), and the size of the passages it is cut into.
    document_limits: Callable[[], DocumentLimits] | None = None
    passage_chars: int = DEFAULT_PASSAGE_CHARS
