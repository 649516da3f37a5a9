"""Count the Firestore RPCs of one whole MCP tool call, as a client sees it.

The real app (``create_app``: the guard, the MCP transport, the tool path, the
event writer) is served by uvicorn on a loopback port over a store whose
client records every RPC (``tests.rpc_counting``). Each call goes through the
official ``mcp`` SDK's ``Client`` over streamable HTTP; after its answer the
event writer is flushed, so the tally holds everything the call caused: the
credential's checks, the use case's reads and the ``memory_events`` write
(which a request only queues; the writer thread commits it).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Final

import httpx2
import mcp_types as types
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from pydantic import SecretStr

from metacortex.config import Settings
from metacortex.server.app import create_app
from metacortex.service import MemoryService
from tests.oauth_support import serving
from tests.rpc_counting import RpcRecorder, Tally

ADMIN_TOKEN: Final = "admin-" + "W1h2O3l4E5c6A7l8L9c0O1u2N3t4E5d6"


class ServedCalls:
    """The app served over ``service`` (whose store's RPCs ``recorder`` sees)."""

    def __init__(self, url: str, recorder: RpcRecorder, app: Any) -> None:
        self._url = url
        self._recorder = recorder
        self._app = app

    def call(self, name: str, arguments: dict[str, Any]) -> tuple[dict[str, Any], Tally]:
        """One ``tools/call`` on the admin endpoint and what it cost (the events write
        included); the connection's ``initialize`` and a ``tools/list`` before the call
        (the server is up: its start-up reads are over) are not counted."""
        return asyncio.run(self._call(name, arguments))

    async def _call(self, name: str, arguments: dict[str, Any]) -> tuple[dict[str, Any], Tally]:
        headers = {"authorization": f"Bearer {ADMIN_TOKEN}"}
        async with (
            httpx2.AsyncClient(headers=headers, timeout=120) as http,
            Client(
                streamable_http_client(self._url + "/mcp", http_client=http), mode="2026-07-28"
            ) as client,
        ):
            await client.list_tools()
            await asyncio.to_thread(self._flush)
            self._recorder.reset()
            result = await client.call_tool(name, arguments)
            await asyncio.to_thread(self._flush)
            tally = self._recorder.tally()
        assert not result.is_error, result.content
        first = result.content[0]
        assert isinstance(first, types.TextContent)
        return dict(result.structured_content or {}), tally

    def _flush(self) -> None:
        events = self._app.state.runtime.events
        if events is not None:
            events.flush()


@contextmanager
def served(service: MemoryService, recorder: RpcRecorder) -> Iterator[ServedCalls]:
    """``service`` behind the real app on a loopback port, for ``ServedCalls.call``."""
    settings = Settings(  # type: ignore[call-arg]
        _env_file=None,
        mcp_admin_token=SecretStr(ADMIN_TOKEN),
        metacortex_rate_limit_per_minute=1_000_000,
        metacortex_admin_rate_limit_per_minute=1_000_000,
    )
    app = create_app(settings, service)
    with serving(app) as url:
        yield ServedCalls(url, recorder, app)
