"""Load check: many MCP clients at once against a real server, then an audit.

    .venv/bin/python bench/load.py                       # 16 clients, 30 s (make bench-load)
    .venv/bin/python bench/load.py --clients 4 --operations 400
    .venv/bin/python bench/load.py --json                # the report as one JSON object
    .venv/bin/python bench/load.py --url http://127.0.0.1:8765/mcp --token ...  # a running server

Without ``--url`` it starts ``metacortex serve`` on the embedded default (SQLite
file + the local MiniLM model, pinned so a ``.env`` or the shell cannot change
it) in its own process, on a fresh data directory, with the rate limit raised
out of the way. Each client is its own official ``mcp.Client`` over real
loopback HTTP (2026-07-28 stateless envelope, admin token) and loops over a
seeded mix: 40 % ``save_context``, 40 % ``search_context``, 20 %
``fetch_context`` of an id answered so far. One save in five is a retry: mostly
an exact re-send of a payload saved earlier (possibly by another client); one
retry in four instead sends a new payload twice at once, as a client that
timed out and retried while its first request was still being served.

Reported: operations and throughput, per tool count, ops/s and p50/p95/p99
latency, errors by tool and code (must be 0). Then the audit:

- every answer for one payload carries the same id, and exactly one of them
  says ``created`` (every retry answered ``duplicate`` with the original's id);
- walking every ``list_context`` page through the same endpoint finds exactly
  the ids answered, each once;
- with the local server: after it has shut down, the SQLite file itself holds
  exactly one record per distinct payload (content and topic), with that id,
  and nothing else.

Prints PASS or FAIL; exit status 1 on any error, lost write or duplicate.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import importlib
import json
import os
import random
import re
import secrets
import statistics
import sys
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any, Final

import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from metacortex.domain.records import BranchState, Memory
from metacortex.operations.progress import Progress, progress
from metacortex.storage.base import MemoryFilter, MemoryStore, PageKey
from metacortex.storage.sqlite import SQLiteStore

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from tests.processes import WatchedProcess

METACORTEX: Final = Path(sys.executable).parent / "metacortex"
TOPICS: Final = tuple(f"load-{n}" for n in range(8))
STATELESS: Final = "2026-07-28"
SAVE_SHARE: Final = 0.4
SEARCH_SHARE: Final = 0.4  # the rest (0.2) are fetches
RETRY_SHARE: Final = 0.2
CONCURRENT_RETRY_SHARE: Final = 0.25  # of the retries
# Settings the server reads from the environment; cleared so the caller's shell
# cannot change what is measured (the store and model are then pinned below).
_OWN_PREFIXES: Final = ("MCP_", "METACORTEX_", "GEMINI_", "GOOGLE_", "FIRESTORE_")
_READY: Final = re.compile(r"is ready at (http://\S+)")
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
    "{who} estimated {what} at {n} story points; the team agreed.",
    "Since release {n}, {who} is the on-call contact for {what}.",
)
_QUESTIONS: Final = (
    "who owns {what}?",
    "what did {who} decide about {what}",
    "{who} review",
    "when is {what} due",
    "status notes {who}",
)


@dataclass(frozen=True, slots=True)
class Payload:
    content: str
    topic: str

    def arguments(self) -> dict[str, Any]:
        return {"content": self.content, "topic": self.topic}


@dataclass
class Shared:
    """What the clients have seen so far, shared so retries and fetches cross clients."""

    answered: list[Payload] = field(default_factory=list)  # retry candidates
    ids: list[str] = field(default_factory=list)  # fetch candidates
    answers: dict[Payload, list[tuple[str, str]]] = field(default_factory=dict)
    calls: int = 0
    fresh_saves: int = 0
    retries: int = 0
    concurrent_retries: int = 0
    latencies: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    errors: Counter[str] = field(default_factory=Counter)

    def record(self, payload: Payload, memory_id: str, write_status: str) -> None:
        answers = self.answers.setdefault(payload, [])
        if not answers:
            self.answered.append(payload)
        if memory_id not in {known for known, _ in answers}:
            self.ids.append(memory_id)
        answers.append((memory_id, write_status))

    def inconsistent(self) -> int:
        """Payloads whose answers disagree on the id or do not say 'created' exactly once."""
        return sum(
            1
            for answers in self.answers.values()
            if len({i for i, _ in answers}) != 1 or [s for _, s in answers].count("created") != 1
        )

    def saved(self) -> dict[Payload, str]:
        """Each distinct payload and the id its first answer carried."""
        return {payload: answers[0][0] for payload, answers in self.answers.items()}


@dataclass(frozen=True)
class Audit:
    """What one view of the stored data holds, against what the clients were answered."""

    source: str
    records: int
    lost_writes: int
    duplicate_records: int
    errors: int = 0

    @property
    def clean(self) -> bool:
        return not (self.lost_writes or self.duplicate_records or self.errors)


@dataclass
class Report:
    clients: int
    seconds: float
    operations: int
    per_second: float
    per_tool: dict[str, dict[str, float]]
    errors: dict[str, int]
    fresh_saves: int
    retries: int
    concurrent_retries: int
    distinct_payloads: int
    inconsistent_answers: int
    audits: list[Audit]
    cpus: int | None
    load_average_before: float
    client_cpu_seconds: float
    server_cpu_seconds: float | None
    saved: dict[Payload, str] = field(repr=False)

    @property
    def passed(self) -> bool:
        return (
            not self.errors
            and not self.inconsistent_answers
            and all(audit.clean for audit in self.audits)
        )

    def as_dict(self) -> dict[str, Any]:
        values = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "saved"}
        audits = [asdict(audit) | {"clean": audit.clean} for audit in self.audits]
        return values | {"audits": audits, "passed": self.passed}


def fresh_payload(rng: random.Random, client: int, sequence: int) -> Payload:
    text = rng.choice(_FACTS).format(
        who=rng.choice(_PEOPLE), what=rng.choice(_THINGS), n=rng.randint(1, 999)
    )
    return Payload(f"{text} (note {client}.{sequence})", rng.choice(TOPICS))


def search_arguments(rng: random.Random) -> dict[str, Any]:
    query = rng.choice(_QUESTIONS).format(who=rng.choice(_PEOPLE), what=rng.choice(_THINGS))
    arguments: dict[str, Any] = {"query": query}
    if rng.random() < 0.5:
        arguments["filter_topic"] = rng.choice(TOPICS)
    return arguments


@asynccontextmanager
async def connect(url: str, token: str) -> AsyncIterator[Client]:
    async with (
        httpx2.AsyncClient(headers={"authorization": f"Bearer {token}"}, timeout=60) as http,
        Client(streamable_http_client(url, http_client=http), mode=STATELESS) as client,
    ):
        yield client


# What the MCP client imports at its first connection and first tool call (the HTTP/1.1
# and HTTP/2 stacks, trust store, the JSON Schema validator of structured results):
# about 0.2 s in a fresh process, measured with sys.modules around the first call.
_CLIENT_FIRST_USE: Final = (
    "anyio._backends._asyncio",
    "httpcore2",
    "h11",
    "h2",
    "truststore",
    "jsonschema",
    "referencing",
)


def load_client_modules() -> None:
    """Import what the client would import lazily on its first call, so a timed start
    counts the server's work, not this process's first use of its client (a real
    client has them loaded long before it connects). A module a later SDK no longer
    uses is skipped."""
    for name in _CLIENT_FIRST_USE:
        with contextlib.suppress(ImportError):
            importlib.import_module(name)


def error_code(result: Any) -> str:
    text = getattr(result.content[0], "text", "") if result.content else ""
    try:
        return str(json.loads(text)["error"]["code"])
    except (ValueError, KeyError, TypeError):
        return "unreadable error"


class Runner:
    """Calls tools for the clients, timing each call and counting every failure."""

    def __init__(self, shared: Shared, bar: Progress) -> None:
        self.shared = shared
        self._bar = bar

    async def call(
        self, client: Client, tool: str, arguments: dict[str, Any]
    ) -> dict[str, Any] | None:
        self.shared.calls += 1
        started = time.perf_counter()
        try:
            result = await client.call_tool(tool, arguments)
        except Exception as error:  # noqa: BLE001 - every failure is counted, none may happen
            self.shared.errors[f"{tool}: {type(error).__name__}"] += 1
            return None
        finally:
            self._bar.advance(1)
        self.shared.latencies[tool].append(time.perf_counter() - started)
        if result.is_error or result.structured_content is None:
            self.shared.errors[f"{tool}: {error_code(result)}"] += 1
            return None
        return dict(result.structured_content)

    async def save(self, client: Client, payload: Payload) -> None:
        saved = await self.call(client, "save_context", payload.arguments())
        if saved is not None:
            self.shared.record(payload, saved["item"]["id"], saved["write_status"])


class Stop:
    """Ends the run after a duration or after a number of operations."""

    def __init__(self, seconds: float | None, operations: int | None) -> None:
        self._deadline = time.perf_counter() + seconds if seconds is not None else None
        self._left = operations

    def take(self, count: int = 1) -> bool:
        if self._deadline is not None and time.perf_counter() >= self._deadline:
            return False
        if self._left is not None:
            if self._left < count:
                return False
            self._left -= count
        return True


async def one_client(
    index: int, url: str, token: str, runner: Runner, stop: Stop, seed: int
) -> None:
    rng = random.Random(seed * 1000 + index)
    shared = runner.shared
    sequence = 0
    async with connect(url, token) as client:
        while stop.take():
            # Every decision is drawn whatever the timing, so a seed fixes the mix.
            roll, retry, racing = rng.random(), rng.random(), rng.random()
            if roll < SAVE_SHARE:
                if retry < RETRY_SHARE and racing < CONCURRENT_RETRY_SHARE and stop.take():
                    # A new payload sent twice at once: a retry racing its original.
                    sequence += 1
                    payload = fresh_payload(rng, index, sequence)
                    shared.fresh_saves += 1
                    shared.retries += 1
                    shared.concurrent_retries += 1
                    await asyncio.gather(runner.save(client, payload), runner.save(client, payload))
                elif retry < RETRY_SHARE and shared.answered:
                    shared.retries += 1
                    await runner.save(client, rng.choice(shared.answered))
                else:
                    sequence += 1
                    shared.fresh_saves += 1
                    await runner.save(client, fresh_payload(rng, index, sequence))
            elif roll < SAVE_SHARE + SEARCH_SHARE or not shared.ids:
                await runner.call(client, "search_context", search_arguments(rng))
            else:
                await runner.call(client, "fetch_context", {"id": rng.choice(shared.ids)})


async def listed_ids(url: str, token: str) -> tuple[list[str], int]:
    """Every active record's id, walking list_context page by page; and errors met."""
    found: list[str] = []
    async with connect(url, token) as client:
        cursor: str | None = None
        while True:
            arguments: dict[str, Any] = {"limit": 100}
            if cursor:
                arguments["cursor"] = cursor
            try:
                result = await client.call_tool("list_context", arguments)
            except Exception as error:  # noqa: BLE001 - reported as an audit error
                print(f"audit: list_context failed: {error!r}", file=sys.stderr)
                return found, 1
            if result.is_error or result.structured_content is None:
                print(f"audit: list_context answered {error_code(result)}", file=sys.stderr)
                return found, 1
            page = result.structured_content
            found.extend(item["id"] for item in page["items"])
            cursor = page["next_cursor"]
            if not cursor:
                return found, 0


