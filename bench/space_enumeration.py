"""Can a credential tell a space it was not granted from one that does not exist, by
timing? (issue 30 §2)

    .venv/bin/python bench/space_enumeration.py              # 500 rounds (about a minute)
    .venv/bin/python bench/space_enumeration.py --rounds 100 --json

Starts the real app (SQLite store in a fresh temporary directory) under uvicorn on
loopback with the team of ``tests/spaces/team.py``: Ann's client endpoint is granted
``family``, ``work`` and ``lab``; the space ``vault`` exists and holds a memory (Ann is
even a member there) but her credential is not granted it; ``attic`` does not exist.
A hashing embedder stands in for the model, which no request here reaches.

Round after round, Ann's endpoint is asked the same five calls naming ``vault`` and
naming ``attic``, interleaved (the order alternates each round): ``search_context``,
``fetch_context`` of the memory that is in ``vault``, ``save_context``,
``memory://topics?space=...`` and the ``context`` prompt. Every answer must be the
missing-space error, the same body once the key is replaced. Server time is measured
by an ASGI wrapper around the app (arrival to last body byte).

Prints, per call and over all of them, the median and p95 server time for each space,
the difference of the medians and the Kolmogorov-Smirnov distance between the two
distributions, beside the same two figures between two halves of one space's own
samples (what noise alone gives) and the KS distance that would be significant at
5 %. Timings depend on the machine's load: say the load average (``uptime``) beside
any figure.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import statistics
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final

import httpx2
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.console import ServerTimer
from bench.console import _percentile as percentile
from metacortex.providers.offline_merge import SentenceUnionMerger
from metacortex.server.app import create_app
from metacortex.service import MemoryService
from metacortex.storage.sqlite import SQLiteStore
from tests.fakes import HashingEmbedder
from tests.oauth_support import serving
from tests.server.conftest import make_settings
from tests.spaces.team import CLIENT_ID, MISSING, NOT_GRANTED, add_ann_client, build_team

SPACES: Final = {"not granted": NOT_GRANTED, "missing": MISSING}
HEADERS: Final = {
    "content-type": "application/json",
    "accept": "application/json, text/event-stream",
    "mcp-protocol-version": "2025-06-18",
}
WARM_UP_ROUNDS: Final = 20
# Kolmogorov-Smirnov: c(alpha) for a two-sample test at alpha = 0.05.
KS_C_05: Final = 1.358

Call = Callable[[str], dict[str, Any]]


def calls(vault_memory: str) -> dict[str, Call]:
    """Each call's JSON-RPC message naming a space."""

    def tool(name: str, arguments: Callable[[str], dict[str, Any]]) -> Call:
        return lambda space: {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": name, "arguments": {**arguments(space), "space": space}},
        }

    return {
        "search_context": tool("search_context", lambda s: {"query": "locker code"}),
        "fetch_context": tool("fetch_context", lambda s: {"id": vault_memory}),
        "save_context": tool("save_context", lambda s: {"content": "probe"}),
        "memory://topics": lambda space: {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "resources/read",
            "params": {"uri": f"memory://topics?space={space}"},
        },
        "context prompt": lambda space: {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "prompts/get",
            "params": {"name": "context", "arguments": {"space": space}},
        },
    }


def ks_distance(first: list[float], second: list[float]) -> float:
    """The largest gap between the two empirical distribution functions."""
    a, b = np.sort(first), np.sort(second)
    points = np.concatenate([a, b])
    gap = np.searchsorted(a, points, side="right") / len(a) - np.searchsorted(
        b, points, side="right"
    ) / len(b)
    return float(np.max(np.abs(gap)))


def compare(samples: dict[str, list[float]]) -> dict[str, Any]:
    refused, absent = samples["not granted"], samples["missing"]
    halves = [(values[0::2], values[1::2]) for values in samples.values()]
    n, m = len(refused), len(absent)
    half = min(len(pair[0]) for pair in halves)
    return {
        **{
            kind: {
                "server_p50_ms": round(statistics.median(values), 3),
                "server_p95_ms": round(percentile(values, 95), 3),
            }
            for kind, values in samples.items()
        },
        "median_difference_ms": round(statistics.median(refused) - statistics.median(absent), 3),
        "same_space_halves_median_difference_ms": round(
            max(abs(statistics.median(x) - statistics.median(y)) for x, y in halves), 3
        ),
        "ks_distance": round(ks_distance(refused, absent), 3),
        "same_space_halves_ks_distance": round(max(ks_distance(x, y) for x, y in halves), 3),
        "ks_significant_at_5_percent": round(KS_C_05 * ((n + m) / (n * m)) ** 0.5, 3),
        "ks_significant_at_5_percent_halves": round(KS_C_05 * (2 / half) ** 0.5, 3),
    }


