"""Can a stranger tell a configured client id from an unknown one by timing? (issue 19)

    .venv/bin/python bench/enumeration.py                  # 500 rounds (about 2 minutes)
    .venv/bin/python bench/enumeration.py --rounds 100 --json

Starts the real app with OAuth on (SQLite store in a fresh temporary directory, the
test profiles ``web`` and ``reader``; a hashing embedder stands in for the model,
which no request here touches) under uvicorn on loopback, gets one real access token
for ``/mcp`` through registration, consent and the token endpoint, and then, round
after round, sends ``tools/list`` to ``/clients/web/mcp`` (configured) and
``/clients/nobody/mcp`` (not configured), interleaved, each with (a) a random bearer
token and (b) the valid token issued for ``/mcp``. Every answer must be the same 401.
Server time is measured by an ASGI wrapper around the app (arrival to last body
byte); the loopback round trip is printed beside it.

Prints, per token kind, the median and p95 server time at each id and the
difference of the medians, with the spread between two halves of the same id's own
samples for scale: a difference inside that spread is noise. The resource metadata
status of both ids is printed too. Timings depend on the machine's load: say the
load average (``uptime``) beside any figure.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Final

import httpx2

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.console import ServerTimer
from metacortex.access.profiles import new_token
from metacortex.owner import set_passphrase
from metacortex.providers.offline_merge import SentenceUnionMerger
from metacortex.server.app import create_app
from metacortex.service import MemoryService
from metacortex.storage.sqlite import SQLiteStore
from tests.fakes import HashingEmbedder
from tests.oauth_support import PASSPHRASE, access_token_over_http, serving
from tests.server.conftest import make_settings

IDS: Final = {"known": "web", "unknown": "nobody"}
HEADERS: Final = {
    "content-type": "application/json",
    "accept": "application/json, text/event-stream",
    "mcp-protocol-version": "2025-06-18",
}
BODY: Final = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
PRESENTED: Final = ("a random bearer token", "the valid token issued for /mcp")


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q / 100 * len(ordered)) - 1))]


def measure(url: str, timer: ServerTimer, rounds: int) -> dict[str, Any]:
    http = httpx2.Client(base_url=url, timeout=60, follow_redirects=False)
    valid_elsewhere = access_token_over_http(http, url, f"{url}/mcp")
    metadata = {
        kind: http.get(f"/.well-known/oauth-protected-resource/clients/{client_id}/mcp").status_code
        for kind, client_id in IDS.items()
    }
    report: dict[str, Any] = {"resource_metadata_status": metadata}
    for presented in PRESENTED:
        server: dict[str, list[float]] = {kind: [] for kind in IDS}
        trips: dict[str, list[float]] = {kind: [] for kind in IDS}
        bodies: set[str] = set()
        for round_number in range(rounds + 20):
            order = list(IDS.items()) if round_number % 2 == 0 else list(IDS.items())[::-1]
            for kind, client_id in order:
                token = valid_elsewhere if presented == PRESENTED[1] else new_token()
                started = time.perf_counter()
                answer = http.post(
                    f"/clients/{client_id}/mcp",
                    json=BODY,
                    headers={**HEADERS, "authorization": f"Bearer {token}"},
                )
                trip = (time.perf_counter() - started) * 1000
                assert answer.status_code == 401, answer.text
                bodies.add(answer.text)
                if round_number >= 20:  # the first rounds warm code paths and caches
                    server[kind].append(timer.last_ms)
                    trips[kind].append(trip)
        halves = [
            abs(statistics.median(values[0::2]) - statistics.median(values[1::2]))
            for values in server.values()
        ]
        report[presented] = {
            **{
                kind: {
                    "server_p50_ms": round(statistics.median(server[kind]), 3),
                    "server_p95_ms": round(_percentile(server[kind], 95), 3),
                    "round_trip_p50_ms": round(statistics.median(trips[kind]), 3),
                }
                for kind in IDS
            },
            "median_difference_ms": round(
                statistics.median(server["known"]) - statistics.median(server["unknown"]), 3
            ),
            "same_id_split_difference_ms": round(max(halves), 3),
            "distinct_401_bodies": len(bodies),
        }
    http.close()
    return report


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=500)
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    args = parser.parse_args()
    logging.getLogger("metacortex").setLevel(logging.ERROR)  # one access-log line per request
    with tempfile.TemporaryDirectory() as directory:
        store = SQLiteStore(Path(directory) / "m.sqlite3")
        set_passphrase(store, PASSPHRASE)
        service = MemoryService(store, HashingEmbedder(), merger=SentenceUnionMerger())
        settings = make_settings(
            Path(directory) / "data",
            metacortex_oauth=True,
            metacortex_rate_limit_per_minute=1_000_000,
            metacortex_rejection_events_per_minute=0,
        )
        timer = ServerTimer(create_app(settings, service))
        try:
            with serving(timer) as url:
                report = measure(url, timer, args.rounds)
        finally:
            store.close()
    report["load_average"] = [round(load, 2) for load in os.getloadavg()]
    if args.json:
        print(json.dumps(report, indent=2))
        return 0
    print(f"resource metadata: {report['resource_metadata_status']}")
    for presented in PRESENTED:
        row = report[presented]
        same = row["distinct_401_bodies"] == 1
        print(f"{presented} ({args.rounds} rounds; every 401 body the same: {same})")
        for kind, client_id in IDS.items():
            timing = row[kind]
            print(
                f"  {kind:8} /clients/{client_id}/mcp  server p50 {timing['server_p50_ms']:.3f} ms"
                f"  p95 {timing['server_p95_ms']:.3f} ms"
                f"  round trip p50 {timing['round_trip_p50_ms']:.3f} ms"
            )
        print(
            f"  known - unknown median {row['median_difference_ms']:+.3f} ms; "
            f"same id, two halves: {row['same_id_split_difference_ms']:.3f} ms"
        )
    print(f"load average {report['load_average']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
