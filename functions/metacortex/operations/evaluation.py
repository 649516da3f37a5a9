"""Retrieval evaluation: cases, metrics, a synthetic corpus, and cases from real usage.

A case is a query plus the ids that answer it. ``run_cases`` searches each one
through the service and reports hit@k, recall@k, MRR, the zero-result rate and
latency percentiles. Cases come from ``synthetic_corpus`` (an isolated,
deterministic corpus with paraphrased questions and rare exact terms) or from
``cases_from_events``: a search followed by a fetch of one of its results by the
same client is evidence that the fetched memory answered that query.
"""

from __future__ import annotations

import json
import math
import random
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from metacortex.operations.progress import progress
from metacortex.service import Access, MemoryService

KS = (1, 5, 10)


@dataclass(frozen=True, slots=True)
class Case:
    query: str
    expected_ids: tuple[str, ...]
    topic: str | None = None
    label: str = ""
    # The state searched; None is the default (active). The original's cases name one.
    state: str | None = None


@dataclass(slots=True)
class Report:
    cases: int
    recall: dict[int, float]
    hit: dict[int, float]
    mrr: float
    zero_result_rate: float
    latency_ms_p50: float
    latency_ms_p95: float
    misses: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["recall"] = {f"@{k}": v for k, v in self.recall.items()}
        data["hit"] = {f"@{k}": v for k, v in self.hit.items()}
        return data

    def table(self) -> str:
        lines = [f"cases           {self.cases}"]
        lines += [f"recall@{k:<8} {self.recall[k]:.3f}" for k in KS]
        lines += [f"hit@{k:<11} {self.hit[k]:.3f}" for k in KS]
        lines += [
            f"MRR             {self.mrr:.3f}",
            f"zero-result     {self.zero_result_rate:.3f}",
            f"latency p50     {self.latency_ms_p50:.1f} ms",
            f"latency p95     {self.latency_ms_p95:.1f} ms",
        ]
        return "\n".join(lines)


def percentile(values: Sequence[float], fraction: float) -> float:
    """Nearest-rank percentile (0 for no values)."""
    if not values:
        return 0.0
    ordered = sorted(values)
    rank = max(0, min(len(ordered) - 1, math.ceil(fraction * len(ordered)) - 1))
    return ordered[rank]


def score_ranking(
    rankings: Sequence[Sequence[str]],
    expected: Sequence[Iterable[str]],
    latencies_ms: Sequence[float],
) -> Report:
    """Metrics over ranked id lists; ``expected[i]`` answers ``rankings[i]``."""
    count = len(rankings)
    recall = dict.fromkeys(KS, 0.0)
    hit = dict.fromkeys(KS, 0.0)
    reciprocal = 0.0
    zero = 0
    for ranking, wanted_ids in zip(rankings, expected, strict=True):
        wanted = set(wanted_ids)
        if not ranking:
            zero += 1
        for k in KS:
            found = wanted.intersection(ranking[:k])
            recall[k] += len(found) / len(wanted) if wanted else 0.0
            hit[k] += 1.0 if found else 0.0
        for position, memory_id in enumerate(ranking, start=1):
            if memory_id in wanted:
                reciprocal += 1.0 / position
                break
    divide = max(count, 1)
    return Report(
        cases=count,
        recall={k: v / divide for k, v in recall.items()},
        hit={k: v / divide for k, v in hit.items()},
        mrr=reciprocal / divide,
        zero_result_rate=zero / divide,
        latency_ms_p50=percentile(latencies_ms, 0.50),
        latency_ms_p95=percentile(latencies_ms, 0.95),
    )


def run_cases(
    service: MemoryService,
    cases: Sequence[Case],
    *,
    limit: int = 10,
    access: Access | None = None,
    clock: Callable[[], float] = time.perf_counter,
) -> Report:
    who = access or Access.admin()
    rankings: list[list[str]] = []
    latencies: list[float] = []
    with progress("evaluate", len(cases), unit="case") as bar:
        for case in cases:
            started = clock()
            result = service.search(
                who, query=case.query, filter_topic=case.topic, filter_state=case.state, limit=limit
            )
            latencies.append((clock() - started) * 1000)
            rankings.append([match["id"] for match in result["matches"]])
            bar.advance(1)
    report = score_ranking(rankings, [c.expected_ids for c in cases], latencies)
    report.misses = [
        case.label or case.query
        for case, ranking in zip(cases, rankings, strict=True)
        if not set(case.expected_ids).intersection(ranking[:limit])
    ]
    return report


