"""The load check (bench/load.py) in miniature, against a real loopback server:
concurrent official MCP clients saving (retries of earlier payloads from other
clients, and retries racing their original), searching and fetching, then both
audits: list_context through the endpoint and the store itself. A fixed number
of operations, not a duration, so the amount of work does not depend on the
machine. The full 16-client, 30-second run on the local model is in
docs/benchmarks.md."""

from __future__ import annotations

import pytest

from bench.load import audit_store, run_load
from tests.server.conftest import ADMIN_TOKEN, LiveServer

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


async def test_concurrent_clients_lose_no_write_and_retries_create_no_duplicate(
    live: LiveServer,
) -> None:
    report = await run_load(
        f"{live.url}/mcp", ADMIN_TOKEN, clients=6, seconds=None, operations=240, seed=3
    )
    report.audits.append(audit_store(live.service.store, report.saved))

    assert report.errors == {}
    assert report.operations == 240
    assert set(report.per_tool) == {"save_context", "search_context", "fetch_context"}
    assert report.retries > report.concurrent_retries > 0
    assert report.distinct_payloads == report.fresh_saves > 0
    assert report.inconsistent_answers == 0
    assert [(a.source, a.records) for a in report.audits] == [
        ("list_context", report.distinct_payloads),
        ("store", report.distinct_payloads),
    ]
    assert all(a.lost_writes == a.duplicate_records == a.errors == 0 for a in report.audits)
    assert report.passed
