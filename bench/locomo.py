"""LoCoMo retrieval benchmark through the product's own save and search path.

Protocol (../shared/datasets/locomo/README.md): every dialog turn is one memory
(speaker, session date, turn text, photo caption when present) saved one at a
time with the conversation as its topic; every question of categories 1-4 with
evidence is a search restricted to its conversation's topic. Reports recall,
hit rate and MRR at 1/5/10, search latency p50/p95 and the ingest rate.
Searches run as ``metacortex serve`` runs them: with the warm heap frozen
(``metacortex/heap.py``) once the memories are in; ``--no-freeze`` to compare.

    .venv/bin/python bench/locomo.py                  # SQLite + local model
    .venv/bin/python bench/locomo.py --store firestore # starts the Firestore emulator
    .venv/bin/python bench/locomo.py --conversations 30 # one conversation
    .venv/bin/python bench/locomo.py --json out.json
    .venv/bin/python bench/locomo.py --reuse /tmp/locomo.sqlite3 --per-conversation
        # ingest once into that file, later runs only search (iterate on ranking)
    .venv/bin/python bench/locomo.py --time-given       # texts without the session date,
        # which each save gives as occurred_at instead
    .venv/bin/python bench/locomo.py --typos 1          # every question word of 5+
        # letters misspelled once (seeded); --no-typo-tolerance for exact keywords
    .venv/bin/python bench/locomo.py --link-turns --relation-ranking
        # each turn saved with a relates_to relation to the turn before it in its
        # session (save_context's relations), then searched with relations moving
        # results (bench/linked_ranking.py; issue 32's ranking experiment)

Every run also reports recall per question category (LoCoMo's 1 multi-hop, 2 temporal,
3 open-domain, 4 single-hop) and for the questions that name a time (``names_a_time``).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import string
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final

from metacortex.composition import build_store
from metacortex.config import Settings
from metacortex.heap import freeze_startup_heap
from metacortex.operations.evaluation import Case, Report, score_ranking
from metacortex.operations.progress import progress
from metacortex.providers.local import MiniLMEmbedder
from metacortex.providers.offline_merge import SentenceUnionMerger
from metacortex.retrieval.fusion import DENSE_WEIGHT
from metacortex.service import Access, MemoryService, ServiceOptions
from metacortex.storage.base import MemoryStore
from metacortex.storage.sqlite import SQLiteStore

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.linked_ranking import TOP, WEIGHT, LinkedRanking

DATASET = Path(__file__).resolve().parent.parent.parent / "shared" / "datasets" / "locomo" / "dev"
QUESTION_CATEGORIES = {1, 2, 3, 4}
# LoCoMo's question categories as its paper and its released file number them.
CATEGORY_NAMES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}


_WORD = re.compile(r"[A-Za-z]+")
TYPO_MIN_LETTERS = 5


def misspelled(question: str, seed: int) -> str:
    """``question`` with every word of ``TYPO_MIN_LETTERS`` letters or more misspelled
    once: a letter inserted, deleted, replaced or swapped with its neighbour, chosen
    at random (the same for the same seed and question, whatever else is run)."""
    rng = random.Random(f"{seed}:{question}")

    def one(match: re.Match[str]) -> str:
        word = match.group(0)
        if len(word) < TYPO_MIN_LETTERS:
            return word
        at = rng.randrange(len(word))
        kind = rng.choice(("insert", "delete", "replace", "transpose"))
        if kind == "transpose":
            swappable = [i for i in range(len(word) - 1) if word[i] != word[i + 1]]
            if swappable:
                i = rng.choice(swappable)
                return word[:i] + word[i + 1] + word[i] + word[i + 2 :]
            kind = "replace"
        if kind == "insert":
            return word[:at] + rng.choice(string.ascii_lowercase) + word[at:]
        if kind == "delete":
            return word[:at] + word[at + 1 :]
        other = rng.choice([c for c in string.ascii_lowercase if c != word[at].lower()])
        return word[:at] + other + word[at + 1 :]

    return _WORD.sub(one, question)


@dataclass(frozen=True, slots=True)
class Turn:
    dia_id: str
    content: str
    # The session's date and time (UTC, ISO 8601; "" when the file has none): saved as the
    # memory's occurred_at with ``--time-given``.
    when: str = ""


def session_time(text: str) -> str:
    """LoCoMo's "1:56 pm on 8 May, 2023" as ISO 8601 (the bench reads the dataset's own
    field; the product never parses this format)."""
    try:
        parsed = datetime.strptime(text.strip(), "%I:%M %p on %d %B, %Y")
    except ValueError:
        return ""
    return parsed.replace(tzinfo=UTC).isoformat()


def turns_of(conversation: dict[str, Any], *, dated: bool = True) -> list[Turn]:
    """Every turn as a memory's text: speaker, session date (unless ``dated`` is False:
    then the text is speaker and turn only, the date in ``Turn.when``), turn, photo."""
    turns: list[Turn] = []
    session = 1
    while f"session_{session}" in conversation:
        date = conversation.get(f"session_{session}_date_time", "")
        for turn in conversation[f"session_{session}"]:
            head = f"{turn['speaker']} ({date})" if dated else turn["speaker"]
            text = f"{head}: {turn['text']}"
            if turn.get("blip_caption"):
                text += f" [shared a photo: {turn['blip_caption']}]"
            turns.append(Turn(turn["dia_id"], text, session_time(date)))
        session += 1
    return turns


def dataset_files(dataset: Path) -> list[Path]:
    """The conversations of ``dataset`` (a folder of LoCoMo JSON files), or exit 2 saying
    where none were found."""
    files = sorted(dataset.glob("*.json"))
    if not files:
        print(f"no LoCoMo files in {dataset}; pass --dataset", file=sys.stderr)
        raise SystemExit(2)
    return files


def questions_of(conversation: dict[str, Any]) -> list[tuple[str, list[str]]]:
    return [(question, evidence) for question, evidence, _ in categorised(conversation)]


def categorised(conversation: dict[str, Any]) -> list[tuple[str, list[str], int]]:
    """The searched questions with their evidence and category."""
    return [
        (qa["question"], list(qa["evidence"]), int(qa["category"]))
        for qa in conversation["qa"]
        if qa.get("category") in QUESTION_CATEGORIES and qa.get("evidence")
    ]


# The bench's rule for "a question that names a time" (issue 39), applied to the
# question's words only (never in the product): it contains, as whole words and in any
# case, a month name (January ... December), a year from 1900 to 2099, a weekday name,
# yesterday / today / tonight / tomorrow, "<last|next|this|past> <week|weekend|month|
# year|night|summer|winter|spring|autumn>", or "<a number or a number word> <days|weeks|
# months|years> ago". Vague words ("recently", "lately") and seasons on their own do
# not count. 101 of the development split's 759 searched questions match (15 temporal).
NAMES_A_TIME: Final = re.compile(
    r"\b(?:january|february|march|april|may|june|july|august|september|october|november"
    r"|december|19\d\d|20\d\d|monday|tuesday|wednesday|thursday|friday|saturday|sunday"
    r"|yesterday|today|tonight|tomorrow"
    r"|(?:last|next|this|past)\s+(?:week|weekend|month|year|night|summer|winter|spring|autumn)"
    r"|(?:\d+|a|an|one|two|three|four|five|six|seven|eight|nine|ten)\s+"
    r"(?:days?|weeks?|months?|years?)\s+ago)\b",
    re.IGNORECASE,
)


NAMES_A_TIME_LABEL: Final = "names a time"


def names_a_time(question: str) -> bool:
    return NAMES_A_TIME.search(question) is not None


def session_of(dia_id: str) -> str:
    """``D3`` of ``D3:12``: the session a turn belongs to."""
    return dia_id.split(":", 1)[0]


@contextmanager
def emulator_for(store_kind: str) -> Iterator[None]:
    """The real Firestore emulator for ``--store firestore`` (same launcher as the tests)."""
    if store_kind != "firestore":
        yield
        return
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from tests.firestore_support import Emulator, find_emulator

    command, why = find_emulator()
    if command is None:
        raise SystemExit(f"the Firestore emulator cannot run here: {why}")
    emulator = Emulator(command)
    emulator.wait_ready()
    os.environ["FIRESTORE_EMULATOR_HOST"] = emulator.host  # read by the google client
    try:
        yield
    finally:
        emulator.stop()


def open_store(kind: str, folder: Path) -> MemoryStore:
    if kind == "sqlite":
        return SQLiteStore(folder / "locomo.sqlite3")
    settings = Settings(
        _env_file=None,  # type: ignore[call-arg]
        metacortex_store="firestore",
        memory_collection="memory_vectors_eval",
        google_cloud_project="demo-metacortex-bench",
    )
    return build_store(settings)


# Results a search returns when relations rerank them (its limit; the top 10 and the
# neighbours they bring come from these).
RERANK_POOL = 20


@dataclass(slots=True)
class Outcome:
    report: Report
    ingest_rate: float  # 0 when the memories were reused, not saved in this run
    saved: int
    by_conversation: dict[str, Report]
    by_category: dict[int, Report]
    # The questions that name a time (``names_a_time``), and the temporal ones among them.
    named: dict[str, Report]


def evaluate(
    service: MemoryService, cases: list[Case], ranking: LinkedRanking | None, limit: int = 10
) -> tuple[Report, dict[int, Report], dict[str, Report]]:
    """Search every case (through ``ranking`` when given); the report over all cases,
    per category (``Case.label`` starts with it) and per conversation (topic)."""
    admin = Access.admin()
    rankings: list[list[str]] = []
    latencies: list[float] = []
    with progress("evaluate", len(cases), unit="case") as bar:
        for case in cases:
            started = time.perf_counter()
            result = service.search(
                admin,
                query=case.query,
                filter_topic=case.topic,
                limit=RERANK_POOL if ranking is not None else limit,
            )
            matches = result["matches"]
            ids = (
                ranking.rerank(matches)
                if ranking is not None
                else [str(match["id"]) for match in matches]
            )
            latencies.append((time.perf_counter() - started) * 1000)
            rankings.append(ids[:limit])
            bar.advance(1)

    def report(keep: list[int]) -> Report:
        return score_ranking(
            [rankings[i] for i in keep],
            [cases[i].expected_ids for i in keep],
            [latencies[i] for i in keep],
        )

    indexes = list(range(len(cases)))
    category = [int(case.label.split(" ", 1)[0]) for case in cases]
    by_category = {
        c: report([i for i in indexes if category[i] == c]) for c in sorted(set(category))
    }
    topics = list(dict.fromkeys(case.topic or "" for case in cases))
    by_topic = {t: report([i for i in indexes if cases[i].topic == t]) for t in topics}
    named = [i for i in indexes if names_a_time(cases[i].label.split(" ", 1)[1])]
    by_topic[NAMES_A_TIME_LABEL] = report(named)
    by_topic[NAMES_A_TIME_LABEL + ", temporal"] = report([i for i in named if category[i] == 2])
    return report(indexes), by_category, by_topic


def ingest(
    service: MemoryService,
    files: list[Path],
    known: dict[str, dict[str, str]],
    link_turns: bool = False,
    typos: int | None = None,
    time_given: bool = False,
) -> tuple[list[Case], float, int]:
    """Save every turn (unless ``known`` has its id already); the cases (each case's
    ``label``: its category, then its question) and the save time. ``link_turns``: each
    turn is saved with a ``relates_to`` relation to the turn before it in its session,
    as an agent saving a conversation would say what a turn replies to."""
    admin = Access.admin()
    cases: list[Case] = []
    saved = 0
    ingest_seconds = 0.0
    for path in files:
        conversation = json.loads(path.read_text(encoding="utf-8"))
        topic = f"locomo-{path.stem}"
        ids = known.setdefault(topic, {})
        turns = [
            turn for turn in turns_of(conversation, dated=not time_given) if turn.dia_id not in ids
        ]
        if turns:
            with progress(f"ingest {path.stem}", len(turns)) as bar:
                previous: Turn | None = None
                for turn in turns:
                    links = (
                        [{"id": ids[previous.dia_id], "type": "relates_to", "note": "replies to"}]
                        if link_turns
                        and previous is not None
                        and session_of(previous.dia_id) == session_of(turn.dia_id)
                        else None
                    )
                    started = time.perf_counter()
                    result = service.save(
                        admin,
                        content=turn.content,
                        topic=topic,
                        relations=links,
                        occurred_at=turn.when if time_given and turn.when else None,
                    )
                    ingest_seconds += time.perf_counter() - started
                    ids[turn.dia_id] = result["item"]["id"]
                    previous = turn
                    saved += 1
                    bar.advance(1)
        for question, evidence, category in categorised(conversation):
            expected = tuple(ids[d] for d in evidence if d in ids)
            if expected:
                asked = question if typos is None else misspelled(question, typos)
                cases.append(Case(asked, expected, topic, f"{category} {question}"))
    return cases, ingest_seconds, saved


def run(
    store_kind: str,
    files: list[Path],
    options: ServiceOptions,
    reuse: Path | None = None,
    per_conversation: bool = False,
    freeze: bool = True,
    link_turns: bool = False,
    ranking: LinkedRanking | None = None,
    typos: int | None = None,
    time_given: bool = False,
) -> Outcome:
    embedder = MiniLMEmbedder.load()
    with tempfile.TemporaryDirectory() as folder:
        if reuse is not None:
            id_file = reuse.with_suffix(".ids.json")
            fresh = not reuse.exists()
            known = {} if fresh or not id_file.exists() else json.loads(id_file.read_text())
            store: MemoryStore = SQLiteStore(reuse)
        else:
            store = open_store(store_kind, Path(folder))
            known = {}
        service = MemoryService(store, embedder, merger=SentenceUnionMerger(), options=options)
        cases, ingest_seconds, saved = ingest(service, files, known, link_turns, typos, time_given)
        if reuse is not None:
            id_file.write_text(json.dumps(known))
        if freeze:  # as `metacortex serve` does once warm (metacortex/heap.py)
            freeze_startup_heap()
        report, by_category, by_topic = evaluate(service, cases, ranking)
        named = {k: v for k, v in by_topic.items() if k.startswith(NAMES_A_TIME_LABEL)}
        by_conversation = {k: v for k, v in by_topic.items() if k not in named}
        store.close()
    rate = saved / ingest_seconds if ingest_seconds else 0.0
    return Outcome(
        report, rate, saved, by_conversation if per_conversation else {}, by_category, named
    )


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--store", choices=["sqlite", "firestore"], default="sqlite")
    parser.add_argument("--dataset", type=Path, default=DATASET)
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    parser.add_argument(
        "--conversations", help="comma list of conversation ids (file stems), default all"
    )
    parser.add_argument(
        "--dense-weight", type=float, default=DENSE_WEIGHT, help="share of semantic evidence"
    )
    parser.add_argument(
        "--no-context", action="store_true", help="turn off the conversational-context boost"
    )
    parser.add_argument(
        "--typos",
        type=int,
        metavar="SEED",
        help="misspell every question word of 5+ letters once, seeded (typo tolerance)",
    )
    parser.add_argument(
        "--no-time-reading",
        action="store_true",
        help="read no time from texts or questions (METACORTEX_TIME_READING=false)",
    )
    parser.add_argument(
        "--time-given",
        action="store_true",
        help="memory texts without the session date, which is given as occurred_at instead",
    )
    parser.add_argument(
        "--no-typo-tolerance",
        action="store_true",
        help="exact keywords only (METACORTEX_TYPO_TOLERANCE=false)",
    )
    parser.add_argument(
        "--reuse",
        type=Path,
        help="SQLite file to keep the memories in: ingested once, later runs only search",
    )
    parser.add_argument(
        "--per-conversation", action="store_true", help="also report each conversation"
    )
    parser.add_argument(
        "--no-freeze",
        action="store_true",
        help="search without freezing the warm heap first (metacortex serve freezes it)",
    )
    parser.add_argument(
        "--link-turns",
        action="store_true",
        help="save each turn with a relates_to relation to the one before it in its session",
    )
    parser.add_argument(
        "--relation-ranking",
        action="store_true",
        help="let relations move results (bench/linked_ranking.py)",
    )
    parser.add_argument("--relation-weight", type=float, default=WEIGHT)
    parser.add_argument("--relation-top", type=int, default=TOP)
    args = parser.parse_args()
    if args.reuse is not None and args.store != "sqlite":
        parser.error("--reuse is for the SQLite store")
    files = sorted(args.dataset.glob("*.json"))
    if args.conversations:
        wanted = set(args.conversations.split(","))
        files = [f for f in files if f.stem in wanted]
    if not files:
        print(f"no LoCoMo files in {args.dataset}; pass --dataset", file=sys.stderr)
        return 2
    options = ServiceOptions(
        dense_weight=args.dense_weight,
        conversational_context=not args.no_context,
        typo_tolerance=not args.no_typo_tolerance,
        read_times=not args.no_time_reading,
    )
    with emulator_for(args.store):
        ranking = (
            LinkedRanking(args.relation_top, args.relation_weight)
            if args.relation_ranking
            else None
        )
        outcome = run(
            args.store,
            files,
            options,
            args.reuse,
            args.per_conversation,
            not args.no_freeze,
            args.link_turns,
            ranking,
            args.typos,
            args.time_given,
        )
    report, ingest_rate, saved = outcome.report, outcome.ingest_rate, outcome.saved
    print(f"store           {args.store}")
    print(
        f"ranking         dense weight {args.dense_weight}, context {not args.no_context},"
        f" typo tolerance {not args.no_typo_tolerance}"
    )
    print(
        f"relations       turns linked {args.link_turns}, relation ranking "
        + (f"top {args.relation_top} weight {args.relation_weight}" if ranking else "off")
    )
    print(f"questions       {'clean' if args.typos is None else f'misspelled, seed {args.typos}'}")
    print(f"memories        {saved} saved in this run")
    if ingest_rate:
        print(f"ingest          {ingest_rate:.1f} memories/s (one save at a time)")
    print(report.table())
    for category, part in outcome.by_category.items():
        name = f"{category} {CATEGORY_NAMES[category]}"
        print(
            f"{name:<15} R@5 {part.recall[5]:.3f}  R@10 {part.recall[10]:.3f}"
            f"  MRR {part.mrr:.3f}  ({part.cases} cases)"
        )
    for label, part in outcome.named.items():
        print(
            f"{label:<15} R@5 {part.recall[5]:.3f}  R@10 {part.recall[10]:.3f}"
            f"  MRR {part.mrr:.3f}  ({part.cases} cases)"
        )
    for topic, part in outcome.by_conversation.items():
        print(
            f"{topic:<15} R@5 {part.recall[5]:.3f}  R@10 {part.recall[10]:.3f}"
            f"  MRR {part.mrr:.3f}  ({part.cases} cases)"
        )
    if args.json:
        args.json.write_text(
            json.dumps(
                {
                    "store": args.store,
                    "memories": saved,
                    "ingest_per_s": ingest_rate,
                    "typos_seed": args.typos,
                    "typo_tolerance": not args.no_typo_tolerance,
                }
                | report.to_dict()
                | {
                    "categories": {
                        CATEGORY_NAMES[c]: part.to_dict() for c, part in outcome.by_category.items()
                    }
                },
                indent=2,
            )
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
