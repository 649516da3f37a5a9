"""What abuse costs a running ``metacortex serve`` (issue 19 items 10, 12, 15; issue 28
item 2): measured.

    .venv/bin/python bench/abuse.py slow-bodies   # 1,000 sockets trickling bodies, /healthz probed
    .venv/bin/python bench/abuse.py keep-alive    # refusals on one client connection pool
    .venv/bin/python bench/abuse.py log-bytes     # log bytes written per refused request
    .venv/bin/python bench/abuse.py sign-in-flood # server memory under sign-ins with 30 KB XFF
    .venv/bin/python bench/abuse.py limiter       # the rate limiter's memory bound, in process
    ... --source /tmp/base   # the server from another checkout's functions/ (e.g. before a fix)
    ... --json               # the report as one JSON object

Each server scenario starts ``metacortex serve`` in its own process on the embedded
default (SQLite + the local model) with OAuth on, in a fresh data directory, with
the settings the shell has cleared, and attacks it over loopback:

* ``slow-bodies``: ``--sockets`` connections, a third each on an unauthenticated
  ``POST /mcp`` (answered 401), ``POST /oauth/token`` and ``POST /owner/sign-in``,
  each declaring a 100 KB body and sending one byte of it every ``--interval``
  seconds; a closed one reconnects ``--interval`` seconds later. Meanwhile
  ``GET /healthz`` on a new connection every second, 5 s to answer. Reported: the
  probes answered and their latency, and the attack connections the server held
  at the end (ESTABLISHED in ``/proc/net/tcp``) and how often it closed them.
* ``keep-alive``: ``--requests`` refused ``POST /mcp`` on one ``httpx2`` connection
  pool, as an OAuth client meets them (in turn: no token and a wrong one, a small
  body and a 200 KB one), with a valid ``initialize`` after every fifth. Reported:
  the 401s that arrived whole, the requests that failed (a reset), the connections
  the pool opened (its trace hook) and the time.
* ``log-bytes``: ``--requests`` unauthenticated 404s with a 60 KB ``User-Agent``,
  then a tenth as many ``GET /oauth/authorize`` with a 20 KB ``state`` and
  ``code_challenge``; the bytes the server wrote to its log for each.
* ``sign-in-flood``: ``--seconds`` of sign-in posts from 8 clients, each with a new
  30 KB ``X-Forwarded-For``; the server's resident memory before and after. (Each
  refused guess runs the passphrase KDF until a limit answers 429 without it.)
* ``limiter``: ``--keys`` distinct 30 KB keys into one ``RateLimiter``; the memory
  it holds afterwards (tracemalloc) and the buckets kept.

The load average is printed with every figure: the machine is shared.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import json
import os
import re
import secrets
import statistics
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import httpx2

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from tests.processes import WatchedProcess

_OWN_PREFIXES: Final = ("MCP_", "METACORTEX_", "GEMINI_", "GOOGLE_", "FIRESTORE_")
_READY: Final = re.compile(r"is ready at (http://\S+)")
_SLOW_ROUTES: Final = (
    ("/mcp", "application/json"),
    ("/oauth/token", "application/x-www-form-urlencoded"),
    ("/owner/sign-in", "application/x-www-form-urlencoded"),
)


@dataclass
class Server:
    url: str
    port: int
    process: WatchedProcess
    admin_token: str

    def rss_kib(self) -> int:
        status = Path(f"/proc/{self.process.pid}/status").read_text()
        return int(next(line.split()[1] for line in status.splitlines() if line[:6] == "VmRSS:"))

    def established(self) -> int:
        """Connections to the server's port in state ESTABLISHED, seen from the server."""
        count = 0
        for table in ("/proc/net/tcp", "/proc/net/tcp6"):
            with contextlib.suppress(FileNotFoundError):
                for line in Path(table).read_text().splitlines()[1:]:
                    fields = line.split()
                    local_port = int(fields[1].rsplit(":", 1)[1], 16)
                    if local_port == self.port and fields[3] == "01":
                        count += 1
        return count

    def log_bytes(self) -> int:
        return sum(len(line.encode()) + 1 for line in self.process.log)


