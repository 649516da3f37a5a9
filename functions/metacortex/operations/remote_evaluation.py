"""``eval run --url``: the same cases and metrics, against a deployed endpoint through MCP.

Each case is one ``search_context`` call made by the official ``mcp`` client
over Streamable HTTP, so the figures include what a real client sees: the
network, authentication and the server's own work. Latency is measured around
each call.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from metacortex.operations.evaluation import Case, Report, score_ranking
from metacortex.operations.progress import progress


class RemoteEvaluationError(Exception):
    pass


async def run_cases_over_mcp(
    url: str, token: str, cases: Sequence[Case], *, limit: int = 10
) -> Report:
    rankings: list[list[str]] = []
    latencies: list[float] = []
    async with (
        httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=60) as http,
        Client(streamable_http_client(url, http_client=http)) as client,
    ):
        tools = {tool.name for tool in (await client.list_tools()).tools}
        if "search_context" not in tools:
            raise RemoteEvaluationError(f"{url} does not offer search_context to this token")
        with progress("evaluate", len(cases), unit="case") as bar:
            for case in cases:
                arguments: dict[str, Any] = {"query": case.query, "limit": limit}
                if case.topic:
                    arguments["filter_topic"] = case.topic
                if case.state:
                    arguments["filter_state"] = case.state
                started = time.perf_counter()
                result = await client.call_tool("search_context", arguments)
                latencies.append((time.perf_counter() - started) * 1000)
                if result.is_error or result.structured_content is None:
                    text = result.content[0].text if result.content else "no text"  # type: ignore[union-attr]
                    raise RemoteEvaluationError(f"search_context failed: {text}")
                rankings.append([m["id"] for m in result.structured_content["matches"]])
                bar.advance(1)
    report = score_ranking(rankings, [case.expected_ids for case in cases], latencies)
    report.misses = [
        case.label or case.query
        for case, ranking in zip(cases, rankings, strict=True)
        if not set(case.expected_ids).intersection(ranking[:limit])
    ]
    return report