def compare(source: str, expected: set[str], found: list[str], errors: int = 0) -> Audit:
    extra = len(found) - len(set(found)) + len(set(found) - expected)
    return Audit(source, len(found), len(expected - set(found)), extra, errors)


def audit_store(store: MemoryStore, saved: dict[Payload, str]) -> Audit:
    """Every record in any state, read from the store itself: one per payload, nothing else."""
    everything = MemoryFilter(states=tuple(BranchState))
    records: list[Memory] = []
    after: PageKey | None = None
    while page := store.list_page(everything, limit=500, after=after):
        records.extend(page)
        after = PageKey(page[-1].created_at, page[-1].id)
    by_payload: dict[Payload, list[str]] = defaultdict(list)
    for memory in records:
        by_payload[Payload(memory.content, memory.topic)].append(memory.id)
    lost = sum(1 for payload, i in saved.items() if i not in by_payload.get(payload, ()))
    extra = sum(len(ids) for payload, ids in by_payload.items() if payload not in saved) + sum(
        len(by_payload[payload]) - 1 for payload in saved if len(by_payload[payload]) > 1
    )
    return Audit("store", len(records), lost, extra)


def percentiles(seconds: list[float]) -> dict[str, float]:
    ms = sorted(s * 1000 for s in seconds)
    cuts = statistics.quantiles(ms, n=100, method="inclusive") if len(ms) > 1 else ms * 99
    return {"p50_ms": cuts[49], "p95_ms": cuts[94], "p99_ms": cuts[98]}