@contextmanager
def local_server(source: Path | None) -> Iterator[Server]:
    """``metacortex serve`` (OAuth on; no passphrase, so every sign-in is refused) in a
    fresh data directory."""
    with tempfile.TemporaryDirectory(prefix="metacortex-abuse-") as folder:
        keep = {k: v for k, v in os.environ.items() if not k.startswith(_OWN_PREFIXES)}
        admin_token = secrets.token_urlsafe(32)
        env = keep | {
            "MCP_ADMIN_TOKEN": admin_token,
            "METACORTEX_DATA_DIR": str(Path(folder) / "data"),
            "METACORTEX_STORE": "sqlite",
            "METACORTEX_EMBEDDINGS": "local",
            "METACORTEX_OAUTH": "true",
        }
        if source is not None:
            env["PYTHONPATH"] = str(source / "functions")
        python = [sys.executable, "-m", "metacortex.cli.main"]
        server = WatchedProcess(
            [*python, "serve", "--port", "0"], "is ready at http://", env=env, cwd=Path(folder)
        )
        try:
            server.wait_ready(180, "metacortex serve")
            url = next(m[1] for line in server.log if (m := _READY.search(line)))
            if httpx2.get(f"{url}/healthz", timeout=60).status_code != 200:
                raise RuntimeError("metacortex serve is not healthy")
            yield Server(url, int(url.rsplit(":", 1)[1]), server, admin_token)
        finally:
            server.stop()


def load_average() -> float:
    return os.getloadavg()[0]


# ---------------------------------------------------------------- slow bodies
async def _attacker(
    port: int, route: tuple[str, str], interval: float, tally: dict[str, int]
) -> None:
    path, content_type = route
    while True:
        try:
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
        except OSError:
            tally["connect_failures"] += 1
            await asyncio.sleep(interval)
            continue
        tally["connections"] += 1
        writer.write(
            f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: {content_type}\r\n"
            "Content-Length: 100000\r\n\r\n".encode()
        )
        closed = asyncio.ensure_future(_until_closed(reader))
        try:
            while not closed.done():
                writer.write(b"a")
                await writer.drain()
                await asyncio.wait({closed}, timeout=interval)
        except OSError:
            pass
        closed.cancel()
        writer.close()
        tally["closed_by_server"] += 1
        await asyncio.sleep(interval)  # at the attack's pace: no connection flood


async def _until_closed(reader: asyncio.StreamReader) -> None:
    with contextlib.suppress(OSError):
        while await reader.read(65536):
            pass


async def _probe(port: int) -> float | None:
    started = time.perf_counter()
    try:
        reader, writer = await asyncio.wait_for(
            asyncio.open_connection("127.0.0.1", port), timeout=5
        )
        writer.write(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), timeout=5)
        writer.close()
    except (OSError, TimeoutError, asyncio.IncompleteReadError):
        return None
    return time.perf_counter() - started if head.startswith(b"HTTP/1.1 200") else None


