"""Connection hygiene for ``metacortex serve``: read deadlines, a connection cap, a quiet log,
and closes that never break a client's connection pool.

uvicorn closes a connection only when it has been idle *after* a response
(keep-alive). A socket that connects and sends nothing, or sends a request head
one byte a minute, or stops half-way through a body, is kept forever; enough of
them exhaust the process's file descriptors and every later request hangs.

``guarded_protocol`` builds uvicorn's h11 protocol with these additions:

* the request head must arrive within ``head_timeout`` seconds of the connection
  (or of the previous response), however it trickles in;
* while a body is being read, a gap longer than ``body_timeout`` seconds between
  chunks closes the connection (the app sees ``http.disconnect``);
* a request answered before its body was read (a refusal: 401 before reading,
  408, 413) is the keep-alive case every OAuth client meets (``keepalive.py``): when
  the body's declared length is within ``max_body`` the connection is kept and the
  rest is read and dropped, within the body deadline; otherwise the response says
  ``Connection: close`` and the connection ends with a lingering close;
* at most ``max_connections`` are open. One more evicts the connection that has
  been idle longest (no request in flight), else the one that has been sending a
  request body longest; if every connection has a request in the app, the new
  one is closed at once. The cap is fitted below ``RLIMIT_NOFILE`` so accept()
  never runs out of descriptors.

The whole body's deadline (``METACORTEX_BODY_DEADLINE_SECONDS``) is the guard's
(``guard/request_guard.py``) for a body the app reads, so it holds in the cloud
deployment too, and this protocol's for the rest of a refused body it drops.

``AcceptErrorFilter`` rate-limits asyncio's "socket.accept() out of system
resource" line, which the event loop otherwise logs with a traceback for every
pending connection, several thousand times a second.
"""

from __future__ import annotations

import asyncio
import logging
import os
import resource
import time
from dataclasses import dataclass
from typing import Any, ClassVar, Final

import h11
import uvicorn
from starlette.types import ASGIApp
from uvicorn.protocols.http.h11_impl import H11Protocol

from metacortex.config import Settings
from metacortex.guard.keepalive import (
    LINGER_SECONDS,
    LingeringTransport,
    announcing_close,
    declared_length,
)

_LOG = logging.getLogger("metacortex.connections")
# Descriptors kept for everything that is not a client connection: the listening
# socket, SQLite and its journal, the model files, logs, the event loop's own pipes.
_RESERVED_DESCRIPTORS: Final = 32
_MINIMUM_CONNECTIONS: Final = 8


@dataclass(frozen=True)
class ConnectionLimits:
    head_timeout: float
    body_timeout: float
    max_connections: int
    max_body: int  # a refused body up to this long is read and dropped, keeping the connection
    body_deadline: float  # ... if all of it arrives within this, from its first byte
    linger: float = LINGER_SECONDS


def fitted_connection_cap(configured: int) -> int:
    """The configured cap, lowered so that connections cannot exhaust RLIMIT_NOFILE."""
    soft, _hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return configured
    try:
        open_now = len(os.listdir("/proc/self/fd"))
    except OSError:
        open_now = 16
    room = soft - open_now - _RESERVED_DESCRIPTORS
    return max(_MINIMUM_CONNECTIONS, min(configured, room))


def uvicorn_config(app: ASGIApp, settings: Settings) -> uvicorn.Config:
    """How ``metacortex serve`` runs ``app`` under uvicorn (tests run the very same)."""
    limits = ConnectionLimits(
        head_timeout=settings.metacortex_head_timeout_seconds,
        body_timeout=settings.metacortex_body_timeout_seconds,
        max_connections=fitted_connection_cap(settings.metacortex_max_connections),
        max_body=settings.metacortex_max_body_bytes,
        body_deadline=settings.metacortex_body_deadline_seconds,
    )
    return uvicorn.Config(
        app,
        http=guarded_protocol(limits),
        ws="none",  # MCP is HTTP only; a stray Upgrade is answered as plain HTTP
        log_config=None,  # keep the JSON logging the caller configured
        access_log=False,  # its lines would carry ?auth_token=; the guard logs instead
        # The client address is decided by the guard alone (guard/addresses.py), under
        # METACORTEX_TRUSTED_PROXY_HOPS; uvicorn's default believes any X-Forwarded-For
        # sent from loopback.
        proxy_headers=False,
        server_header=False,
        timeout_graceful_shutdown=10,
    )


