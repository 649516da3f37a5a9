"""Where the console's relevance floor comes from: the top fused score of searches that
found their answer, of real questions asked of the wrong conversation, and of nonsense.

Search always returns its best candidates, so "no result" almost never happens; what
tells the owner search is failing is that even the best result scores like nothing
matched. This measures the best result's fused score (the ``top_score`` every
``search_context`` event records) on LoCoMo through the product's own save and search
path (as ``bench/locomo.py``) and picks the floor:

- **answered**: a question of categories 1-4 searched in its own conversation's topic
  whose evidence is in the top 10;
- **missed**: the same, evidence not in the top 10;
- **off-topic**: the question searched in another conversation's topic (its answer is
  not there);
- **nonsense**: made-up words (1-3 of 4-9 random letters, seeded) in every topic.

The floor is the lowest score (in steps of 0.01) that no nonsense query reaches; the
table shows what share of each kind clears each candidate. Old events (those without
the count of strong matches) are still judged by it on the console's activity page.

Then the judgement every match carries (``retrieval/relevance.py``, issue 39): for
each pair of thresholds (cosine similarity, keyword coverage), the share of each kind
of search with at least one strong match, and the share of the evidence turns found
(in the top 10 of answered searches) judged strong. The pair in the code is checked:
no nonsense search may have a strong match (else exit 1). The pair is chosen as the
pair leaving no nonsense search with a strong match that maximises the share of answered
searches with one minus the share of off-topic searches with one; leave-one-conversation-
out shows the pairs each fold would choose and the held-out shares.

    .venv/bin/python bench/relevance_floor.py --reuse /tmp/locomo.sqlite3
        # ingests once into that file (bench/locomo.py's --reuse file works too)
    .venv/bin/python bench/relevance_floor.py --json out.json
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Final

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.locomo import DATASET, ingest
from metacortex.console.activity import RELEVANCE_FLOOR
from metacortex.operations.progress import progress
from metacortex.providers.local import MODEL_NAME, MiniLMEmbedder
from metacortex.providers.offline_merge import SentenceUnionMerger
from metacortex.retrieval.relevance import STRONG_COVERAGE, STRONG_SIMILARITY, judged
from metacortex.service import Access, MemoryService
from metacortex.storage.sqlite import SQLiteStore

KINDS: Final = ("answered", "missed", "off-topic", "nonsense")
NONSENSE_PER_TOPIC: Final = 100
LETTERS: Final = "abcdefghijklmnopqrstuvwxyz"


def nonsense(rng: random.Random) -> str:
    return " ".join(
        "".join(rng.choice(LETTERS) for _ in range(rng.randint(4, 9)))
        for _ in range(rng.randint(1, 3))
    )


@dataclass(frozen=True, slots=True)
class Found:
    """One match's absolute evidence, and whether it is the question's evidence."""

    similarity: float | None
    coverage: float
    evidence: bool


@dataclass(frozen=True, slots=True)
class Searched:
    """One search's matches, and the conversation its question comes from."""

    conversation: str
    matches: list[Found]


def top_scores(
    service: MemoryService, files: list[Path], seed: int, known: dict[str, dict[str, str]]
) -> tuple[dict[str, list[float]], dict[str, list[Searched]]]:
    """The top score of every search, by kind, and every match's evidence. ``known``:
    turn ids already saved."""
    admin = Access.admin()
    cases, _, _ = ingest(service, files, known)
    topics = sorted(known)
    scores: dict[str, list[float]] = {kind: [] for kind in KINDS}
    evidence: dict[str, list[Searched]] = {kind: [] for kind in KINDS}

    def best(
        query: str, topic: str, wanted: frozenset[str] = frozenset()
    ) -> tuple[float, set[str], list[Found]]:
        matches = service.search(admin, query=query, filter_topic=topic, limit=10, explain=True)[
            "matches"
        ]
        found = [Found(m["similarity"], m["keyword_coverage"], m["id"] in wanted) for m in matches]
        return (matches[0]["score"] if matches else 0.0), {m["id"] for m in matches}, found

    with progress("search", len(cases) * 2 + len(topics) * NONSENSE_PER_TOPIC) as bar:
        for case in cases:
            topic = case.topic or ""
            wanted = frozenset(case.expected_ids)
            score, ids, found = best(case.query, topic, wanted)
            kind = "answered" if ids & wanted else "missed"
            scores[kind].append(score)
            evidence[kind].append(Searched(topic, found))
            other = topics[(topics.index(topic) + 1) % len(topics)]
            off_score, _, off_found = best(case.query, other)
            scores["off-topic"].append(off_score)
            evidence["off-topic"].append(Searched(topic, off_found))
            bar.advance(2)
        rng = random.Random(seed)
        for topic in topics:
            for _ in range(NONSENSE_PER_TOPIC):
                score, _, found = best(nonsense(rng), topic)
                scores["nonsense"].append(score)
                evidence["nonsense"].append(Searched(topic, found))
                bar.advance(1)
    return scores, evidence


def strong_share(searches: list[Searched], similarity: float | None, coverage: float) -> float:
    """The share of ``searches`` with at least one strong match."""
    if not searches:
        return 0.0
    return sum(
        any(
            judged(f.similarity, f.coverage, similarity, coverage) == "strong"
            for f in searched.matches
        )
        for searched in searches
    ) / len(searches)


def evidence_share(searches: list[Searched], similarity: float | None, coverage: float) -> float:
    """The share of the evidence matches found that are judged strong."""
    found = [f for searched in searches for f in searched.matches if f.evidence]
    if not found:
        return 0.0
    strong = sum(judged(f.similarity, f.coverage, similarity, coverage) == "strong" for f in found)
    return strong / len(found)


