"""Server time per console page at 10,000 memories on the embedded default.

    .venv/bin/python bench/console.py                  # 10,000 memories, 40 requests per page
    .venv/bin/python bench/console.py --memories 2000 --requests 10
    .venv/bin/python bench/console.py --json           # the report as one JSON object

Builds the embedded default (SQLite file + the local MiniLM model, the same
``build_service`` as ``metacortex serve``) on a fresh data directory, seeds
``--memories`` records (24 topics; 80 % active, 12 % drafts, 8 % deprecated;
three origins; a tenth with a validity window; created over 60 days, embedded
in batches by the real model) and ``memory_events`` shaped like the
server's own (tool calls of five clients with latencies, zero-result searches,
refusals) over the 14 days the activity and clients pages read. Then it starts
the real app under uvicorn on loopback, signs in as the owner, and requests
each page ``--requests`` times one after another (no concurrency, so nothing
queues): browse, browse by topic, the next page, browse at a validity instant,
back to the newer page, a record page, a search, the deprecation page (its search
for the replacement), the preview of three chosen memories' consolidation, clients,
activity, consolidate.
Server time is measured by an ASGI wrapper around the app: from the request's
arrival to its last body byte leaving the app. The client's round trip over
loopback is printed beside it for reference.

Prints p50/p95/max per page, and PASS when every page's p95 is at most
``--budget-ms`` (150). The portable backup download is timed once, for reference
(it reads every record, so it grows with the corpus and has no budget).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import secrets
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from datetime import timedelta
from pathlib import Path
from typing import Any, Final

import httpx2
from pydantic import SecretStr
from starlette.types import ASGIApp, Message, Receive, Scope, Send

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from metacortex.composition import build_service
from metacortex.config import Settings
from metacortex.domain.records import (
    BranchState,
    Memory,
    Modality,
    Origin,
    Provenance,
    SupersessionReason,
    new_memory_id,
    to_wire_time,
    utc_now,
)
from metacortex.heap import freeze_startup_heap
from metacortex.owner import set_passphrase
from metacortex.server.app import create_app
from metacortex.service import MemoryService
from metacortex.storage.base import Event
from tests.oauth_support import hidden, serving

PASSPHRASE: Final = "bench console " + "passphrase 9"  # split: a throwaway test value
TOPICS: Final = tuple(f"project-{n:02d}" for n in range(24))
CLIENTS: Final = ("default", "web", "claude-code", "codex", "oauth-3f9a0c1d2e4b5a69")
WORDS: Final = (
    "billing migration launch onboarding invoice meeting standup deadline review budget "
    "garden tomatoes hotel flight Lisbon station report heater landlord marathon recipe "
    "database index cache latency release roadmap customer support contract renewal"
).split()
_OWN_PREFIXES: Final = ("MCP_", "METACORTEX_", "GEMINI_", "GOOGLE_", "FIRESTORE_")


def _settings(data_dir: Path) -> Settings:
    # Pinned to the embedded default: the caller's environment cannot change what is measured.
    for name in list(os.environ):
        if name.startswith(_OWN_PREFIXES):
            del os.environ[name]
    return Settings(  # type: ignore[call-arg]
        _env_file=None,
        metacortex_data_dir=data_dir,
        mcp_admin_token=SecretStr("bench-" + secrets.token_urlsafe(24)),
    )


def _sentence(rng: random.Random, number: int) -> str:
    picked = rng.sample(WORDS, 6)
    return f"Note {number}: the {picked[0]} {picked[1]} needs {picked[2]} before the {picked[3]}."


def seed_memories(
    service: MemoryService,
    count: int,
    rng: random.Random,
    topics: Sequence[str] = TOPICS,
    write: Callable[[random.Random, int], str] = _sentence,
) -> list[str]:
    """``count`` records over the last 60 days, embedded in batches; their ids, oldest
    first. ``write(rng, number)`` is each one's content (the layout tests' is longer)."""
    store = service.store
    ids: list[str] = []
    now = utc_now()
    # A bench seeds in batches through the real model; the service saves one at a time.
    embedder = service._embedder
    batch = 256
    for start in range(0, count, batch):
        texts = [write(rng, n) for n in range(start, min(count, start + batch))]
        vectors = embedder.embed_documents(texts)
        for offset, (text, vector) in enumerate(zip(texts, vectors, strict=True)):
            number = start + offset
            created = now - timedelta(minutes=(count - number) * 60 * 24 * 60 / count)
            roll = rng.random()
            state = (
                BranchState.ACTIVE
                if roll < 0.80
                else BranchState.WIP
                if roll < 0.92
                else BranchState.DEPRECATED
            )
            windowed = rng.random() < 0.1
            memory = Memory(
                id=new_memory_id(),
                content=text,
                retrieval_text=text,
                topic=topics[number % len(topics)],
                branch_state=state,
                modality=Modality.TEXT,
                created_at=created,
                updated_at=created,
                valid_from=created if windowed else None,
                valid_until=created + timedelta(days=30) if windowed else None,
                supersession_reason=(
                    SupersessionReason.CHANGED if state is BranchState.DEPRECATED else None
                ),
                provenance=Provenance(origin=rng.choice(tuple(Origin))),
            )
            store.insert(memory, vector, secrets.token_hex(16), now)
            ids.append(memory.id)
    return ids


def seed_events(
    service: MemoryService, rng: random.Random, per_day: int, clients: Sequence[str] = CLIENTS
) -> int:
    now = utc_now()
    events: list[Event] = []
    for day in range(14):
        for _ in range(per_day):
            stamp = now - timedelta(days=day, seconds=rng.randrange(0, 86_400))
            if stamp > now:
                stamp = now
            fields: dict[str, Any]
            if rng.random() < 0.05:
                fields = {
                    "client_id": None,
                    "event_type": "request_rejected",
                    "status": "rejected",
                    "reason": rng.choice(("unauthorized", "rate_limited", "origin_not_allowed")),
                    "latency_ms": 0.4,
                }
            else:
                tool = rng.choice(("search_context", "save_context", "fetch_context"))
                results = rng.choice((0, 3, 5, 5, 5))
                top = round(rng.uniform(0.25, 1.0), 6) if results else None
                fields = {
                    "client_id": rng.choice(clients),
                    "event_type": "tool_call",
                    "tool_name": tool,
                    "status": "ok",
                    "latency_ms": round(rng.lognormvariate(3.0, 0.6), 3),
                    "request": {},
                    "response": (
                        {"result_count": results, "top_score": top}
                        if tool == "search_context"
                        else {}
                    ),
                }
            fields["timestamp"] = to_wire_time(stamp)
            events.append(Event("memory_events", stamp, now + timedelta(days=90), fields))
    events.sort(key=lambda event: event.timestamp)
    service.store.record_events(events)
    return len(events)


class ServerTimer:
    """ASGI wrapper: the time from a request's arrival to its last body byte leaving the app."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self.last_ms = 0.0

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()

        async def timed(message: Message) -> None:
            await send(message)
            if message["type"] == "http.response.body" and not message.get("more_body"):
                self.last_ms = (time.perf_counter() - started) * 1000

        await self.app(scope, receive, timed)


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q / 100 * len(ordered)) - 1))]


