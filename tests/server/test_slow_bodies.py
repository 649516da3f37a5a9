"""Slow request bodies cannot hold the server (issue 19 item 10).

The counterpart is an attacker's raw socket against MetaCortex under uvicorn as
``metacortex serve`` runs it (and, for the body deadline, as the cloud deployment
runs it): a body trickled in a byte at a time, on the routes anyone can reach
(``/oauth/token``, ``/owner/sign-in``, an unauthenticated ``/mcp``). The
deadlines and the connection cap are configured small; the other deadlines are
configured long so that only the one under test can act. A socket waits for the
server to act: ``Expect: 100-continue`` makes uvicorn say when the app starts
reading the body, and the answers and closes are read off the socket.
"""

from __future__ import annotations

import contextlib
import socket
from pathlib import Path
from typing import Any, Final

import httpx2
import pytest

from tests.abuse_support import (
    Live,
    live_server,
    read_response_head,
    read_until_closed,
)

_LONG: Final[dict[str, Any]] = {
    "metacortex_head_timeout_seconds": 60.0,
    "metacortex_body_timeout_seconds": 60.0,  # the gap between two chunks
    "metacortex_body_deadline_seconds": 60.0,
}


def _start_slow_body(live: Live, path: str, length: int = 10_000) -> socket.socket:
    """A POST whose head is sent, then one body byte once the app is reading the body."""
    sock = live.connect()
    sock.sendall(
        f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        "Content-Type: application/x-www-form-urlencoded\r\n"
        f"Content-Length: {length}\r\nExpect: 100-continue\r\n\r\n".encode()
    )
    assert read_response_head(sock).startswith(b"HTTP/1.1 100 Continue")
    sock.sendall(b"g")
    return sock


@pytest.mark.parametrize("like", ["serve", "cloud"])
def test_a_body_still_trickling_at_the_body_deadline_gets_408_and_the_connection_ends(
    tmp_path: Path, like: Any
) -> None:
    settings = _LONG | {"metacortex_body_deadline_seconds": 0.5}
    with (
        live_server(tmp_path, like=like, **settings) as live,
        _start_slow_body(live, "/oauth/token") as slow,
    ):
        answer = read_until_closed(slow)

    assert answer is not None, "the connection was still open"
    assert answer.startswith(b"HTTP/1.1 408")
    assert b'"request_timeout"' in answer


def test_a_refusal_answered_before_a_trickling_body_ends_the_connection_at_the_body_deadline(
    tmp_path: Path,
) -> None:
    """The 401 is sent at once; the rest of the body (within the size limit) is read
    and dropped to keep the connection for the client's next request, but only within
    the body deadline, however it trickles."""
    settings = _LONG | {"metacortex_body_deadline_seconds": 0.5}
    with live_server(tmp_path, **settings) as live, live.connect() as attacker:
        attacker.sendall(
            b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            b"Content-Length: 100000\r\n\r\n{"
        )
        assert read_response_head(attacker).startswith(b"HTTP/1.1 401")
        with contextlib.suppress(OSError):  # the server may have closed already
            attacker.sendall(b'"')  # and the body goes on, a byte at a time

        assert read_until_closed(attacker) is not None


def test_a_client_still_uploading_when_refused_reads_the_refusal(tmp_path: Path) -> None:
    """A body past the size limit is never read: the refusal says ``Connection: close``
    and the server reads and drops what is still on its way until the client closes
    (a lingering close), so a real client (the ``httpx2`` transport the MCP SDK uses)
    sending a large body gets its 401 whole."""
    body = b"{" + b" " * 4_000_000 + b"}"
    with live_server(tmp_path, **_LONG) as live:
        answers = [
            httpx2.post(
                f"{live.url}/mcp",
                content=body,
                headers={"content-type": "application/json", "authorization": "Bearer expired"},
                timeout=30,
            )
            for _ in range(3)
        ]

    assert [(answer.status_code, answer.headers["connection"]) for answer in answers] == [
        (401, "close")
    ] * 3
    assert all(answer.json()["error"]["code"] == "unauthorized" for answer in answers)


def test_at_the_cap_slow_bodies_make_room_for_a_health_check_oldest_first(tmp_path: Path) -> None:
    cap = 8
    settings = _LONG | {"metacortex_max_connections": cap}
    with live_server(tmp_path, **settings) as live:
        routes = ["/oauth/token", "/owner/sign-in"] * (cap // 2)
        slow = [_start_slow_body(live, route) for route in routes]
        try:
            with live.connect() as probe:
                probe.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
                assert read_response_head(probe).startswith(b"HTTP/1.1 200")
            assert read_until_closed(slow[0]) is not None  # the body that started first made room
        finally:
            for sock in slow:
                sock.close()
