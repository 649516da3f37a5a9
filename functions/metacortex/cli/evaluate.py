"""``metacortex eval``: measure retrieval on cases (synthetic, or from real usage).

- ``eval generate CASES``: seed an ISOLATED store (``<data dir>/eval`` on SQLite,
  the ``memory_vectors_eval`` collection on Firestore) with a deterministic
  synthetic corpus and write its cases.
- ``eval run CASES``: search every case and print hit@k, recall@k, MRR, the
  zero-result rate and latency p50/p95 (``--live`` runs against the real store,
  for cases imported from events).
- ``eval import-events CASES``: turn search-then-fetch evidence in
  ``retrieval_query_events`` (RETRIEVAL_EVENT_LOGGING_ENABLED=true) into cases.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from metacortex.composition import build_service, build_store
from metacortex.config import Settings
from metacortex.operations.evaluation import (
    cases_from_events,
    load_cases,
    run_cases,
    save_cases,
    synthetic_corpus,
)

EVAL_COLLECTION = "memory_vectors_eval"
RETRIEVAL_EVENTS = "retrieval_query_events"


def add_parser(commands: Any) -> None:
    parser: argparse.ArgumentParser = commands.add_parser(
        "eval", help="retrieval evaluation (synthetic corpus, cases from events)"
    )
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    generate = actions.add_parser("generate", help="seed the isolated eval store, write cases")
    generate.add_argument("cases", type=Path)
    generate.add_argument("--topics", type=int, default=3)
    generate.add_argument("--per-topic", type=int, default=40)
    generate.set_defaults(run=run_generate)
    run = actions.add_parser("run", help="run cases and print the metrics")
    run.add_argument("cases", type=Path)
    run.add_argument("--live", action="store_true", help="search the real store")
    run.add_argument("--limit", type=int, default=10)
    run.add_argument("--json", action="store_true", help="print the report as JSON")
    run.set_defaults(run=run_cases_command)
    imported = actions.add_parser("import-events", help="cases from retrieval_query_events")
    imported.add_argument("cases", type=Path)
    imported.add_argument("--max-events", type=int, default=100_000)
    imported.set_defaults(run=run_import)


def _isolated(settings: Settings) -> Settings:
    return settings.model_copy(
        update={
            "memory_collection": EVAL_COLLECTION,
            "metacortex_data_dir": settings.metacortex_data_dir / "eval",
        }
    )


def run_generate(args: argparse.Namespace) -> int:
    service = build_service(_isolated(Settings()))
    try:
        cases = synthetic_corpus(service, topics=args.topics, per_topic=args.per_topic)
    finally:
        service.store.close()
    save_cases(cases, args.cases)
    print(f"{len(cases)} cases written to {args.cases}")
    return 0


def run_cases_command(args: argparse.Namespace) -> int:
    settings = Settings()
    service = build_service(settings if args.live else _isolated(settings))
    try:
        report = run_cases(service, load_cases(args.cases), limit=args.limit)
    finally:
        service.store.close()
    print(json.dumps(report.to_dict(), indent=2) if args.json else report.table())
    return 0


def run_import(args: argparse.Namespace) -> int:
    store = build_store(Settings())
    try:
        cases = cases_from_events(store.read_events(RETRIEVAL_EVENTS, args.max_events))
    finally:
        store.close()
    save_cases(cases, args.cases)
    print(f"{len(cases)} cases written to {args.cases}")
    return 0
