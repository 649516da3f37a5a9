"""Choose ranking weights on LoCoMo without fitting the conversations they are scored on.

Every combination of the ``--grid`` values (``ServiceOptions`` fields) ranks every
question of the development split once, over one store (``--reuse`` keeps it between
runs). Then leave-one-conversation-out: for each conversation, the combination with
the best mean R@5 + R@10 + MRR over the other conversations' questions is picked, and
that conversation's questions are scored with it; the held-out figures are those
scores put together. Reported per LoCoMo category and for the questions that name a
time (``bench.locomo.names_a_time``; the temporal ones among them apart).

    .venv/bin/python bench/locomo_loco.py --dataset ../../shared/datasets/locomo/dev \\
        --reuse /tmp/locomo.sqlite3 \\
        --grid time_range_weight=0,0.1,0.2,0.3 --grid time_when_weight=0,0.05
    .venv/bin/python bench/locomo_loco.py ... --typos 1   # misspelled questions
    .venv/bin/python bench/locomo_loco.py ... --protocol dated --protocol given
        # also memories saved without the date in their text, given as occurred_at
        # (kept in <reuse>.given.sqlite3); weights chosen on both
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any

from metacortex.operations.evaluation import Case, Report, score_ranking
from metacortex.operations.progress import progress
from metacortex.providers.local import MiniLMEmbedder
from metacortex.providers.offline_merge import SentenceUnionMerger
from metacortex.service import Access, MemoryService, ServiceOptions
from metacortex.storage.sqlite import SQLiteStore

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.locomo import CATEGORY_NAMES, DATASET, dataset_files, ingest, names_a_time

Combination = tuple[tuple[str, Any], ...]


@dataclass(frozen=True, slots=True)
class Ranking:
    """One combination's top-10 ids per case, in the order of the cases."""

    combination: Combination
    ids: list[list[str]]
    seconds: float


def parse_grid(specs: Sequence[str]) -> list[Combination]:
    """``name=v1,v2`` specs -> every combination of the values (typed as the field)."""
    known = {f.name: f for f in fields(ServiceOptions)}
    axes: list[list[tuple[str, Any]]] = []
    for spec in specs:
        name, _, values = spec.partition("=")
        if name not in known or not values:
            raise SystemExit(f"--grid {spec!r}: expected FIELD=V1,V2 with FIELD in ServiceOptions")
        default = getattr(ServiceOptions(), name)
        kind = type(default)
        parsed = [
            (value.lower() in ("1", "true", "yes")) if kind is bool else kind(value)
            for value in values.split(",")
        ]
        axes.append([(name, value) for value in parsed])
    return [tuple(combo) for combo in itertools.product(*axes)] if axes else [()]


def rank_all(
    store: SQLiteStore, embedder: MiniLMEmbedder, cases: list[Case], combination: Combination
) -> Ranking:
    options = replace(ServiceOptions(), **dict(combination))
    service = MemoryService(store, embedder, merger=SentenceUnionMerger(), options=options)
    admin = Access.admin()
    ids: list[list[str]] = []
    started = time.perf_counter()
    label = " ".join(f"{k}={v}" for k, v in combination) or "defaults"
    with progress(label, len(cases), unit="case") as bar:
        for case in cases:
            found = service.search(admin, query=case.query, filter_topic=case.topic, limit=10)
            ids.append([str(m["id"]) for m in found["matches"]])
            bar.advance(1)
    return Ranking(combination, ids, time.perf_counter() - started)


def report(ranking: list[list[str]], cases: list[Case], keep: list[int]) -> Report:
    return score_ranking(
        [ranking[i] for i in keep], [cases[i].expected_ids for i in keep], [0.0] * len(keep)
    )


def objective(part: Report) -> float:
    return part.recall[5] + part.recall[10] + part.mrr


