"""Connection hygiene of ``metacortex serve`` (issue 8 item 1).

Silent, trickling and stalled connections are closed by read deadlines; past the
connection cap the longest-idle connection makes room; a server limited to 128
file descriptors keeps answering while 130 sockets sit silent; and the event
loop's accept-error line no longer floods the log.

The in-process tests run uvicorn with our protocol on a real loopback socket.
Nothing sleeps: each test waits for the server to act (a close, a response),
bounded by a generous socket timeout that only matters when the behaviour is
missing.
"""

from __future__ import annotations

import logging
import os
import resource
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx2
import pytest
import uvicorn

from metacortex.guard.connections import (
    AcceptErrorFilter,
    ConnectionLimits,
    fitted_connection_cap,
    guarded_protocol,
)

WAIT = 20.0  # seconds a test waits for the server before declaring the behaviour missing


@dataclass
class Served:
    port: int
    released: threading.Event  # lets the /slow handler answer
    arrived: threading.Semaphore  # released once per /slow request the app has read
    disconnects: list[str]
    server: uvicorn.Server | None = None

    def stop(self) -> None:
        """Begin uvicorn's graceful shutdown (as Ctrl-C does)."""
        assert self.server is not None
        self.server.should_exit = True

    def connect(self) -> socket.socket:
        sock = socket.create_connection(("127.0.0.1", self.port), timeout=WAIT)
        sock.settimeout(WAIT)
        return sock


def _app(served: Served) -> Any:
    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        if scope["path"] == "/refuse":  # answered on the head alone, as the guard's 401
            headers = [(b"content-length", b"2")]
            await send({"type": "http.response.start", "status": 401, "headers": headers})
            await send({"type": "http.response.body", "body": b"no"})
            return
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                served.disconnects.append(scope["path"])
                return
            if not message.get("more_body"):
                break
        if scope["path"] == "/slow":
            import anyio.to_thread

            served.arrived.release()
            await anyio.to_thread.run_sync(served.released.wait, WAIT)
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"ok"})

    return app


@pytest.fixture
def serve() -> Iterator[Any]:
    started: list[tuple[uvicorn.Server, threading.Thread, socket.socket]] = []

    def start(
        head: float = 0.3,
        body: float = 0.3,
        cap: int = 100,
        max_body: int = 100_000,
        deadline: float = 60.0,
        linger: float = 60.0,
    ) -> Served:
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        listener.bind(("127.0.0.1", 0))
        listener.listen(64)  # connections queue here until the server accepts them
        served = Served(listener.getsockname()[1], threading.Event(), threading.Semaphore(0), [])
        limits = ConnectionLimits(
            head_timeout=head,
            body_timeout=body,
            max_connections=cap,
            max_body=max_body,
            body_deadline=deadline,
            linger=linger,
        )
        config = uvicorn.Config(
            _app(served),
            http=guarded_protocol(limits),
            ws="none",
            lifespan="off",
            log_config=None,
            timeout_keep_alive=60,
        )
        server = served.server = uvicorn.Server(config)
        thread = threading.Thread(target=server.run, kwargs={"sockets": [listener]})
        thread.start()
        started.append((server, thread, listener))
        return served

    yield start
    for server, thread, listener in started:
        server.should_exit = True
        thread.join(timeout=WAIT)
        listener.close()


def _closed_by_server(sock: socket.socket) -> bool:
    """True when the server closes the connection (EOF or reset) before WAIT."""
    try:
        while True:
            if not sock.recv(4096):
                return True
    except ConnectionResetError:
        return True
    except TimeoutError:
        return False


