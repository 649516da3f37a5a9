"""Closing a connection without breaking the client's pool (``docs/SERVER.md``,
"Security rules, in the order they apply").

A client's connection pool (undici, httpx) puts a connection back after a response
unless the response said ``Connection: close``; its next request then goes out on it.
A server that closes silently makes that request fail with a reset. Closing with
request bytes still unread is worse: the kernel answers them with a reset that can
destroy the response already sent. Both happen to a request answered before its body
was read, a refusal (401, 403, 413, 429 ...), which every OAuth client meets first.

So, as RFC 9110 §15.5 and RFC 9112 §9.6 ask of a server that answers before reading
the whole request:

* a response after which the server closes says so (``announcing_close``);
* the close is a lingering one (``LingeringTransport``): the response goes out, then
  the write side is shut (the client reads the response and an orderly end), and what
  the client still sends is read and dropped until it closes its side or
  ``LINGER_SECONDS`` pass, as Apache and nginx do.

How uvicorn decides (0.55, both its h11 and httptools protocols): a connection is
kept after a response unless the request or the response says ``Connection: close``
or the request is HTTP/1.0; then it closes right after the response, whatever is
still unread. A kept connection whose request body was not read drops the rest as it
arrives and then reads the next request, with no bound: the first chunk cancels the
keep-alive timer, so a body trickled a byte a minute holds it forever. That is why
the guarded protocol once closed such connections at once, and now drains within the
body limit and deadline (``connections.py``), closing otherwise.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable
from typing import Any, Final

from starlette.types import ASGIApp, Message, Receive, Scope, Send

# How long a closing connection keeps reading what the client still sends. A client
# that has the response closes at once; this bounds one that keeps sending.
LINGER_SECONDS: Final = 2.0
CLOSE_HEADER: Final = (b"connection", b"close")


def declared_length(headers: Iterable[tuple[bytes, bytes]]) -> int | None:
    """The request body's ``Content-Length`` (h11 has validated it), or None when the body
    is chunked or its length is not declared."""
    length: int | None = None
    for name, value in headers:
        if name == b"transfer-encoding":
            return None
        if name == b"content-length":
            length = int(value)
    return length


def says_close(headers: Iterable[tuple[bytes, bytes]]) -> bool:
    return any(
        name.lower() == b"connection" and b"close" in value.lower() for name, value in headers
    )


def announcing_close(app: ASGIApp, will_close: Callable[[], bool]) -> ASGIApp:
    """``app`` whose responses carry ``Connection: close`` when ``will_close()`` says, as
    the response starts, that the connection ends after it."""

    async def announced(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await app(scope, receive, send)
            return

        async def send_announced(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", []))
                if not says_close(headers) and will_close():
                    message = {**message, "headers": [*headers, CLOSE_HEADER]}
            await send(message)

        await app(scope, receive, send_announced)

    return announced


class LingeringTransport(asyncio.Transport):
    """The connection's transport as uvicorn uses it, whose ``close()`` lingers while
    ``still_sending()`` says the client may be sending the rest of its request: the
    write side is shut once the response is out, reading goes on (the protocol drops
    what arrives, see ``lingering``) until the client closes or ``linger`` seconds pass.
    ``abort()`` is immediate, as before."""

    def __init__(
        self,
        inner: asyncio.Transport,
        loop: asyncio.AbstractEventLoop,
        still_sending: Callable[[], bool],
        linger: float = LINGER_SECONDS,
    ) -> None:
        super().__init__()
        self._inner = inner
        self._loop = loop
        self._still_sending = still_sending
        self._linger = linger
        self._lingering: asyncio.TimerHandle | None = None

    @property
    def lingering(self) -> bool:
        return self._lingering is not None

    def close(self) -> None:
        if self._lingering is not None:
            return
        if self._inner.is_closing() or not self._inner.can_write_eof() or not self._still_sending():
            self._inner.close()
            return
        self._inner.write_eof()  # after the buffered response: the client reads it, then EOF
        self._inner.resume_reading()
        self._lingering = self._loop.call_later(self._linger, self._inner.close)

    def abort(self) -> None:
        self.forget()
        self._inner.abort()

    def forget(self) -> None:
        """The connection is gone: nothing is left to linger for."""
        if self._lingering is not None:
            self._lingering.cancel()

    def is_closing(self) -> bool:
        return self._lingering is not None or self._inner.is_closing()

    # -- everything else is the socket's own transport --------------------------------
    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return self._inner.get_extra_info(name, default)

    def set_protocol(self, protocol: asyncio.BaseProtocol) -> None:
        self._inner.set_protocol(protocol)

    def get_protocol(self) -> asyncio.BaseProtocol:
        return self._inner.get_protocol()

    def is_reading(self) -> bool:
        return self._inner.is_reading()

    def pause_reading(self) -> None:
        if self._lingering is None:  # a lingering close reads to the end
            self._inner.pause_reading()

    def resume_reading(self) -> None:
        self._inner.resume_reading()

    def set_write_buffer_limits(self, high: int | None = None, low: int | None = None) -> None:
        self._inner.set_write_buffer_limits(high, low)

    def get_write_buffer_size(self) -> int:
        return self._inner.get_write_buffer_size()

    def get_write_buffer_limits(self) -> tuple[int, int]:
        return self._inner.get_write_buffer_limits()

    def write(self, data: bytes | bytearray | memoryview) -> None:
        self._inner.write(data)

    def writelines(self, list_of_data: Iterable[bytes | bytearray | memoryview]) -> None:
        self._inner.writelines(list_of_data)

    def write_eof(self) -> None:
        self._inner.write_eof()

    def can_write_eof(self) -> bool:
        return self._inner.can_write_eof()
