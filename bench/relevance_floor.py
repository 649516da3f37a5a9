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
table shows what share of each kind clears each candidate.

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
from pathlib import Path
from typing import Final

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.locomo import DATASET, ingest
from metacortex.console.activity import RELEVANCE_FLOOR
from metacortex.operations.progress import progress
from metacortex.providers.local import MiniLMEmbedder
from metacortex.providers.offline_merge import SentenceUnionMerger
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


def top_scores(
    service: MemoryService, files: list[Path], seed: int, known: dict[str, dict[str, str]]
) -> dict[str, list[float]]:
    """The top score of every search, by kind. ``known``: turn ids already saved."""
    admin = Access.admin()
    cases, _, _ = ingest(service, files, known)
    topics = sorted(known)
    scores: dict[str, list[float]] = {kind: [] for kind in KINDS}

    def best(query: str, topic: str) -> tuple[float, set[str]]:
        matches = service.search(admin, query=query, filter_topic=topic, limit=10)["matches"]
        return (matches[0]["score"] if matches else 0.0), {m["id"] for m in matches}

    with progress("search", len(cases) * 2 + len(topics) * NONSENSE_PER_TOPIC) as bar:
        for case in cases:
            topic = case.topic or ""
            score, found = best(case.query, topic)
            scores["answered" if found & set(case.expected_ids) else "missed"].append(score)
            other = topics[(topics.index(topic) + 1) % len(topics)]
            scores["off-topic"].append(best(case.query, other)[0])
            bar.advance(2)
        rng = random.Random(seed)
        for topic in topics:
            for _ in range(NONSENSE_PER_TOPIC):
                scores["nonsense"].append(best(nonsense(rng), topic)[0])
                bar.advance(1)
    return scores


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
        scores = top_scores(service, files, args.seed, known)
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
    return 0 if floor == RELEVANCE_FLOOR else 1


if __name__ == "__main__":
    raise SystemExit(main())
