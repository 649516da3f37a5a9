"""What strangers can make the authorization server store (issue 19, item 11).

    .venv/bin/python bench/store_filling.py                 # the report's attack, replayed
    .venv/bin/python bench/store_filling.py --authorize 5252 --json

Starts the real app with OAuth on (SQLite store in a fresh temporary directory,
default limits) under uvicorn on loopback and replays, from one client address,
the requests of the report: ``--registrations`` (200) registrations with a 1 MB
``client_name``, then ``--authorize`` (1,000) ``GET /oauth/authorize`` with a
20 KB ``state`` and ``code_challenge``. Then the largest requests the server still
accepts, in a burst of the same size: a registration body of just under 16 KiB and
an authorization request with a 2,048-character ``state`` and a 128-character
``code_challenge``. For each phase: the answers by status, the ``auth_state`` rows
and bytes added (read from the database file) and the growth of the database
files (main file + WAL), per accepted and per refused request.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sqlite3
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from contextlib import closing
from pathlib import Path
from typing import Any, Final

import httpx2

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from tests.oauth_support import CALLBACK, Browserless, oauth_server

MEGABYTE: Final = 1_000_000


def _footprint(database: Path) -> tuple[int, int, int]:
    """(rows, data bytes of auth_state, bytes of the database files)."""
    with closing(sqlite3.connect(database)) as db:
        rows, size = db.execute(
            "SELECT COUNT(*), COALESCE(SUM(LENGTH(data)), 0) FROM auth_state"
        ).fetchone()
    files = sum(
        path.stat().st_size for path in (database, Path(f"{database}-wal")) if path.exists()
    )
    return int(rows), int(size), files


def _phase(
    name: str, database: Path, count: int, send: Callable[[], httpx2.Response]
) -> dict[str, Any]:
    rows_before, data_before, files_before = _footprint(database)
    started = time.perf_counter()
    statuses = Counter(send().status_code for _ in range(count))
    seconds = time.perf_counter() - started
    rows_after, data_after, files_after = _footprint(database)
    accepted = sum(n for status, n in statuses.items() if status in (201, 303))
    added_rows = rows_after - rows_before
    return {
        "phase": name,
        "requests": count,
        "statuses": dict(sorted(statuses.items())),
        "seconds": round(seconds, 1),
        "rows_added": added_rows,
        "data_bytes_added": data_after - data_before,
        "file_bytes_added": files_after - files_before,
        "data_bytes_per_accepted": round((data_after - data_before) / accepted) if accepted else 0,
        "rows_per_refused": round((added_rows - accepted) / max(1, count - accepted), 3),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--registrations", type=int, default=200)
    parser.add_argument("--authorize", type=int, default=1000)
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    args = parser.parse_args()
    logging.getLogger("metacortex").setLevel(logging.ERROR)  # one access-log line per request
    report: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as directory, oauth_server(Path(directory)) as live:
        database = Path(directory) / "m.sqlite3"
        http = httpx2.Client(base_url=live.url, timeout=60, follow_redirects=False)
        client_id = http.post(
            "/oauth/register",
            json={"redirect_uris": [CALLBACK], "token_endpoint_auth_method": "none"},
        ).json()["client_id"]

        def register(**metadata: Any) -> Callable[[], httpx2.Response]:
            body = {"redirect_uris": [CALLBACK], "token_endpoint_auth_method": "none"}
            return lambda: http.post("/oauth/register", json={**body, **metadata})

        agent = Browserless(live)

        def authorize(state: str, challenge: str) -> Callable[[], httpx2.Response]:
            return lambda: agent.authorize(client_id, challenge, state=state)

        uris = [f"https://app.example/callback/{i:04d}" for i in range(430)]
        largest = {"client_name": "N" * 200, "redirect_uris": uris}
        assert len(json.dumps(largest)) < 16 * 1024 - 200
        phases = [
            (
                "registration, 1 MB client_name",
                args.registrations,
                register(client_name="N" * MEGABYTE),
            ),
            ("registration, largest accepted (~16 KB)", args.registrations, register(**largest)),
            (
                "authorize, 20 KB state and code_challenge",
                args.authorize,
                authorize("S" * 20_000, "C" * 20_000),
            ),
            (
                "authorize, largest accepted (state 2,048)",
                args.authorize,
                authorize("S" * 2048, "C" * 128),
            ),
        ]
        for index, (name, count, send) in enumerate(phases):
            if index:
                time.sleep(61)  # the per-address buckets refill: each phase starts afresh
            report.append(_phase(name, database, count, send))
        http.close()
        agent.close()
    load = [round(value, 2) for value in os.getloadavg()]
    if args.json:
        print(json.dumps({"phases": report, "load_average": load}, indent=2))
        return 0
    for row in report:
        print(
            f"{row['phase']}: {row['requests']} requests in {row['seconds']} s, "
            f"statuses {row['statuses']}; +{row['rows_added']} rows, "
            f"+{row['data_bytes_added']} data bytes (+{row['file_bytes_added']} file bytes); "
            f"{row['data_bytes_per_accepted']} bytes per accepted request, "
            f"{row['rows_per_refused']} rows per refused request"
        )
    print(f"load average {load}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