def save_cases(cases: Sequence[Case], path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        "\n".join(json.dumps(asdict(c), sort_keys=True, ensure_ascii=False) for c in cases) + "\n",
        encoding="utf-8",
    )


def load_cases(path: Path) -> list[Case]:
    cases = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            raw = json.loads(line)
            cases.append(
                Case(
                    query=str(raw["query"]),
                    expected_ids=tuple(raw["expected_ids"]),
                    topic=raw.get("topic"),
                    label=str(raw.get("label", "")),
                    state=raw.get("state"),
                )
            )
        except (ValueError, KeyError, TypeError) as error:
            raise ValueError(f"{path}:{number}: not a case ({error})") from None
    return cases


# ----------------------------------------------------------- synthetic corpus
_PEOPLE = ["Ana", "Bilal", "Chen", "Dara", "Emeka", "Farah", "Goran", "Hana", "Ivo", "Jun"]
_FACTS: tuple[tuple[str, str], ...] = (
    ("{p} prefers {x} for code review.", "What does {p} like to use for reviewing code?"),
    ("{p}'s on-call rotation starts on {d}.", "When does {p} begin on-call duty?"),
    ("The {x} service is owned by {p}.", "Who is responsible for the {x} service?"),
    ("{p} is allergic to {x}.", "What food allergy does {p} have?"),
    ("{p} moved the team sync to {d}.", "Which day is the team meeting now, according to {p}?"),
)
_THINGS = ["walnuts", "shellfish", "gitlab", "billing", "search", "gerrit", "ledger", "sesame"]
_DAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday"]


def synthetic_corpus(
    service: MemoryService, *, seed: int = 7, topics: int = 3, per_topic: int = 40
) -> list[Case]:
    """Saves a deterministic corpus through ``service`` and returns its cases.

    Point ``service`` at an isolated store (``memory_vectors_eval`` on Firestore,
    a separate file on SQLite): the corpus must never mix with real memories.
    """
    rng = random.Random(seed)  # noqa: S311 - reproducible test data, not secrets
    admin = Access.admin()
    cases: list[Case] = []
    with progress("seed corpus", topics * per_topic) as bar:
        for t in range(topics):
            topic = f"eval-{t}"
            for index in range(per_topic):
                person = rng.choice(_PEOPLE)
                fact, question = _FACTS[index % len(_FACTS)]
                values = {"p": person, "x": rng.choice(_THINGS), "d": rng.choice(_DAYS)}
                code = f"EV-{t}{index:03d}-{rng.randrange(16**4):04x}"
                content = fact.format(**values) + f" Ticket {code}."
                saved = service.save(admin, content=content, topic=topic)["item"]["id"]
                cases.append(Case(question.format(**values), (saved,), topic, f"paraphrase {code}"))
                if index % 4 == 0:
                    cases.append(Case(code, (saved,), topic, f"exact term {code}"))
                bar.advance(1)
    return cases


def cases_from_events(events: Sequence[dict[str, Any]]) -> list[Case]:
    """Search-then-fetch evidence from ``retrieval_query_events``.

    Each search event (``event_type == "search"``: ``query``, ``filters``,
    ``result_ids``, ``client_id``) becomes a case when a later fetch event
    (``event_type == "fetch"``, ``fetched_ids``) of the same client fetched one
    of its results before that client's next search.
    """
    cases: list[Case] = []
    open_searches: dict[str, tuple[dict[str, Any], set[str]]] = {}
    for event in events:
        client = str(event.get("client_id", ""))
        kind = event.get("event_type")
        if kind == "search":
            _close(open_searches.pop(client, None), cases)
            open_searches[client] = (event, set())
        elif kind == "fetch" and client in open_searches:
            search, fetched = open_searches[client]
            results = set(search.get("result_ids") or ())
            fetched.update(set(event.get("fetched_ids") or ()) & results)
    for pending in open_searches.values():
        _close(pending, cases)
    return cases


def _close(pending: tuple[dict[str, Any], set[str]] | None, cases: list[Case]) -> None:
    if pending is None or not pending[1]:
        return
    search, fetched = pending
    filters = search.get("filters") or {}
    cases.append(
        Case(
            query=str(search["query"]),
            expected_ids=tuple(sorted(fetched)),
            topic=filters.get("topic"),
            label="from events",
            state=filters.get("state"),
        )
    )