class GuardedH11Protocol(H11Protocol):
    """uvicorn's h11 protocol with the read deadlines, the connection cap and the
    keep-alive-safe closes of ``_limits`` (a subclass per limits: ``guarded_protocol``).

    It overrides ``connection_made``, ``data_received``, ``on_response_complete`` and
    ``connection_lost`` and reads uvicorn's own state (``conn``, ``cycle``, ``flow``,
    ``headers``, ``connections``, the keep-alive timer): private to uvicorn, so the
    dependency is bounded in ``pyproject.toml`` and each name is checked against the
    installed uvicorn by ``tests/server/test_uvicorn_protocol.py``."""

    _limits: ClassVar[ConnectionLimits]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.app = announcing_close(self.app, self._closes_after_response)
        self._socket: LingeringTransport | None = None  # self.transport, from connection_made
        self._read_deadline: asyncio.TimerHandle | None = None
        self._drain_deadline: asyncio.TimerHandle | None = None
        self._idle_since = time.monotonic()
        self._body_since: float | None = None  # while a request body is being read

    # -- connection cap ------------------------------------------------------
    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        self._socket = LingeringTransport(
            transport, self.loop, self._client_still_sending, self._limits.linger
        )
        super().connection_made(self._socket)
        if len(self.connections) > self._limits.max_connections:
            victim = self._victim()
            if victim is None:
                _LOG.warning(
                    "connection refused: %d connections are busy",
                    self._limits.max_connections,
                )
                transport.abort()
                return
            victim.transport.abort()
        self._arm(self._limits.head_timeout)

    def _victim(self) -> GuardedH11Protocol | None:
        """Who makes room, first to last: a connection already closing; one dropping
        the rest of a refused body (its client has the answer); the one idle longest;
        the one that has been sending its request body longest (a slow body must not
        hold a slot that a quick request needs). A request whose body is read is
        never cut."""
        ranked = [
            (rank, other)
            for other in self.connections
            if isinstance(other, GuardedH11Protocol)
            and other is not self
            and (rank := other._eviction_rank()) is not None
        ]
        return min(ranked, key=lambda pair: pair[0])[1] if ranked else None

    def _eviction_rank(self) -> tuple[int, float] | None:
        if self.transport.is_closing():
            return (0, self._idle_since)
        if self._drain_deadline is not None:
            return (1, self._body_since if self._body_since is not None else 0.0)
        if self.conn.their_state is h11.IDLE and (
            self.cycle is None or self.cycle.response_complete
        ):
            return (2, self._idle_since)  # waiting for (the rest of) a request head
        if self._body_since is not None:
            return (3, self._body_since)
        return None

    # -- keep-alive: a response before the body was read ----------------------
    def _client_still_sending(self) -> bool:
        return self.conn.their_state is h11.SEND_BODY

    def _closes_after_response(self) -> bool:
        """Whether the connection ends after the response now starting, so that it
        says ``Connection: close``. A request the client asked to close, or one the
        app refused with that header, h11 handles itself."""
        if self.cycle is not None and not self.cycle.keep_alive:
            return True  # uvicorn is shutting down
        return self._client_still_sending() and not self._drainable()

    def _drainable(self) -> bool:
        """The rest of a body answered before it was read can be read and dropped,
        keeping the connection: its declared length is within the body limit, and the
        client is not waiting for ``100 Continue`` (it may never send the body)."""
        if self.conn.they_are_waiting_for_100_continue:
            return False
        length = declared_length(self.headers)
        return length is not None and length <= self._limits.max_body

    def _drain_timed_out(self) -> None:
        self._drain_deadline = None
        self.transport.close()  # lingers: the rest is still on its way

    def _stop_draining(self) -> None:
        if self._drain_deadline is not None:
            self._drain_deadline.cancel()
            self._drain_deadline = None

    # -- read deadlines ------------------------------------------------------
    def data_received(self, data: bytes) -> None:
        if self._socket is not None and self._socket.lingering:
            return  # closing: what the client still sends is dropped unread
        draining = self.cycle if self._drain_deadline is not None else None
        super().data_received(data)
        state = self.conn.their_state
        if draining is not None and (self.cycle is not draining or state is not h11.SEND_BODY):
            self._drained()
        self._rearm()

    def _drained(self) -> None:
        """The refused body is all read (uvicorn dropped it): the connection is idle
        again, under uvicorn's keep-alive timer, or has the next request."""
        self._stop_draining()
        self._disarm()
        self._body_since = None
        if self.conn.their_state is h11.IDLE and not self.transport.is_closing():
            self.timeout_keep_alive_task = self.loop.call_later(
                self.timeout_keep_alive, self.timeout_keep_alive_handler
            )

    def _rearm(self) -> None:
        """The read deadline for what the client sends next, in the state it is in."""
        state = self.conn.their_state
        if state is h11.SEND_BODY and self._body_since is None:
            self._body_since = time.monotonic()
        elif state is not h11.SEND_BODY:
            self._body_since = None
        if state is h11.SEND_BODY:
            self._arm(self._limits.body_timeout)  # a gap between chunks
        elif state is h11.IDLE and self._read_deadline is None:
            self._arm(self._limits.head_timeout)  # a head after keep-alive
        elif state is not h11.IDLE:
            self._disarm()  # the request is read; the app's time is its own

    def on_response_complete(self) -> None:
        self._idle_since = time.monotonic()
        self._disarm()
        super().on_response_complete()  # arms uvicorn's keep-alive timer
        if not self._client_still_sending() or self.transport.is_closing():
            self._body_since = None
        elif not self._drainable():
            self.transport.close()  # not announced as kept (a response outside the app)
        else:
            # Answered before its body was read and announced as kept: uvicorn drops
            # the rest as it arrives, which must be within the body deadline (and no
            # gap longer than the body timeout), not the keep-alive timer's 5 s.
            self._unset_keepalive_if_required()
            started = self._body_since if self._body_since is not None else time.monotonic()
            left = started + self._limits.body_deadline - time.monotonic()
            self._drain_deadline = self.loop.call_later(max(0.0, left), self._drain_timed_out)
            self._arm(self._limits.body_timeout)

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        self._stop_draining()
        if self._socket is not None:
            self._socket.forget()
        super().connection_lost(exc)

    def _arm(self, seconds: float) -> None:
        self._disarm()
        self._read_deadline = self.loop.call_later(seconds, self._read_timed_out)

    def _disarm(self) -> None:
        if self._read_deadline is not None:
            self._read_deadline.cancel()
            self._read_deadline = None

    def _read_timed_out(self) -> None:
        self._read_deadline = None
        if self.transport.is_closing():
            return
        if self.flow.read_paused:  # the app has not taken the last chunk yet
            self._arm(self._limits.body_timeout)
            return
        if self._drain_deadline is not None:  # answered already: end it in order
            self._stop_draining()
            self.transport.close()
            return
        self.transport.abort()


