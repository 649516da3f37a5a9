"""What reading time costs (issue 39): dateparser's import and memory, each save's reading
of the time its text states, and each search's reading of the time its question names
and re-ranking by it, in CPU time (the cores here are shared: wall time moves with the
neighbours, this thread's CPU time hardly).

- import: a fresh interpreter that has loaded numpy (as a server has) imports
  ``metacortex.timeline`` and reads one time (dateparser's first parse loads its
  English locale); its CPU time and the growth of its RSS (VmRSS).
- per save: ``timeline.stated.stated_time`` on every turn of the LoCoMo development
  split, as ``bench/locomo.py`` saves them (speaker, session date, turn).
- per search: ``timeline.question.question_time`` on every question of the split, plus
  ``retrieval.when.in_time`` over 200 candidates (a search's fused candidates and their
  neighbours) and ``retrieval.relevance.keyword_coverage`` of 10 matches.

    .venv/bin/python bench/time_cost.py --dataset ../../shared/datasets/locomo/dev
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.locomo import DATASET, categorised, dataset_files, turns_of
from metacortex.domain.occurrence import Occurrence, Precision, TimeSource
from metacortex.domain.records import BranchState, Memory, Modality
from metacortex.retrieval.fusion import Ranked
from metacortex.retrieval.relevance import keyword_coverage
from metacortex.retrieval.when import TimeWanted, in_time
from metacortex.timeline.question import question_time
from metacortex.timeline.reader import TimeReader
from metacortex.timeline.stated import stated_time

NOW = datetime(2026, 12, 7, 12, tzinfo=UTC)
_IMPORT = """
import resource, time, numpy
def rss():
    for line in open('/proc/self/status'):
        if line.startswith('VmRSS:'):
            return int(line.split()[1]) / 1024
before, cpu = rss(), time.process_time()
from datetime import UTC, datetime
from metacortex.timeline.reader import TimeReader
TimeReader().warm()
print(time.process_time() - cpu, rss() - before)
"""


def cpu_ms(call: object, *args: object) -> float:
    started = time.thread_time_ns()
    call(*args)  # type: ignore[operator]
    return (time.thread_time_ns() - started) / 1e6


def summary(values: list[float]) -> str:
    ordered = sorted(values)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    mean, median = statistics.fmean(values), statistics.median(values)
    return f"mean {mean:.2f} ms, p50 {median:.2f}, p95 {p95:.2f}"


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--dataset", type=Path, default=DATASET)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    files = dataset_files(args.dataset)
    conversations = [json.loads(path.read_text(encoding="utf-8")) for path in files]
    imported = subprocess.run(  # noqa: S603 (this interpreter, a fixed script)
        [sys.executable, "-c", _IMPORT], capture_output=True, text=True, check=True
    ).stdout.split()
    import_cpu_s, import_rss_mb = float(imported[0]), float(imported[1])
    print(f"import + first parse: {import_cpu_s:.2f} s CPU, RSS +{import_rss_mb:.1f} MB")

    reader = TimeReader()
    reader.warm()
    texts = [turn.content for c in conversations for turn in turns_of(c)]
    saves = [cpu_ms(stated_time, reader, text, NOW) for text in texts]
    print(
        f"per save ({len(texts)} turns, {statistics.fmean(map(len, texts)):.0f} chars): "
        + summary(saves)
    )
    questions = [q for c in conversations for q, _, _ in categorised(c)]
    asked = [cpu_ms(question_time, reader, question, NOW) for question in questions]
    print(f"per search, the question ({len(questions)}): " + summary(asked))

    candidates = [
        Ranked(
            Memory(
                id=f"{i:026d}",
                content=text,
                retrieval_text=text,
                topic="t",
                branch_state=BranchState.ACTIVE,
                modality=Modality.TEXT,
                created_at=NOW,
                updated_at=NOW,
                occurred=Occurrence.of(
                    datetime(2023, 1 + i % 12, 1 + i % 28, tzinfo=UTC),
                    Precision.INSTANT,
                    TimeSource.STATED,
                ),
            ),
            score=1.0 - i / 200,
        )
        for i, text in enumerate(texts[:200])
    ]
    wanted = TimeWanted(datetime(2023, 10, 1, tzinfo=UTC), datetime(2023, 11, 1, tzinfo=UTC), True)
    ranking = [cpu_ms(in_time, candidates, wanted) for _ in range(200)]
    print("per search, in_time over 200 candidates: " + summary(ranking))
    weights = {"paint": 2.1, "sunris": 3.3, "melani": 1.2, "recent": 1.8}
    coverage = [
        cpu_ms(
            lambda: [keyword_coverage(c.memory.retrieval_text, weights) for c in candidates[:10]]
        )
        for _ in range(200)
    ]
    print("per search, relevance of 10 matches: " + summary(coverage))
    if args.json:
        args.json.write_text(
            json.dumps(
                {
                    "import_cpu_s": import_cpu_s,
                    "import_rss_mb": import_rss_mb,
                    "save_ms": saves,
                    "question_ms": asked,
                    "in_time_ms": ranking,
                    "relevance_ms": coverage,
                }
            )
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