def measure(
    url: str, timer: ServerTimer, requests: int, rng: random.Random
) -> dict[str, dict[str, float]]:
    http = httpx2.Client(base_url=url, timeout=60, follow_redirects=False)
    page = http.get("/console")
    signed = http.post(
        "/owner/sign-in",
        data={
            "csrf": hidden(page.text, "csrf"),
            "next": hidden(page.text, "next"),
            "passphrase": PASSPHRASE,
        },
    )
    assert signed.status_code == 303, signed.text
    first = http.get("/console").text
    ids = re.findall(r"/console/memories/([0-9a-z]{26})\"", first)
    next_url = re.search(r'href="([^"]+)" rel="next"', first)
    assert ids, "the browse page lists no memories"
    assert next_url, "the browse page has no next page"
    older = next_url.group(1).replace("&amp;", "&")
    second = http.get(older).text
    newer_url = re.search(r'href="([^"]+)" rel="prev"', second)
    assert newer_url, "the second page has no link back to the newer one"
    newer = newer_url.group(1).replace("&amp;", "&")

    pages: dict[str, Callable[[], str]] = {
        "browse": lambda: "/console",
        "browse by topic": lambda: f"/console?topic={rng.choice(TOPICS)}&state=all",
        "next page": lambda: older,
        "browse valid at": lambda: "/console?valid_at=2026-01-15T12:00&state=all",
        "newer page": lambda: newer,
        "record": lambda: f"/console/memories/{rng.choice(ids)}",
        "search": lambda: "/console/search?q=" + "+".join(rng.sample(WORDS, 3)),
        "deprecate (finds the replacement)": lambda: (
            f"/console/memories/{rng.choice(ids)}/deprecate?q=" + "+".join(rng.sample(WORDS, 3))
        ),
        "consolidate chosen (preview)": lambda: (
            "/console/consolidate?"
            + "&".join(f"id={memory_id}" for memory_id in rng.sample(ids, 3))
        ),
        "clients": lambda: "/console/clients",
        "activity": lambda: "/console/activity",
        "consolidate": lambda: "/console/consolidate",
    }
    report: dict[str, dict[str, float]] = {}
    for name, path in pages.items():
        http.get(path())  # warm: first use of a code path, caches
        times: list[float] = []
        round_trips: list[float] = []
        for _ in range(requests):
            target = path()
            started = time.perf_counter()
            answer = http.get(target)
            round_trips.append((time.perf_counter() - started) * 1000)
            times.append(timer.last_ms)
            assert answer.status_code == 200, (target, answer.status_code)
        report[name] = {
            "p50_ms": round(statistics.median(times), 1),
            "p95_ms": round(_percentile(times, 95), 1),
            "max_ms": round(max(times), 1),
            "client_p95_ms": round(_percentile(round_trips, 95), 1),
        }
    backup = http.get("/console/export")
    assert backup.status_code == 200
    report["export (once, no budget)"] = {
        "p50_ms": round(timer.last_ms, 1),
        "p95_ms": round(timer.last_ms, 1),
        "max_ms": round(timer.last_ms, 1),
        "client_p95_ms": 0.0,
    }
    http.close()
    return report


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--memories", type=int, default=10_000)
    parser.add_argument("--requests", type=int, default=40, help="requests per page")
    parser.add_argument("--events-per-day", type=int, default=300)
    parser.add_argument("--budget-ms", type=float, default=150.0)
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument(
        "--no-freeze", action="store_true", help="leave the start-up heap to the collector"
    )
    args = parser.parse_args()
    rng = random.Random(args.seed)
    with tempfile.TemporaryDirectory(prefix="metacortex-console-bench-") as folder:
        settings = _settings(Path(folder))
        service = build_service(settings)
        try:
            started = time.perf_counter()
            seed_memories(service, args.memories, rng)
            events = seed_events(service, rng, args.events_per_day)
            set_passphrase(service.store, PASSPHRASE)
            seeded_s = time.perf_counter() - started
            timer = ServerTimer(create_app(settings, service))
            if not args.no_freeze:
                freeze_startup_heap()  # as `metacortex serve` does once it is warm
            with serving(timer) as url:
                report = measure(url, timer, args.requests, rng)
        finally:
            service.store.close()
    budgeted = {name: row for name, row in report.items() if "no budget" not in name}
    passed = all(row["p95_ms"] <= args.budget_ms for row in budgeted.values())
    summary = {
        "memories": args.memories,
        "events": events,
        "requests_per_page": args.requests,
        "seed_seconds": round(seeded_s, 1),
        "budget_ms": args.budget_ms,
        "pages": report,
        "pass": passed,
    }
    if args.json:
        print(json.dumps(summary, indent=2))
    else:
        print(
            f"{args.memories} memories, {events} events (seeded in {seeded_s:.1f} s); "
            f"{args.requests} requests per page"
        )
        print(f"{'page':36} {'p50 ms':>8} {'p95 ms':>8} {'max ms':>8} {'client p95':>11}")
        for name, row in report.items():
            print(
                f"{name:36} {row['p50_ms']:8.1f} {row['p95_ms']:8.1f} {row['max_ms']:8.1f} "
                f"{row['client_p95_ms']:11.1f}"
            )
        print(("PASS" if passed else "FAIL") + f": every page's p95 <= {args.budget_ms:.0f} ms")
    return 0 if passed else 1


if __name__ == "__main__":
    raise SystemExit(main())