def _get(sock: socket.socket, path: str) -> bytes:
    sock.sendall(f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".encode())
    return sock.recv(4096)


def test_a_connection_that_sends_nothing_is_closed_after_the_head_timeout(serve: Any) -> None:
    served = serve()
    with served.connect() as silent:
        assert _closed_by_server(silent)


def test_a_request_head_trickled_in_is_closed_at_the_head_deadline(serve: Any) -> None:
    served = serve()
    with served.connect() as slow:
        slow.sendall(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n")  # and never the rest
        assert _closed_by_server(slow)


def test_a_body_that_stops_half_way_is_closed_and_the_app_sees_a_disconnect(
    serve: Any,
) -> None:
    served = serve()
    with served.connect() as stalled:
        stalled.sendall(
            b"POST /upload HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 100\r\n\r\n0123456789"
        )
        assert _closed_by_server(stalled)
    with served.connect() as probe:  # the server lives on, and the app saw the disconnect
        assert _get(probe, "/after").startswith(b"HTTP/1.1 200")
    assert served.disconnects == ["/upload"]


def test_a_slow_handler_is_not_cut_by_the_read_deadlines(serve: Any) -> None:
    served = serve()
    with served.connect() as working, served.connect() as silent:
        working.sendall(b"GET /slow HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        assert _closed_by_server(silent)  # a head deadline has passed meanwhile
        served.released.set()
        assert working.recv(4096).startswith(b"HTTP/1.1 200")


def test_past_the_cap_the_longest_idle_connection_makes_room(serve: Any) -> None:
    served = serve(head=60.0, cap=8)
    idle = [served.connect() for _ in range(8)]
    try:
        with served.connect() as fresh:
            assert _get(fresh, "/healthz").startswith(b"HTTP/1.1 200")
        assert _closed_by_server(idle[0])
    finally:
        for sock in idle:
            sock.close()


def test_past_the_cap_with_every_connection_busy_the_new_one_is_closed(serve: Any) -> None:
    served = serve(head=60.0, cap=8)
    busy = [served.connect() for _ in range(8)]
    try:
        for sock in busy:
            sock.sendall(b"GET /slow HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        for _ in busy:  # every request is in the app: no connection is idle
            assert served.arrived.acquire(timeout=WAIT)
        with served.connect() as extra:
            extra.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            assert _closed_by_server(extra)
        served.released.set()
        for sock in busy:
            assert sock.recv(4096).startswith(b"HTTP/1.1 200")
    finally:
        served.released.set()
        for sock in busy:
            sock.close()


# ----------------------------------------------- answered before the body (issue 28)
def _refused_head(length: int, extra: str = "") -> bytes:
    return (
        f"POST /refuse HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: {length}\r\n{extra}\r\n"
    ).encode()


def _head_and_body(sock: socket.socket) -> bytes:
    """One response (head and its 2-byte body), read off the socket."""
    received = b""
    while not received.endswith(b"\r\n\r\nno"):
        chunk = sock.recv(4096)
        if not chunk:
            break
        received += chunk
    return received


def test_a_refusal_before_a_body_within_the_limit_keeps_the_connection_and_drops_the_body(
    serve: Any,
) -> None:
    served = serve(head=60.0, body=60.0)
    with served.connect() as client:
        client.sendall(_refused_head(50_000))
        answer = _head_and_body(client)
        assert answer.startswith(b"HTTP/1.1 401")
        assert b"connection: close" not in answer.lower()
        client.sendall(b"x" * 50_000)  # the body goes on after the refusal, as a pool's does
        assert _get(client, "/next").startswith(b"HTTP/1.1 200")  # same connection


def test_a_refusal_before_a_body_past_the_limit_says_close_and_reads_on_until_the_client_ends(
    serve: Any,
) -> None:
    served = serve(head=60.0, body=60.0, max_body=10_000)
    with served.connect() as client:
        client.sendall(_refused_head(1_000_000))
        answer = _head_and_body(client)
        assert answer.startswith(b"HTTP/1.1 401")
        assert b"connection: close" in answer.lower()
        # What is still on its way is read and dropped: no reset, which would destroy a
        # response the client has not read yet; the client ends, then the server.
        client.sendall(b"x" * 500_000)
        client.shutdown(socket.SHUT_WR)
        assert client.recv(4096) == b""  # an orderly end (a reset raises)


def test_a_closing_connection_lingers_only_so_long_for_a_client_that_never_ends(
    serve: Any,
) -> None:
    served = serve(head=60.0, body=60.0, max_body=10_000, linger=0.3)
    with served.connect() as client:
        client.sendall(_refused_head(1_000_000) + b"x" * 1000)  # then nothing, never closing
        assert b"connection: close" in _head_and_body(client).lower()
        assert _closed_by_server(client)


def test_a_client_waiting_for_100_continue_is_told_the_connection_closes(serve: Any) -> None:
    served = serve(head=60.0, body=60.0)
    with served.connect() as client:
        client.sendall(_refused_head(1_000, "Expect: 100-continue\r\n"))
        answer = _head_and_body(client)  # it may never send the body it was not asked for
        assert answer.startswith(b"HTTP/1.1 401")
        assert b"connection: close" in answer.lower()
        assert _closed_by_server(client)


def test_a_refused_body_that_stops_coming_is_closed_at_the_body_deadline(serve: Any) -> None:
    served = serve(head=60.0, body=60.0, deadline=0.5)
    with served.connect() as client:
        client.sendall(_refused_head(1_000))
        assert _head_and_body(client).startswith(b"HTTP/1.1 401")
        client.sendall(b"x")  # and no more
        assert _closed_by_server(client)


def test_past_the_cap_a_connection_dropping_a_refused_body_makes_room_before_an_idle_one(
    serve: Any,
) -> None:
    served = serve(head=60.0, body=60.0, cap=8)
    idle = [served.connect() for _ in range(7)]  # idle longer than the refused one below
    try:
        with served.connect() as refused:
            refused.sendall(_refused_head(1_000))  # and the body never follows
            assert _head_and_body(refused).startswith(b"HTTP/1.1 401")
            with served.connect() as fresh:
                assert _get(fresh, "/healthz").startswith(b"HTTP/1.1 200")
            assert _closed_by_server(refused)
        assert _get(idle[0], "/still-open").startswith(b"HTTP/1.1 200")
    finally:
        for sock in idle:
            sock.close()


def test_a_response_finished_while_the_server_shuts_down_says_the_connection_closes(
    serve: Any,
) -> None:
    served = serve(head=60.0)
    with served.connect() as working, served.connect() as idle:
        working.sendall(b"GET /slow HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        assert served.arrived.acquire(timeout=WAIT)
        served.stop()
        assert _closed_by_server(idle)  # uvicorn has told every connection to finish
        served.released.set()
        answer = working.recv(4096)

    assert answer.startswith(b"HTTP/1.1 200")
    assert b"connection: close" in answer.lower()


def test_the_connection_cap_is_fitted_below_the_descriptor_limit() -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    open_now = len(os.listdir("/proc/self/fd"))
    resource.setrlimit(resource.RLIMIT_NOFILE, (open_now + 100, hard))
    try:
        cap = fitted_connection_cap(1000)
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    assert cap < 100
    assert fitted_connection_cap(50) <= 50


def test_the_accept_error_line_passes_once_per_interval_without_a_traceback() -> None:
    accept_filter = AcceptErrorFilter(interval=3600)
    passed = []
    for _ in range(2048):
        record = logging.LogRecord(
            "asyncio",
            logging.ERROR,
            __file__,
            1,
            "socket.accept() out of system resource\nsocket: <socket>",
            None,
            (OSError, OSError(24, "Too many open files"), None),
        )
        if accept_filter.filter(record):
            passed.append(record)
    assert len(passed) == 1
    assert passed[0].exc_info is None
    assert "ulimit -n" in passed[0].getMessage()
    other = logging.LogRecord("asyncio", logging.ERROR, __file__, 1, "other", None, None)
    assert accept_filter.filter(other)


# ------------------------------------------------------------- the reported scenario
@pytest.mark.slow
def test_a_server_with_128_descriptors_answers_while_130_silent_sockets_are_open(
    tmp_path: Path,
) -> None:
    pytest.importorskip(
        "metacortex.providers.local", reason="LOCAL EMBEDDER NOT AVAILABLE: serve cannot start"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MCP_", "METACORTEX_"))}
    env["METACORTEX_HEAD_TIMEOUT_SECONDS"] = "600"  # the cap alone must keep it answering

    def limit_descriptors() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (128, 128))

    data_dir = tmp_path / "data"
    command = [sys.executable, "-m", "metacortex.cli.main", "serve", "--port", "0"]
    log_path = tmp_path / "stderr.log"
    with (
        log_path.open("wb") as log,
        subprocess.Popen(  # noqa: S603 (our own interpreter and arguments)
            [*command, "--data-dir", str(data_dir)],
            cwd=tmp_path,
            env=env,
            stdout=subprocess.PIPE,
            stderr=log,
            text=True,
            preexec_fn=limit_descriptors,  # runs before exec: the child has no threads yet
        ) as process,
    ):
        try:
            assert process.stdout is not None
            url = ""
            for line in process.stdout:
                if "is ready at " in line:
                    url = line.split("is ready at ", 1)[1].split()[0]
                    break
            assert url, "serve exited before it was ready"
            port = int(url.rsplit(":", 1)[1].split("/")[0])
            silent = [socket.create_connection(("127.0.0.1", port)) for _ in range(130)]
            try:
                answer = httpx2.get(f"{url}/healthz", timeout=WAIT)
                assert answer.status_code == 200
            finally:
                for sock in silent:
                    sock.close()
        finally:
            process.send_signal(signal.SIGINT)
            process.wait(timeout=60)
    assert log_path.stat().st_size < 64_000