SIMILARITIES: Final = (0.45, 0.5, 0.55, 0.6, 0.65)
COVERAGES: Final = (0.4, 0.5, 0.6, 0.7, 0.8)


def choose(
    evidence: dict[str, list[Searched]], keep: Callable[[Searched], bool]
) -> tuple[float, float]:
    """The thresholds that leave no nonsense search of ``keep``'s with a strong match
    and, among those, maximise the share of answered searches with one minus the share
    of off-topic searches with one (ties: the higher thresholds)."""
    kept = {kind: [s for s in found if keep(s)] for kind, found in evidence.items()}
    pairs = [(s, c) for s in SIMILARITIES for c in COVERAGES]
    clean = [p for p in pairs if strong_share(kept["nonsense"], *p) == 0.0] or pairs
    return max(
        clean,
        key=lambda p: (
            strong_share(kept["answered"], *p) - strong_share(kept["off-topic"], *p),
            p,
        ),
    )


def share(values: list[float], floor: float) -> float:
    return sum(value >= floor for value in values) / len(values) if values else 0.0


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--dataset", type=Path, default=DATASET)
    parser.add_argument("--reuse", type=Path, help="SQLite file: ingest once, then only search")
    parser.add_argument("--seed", type=int, default=21)
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    args = parser.parse_args()
    files = sorted(args.dataset.glob("*.json"))
    if not files:
        print(f"no LoCoMo files in {args.dataset}; pass --dataset", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as folder:
        path = args.reuse or Path(folder) / "floor.sqlite3"
        store = SQLiteStore(path)
        service = MemoryService(store, MiniLMEmbedder.load(), merger=SentenceUnionMerger())
        # bench/locomo.py keeps the turn ids beside its --reuse file; so does this.
        id_file = path.with_suffix(".ids.json")
        known = json.loads(id_file.read_text()) if id_file.exists() else {}
        scores, evidence = top_scores(service, files, args.seed, known)
        id_file.write_text(json.dumps(known))
        store.close()
    candidates = [round(0.20 + step / 100, 2) for step in range(61)]
    floor = next(f for f in candidates if share(scores["nonsense"], f) == 0.0)
    print(f"{'floor':>6} " + " ".join(f"{kind:>10}" for kind in KINDS))
    for candidate in candidates:
        if abs(candidate - floor) <= 0.1001 and round(candidate * 100) % 2 == 0:
            marker = "  <- chosen" if candidate == floor else ""
            print(
                f"{candidate:6.2f} "
                + " ".join(f"{share(scores[kind], candidate):10.1%}" for kind in KINDS)
                + marker
            )
    print("searches: " + ", ".join(f"{kind} {len(scores[kind])}" for kind in KINDS))
    print(f"chosen floor {floor:.2f}; the console uses RELEVANCE_FLOOR = {RELEVANCE_FLOOR}")
    if args.json:
        figures = {
            "floor": floor,
            "counts": {kind: len(scores[kind]) for kind in KINDS},
            "cleared": {
                f"{c:.2f}": {kind: round(share(scores[kind], c), 4) for kind in KINDS}
                for c in candidates
            },
        }
        args.json.write_text(json.dumps(figures, indent=2))
    in_code = STRONG_SIMILARITY[MODEL_NAME]
    print()
    print("relevance (retrieval/relevance.py): share of searches with a strong match, and of")
    print("the evidence found (answered searches' top 10) judged strong")
    print(
        f"{'similarity':>10} {'coverage':>8} " + " ".join(f"{k:>10}" for k in KINDS) + " evidence"
    )
    grid: list[dict[str, float]] = []
    held_pairs: dict[str, list[bool]] = {kind: [] for kind in KINDS}
    for similarity in SIMILARITIES:
        for coverage in COVERAGES:
            row = {kind: strong_share(evidence[kind], similarity, coverage) for kind in KINDS}
            row["evidence"] = evidence_share(evidence["answered"], similarity, coverage)
            grid.append({"similarity": similarity, "coverage": coverage} | row)
            marker = (
                "  <- in the code" if (similarity, coverage) == (in_code, STRONG_COVERAGE) else ""
            )
            print(
                f"{similarity:10.2f} {coverage:8.2f} "
                + " ".join(f"{row[kind]:10.1%}" for kind in KINDS)
                + f" {row['evidence']:8.1%}{marker}"
            )
    # Leave one conversation out: thresholds chosen on four, the fifth's searches judged.
    print("leave-one-conversation-out:")
    for topic in sorted({s.conversation for found in evidence.values() for s in found}):
        pair = choose(evidence, lambda s, t=topic: s.conversation != t)  # type: ignore[misc]
        print(f"  {topic}: similarity {pair[0]:.2f}, coverage {pair[1]:.2f}")
        for kind in KINDS:
            held_pairs[kind] += [
                any(judged(f.similarity, f.coverage, *pair) == "strong" for f in s.matches)
                for s in evidence[kind]
                if s.conversation == topic
            ]
    print(
        "  held out: "
        + ", ".join(
            f"{kind} {sum(held_pairs[kind]) / max(1, len(held_pairs[kind])):.1%}" for kind in KINDS
        )
    )
    nonsense_strong = strong_share(evidence["nonsense"], in_code, STRONG_COVERAGE)
    print(f"nonsense searches with a strong match, as the code judges: {nonsense_strong:.1%}")
    if args.json:
        figures = json.loads(args.json.read_text()) | {"relevance": grid}
        args.json.write_text(json.dumps(figures, indent=2))
    # The fused floor judges only events recorded before matches were judged (the console's
    # activity page); what decides now is that no nonsense search has a strong match.
    return 0 if nonsense_strong == 0.0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