def groups(cases: list[Case], protocols: list[str] | None = None) -> dict[str, list[int]]:
    """Named subsets of the cases: all, each category, those naming a time; with
    ``protocols`` (each case's) of more than one kind, also all and those naming a time
    of each protocol."""
    indexes = list(range(len(cases)))
    category = [int(case.label.split(" ", 1)[0]) for case in cases]
    question = [case.label.split(" ", 1)[1] for case in cases]
    named = [i for i in indexes if names_a_time(question[i])]
    out = {"all": indexes}
    for number, name in CATEGORY_NAMES.items():
        out[name] = [i for i in indexes if category[i] == number]
    out["names a time"] = named
    out["names a time, temporal"] = [i for i in named if category[i] == 2]
    out["names a time, other"] = [i for i in named if category[i] != 2]
    for kind in dict.fromkeys(protocols or []) if len(set(protocols or [])) > 1 else []:
        mine = [i for i in indexes if protocols is not None and protocols[i] == kind]
        out[f"{kind}: all"] = mine
        out[f"{kind}: single-hop"] = [i for i in mine if category[i] == 4]
        out[f"{kind}: names a time"] = [i for i in mine if i in set(named)]
    return out


def line(name: str, part: Report) -> str:
    return (
        f"  {name:<24} R@5 {part.recall[5]:.3f}  R@10 {part.recall[10]:.3f}"
        f"  MRR {part.mrr:.3f}  ({part.cases})"
    )


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--dataset", type=Path, default=DATASET)
    parser.add_argument("--reuse", type=Path, required=True, help="SQLite file (kept)")
    parser.add_argument("--grid", action="append", default=[], metavar="FIELD=V1,V2")
    parser.add_argument("--typos", type=int, metavar="SEED", help="misspelled questions")
    parser.add_argument(
        "--protocol",
        action="append",
        choices=["dated", "given"],
        help="dated: the session date in each memory's text (the default); given: texts "
        "without it, the date given as occurred_at. Both: a conversation's questions of both "
        "are held out together, the weights chosen on both",
    )
    parser.add_argument("--json", type=Path, help="also write every figure here")
    args = parser.parse_args()
    files = dataset_files(args.dataset)
    embedder = MiniLMEmbedder.load()
    combinations = parse_grid(args.grid)
    cases: list[Case] = []
    protocols: list[str] = []
    rankings = [Ranking(combo, [], 0.0) for combo in combinations]
    for protocol in args.protocol or ["dated"]:
        path = args.reuse if protocol == "dated" else args.reuse.with_suffix(".given.sqlite3")
        id_file = path.with_suffix(".ids.json")
        known = json.loads(id_file.read_text()) if path.exists() and id_file.exists() else {}
        store = SQLiteStore(path)
        service = MemoryService(store, embedder, merger=SentenceUnionMerger())
        found, _, _ = ingest(
            service, files, known, typos=args.typos, time_given=protocol == "given"
        )
        id_file.write_text(json.dumps(known))
        store.keyword_index_loaded()
        cases += found
        protocols += [protocol] * len(found)
        for index, combo in enumerate(combinations):
            ranked = rank_all(store, embedder, found, combo)
            rankings[index] = Ranking(
                combo,
                rankings[index].ids + ranked.ids,
                rankings[index].seconds + ranked.seconds,
            )
        store.close()
    subsets = groups(cases, protocols)
    figures: dict[str, Any] = {"combinations": [], "loco": {}}
    for ranking in rankings:
        name = " ".join(f"{k}={v}" for k, v in ranking.combination) or "defaults"
        print(f"{name}  ({ranking.seconds / len(cases) * 1000:.1f} ms a search)")
        parts = {label: report(ranking.ids, cases, keep) for label, keep in subsets.items()}
        for label, part in parts.items():
            print(line(label, part))
        figures["combinations"].append(
            {"combination": dict(ranking.combination)}
            | {label: part.to_dict() for label, part in parts.items()}
        )
    if len(rankings) > 1:
        topics = list(dict.fromkeys(case.topic or "" for case in cases))
        held_out: list[list[str]] = [[] for _ in cases]
        picks: dict[str, dict[str, Any]] = {}
        for topic in topics:
            train = [i for i, case in enumerate(cases) if case.topic != topic]
            test = [i for i, case in enumerate(cases) if case.topic == topic]
            best = max(rankings, key=lambda r: objective(report(r.ids, cases, train)))
            picks[topic] = dict(best.combination)
            for i in test:
                held_out[i] = best.ids[i]
        print("leave-one-conversation-out (held-out conversations scored with the weights")
        print("chosen on the other four):")
        for topic, pick in picks.items():
            print(f"  {topic}: {pick}")
        parts = {label: report(held_out, cases, keep) for label, keep in subsets.items()}
        for label, part in parts.items():
            print(line(label, part))
        figures["loco"] = {"picks": picks} | {
            label: part.to_dict() for label, part in parts.items()
        }
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
