"""``metacortex eval``: measure retrieval on cases (synthetic, or from real usage).

- ``eval generate [CASES]``: seed an ISOLATED store (``<data dir>/eval`` on SQLite,
  the ``memory_vectors_eval`` collection on Firestore) with a deterministic
  synthetic corpus and write its cases.
- ``eval run [CASES]``: search every case and print hit@k, recall@k, MRR, the
  zero-result rate and latency p50/p95 (``--live`` runs against the real store,
  for cases imported from events; ``--url`` against a deployed endpoint, through
  MCP, with MCP_SMOKE_TOKEN or MCP_ADMIN_TOKEN; ``cli/endpoint_token.py``).
- ``eval import-events [CASES] [--lookback-hours H]``: turn search-then-fetch
  evidence in ``retrieval_query_events`` (RETRIEVAL_EVENT_LOGGING_ENABLED=true)
  into cases.

CASES is a local NDJSON file. Without it, on Firestore, cases are kept in the
``retrieval_eval_cases`` collection, as the original MetaCortex kept them.
"""

from __future__ import annotations

import argparse
import json
import sys
from datetime import timedelta
from pathlib import Path
from typing import Any

import anyio
import httpx2
from mcp.shared.exceptions import MCPError

from metacortex.cli.endpoint_token import endpoint_token
from metacortex.cli.smoke import failure_reason
from metacortex.composition import build_service, build_store
from metacortex.config import Settings
from metacortex.domain.records import utc_now
from metacortex.errors import ConfigurationError
from metacortex.operations.eval_cases import case_store
from metacortex.operations.evaluation import cases_from_events, run_cases, synthetic_corpus
from metacortex.operations.remote_evaluation import RemoteEvaluationError, run_cases_over_mcp

EVAL_COLLECTION = "memory_vectors_eval"
RETRIEVAL_EVENTS = "retrieval_query_events"


_CASES_HELP = "an NDJSON file; omit it on Firestore to use the retrieval_eval_cases collection"


def add_parser(commands: Any) -> None:
    parser: argparse.ArgumentParser = commands.add_parser(
        "eval", help="retrieval evaluation (synthetic corpus, cases from events)"
    )
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    generate = actions.add_parser("generate", help="seed the isolated eval store, write cases")
    generate.add_argument("cases", type=Path, nargs="?", help=_CASES_HELP)
    generate.add_argument("--topics", type=int, default=3)
    generate.add_argument("--per-topic", type=int, default=40)
    generate.set_defaults(run=run_generate)
    run = actions.add_parser("run", help="run cases and print the metrics")
    run.add_argument("cases", type=Path, nargs="?", help=_CASES_HELP)
    run.add_argument("--live", action="store_true", help="search the real store")
    run.add_argument(
        "--url",
        help="a deployed MCP endpoint (e.g. https://…/metaCortexMcp/mcp), searched through "
        "MCP with MCP_SMOKE_TOKEN or MCP_ADMIN_TOKEN",
    )
    run.add_argument("--limit", type=int, default=10)
    run.add_argument("--json", action="store_true", help="print the report as JSON")
    run.set_defaults(run=run_cases_command)
    imported = actions.add_parser("import-events", help="cases from retrieval_query_events")
    imported.add_argument("cases", type=Path, nargs="?", help=_CASES_HELP)
    imported.add_argument("--max-events", type=int, default=100_000)
    imported.add_argument(
        "--lookback-hours",
        type=float,
        help="only events of the last H hours (default: every stored event)",
    )
    imported.set_defaults(run=run_import)


def _isolated(settings: Settings) -> Settings:
    return settings.model_copy(
        update={
            "memory_collection": EVAL_COLLECTION,
            "metacortex_data_dir": settings.metacortex_data_dir / "eval",
        }
    )


def run_generate(args: argparse.Namespace) -> int:
    settings = Settings()
    destination = case_store(settings, args.cases)
    service = build_service(_isolated(settings))
    try:
        cases = synthetic_corpus(service, topics=args.topics, per_topic=args.per_topic)
    finally:
        service.store.close()
    destination.save(cases)
    print(f"{len(cases)} cases written to {destination.describe()}")
    return 0


def run_cases_command(args: argparse.Namespace) -> int:
    settings = Settings()
    source = case_store(settings, args.cases)
    cases = source.load()
    if source.skipped:
        print(
            f"metacortex: {len(source.skipped)} document(s) of {source.describe()} are not "
            f"cases and were left out: {', '.join(source.skipped)}",
            file=sys.stderr,
        )
    if args.url:
        token = endpoint_token(settings, args.url)
        try:
            report = anyio.run(_remote, args.url, token, cases, args.limit)
        except (RemoteEvaluationError, MCPError, httpx2.HTTPError, ExceptionGroup) as error:
            print(
                f"metacortex: eval against {args.url} failed: {failure_reason(error)}",
                file=sys.stderr,
            )
            return 1
    else:
        service = build_service(settings if args.live else _isolated(settings))
        try:
            report = run_cases(service, cases, limit=args.limit)
        finally:
            service.store.close()
    print(json.dumps(report.to_dict(), indent=2) if args.json else report.table())
    return 0


async def _remote(url: str, token: str, cases: Any, limit: int) -> Any:
    return await run_cases_over_mcp(url, token, cases, limit=limit)


def run_import(args: argparse.Namespace) -> int:
    settings = Settings()
    destination = case_store(settings, args.cases)
    since = None
    if args.lookback_hours is not None:
        if args.lookback_hours <= 0:
            raise ConfigurationError("--lookback-hours must be positive")
        since = utc_now() - timedelta(hours=args.lookback_hours)
    store = build_store(settings)
    try:
        events = store.read_events(RETRIEVAL_EVENTS, args.max_events, since=since)
    finally:
        store.close()
    originals = ""
    if settings.store_kind == "firestore":
        from metacortex.migration.original_evaluation import read_original_events
        from metacortex.storage.firestore import open_client

        evidence = read_original_events(open_client(settings), since=since, limit=args.max_events)
        if evidence.read:
            events = sorted([*events, *evidence.events], key=lambda e: str(e.get("timestamp", "")))
            originals = f" (and {evidence.read} of the TypeScript MetaCortex's"
            if evidence.truncated_queries:
                originals += (
                    f"; {evidence.truncated_queries} searches left out: their logged query "
                    "was cut at 160 characters"
                )
            originals += ")"
    cases = cases_from_events(events)
    destination.save(cases)
    window = f" of the last {args.lookback_hours:g} h" if since else ""
    print(
        f"{len(cases)} cases from {len(events)} events{window}{originals} written to "
        f"{destination.describe()}"
    )
    return 0
