"""A thread that calls a function every ``interval`` seconds until it is closed.

``SQLiteStore`` runs one per process once it holds copies of the records in memory
(the vector mirror, the keyword index) or has an erase left to finish: each tick
asks SQLite whether another connection committed (``PRAGMA data_version``, read
from the shared-memory file, no disk access) and, only then, whether anything was
erased. So an erase made by another process, or another thread, leaves this
process's memory within one interval, without waiting for its next search.
Measured cost at rest: docs/ARCHITECTURE.md, "SQLite store".
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

logger = logging.getLogger(__name__)


class Ticker:
    def __init__(self, tick: Callable[[], None], interval: float, name: str) -> None:
        self._tick = tick
        self._interval = interval
        self._name = name
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def start(self) -> None:
        """Start the thread (once; again after nothing)."""
        with self._lock:
            if self._thread is not None or self._stop.is_set():
                return
            self._thread = threading.Thread(target=self._run, name=self._name, daemon=True)
            self._thread.start()

    def close(self) -> None:
        with self._lock:
            self._stop.set()
            thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join()

    def _run(self) -> None:
        while not self._stop.wait(self._interval):
            try:
                self._tick()
            except Exception:  # the next tick tries again; never die silently
                logger.warning(
                    "%s: one check failed; the next one tries again", self._name, exc_info=True
                )