def measure(
    url: str, token: str, vault_memory: str, timer: ServerTimer, rounds: int
) -> dict[str, Any]:
    # A connection per request: a reused loopback connection waits ~40 ms for a delayed
    # ACK here (a bare Starlette app under uvicorn too), which slows the rounds and not
    # the server time measured.
    http = httpx2.Client(
        base_url=url,
        timeout=60,
        headers={**HEADERS, "authorization": f"Bearer {token}"},
        limits=httpx2.Limits(max_keepalive_connections=0),
    )
    messages = calls(vault_memory)
    server: dict[str, dict[str, list[float]]] = {
        name: {kind: [] for kind in SPACES} for name in messages
    }
    bodies: dict[str, set[bytes]] = {name: set() for name in messages}
    for round_number in range(rounds + WARM_UP_ROUNDS):
        order = list(SPACES.items()) if round_number % 2 == 0 else list(SPACES.items())[::-1]
        for name, message in messages.items():
            for kind, space in order:
                answer = http.post(f"/clients/{CLIENT_ID}/mcp", json=message(space))
                assert answer.status_code == 200, answer.text
                assert b"is available to this credential" in answer.content, answer.text
                bodies[name].add(answer.content.replace(space.encode(), b"<space>"))
                if round_number >= WARM_UP_ROUNDS:  # warm code paths and caches first
                    server[name][kind].append(timer.last_ms)
    http.close()
    report: dict[str, Any] = {
        name: {**compare(samples), "distinct_bodies": len(bodies[name])}
        for name, samples in server.items()
    }
    pooled = {
        kind: [value for samples in server.values() for value in samples[kind]] for kind in SPACES
    }
    report["every call"] = {**compare(pooled), "distinct_bodies": max(map(len, bodies.values()))}
    return report


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=500)
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    args = parser.parse_args()
    logging.getLogger("metacortex").setLevel(logging.ERROR)  # one access-log line per request
    with tempfile.TemporaryDirectory() as directory:
        store = SQLiteStore(Path(directory) / "m.sqlite3")
        service = MemoryService(store, HashingEmbedder(), merger=SentenceUnionMerger())
        team = build_team(store, service)
        token = add_ann_client(team)
        settings = make_settings(
            Path(directory) / "data",
            mcp_client_profiles_json=None,
            metacortex_rate_limit_per_minute=1_000_000,
        )
        timer = ServerTimer(create_app(settings, service))
        try:
            with serving(timer) as url:
                report = measure(url, token, team.lockers[NOT_GRANTED], timer, args.rounds)
        finally:
            store.close()
    report["load_average"] = [round(load, 2) for load in os.getloadavg()]
    if args.json:
        print(json.dumps(report, indent=2))
        return 0
    print(f"{args.rounds} rounds; not granted = {NOT_GRANTED!r}, missing = {MISSING!r}")
    for name, row in report.items():
        if name == "load_average":
            continue
        print(
            f"{name:16} p50 {row['not granted']['server_p50_ms']:.3f} vs "
            f"{row['missing']['server_p50_ms']:.3f} ms ({row['median_difference_ms']:+.3f}; "
            f"halves {row['same_space_halves_median_difference_ms']:.3f})  "
            f"p95 {row['not granted']['server_p95_ms']:.3f} vs "
            f"{row['missing']['server_p95_ms']:.3f} ms  "
            f"KS {row['ks_distance']:.3f} (halves {row['same_space_halves_ks_distance']:.3f}; "
            f"significant from {row['ks_significant_at_5_percent']:.3f})  "
            f"bodies alike: {row['distinct_bodies'] == 1}"
        )
    print(f"load average {report['load_average']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