def _stat(pid: int) -> list[str] | None:
    """Fields of /proc/<pid>/stat after the command name (Linux); None elsewhere."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None


def child_pid() -> int | None:
    """The one child process (the server we started), found through /proc on Linux."""
    for stat in Path("/proc").glob("[0-9]*/stat"):
        fields = _stat(int(stat.parent.name))
        if fields is not None and int(fields[1]) == os.getpid():
            return int(stat.parent.name)
    return None


def cpu_seconds(pid: int | None) -> float | None:
    """User + system CPU time a process has used so far."""
    fields = _stat(pid) if pid is not None else None
    if fields is None:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def run_load(
    url: str,
    token: str,
    clients: int = 16,
    seconds: float | None = 30.0,
    operations: int | None = None,
    seed: int = 7,
    server_pid: int | None = None,
) -> Report:
    """Drive ``clients`` concurrent MCP clients, then audit through ``list_context``.

    With ``server_pid`` (a server process on this machine) its CPU use is reported too.
    """
    shared = Shared()
    stop = Stop(seconds, operations)
    load_before = os.getloadavg()[0]
    cpu_before = time.process_time()
    server_before = cpu_seconds(server_pid)
    started = time.perf_counter()
    with progress("load", operations, unit="op") as bar:
        runner = Runner(shared, bar)
        await asyncio.gather(
            *(one_client(i, url, token, runner, stop, seed) for i in range(clients))
        )
    elapsed = time.perf_counter() - started
    client_cpu = time.process_time() - cpu_before
    server_after = cpu_seconds(server_pid)
    server_cpu = (
        round(server_after - server_before, 2)
        if server_before is not None and server_after is not None
        else None
    )
    found, list_errors = await listed_ids(url, token)
    saved = shared.saved()
    return Report(
        clients=clients,
        seconds=round(elapsed, 2),
        operations=shared.calls,
        per_second=shared.calls / elapsed,
        per_tool={
            tool: {"count": len(values), "per_second": len(values) / elapsed, **percentiles(values)}
            for tool, values in sorted(shared.latencies.items())
        },
        errors=dict(shared.errors),
        fresh_saves=shared.fresh_saves,
        retries=shared.retries,
        concurrent_retries=shared.concurrent_retries,
        distinct_payloads=len(saved),
        inconsistent_answers=shared.inconsistent(),
        audits=[compare("list_context", set(saved.values()), found, list_errors)],
        cpus=os.cpu_count(),
        load_average_before=load_before,
        client_cpu_seconds=round(client_cpu, 2),
        server_cpu_seconds=server_cpu,
        saved=saved,
    )


def server_environment(data_dir: Path, token: str) -> dict[str, str]:
    """This process's environment without MetaCortex's own settings, plus a server on the
    embedded default in ``data_dir`` whose rate limits a benchmark never reaches."""
    keep = {k: v for k, v in os.environ.items() if not k.startswith(_OWN_PREFIXES)}
    return keep | {
        "MCP_ADMIN_TOKEN": token,
        "METACORTEX_DATA_DIR": str(data_dir),
        "METACORTEX_STORE": "sqlite",
        "METACORTEX_EMBEDDINGS": "local",
        "METACORTEX_RATE_LIMIT_PER_MINUTE": "10000000",
        "METACORTEX_ADMIN_RATE_LIMIT_PER_MINUTE": "10000000",
        "METACORTEX_LOG_LEVEL": "WARNING",
    }


@dataclass
class LocalServer:
    url: str
    token: str
    database: Path
    process: WatchedProcess


@contextmanager
def local_server() -> Iterator[LocalServer]:
    """``metacortex serve`` on the embedded default in a fresh data directory."""
    token = secrets.token_urlsafe(32)
    with tempfile.TemporaryDirectory(prefix="metacortex-load-") as folder:
        data_dir = Path(folder) / "data"
        env = server_environment(data_dir, token)
        server = WatchedProcess(
            [str(METACORTEX), "serve", "--port", "0"],
            "is ready at http://",
            env=env,
            cwd=Path(folder),  # no .env there
        )
        try:
            server.wait_ready(180, "metacortex serve")
            url = next(m[1] for line in server.log if (m := _READY.search(line)))
            health = httpx2.get(f"{url}/healthz", timeout=60)
            if health.json() != {"status": "ok"}:
                raise RuntimeError(f"metacortex serve is not healthy: {health.text}")
            yield LocalServer(f"{url}/mcp", token, data_dir / "metacortex.sqlite3", server)
        finally:
            server.stop()


def print_report(report: Report) -> None:
    print(
        f"{report.clients} clients, {report.seconds:.1f} s, {report.operations} operations "
        f"({report.per_second:.1f}/s); {report.cpus} CPUs, load average before "
        f"{report.load_average_before:.2f}"
    )
    server = report.server_cpu_seconds
    print(
        f"CPU time        clients {report.client_cpu_seconds:.1f} s"
        + (f", server {server:.1f} s ({server / report.seconds:.2f} cores)" if server else "")
    )
    print(f"{'tool':<16}{'count':>7}{'ops/s':>8}{'p50 ms':>9}{'p95 ms':>9}{'p99 ms':>9}")
    for tool, row in report.per_tool.items():
        print(
            f"{tool:<16}{row['count']:>7.0f}{row['per_second']:>8.1f}"
            f"{row['p50_ms']:>9.1f}{row['p95_ms']:>9.1f}{row['p99_ms']:>9.1f}"
        )
    print(f"errors          {sum(report.errors.values())} {report.errors or ''}")
    print(
        f"saves           {report.fresh_saves} new payloads, {report.retries} retries "
        f"({report.concurrent_retries} racing their original); {report.distinct_payloads} "
        f"distinct payloads answered, {report.inconsistent_answers} with inconsistent answers"
    )
    for audit in report.audits:
        print(
            f"audit {audit.source:<14}{audit.records} records; lost {audit.lost_writes}, "
            f"duplicates {audit.duplicate_records}"
            + (f", errors {audit.errors}" if audit.errors else "")
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

    def go(url: str, token: str, server_pid: int | None = None) -> Report:
        print(f"load: {args.clients} clients against {url} ...", file=sys.stderr)
        return asyncio.run(
            run_load(url, token, args.clients, seconds, args.operations, args.seed, server_pid)
        )

    if args.url:
        token = args.token or os.environ.get("MCP_ADMIN_TOKEN")
        if not token:
            raise SystemExit("load: pass --token or set MCP_ADMIN_TOKEN for --url")
        report = go(args.url, token)
    else:
        print("load: starting metacortex serve (SQLite + local model) ...", file=sys.stderr)
        with local_server() as server:
            report = go(server.url, server.token, child_pid())
            server.process.stop()  # a clean shutdown, then read the file it leaves
            store = SQLiteStore(server.database)
            try:
                report.audits.append(audit_store(store, report.saved))
            finally:
                store.close()
    if args.json:
        print(json.dumps(report.as_dict()))
    else:
        print_report(report)
    return 0 if report.passed else 1


if __name__ == "__main__":
    raise SystemExit(main())
