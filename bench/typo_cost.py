"""What typo tolerance costs a search on a large store (issue 32), in-process.

Opens a SQLite store built by ``bench/scale.py`` (a copy: searching loads its keyword
index, which writes nothing, but keep the original untouched anyway) and runs LoCoMo
questions through ``MemoryService.search`` as the server does, each one four ways,
interleaved: clean and misspelled (``bench/locomo.py``'s ``misspelled``, every word of
5+ letters once), with typo tolerance on and off; each in a random topic of the corpus
or, with ``--everywhere``, over the whole space. Prints p50 / p95 wall time and mean
CPU time (this process, all threads) per search.

    .venv/bin/python bench/typo_cost.py /tmp/scale/100000/data/metacortex.sqlite3
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.locomo import DATASET, misspelled
from bench.scale import TOPICS, questions, topic_name
from metacortex.providers.local import MiniLMEmbedder
from metacortex.providers.offline_merge import SentenceUnionMerger
from metacortex.service import Access, MemoryService, ServiceOptions
from metacortex.storage.sqlite import SQLiteStore


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("database", type=Path)
    parser.add_argument("--dataset", type=Path, default=DATASET)
    parser.add_argument("--searches", type=int, default=100)
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--seed", type=int, default=1, help="the misspellings' seed")
    parser.add_argument("--everywhere", action="store_true", help="no topic filter")
    args = parser.parse_args()
    store = SQLiteStore(args.database)
    embedder = MiniLMEmbedder.load()
    services = {
        on: MemoryService(
            store, embedder, merger=SentenceUnionMerger(), options=ServiceOptions(typo_tolerance=on)
        )
        for on in (False, True)
    }
    store.keyword_index_loaded()
    admin = Access.admin()
    rng = random.Random(23)
    asked = rng.sample(questions(args.dataset), args.warmup + args.searches)
    walls: dict[tuple[str, bool], list[float]] = {}
    cpus: dict[tuple[str, bool], list[float]] = {}
    for n, question in enumerate(asked):
        topic = None if args.everywhere else topic_name(rng.randrange(TOPICS))
        for kind, query in (("clean", question), ("misspelled", misspelled(question, args.seed))):
            for on, service in services.items():
                wall, cpu = time.perf_counter(), time.process_time()
                service.search(admin, query=query, filter_topic=topic)
                if n >= args.warmup:
                    walls.setdefault((kind, on), []).append(time.perf_counter() - wall)
                    cpus.setdefault((kind, on), []).append(time.process_time() - cpu)
    print("| questions | typo tolerance | p50 / p95 wall | CPU per search |")
    print("|---|---|---|---|")
    for (kind, on), times in walls.items():
        cuts = statistics.quantiles(times, n=20)
        print(
            f"| {kind} | {'on' if on else 'off'} | {1000 * statistics.median(times):.1f} /"
            f" {1000 * cuts[18]:.1f} ms | {1000 * statistics.mean(cpus[(kind, on)]):.1f} ms |"
        )
    store.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