def guarded_protocol(limits: ConnectionLimits) -> type[GuardedH11Protocol]:
    """uvicorn's h11 protocol with the read deadlines, the connection cap and the
    keep-alive-safe closes of ``limits``."""

    class Limited(GuardedH11Protocol):
        _limits = limits

    return Limited


class AcceptErrorFilter(logging.Filter):
    """Let through one "out of system resource" accept error per ``interval`` seconds.

    The line that passes carries no traceback and says how many were dropped.
    """

    # The loop logs the first line once per pending connection, and each of those
    # schedules a retry that fails again, with the second line, once the socket closes.
    _MARKERS: Final = (
        "socket.accept() out of system resource",
        "Exception in callback BaseSelectorEventLoop._start_serving",
    )

    def __init__(self, interval: float = 10.0) -> None:
        super().__init__()
        self._interval = interval
        self._last: float | None = None
        self._dropped = 0

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        if not any(marker in message for marker in self._MARKERS):
            return True
        now = time.monotonic()
        if self._last is not None and now - self._last < self._interval:
            self._dropped += 1
            return False
        self._last = now
        record.msg = (
            "accept() failed: out of file descriptors or memory; new connections wait "
            "(%d similar lines dropped). Raise the descriptor limit (ulimit -n) or lower "
            "METACORTEX_MAX_CONNECTIONS"
        )
        record.args = (self._dropped,)
        record.exc_info = None
        record.exc_text = None
        self._dropped = 0
        return True


def install_accept_error_filter() -> AcceptErrorFilter:
    accept_filter = AcceptErrorFilter()
    logging.getLogger("asyncio").addFilter(accept_filter)
    return accept_filter
