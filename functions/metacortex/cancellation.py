"""Long work stops when its caller is gone (issue 37).

A document can take minutes to read and embed. Its caller may give up first: an HTTP
client that disconnects (a timeout, a closed laptop), an MCP client that cancels the
request (``notifications/cancelled``; over stdio, the client's process ending). The
server used to work on for minutes after that. Now:

- the edge runs the work in a worker thread with a ``Cancellation`` (``until_caller_gone``)
  and cancels it when the HTTP request's ``receive`` says ``http.disconnect`` or when the
  calling task is cancelled (the SDK cancels a handler on ``notifications/cancelled``);
- the work checks it where it can stop cleanly (``check``: before each step, between
  batches) and its waits end on it (the reader process is killed at once:
  ``documents.isolation``). Nothing half done is kept: a document is written in one
  store change at the end, after the last check.

The service and stores are synchronous; this is the one bridge between the event
loop's idea of "gone" and a thread's.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Awaitable, Callable, Mapping
from functools import partial
from typing import Any, Final, TypeVar

import anyio
import anyio.to_thread

from metacortex.errors import CallerGone

T = TypeVar("T")
Receive = Callable[[], Awaitable[Mapping[str, Any]]]

GONE: Final = (
    "the request was cancelled or its caller disconnected: the work stopped and nothing was kept"
)

logger = logging.getLogger("metacortex.server")


class Cancellation:
    """Set once, from any thread; read by the work between its steps."""

    def __init__(self) -> None:
        self._event = threading.Event()
        self.why = ""

    def cancel(self, why: str) -> None:
        if not self._event.is_set():
            self.why = why
            self._event.set()

    @property
    def cancelled(self) -> bool:
        return self._event.is_set()

    def check(self) -> None:
        """``CallerGone`` once cancelled: the work stops here."""
        if self.cancelled:
            raise CallerGone(GONE)

    def wait(self, timeout: float) -> bool:
        """Block up to ``timeout`` seconds or until cancelled; whether it is."""
        return self._event.wait(timeout)


async def until_caller_gone(
    work: Callable[[Cancellation], T], receive: Receive | None, what: str
) -> T:
    """``work(cancellation)`` in a worker thread, its cancellation set when ``receive``
    (the HTTP request's, its body already read) yields ``http.disconnect`` or when this
    task is cancelled; then this task does not wait for the thread, which stops at its
    next check. ``what`` names the work in the log line that says it was stopped."""
    cancellation = Cancellation()
    failure: Exception | None = None
    async with anyio.create_task_group() as watchers:
        if receive is not None:
            watchers.start_soon(_disconnect, receive, cancellation, what)
        try:
            result = await anyio.to_thread.run_sync(
                partial(work, cancellation), abandon_on_cancel=True
            )
        except anyio.get_cancelled_exc_class():
            _gone(cancellation, "the request was cancelled", what)
            raise
        except Exception as error:  # noqa: BLE001 - raised below, not wrapped in a group
            failure = error
        finally:
            watchers.cancel_scope.cancel()
    if failure is not None:
        raise failure
    return result


async def _disconnect(receive: Receive, cancellation: Cancellation, what: str) -> None:
    while (await receive()).get("type") != "http.disconnect":
        pass
    _gone(cancellation, "the client disconnected", what)


def _gone(cancellation: Cancellation, why: str, what: str) -> None:
    if not cancellation.cancelled:
        logger.info("%s stopped: %s before it was done", what, why)
    cancellation.cancel(why)
