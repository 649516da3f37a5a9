"""What a caller learns when it meets a rate limit, and the admin endpoint's limit
sized for imports (issue 21 §4: "a bulk import over MCP dies near call 300 with the
SDK's opaque 'Server returned an error response'").

Counterpart: the official MCP Python SDK client (``mcp.Client`` over Streamable
HTTP). Its transport turns a non-2xx answer into the caller's ``MCPError``: the
JSON-RPC error in the body when there is one, else the stand-in "Server returned
an error response" (``mcp/client/streamable_http.py``, ``_handle_post_request``);
HTTP headers such as ``Retry-After`` never reach the caller. The refusal is served
over real loopback HTTP by uvicorn as ``metacortex serve`` runs it.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from metacortex.access.profiles import load_profiles
from metacortex.service import MemoryService
from tests.abuse_support import live_server
from tests.server.conftest import (
    ADMIN_TOKEN,
    HANDSHAKE_MODE,
    STATELESS_MODE,
    make_settings,
    started,
)

LIMIT = 4


@pytest.mark.anyio
@pytest.mark.parametrize("mode", [STATELESS_MODE, HANDSHAKE_MODE])
async def test_a_call_past_the_rate_limit_raises_an_error_naming_the_limit_and_the_delay(
    tmp_path: Path, mode: str
) -> None:
    headers = {"authorization": f"Bearer {ADMIN_TOKEN}"}
    # Both names: the code before the admin setting existed limited /mcp by the first.
    limits: dict[str, Any] = {"metacortex_rate_limit_per_minute": LIMIT}
    limits["metacortex_admin_rate_limit_per_minute"] = LIMIT
    with live_server(tmp_path, **limits) as live:
        async with (
            httpx2.AsyncClient(headers=headers, timeout=30) as http,
            Client(
                streamable_http_client(f"{live.url}/mcp", http_client=http), mode=mode
            ) as client,
        ):
            refusal = await _save_until_refused(client, LIMIT + 1)

    said = re.fullmatch(
        rf"rate limited: this endpoint takes {LIMIT} requests a minute; retry after (\d+) s",
        str(refusal),
    )
    assert said is not None, str(refusal)  # before: "Server returned an error response"
    delay = int(said.group(1))
    assert 1 <= delay <= 60 // LIMIT
    assert refusal.data == {"code": "rate_limited", "retry_after_seconds": delay}


async def _save_until_refused(client: Client, calls: int) -> MCPError:
    """Save like an importer until the server refuses; the error the caller gets."""
    for n in range(calls):
        try:
            await client.call_tool("save_context", {"content": f"imported memory {n}"})
        except MCPError as error:
            return error
    raise AssertionError(f"{calls} calls were not refused")


@pytest.mark.anyio
async def test_an_import_of_more_than_300_saves_on_the_admin_token_is_not_refused(
    tmp_path: Path, service: MemoryService
) -> None:
    """What died near call 300 before: the default admin limit is sized for imports."""
    settings = make_settings(tmp_path / "data")  # no rate limit configured
    async with started(settings, service) as harness, harness.connect() as client:
        for n in range(320):
            result = await client.call_tool("save_context", {"content": f"imported memory {n}"})
            assert not result.is_error, result.content
    counts = service.store.topic_counts()
    assert sum(sum(states.values()) for states in counts.values()) == 320


def _admin_and_web(**values: Any) -> tuple[int, int]:
    settings = make_settings(Path("/nonexistent"), **values)
    profiles = load_profiles(settings)
    web = profiles.get("web")
    assert web is not None
    return profiles.admin.rate_limit_per_minute, web.rate_limit_per_minute


def test_the_admin_endpoint_takes_3000_a_minute_and_client_endpoints_300_by_default() -> None:
    assert _admin_and_web() == (3000, 300)


def test_each_rate_limit_setting_sets_its_own_endpoints() -> None:
    assert _admin_and_web(metacortex_admin_rate_limit_per_minute=10_000) == (10_000, 300)
    assert _admin_and_web(metacortex_rate_limit_per_minute=60) == (3000, 60)