async def slow_bodies(
    server: Server, sockets: int, seconds: float, interval: float
) -> dict[str, Any]:
    tally = {"connections": 0, "closed_by_server": 0, "connect_failures": 0}
    attackers = [
        asyncio.ensure_future(
            _attacker(server.port, _SLOW_ROUTES[n % len(_SLOW_ROUTES)], interval, tally)
        )
        for n in range(sockets)
    ]
    await asyncio.sleep(min(5.0, seconds))  # let every attacker connect first
    probes: list[float | None] = []
    missed: list[float] = []  # seconds into the attack
    attack_started = time.monotonic()
    deadline = attack_started + seconds
    while time.monotonic() < deadline:
        started = time.monotonic()
        probes.append(await _probe(server.port))
        if probes[-1] is None:
            missed.append(round(started - attack_started, 1))
        await asyncio.sleep(max(0.0, 1.0 - (time.monotonic() - started)))
    held = server.established()
    for attacker in attackers:
        attacker.cancel()
    await asyncio.gather(*attackers, return_exceptions=True)
    answered = [latency for latency in probes if latency is not None]
    return {
        "attack_sockets": sockets,
        "byte_interval_s": interval,
        "seconds": seconds,
        "probes": len(probes),
        "probes_answered": len(answered),
        "probe_p50_ms": round(statistics.median(answered) * 1000, 1) if answered else None,
        "probe_max_ms": round(max(answered) * 1000, 1) if answered else None,
        "probes_missed_at_s": missed,
        "connections_held_at_end": held,
        "attack_connections_opened": tally["connections"],
        "attack_connections_closed_by_server": tally["closed_by_server"],
        "load_average": round(load_average(), 2),
    }


# ----------------------------------------------------------------- keep-alive
_MCP_HEADERS: Final = {
    "content-type": "application/json",
    "accept": "application/json, text/event-stream",
}
_INITIALIZE: Final = json.dumps(
    {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "abuse", "version": "1"},
        },
    }
).encode()


def keep_alive(server: Server, requests: int) -> dict[str, Any]:
    large = json.dumps(
        {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "tools/call",
            "params": {"name": "save_context", "arguments": {"content": "x" * 200_000}},
        }
    ).encode()
    kinds = [(None, _INITIALIZE), ("expired", _INITIALIZE), (None, large), ("expired", large)]
    connections = 0

    def trace(event: str, _info: dict[str, Any]) -> None:
        nonlocal connections
        connections += event == "connection.connect_tcp.complete"

    outcomes: dict[str, int] = {}

    def post(token: str | None, body: bytes, expect: int) -> None:
        headers = _MCP_HEADERS | ({"authorization": f"Bearer {token}"} if token else {})
        try:
            answer = http.post("/mcp", content=body, headers=headers, extensions={"trace": trace})
            whole = answer.status_code == expect and (
                expect != 401 or answer.json()["error"]["code"] == "unauthorized"
            )
            key = "whole" if whole else f"status {answer.status_code}"
        except httpx2.TransportError as error:
            key = type(error).__name__
        outcomes[key] = outcomes.get(key, 0) + 1

    started = time.perf_counter()
    valid = 0
    with httpx2.Client(base_url=server.url, timeout=30) as http:
        for n in range(requests):
            post(*kinds[n % len(kinds)], 401)
            if n % 5 == 4:
                valid += 1
                post(server.admin_token, _INITIALIZE, 200)
    return {
        "refused_requests": requests,
        "valid_requests": valid,
        "outcomes": outcomes,
        "connections_opened": connections,
        "seconds": round(time.perf_counter() - started, 1),
        "load_average": round(load_average(), 2),
    }


