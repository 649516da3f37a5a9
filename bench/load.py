"""Load check: many MCP clients at once against a real server, then an audit.

    .venv/bin/python bench/load.py                       # 16 clients, 30 s (make bench-load)
    .venv/bin/python bench/load.py --clients 4 --operations 400
    .venv/bin/python bench/load.py --url http://127.0.0.1:8765/mcp --token ...  # a running server

Without ``--url`` it starts ``metacortex serve`` on the embedded default (SQLite
file + the local MiniLM model) in its own process, on a fresh data directory,
with the rate limit raised out of the way. Each client is its own official
``mcp.Client`` over real loopback HTTP (2026-07-28 stateless envelope, admin
token) and loops over a seeded mix: 40 % ``save_context`` (one save in five
re-sends a payload saved earlier, possibly by another client, as a retry would),
40 % ``search_context`` and 20 % ``fetch_context`` of an id seen so far.

Reported: operations and throughput, p50/p95/p99 latency per tool, errors by
code. Then the audit, through the same endpoint: every distinct payload has
exactly one id (each retry answered ``duplicate`` with the original's id),
and walking ``list_context`` finds exactly those records: no write lost, no
duplicate. Exit status 1 on any error or audit failure.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import secrets
import socket
import statistics
import sys
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from tests.processes import WatchedProcess

METACORTEX: Final = Path(sys.executable).parent / "metacortex"
TOPICS: Final = tuple(f"load-{n}" for n in range(8))
STATELESS: Final = "2026-07-28"
_PEOPLE: Final = ("Dana", "Ravi", "Mei", "Tomas", "Aisha", "Lena", "Kofi", "Sven")
_THINGS: Final = (
    "the billing migration",
    "the Q3 launch",
    "the onboarding flow",
    "the search index",
    "the mobile release",
    "the vendor contract",
    "the incident review",
    "the design system",
)
_FACTS: Final = (
    "{who} owns {what} and wants it finished by week {n}.",
    "{who} found that {what} fails when more than {n} users sign in at once.",
    "Decision {n}: {what} moves to {who}'s team after the offsite.",
    "{who} prefers short status notes about {what}, at most {n} lines.",
    "Reminder: {what} needs {who}'s review before ticket {n} can close.",
)


@dataclass
class Shared:
    """What the clients have saved so far, shared so retries cross clients."""

    payloads: list[dict[str, str]] = field(default_factory=list)
    ids_by_payload: dict[str, set[str]] = field(default_factory=lambda: defaultdict(set))
    retries: int = 0
    retry_mismatches: int = 0
    latencies: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    errors: Counter[str] = field(default_factory=Counter)

    def known_ids(self) -> list[str]:
        return [i for ids in self.ids_by_payload.values() for i in ids]


@dataclass(frozen=True)
class Report:
    clients: int
    seconds: float
    operations: int
    per_tool: dict[str, dict[str, float]]
    errors: dict[str, int]
    distinct_payloads: int
    retries: int
    stored_records: int
    lost_writes: int
    duplicate_records: int
    retry_mismatches: int

    @property
    def passed(self) -> bool:
        return not (
            self.errors or self.lost_writes or self.duplicate_records or self.retry_mismatches
        )

    def as_dict(self) -> dict[str, Any]:
        return {**self.__dict__, "passed": self.passed}


def payload_key(payload: dict[str, str]) -> str:
    return json.dumps(payload, sort_keys=True)


def fresh_payload(rng: random.Random, client: int, sequence: int) -> dict[str, str]:
    text = rng.choice(_FACTS).format(
        who=rng.choice(_PEOPLE), what=rng.choice(_THINGS), n=rng.randint(1, 999)
    )
    return {"content": f"{text} (note {client}.{sequence})", "topic": rng.choice(TOPICS)}


@asynccontextmanager
async def connect(url: str, token: str) -> AsyncIterator[Client]:
    async with (
        httpx2.AsyncClient(headers={"authorization": f"Bearer {token}"}, timeout=60) as http,
        Client(streamable_http_client(url, http_client=http), mode=STATELESS) as client,
    ):
        yield client


async def call(
    client: Client, shared: Shared, tool: str, arguments: dict[str, Any]
) -> dict[str, Any] | None:
    started = time.perf_counter()
    try:
        result = await client.call_tool(tool, arguments)
    except Exception as error:  # noqa: BLE001 - every failure is counted, none may happen
        shared.errors[f"{tool}: {type(error).__name__}"] += 1
        return None
    shared.latencies[tool].append(time.perf_counter() - started)
    if result.is_error or result.structured_content is None:
        text = getattr(result.content[0], "text", "") if result.content else ""
        try:
            code = json.loads(text)["error"]["code"]
        except (ValueError, KeyError, TypeError):
            code = "unreadable error"
        shared.errors[f"{tool}: {code}"] += 1
        return None
    return dict(result.structured_content)


async def one_client(
    index: int, url: str, token: str, shared: Shared, stop: Stop, seed: int
) -> None:
    rng = random.Random(seed * 1000 + index)
    sequence = 0
    async with connect(url, token) as client:
        while stop.take():
            roll = rng.random()
            if roll < 0.4:
                retry = bool(shared.payloads) and rng.random() < 0.2
                if retry:
                    payload = rng.choice(shared.payloads)
                else:
                    sequence += 1
                    payload = fresh_payload(rng, index, sequence)
                saved = await call(client, shared, "save_context", payload)
                if saved is None:
                    continue
                key = payload_key(payload)
                memory_id = saved["item"]["id"]
                if retry:
                    shared.retries += 1
                    if (
                        saved["write_status"] != "duplicate"
                        or memory_id not in shared.ids_by_payload[key]
                    ):
                        shared.retry_mismatches += 1
                else:
                    shared.payloads.append(payload)
                shared.ids_by_payload[key].add(memory_id)
            elif roll < 0.8:
                words = " ".join(rng.sample([*_PEOPLE, "launch", "review", "contract"], 2))
                arguments: dict[str, Any] = {"query": words}
                if rng.random() < 0.5:
                    arguments["filter_topic"] = rng.choice(TOPICS)
                await call(client, shared, "search_context", arguments)
            else:
                known = shared.known_ids()
                if known:
                    await call(client, shared, "fetch_context", {"id": rng.choice(known)})


class Stop:
    """Ends the run after a duration or after a number of operations."""

    def __init__(self, seconds: float | None, operations: int | None) -> None:
        self._deadline = time.perf_counter() + seconds if seconds is not None else None
        self._left = operations

    def take(self) -> bool:
        if self._deadline is not None and time.perf_counter() >= self._deadline:
            return False
        if self._left is not None:
            if self._left <= 0:
                return False
            self._left -= 1
        return True


async def stored_ids(url: str, token: str) -> list[str]:
    """Every active record, by walking list_context page by page for each topic."""
    found: list[str] = []
    async with connect(url, token) as client:
        for topic in TOPICS:
            cursor: str | None = None
            while True:
                arguments: dict[str, Any] = {"filter_topic": topic, "limit": 100}
                if cursor:
                    arguments["cursor"] = cursor
                result = await client.call_tool("list_context", arguments)
                assert not result.is_error, result.content
                page = result.structured_content or {}
                found.extend(item["id"] for item in page["items"])
                cursor = page["next_cursor"]
                if not cursor:
                    break
    return found


def percentiles(seconds: list[float]) -> dict[str, float]:
    ms = sorted(s * 1000 for s in seconds)
    cuts = statistics.quantiles(ms, n=100, method="inclusive") if len(ms) > 1 else ms * 99
    return {"p50_ms": cuts[49], "p95_ms": cuts[94], "p99_ms": cuts[98]}


async def run_load(
    url: str,
    token: str,
    clients: int = 16,
    seconds: float | None = 30.0,
    operations: int | None = None,
    seed: int = 7,
) -> Report:
    """Drive ``clients`` concurrent MCP clients, then audit what was stored."""
    shared = Shared()
    stop = Stop(seconds, operations)
    started = time.perf_counter()
    progress = asyncio.create_task(_progress(shared, started))
    try:
        await asyncio.gather(
            *(one_client(i, url, token, shared, stop, seed) for i in range(clients))
        )
    finally:
        progress.cancel()
    elapsed = time.perf_counter() - started
    listed = await stored_ids(url, token)
    expected = {i for ids in shared.ids_by_payload.values() for i in ids}
    per_tool = {
        tool: {
            "count": len(values),
            "per_second": len(values) / elapsed,
            **percentiles(values),
        }
        for tool, values in sorted(shared.latencies.items())
    }
    return Report(
        clients=clients,
        seconds=round(elapsed, 1),
        operations=sum(len(v) for v in shared.latencies.values()) + sum(shared.errors.values()),
        per_tool=per_tool,
        errors=dict(shared.errors),
        distinct_payloads=len(shared.ids_by_payload),
        retries=shared.retries,
        stored_records=len(listed),
        lost_writes=len(expected - set(listed)),
        duplicate_records=(len(listed) - len(set(listed)))
        + len(set(listed) - expected)
        + sum(len(ids) - 1 for ids in shared.ids_by_payload.values()),
        retry_mismatches=shared.retry_mismatches,
    )


async def _progress(shared: Shared, started: float) -> None:
    if not sys.stderr.isatty():
        return
    while True:
        await asyncio.sleep(1)
        done = sum(len(v) for v in shared.latencies.values())
        rate = done / (time.perf_counter() - started)
        print(
            f"\r{done} operations, {rate:.0f}/s, errors {sum(shared.errors.values())}",
            end="",
            file=sys.stderr,
            flush=True,
        )


@contextmanager
def local_server() -> Iterator[tuple[str, str]]:
    """``metacortex serve`` on the embedded default in a fresh data directory."""
    token = secrets.token_urlsafe(32)
    with tempfile.TemporaryDirectory(prefix="metacortex-load-") as data_dir:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        keep = {k: v for k, v in os.environ.items() if not k.startswith(("MCP_", "METACORTEX_"))}
        env = keep | {
            "MCP_ADMIN_TOKEN": token,
            "METACORTEX_DATA_DIR": data_dir,
            "METACORTEX_RATE_LIMIT_PER_MINUTE": "1000000",
            "METACORTEX_LOG_LEVEL": "WARNING",
        }
        server = WatchedProcess(
            [str(METACORTEX), "serve", "--port", str(port)], f"127.0.0.1:{port}", env=env
        )
        try:
            server.wait_ready(120, "metacortex serve")
            yield f"http://127.0.0.1:{port}/mcp", token
        finally:
            server.stop()


def print_report(report: Report) -> None:
    print(
        f"{report.clients} clients, {report.seconds} s, {report.operations} operations "
        f"({report.operations / report.seconds:.0f}/s)"
    )
    print(f"{'tool':<16}{'count':>7}{'ops/s':>8}{'p50 ms':>9}{'p95 ms':>9}{'p99 ms':>9}")
    for tool, row in report.per_tool.items():
        print(
            f"{tool:<16}{row['count']:>7.0f}{row['per_second']:>8.1f}"
            f"{row['p50_ms']:>9.1f}{row['p95_ms']:>9.1f}{row['p99_ms']:>9.1f}"
        )
    print(f"errors            {sum(report.errors.values())} {report.errors or ''}")
    print(
        f"audit             {report.distinct_payloads} distinct payloads, {report.retries} "
        f"retries, {report.stored_records} records stored; lost {report.lost_writes}, "
        f"duplicates {report.duplicate_records}, retry answers wrong {report.retry_mismatches}"
    )
    print("PASS" if report.passed else "FAIL")


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--duration", type=float, default=30.0, help="seconds (default 30)")
    parser.add_argument("--operations", type=int, help="stop after this many operations instead")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--url", help="an already running endpoint (default: start one)")
    parser.add_argument("--token", help="its admin token (default: MCP_ADMIN_TOKEN)")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    args = parser.parse_args()
    seconds = None if args.operations else args.duration

    def go(url: str, token: str) -> Report:
        print(f"load: {args.clients} clients against {url} ...", file=sys.stderr)
        return asyncio.run(run_load(url, token, args.clients, seconds, args.operations, args.seed))

    if args.url:
        token = args.token or os.environ.get("MCP_ADMIN_TOKEN")
        if not token:
            raise SystemExit("load: pass --token or set MCP_ADMIN_TOKEN for --url")
        report = go(args.url, token)
    else:
        print("load: starting metacortex serve (SQLite + local model) ...", file=sys.stderr)
        with local_server() as (url, token):
            report = go(url, token)
    if args.json:
        print(json.dumps(report.as_dict()))
    else:
        print_report(report)
    return 0 if report.passed else 1


if __name__ == "__main__":
    raise SystemExit(main())
