"""The load check (bench/load.py) in miniature, against a real loopback server:
concurrent official MCP clients saving (with cross-client retries), searching
and fetching, then the audit through list_context. The full 16-client, 30-second
run and its figures are in docs/benchmarks.md."""

from __future__ import annotations

import pytest

from bench.load import run_load
from tests.server.conftest import ADMIN_TOKEN, LiveServer

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


async def test_concurrent_clients_lose_no_write_and_retries_create_no_duplicate(
    live: LiveServer,
) -> None:
    report = await run_load(
        f"{live.url}/mcp", ADMIN_TOKEN, clients=6, seconds=None, operations=180, seed=3
    )
    assert report.errors == {}
    assert report.retries > 0
    assert report.distinct_payloads > 0
    assert report.stored_records == report.distinct_payloads
    assert (report.lost_writes, report.duplicate_records, report.retry_mismatches) == (0, 0, 0)
    assert report.passed
    assert set(report.per_tool) == {"save_context", "search_context", "fetch_context"}