# ------------------------------------------------------------------ log bytes
def log_bytes(server: Server, requests: int) -> dict[str, Any]:
    user_agent = "u" * 60_000
    with httpx2.Client(base_url=server.url, timeout=30) as http:
        before = server.log_bytes()
        for n in range(requests):
            http.get(f"/no-such-page-{n}", headers={"user-agent": user_agent})
        after_404 = server.log_bytes()
        authorizes = max(1, requests // 10)
        for _ in range(authorizes):
            http.get(
                "/oauth/authorize",
                params={
                    "response_type": "code",
                    "client_id": "never-registered",
                    "state": "s" * 20_000,
                    "code_challenge": "c" * 20_000,
                    "code_challenge_method": "S256",
                },
            )
        after_authorize = server.log_bytes()
    return {
        "refused_404s": requests,
        "log_bytes_per_404_with_60kb_user_agent": round((after_404 - before) / requests),
        "authorize_requests": authorizes,
        "log_bytes_per_authorize_with_40kb_query": round(
            (after_authorize - after_404) / authorizes
        ),
        "load_average": round(load_average(), 2),
    }


# -------------------------------------------------------------- sign-in flood
async def sign_in_flood(server: Server, seconds: float) -> dict[str, Any]:
    async def one_client(stop: float, counts: dict[int, int]) -> None:
        async with httpx2.AsyncClient(base_url=server.url, timeout=30) as http:
            page = await http.get("/owner/sign-in")
            match = re.search(r'name="csrf" value="([^"]*)"', page.text)
            assert match is not None
            while time.monotonic() < stop:
                answer = await http.post(
                    "/owner/sign-in",
                    data={"csrf": match[1], "next": "", "passphrase": "a guess"},
                    headers={"x-forwarded-for": secrets.token_hex(15_000)},
                )
                counts[answer.status_code] = counts.get(answer.status_code, 0) + 1

    before = server.rss_kib()
    counts: dict[int, int] = {}
    stop = time.monotonic() + seconds
    await asyncio.gather(*(one_client(stop, counts) for _ in range(8)))
    after = server.rss_kib()
    return {
        "seconds": seconds,
        "attempts": sum(counts.values()),
        "statuses": {str(k): v for k, v in sorted(counts.items())},
        "rss_before_mib": round(before / 1024, 1),
        "rss_after_mib": round(after / 1024, 1),
        "rss_growth_mib": round((after - before) / 1024, 1),
        "load_average": round(load_average(), 2),
    }


# -------------------------------------------------------------------- limiter
def limiter_memory(keys: int) -> dict[str, Any]:
    from metacortex.guard.ratelimit import RateLimiter

    limiter = RateLimiter()
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    started = time.perf_counter()
    for n in range(keys):
        limiter.acquire(f"ip:{n:08d}" + "x" * 30_000, 5)
    elapsed = time.perf_counter() - started
    held = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    buckets = len(limiter._buckets)  # before the fix it had no len()
    return {
        "keys_offered": keys,
        "key_chars": 30_000 + 11,
        "buckets_kept": buckets,
        "memory_held_mib": round(held / 2**20, 2),
        "bytes_per_bucket": round(held / buckets) if buckets else None,
        "seconds": round(elapsed, 2),
        "load_average": round(load_average(), 2),
    }


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "scenario", choices=["slow-bodies", "keep-alive", "log-bytes", "sign-in-flood", "limiter"]
    )
    parser.add_argument("--sockets", type=int, default=1000)
    parser.add_argument("--interval", type=float, default=2.0, help="seconds between body bytes")
    parser.add_argument(
        "--seconds", type=float, help="how long to attack (slow-bodies 75, sign-in-flood 20)"
    )
    parser.add_argument("--requests", type=int, default=1000)
    parser.add_argument("--keys", type=int, default=100_000)
    parser.add_argument("--source", type=Path, help="run the server from this checkout")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    if args.scenario == "limiter":
        if args.source is not None:  # measured in this process: import that checkout's code
            sys.path.insert(0, str(args.source / "functions"))
        report = limiter_memory(args.keys)
    else:
        print(f"abuse: starting metacortex serve for {args.scenario} ...", file=sys.stderr)
        with local_server(args.source) as server:
            if args.scenario == "slow-bodies":
                seconds = args.seconds or 75.0
                report = asyncio.run(slow_bodies(server, args.sockets, seconds, args.interval))
            elif args.scenario == "keep-alive":
                report = keep_alive(server, args.requests)
            elif args.scenario == "log-bytes":
                report = log_bytes(server, args.requests)
            else:
                report = asyncio.run(sign_in_flood(server, args.seconds or 20.0))
    report = {"scenario": args.scenario, "source": str(args.source or "this checkout"), **report}
    if args.json:
        print(json.dumps(report))
    else:
        for key, value in report.items():
            print(f"{key:<40}{value}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
