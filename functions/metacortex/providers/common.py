"""What every model provider shares, whichever service it calls: the retry policy,
the part of a long text that is embedded, batching with requests in flight at once,
and unit-length vectors checked for their dimension."""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Final, Generic, TypeVar

import numpy as np

from metacortex.errors import Unavailable

if TYPE_CHECKING:
    from metacortex.storage.base import Vector

C = TypeVar("C")

# 408 and 429 are load shedding; 5xx are the server's own transient failures.
TRANSIENT_STATUS: Final = frozenset({408, 429, 500, 502, 503, 504})
_MAX_REASON_CHARS: Final = 300
# What is embedded of a long text: its leading window, cut at a word boundary. Gemini
# reads at most 2,048 tokens of a text (about 8,000 characters of English prose) and
# OpenAI's embedding models 8,191; cutting here makes it explicit and the same on
# every route; keyword search still indexes the whole text (docs/gemini.md).
EMBED_WINDOW_CHARS: Final = 8000


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """At most ``attempts`` calls, waiting with exponential backoff and jitter between them.

    A ``Retry-After`` the provider sends (in seconds) is honoured when it asks for longer,
    up to ``max_delay``.
    """

    attempts: int = 3
    initial_delay: float = 1.0
    max_delay: float = 8.0
    sleep: Callable[[float], None] = time.sleep
    jitter: Callable[[], float] = field(default=random.random)

    def delay(self, failed_attempts: int) -> float:
        """Half the exponential step fixed, half random, so clients that failed together part."""
        step = min(self.max_delay, self.initial_delay * 2.0 ** (failed_attempts - 1))
        return step / 2 + step / 2 * self.jitter()

    def wait(self, failed_attempts: int, asked: float | None) -> float:
        """The wait before the next attempt: the backoff, or what the provider asked for
        when that is longer (up to ``max_delay``)."""
        delay = self.delay(failed_attempts)
        return delay if asked is None else max(delay, min(asked, self.max_delay))

    def patient(self) -> RetryPolicy:
        """For bulk work (re-embedding, restores): rides out a quota window instead of
        failing the run; the same sleep and jitter, so tests stay exact."""
        return RetryPolicy(
            attempts=max(self.attempts, 8),
            initial_delay=self.initial_delay,
            max_delay=max(self.max_delay, 32.0),
            sleep=self.sleep,
            jitter=self.jitter,
        )


class LazyClient(Generic[C]):
    """A service's SDK client, built on the first call (importing an SDK is slow and
    building a provider must never touch the network), and the retry policy its calls
    follow. Subclasses say how to ``_build`` it."""

    def __init__(self, retry: RetryPolicy | None) -> None:
        self._retry = retry or RetryPolicy()
        self._lock = threading.Lock()
        self._client: C | None = None

    @property
    def retry(self) -> RetryPolicy:
        return self._retry

    def _get(self) -> C:
        with self._lock:
            if self._client is None:
                self._client = self._build()
            return self._client

    def _build(self) -> C:
        raise NotImplementedError


def clip(text: str) -> str:
    """A provider's reason on one line, at most a few hundred characters."""
    text = " ".join(text.split())
    return text if len(text) <= _MAX_REASON_CHARS else text[: _MAX_REASON_CHARS - 1] + "…"


def embedding_window(text: str) -> str:
    """The leading part of ``text`` the embedding model is given (see EMBED_WINDOW_CHARS)."""
    if len(text) <= EMBED_WINDOW_CHARS:
        return text
    window = text[:EMBED_WINDOW_CHARS]
    cut = window.rfind(" ", EMBED_WINDOW_CHARS // 2)
    return window[:cut] if cut > 0 else window


def chunks(texts: list[str], size: int, max_chars: int | None) -> list[list[str]]:
    """Consecutive requests of at most ``size`` texts and, when given, ``max_chars``
    characters (a text longer than that alone still goes, alone)."""
    out: list[list[str]] = []
    current: list[str] = []
    chars = 0
    for text in texts:
        full = len(current) >= size
        if current and (full or (max_chars is not None and chars + len(text) > max_chars)):
            out.append(current)
            current, chars = [], 0
        current.append(text)
        chars += len(text)
    if current:
        out.append(current)
    return out


def in_order(
    work: Callable[[list[str]], list[Vector]], items: list[list[str]], concurrency: int
) -> list[list[Vector]]:
    """``[work(item) for item in items]``, up to ``concurrency`` at once, order kept; the
    first failure cancels what was not sent yet and is raised."""
    if len(items) <= 1 or concurrency == 1:
        return [work(item) for item in items]
    pool = ThreadPoolExecutor(max_workers=min(concurrency, len(items)))
    try:
        futures = [pool.submit(work, item) for item in items]
        done, _ = wait(futures, return_when=FIRST_EXCEPTION)
        for future in done:
            error = future.exception()
            if error is not None:
                raise error
        return [future.result() for future in futures]
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def unit_vector(
    values: Sequence[float] | None, dimension: int, *, provider: str, setting: str
) -> Vector:
    """``values`` as a unit-length float32 vector; ``Unavailable`` when it does not have
    ``dimension`` entries (``setting`` is what to check) or has no direction."""
    vector = np.asarray(values or (), dtype=np.float32)
    if vector.shape != (dimension,):
        raise Unavailable(
            f"{provider} embedding returned a vector of dimension {vector.size}, "
            f"expected {dimension} (check {setting} against the model)"
        )
    norm = float(np.linalg.norm(vector))
    if not np.isfinite(norm) or norm == 0.0:
        raise Unavailable(f"{provider} embedding returned a zero or non-finite vector")
    unit: Vector = (vector / norm).astype(np.float32)
    return unit
