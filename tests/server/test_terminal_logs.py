"""Logs a person reads on a terminal are one readable line per call; collected logs
stay JSON (issue 21 §4, "logs on a terminal are JSON lines, two per tool call").

Counterparts: a real pseudo-terminal as the log stream (``tests.terminal_support``:
``isatty()`` is true, as for ``metacortex serve`` in a terminal window) and a pipe
where logs are collected; uvicorn serving the app as ``metacortex serve`` runs it
(``tests.abuse_support.live_server``); the official MCP client over real loopback
HTTP making the calls.
"""

from __future__ import annotations

import io
import json
import logging
import os
import re
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from metacortex.config import LogFormat, Settings
from metacortex.kernel.logs import configure_logging, log, request_lines
from tests.abuse_support import Live, live_server
from tests.server.conftest import ADMIN_TOKEN, HANDSHAKE_MODE, STATELESS_MODE
from tests.terminal_support import terminal

# 14:02:11 INFO    POST /mcp 200 19 ms · save_context ok 17 ms space=default person=owner
#   role=owner client_id=default (one line)
_TIME_LEVEL = r"^\d\d:\d\d:\d\d (INFO|WARNING|ERROR) +"
_MS = r"\d+(\.\d)? ms"
_WHO = "space=default person=owner role=owner"  # who acted where: the admin token's owner


pytestmark = pytest.mark.usefixtures("restore_logging")  # configure_logging is process-wide


@asynccontextmanager
async def admin_client(live: Live, mode: str) -> AsyncIterator[Client]:
    headers = {"authorization": f"Bearer {ADMIN_TOKEN}"}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=30) as http,
        Client(streamable_http_client(f"{live.url}/mcp", http_client=http), mode=mode) as client,
    ):
        yield client


@pytest.mark.anyio
@pytest.mark.parametrize("mode", [STATELESS_MODE, HANDSHAKE_MODE])
async def test_on_a_terminal_a_tool_call_is_one_readable_line(tmp_path: Path, mode: str) -> None:
    with terminal() as term:
        configure_logging("INFO", "auto", stream=term.writer)
        with live_server(tmp_path) as live:
            async with admin_client(live, mode) as client:
                await client.call_tool("save_context", {"content": "The NAS is in rack 4."})
                saved = term.wait_for(lambda line: "save_context" in line)
                await client.call_tool("fetch_context", {"id": "01" + "0" * 24})
                missing = term.wait_for(lambda line: "fetch_context" in line)

    assert re.match(
        _TIME_LEVEL + rf"POST /mcp 200 {_MS} · save_context ok {_MS} {_WHO} client_id=default$",
        saved,
    ), saved
    assert re.match(
        _TIME_LEVEL + rf"POST /mcp 200 {_MS} · fetch_context error not_found {_MS} {_WHO} "
        "client_id=default$",
        missing,
    ), missing
    assert not [line for line in term.seen if line.startswith("{")]  # no JSON on a terminal
    assert not [line for line in term.seen if " tool " in line]  # no second line per call


def test_on_a_terminal_control_characters_a_client_sends_are_shown_escaped(
    tmp_path: Path,
) -> None:
    """A path is percent-decoded before it is logged: ESC [2J would clear the screen."""
    with terminal() as term:
        configure_logging("INFO", "auto", stream=term.writer)
        with live_server(tmp_path) as live, live.client() as http:
            assert http.get("/x%1b%5b2Jy").status_code == 404
            # The server's access line (not the in-process client's own "HTTP Request:").
            line = term.wait_for(lambda text: "WARNING GET /x" in text)

    assert "\x1b" not in "".join(term.seen)
    assert "GET /x\\x1b[2Jy 404" in line


def test_where_logs_are_collected_they_stay_json_lines(tmp_path: Path) -> None:
    """A pipe (a log collector, a file, Cloud Functions' stderr) gets Cloud Logging's JSON."""
    reader, writer = os.pipe()
    with open(writer, "w", encoding="utf-8") as stream:
        configure_logging("INFO", "auto", stream=stream)
        with live_server(tmp_path) as live, live.client() as http:
            http.get("/nowhere")
        logging.getLogger().handlers[-1].flush()
        logging.getLogger().removeHandler(logging.getLogger().handlers[-1])
    with open(reader, encoding="utf-8") as collected:
        entries = [json.loads(line) for line in collected.read().splitlines()]

    [refused] = [entry for entry in entries if entry.get("message") == "GET /nowhere 404"]
    assert refused["severity"] == "WARNING"
    assert refused["httpRequest"]["status"] == 404


def test_the_log_format_can_be_forced_either_way(monkeypatch: pytest.MonkeyPatch) -> None:
    """METACORTEX_LOG_FORMAT=text on a pipe, =json on a terminal."""
    reader, writer = os.pipe()
    with open(writer, "w", encoding="utf-8") as stream:
        monkeypatch.setenv("METACORTEX_LOG_FORMAT", "text")
        configure_logging("INFO", _configured_format(), stream=stream)
        logging.getLogger("metacortex.server").warning("forced text")
    with open(reader, encoding="utf-8") as piped:
        assert re.match(r"^\d\d:\d\d:\d\d WARNING forced text$", piped.read().strip())

    with terminal() as term:
        monkeypatch.setenv("METACORTEX_LOG_FORMAT", "json")
        configure_logging("INFO", _configured_format(), stream=term.writer)
        logging.getLogger("metacortex.server").warning("forced json")
        line = term.wait_for(lambda text: "forced json" in text)
    assert json.loads(line)["message"] == "forced json"


def _configured_format() -> LogFormat:
    """METACORTEX_LOG_FORMAT as Settings reads it from the environment."""
    return Settings(_env_file=None).metacortex_log_format  # type: ignore[call-arg]


def test_a_tool_call_whose_request_ends_without_an_access_line_is_still_shown() -> None:
    """A client that hangs up mid-call cancels the request before its access line."""
    with terminal() as term:
        configure_logging("INFO", "text", stream=term.writer)
        with request_lines():
            log(logging.INFO, "tool save_context ok", tool_name="save_context", status="ok")
        line = term.wait_for(lambda text: "save_context" in text)
    assert re.match(_TIME_LEVEL + "tool save_context ok$", line), line


def test_logs_follow_stderr_when_the_stream_they_were_configured_with_is_closed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A server a test starts keeps logging after pytest closed and replaced the stderr it
    captured for an earlier test (uvicorn in a thread): before, every such line raised
    "--- Logging error --- I/O operation on closed file" onto the next test's stderr."""
    first, second = io.StringIO(), io.StringIO()
    monkeypatch.setattr(sys, "stderr", first)
    configure_logging("INFO", "json")
    first.close()
    monkeypatch.setattr(sys, "stderr", second)

    logging.getLogger("metacortex.server").warning("after the swap")

    assert json.loads(second.getvalue())["message"] == "after the swap"
