"""A cold function answers the MCP handshake while its store is still opening.

The Cloud Functions entry starts the app with ``background_start``: opening
Firestore (the client library's import, the channel, the embedding identity's
transaction) happens after the first requests are let in, and only what needs
the store waits for it. Here the store never opens: Firestore is a socket that
accepts connections and never answers, so anything that waited for it would
hang. ``tools/list`` and ``/healthz`` must answer regardless.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from typing import Any

import httpx2
import pytest

from bench.cold_start import ADMIN_TOKEN, FunctionProcess, production_settings, stateless_call

pytestmark = pytest.mark.slow

HEADERS = {
    "authorization": f"Bearer {ADMIN_TOKEN}",
    "content-type": "application/json",
    "accept": "application/json, text/event-stream",
    "mcp-protocol-version": "2026-07-28",
}


@pytest.fixture
def silent_firestore() -> Iterator[str]:
    """host:port of a server that accepts every connection and never says a word."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        while not stop.is_set():
            try:
                connection, _ = listener.accept()
            except OSError:
                return
            held.append(connection)

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield f"127.0.0.1:{listener.getsockname()[1]}"
    stop.set()
    listener.close()
    for connection in held:
        connection.close()
    thread.join(5)


def _post(http: httpx2.Client, body: dict[str, Any], method: str) -> httpx2.Response:
    return http.post("/metaCortexMcp/mcp", json=body, headers={**HEADERS, "mcp-method": method})


def test_tools_list_and_health_answer_while_the_store_cannot_open(silent_firestore: str) -> None:
    with FunctionProcess(production_settings(silent_firestore, "http://127.0.0.1:9")) as function:
        function.wait_listening()
        # Well under the Firestore client's 60 s of retries: waiting for the store fails this.
        with httpx2.Client(base_url=function.url, timeout=20) as http:
            listed = _post(http, stateless_call("tools/list"), "tools/list")
            health = http.get("/healthz")

    assert listed.status_code == 200
    names = {tool["name"] for tool in listed.json()["result"]["tools"]}
    assert {"save_context", "search_context", "fetch_context"} <= names
    assert health.status_code == 200


def test_a_store_that_cannot_open_is_logged_once_and_answered_503_from_then_on() -> None:
    settings = {
        "GEMINI_API_KEY": "AIzaBENCH-not-a-real-key-000000000000",
        "GOOGLE_GEMINI_BASE_URL": "http://127.0.0.1:9",
        "MCP_ADMIN_TOKEN": ADMIN_TOKEN,
        # No project and no credentials for Firestore (and no metadata server to ask).
        "NO_GCE_CHECK": "True",
        "CLOUDSDK_CONFIG": "/nonexistent",
    }
    with FunctionProcess(settings) as function:
        function.wait_listening()
        with httpx2.Client(base_url=function.url, timeout=60) as http:
            # The sign-in page needs the store: it waits for start-up to end.
            sign_in = http.get("/metaCortexMcp/owner/sign-in")
            listed = _post(http, stateless_call("tools/list"), "tools/list")
            health = http.get("/healthz")

    for answer in (sign_in, listed, health):
        assert answer.status_code == 503
        assert answer.json()["error"]["code"] == "unavailable"
    log = "\n".join(function.log)
    reasons = [line for line in function.log if "MetaCortex could not start" in line]
    assert len(reasons) == 1
    assert "GOOGLE_CLOUD_PROJECT" in reasons[0]
    assert "Traceback" not in log
    assert ADMIN_TOKEN not in log
