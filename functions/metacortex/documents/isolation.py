"""Extraction in a separate process that is killed at the deadline.

Trigger: pdfminer.six is pure Python; a hostile or merely huge PDF can keep it busy
for minutes, and a thread cannot be stopped from outside. Why processes: SIGKILL
ends one at once wherever it is, the kernel takes back all its memory, its
address space is capped (``RLIMIT_AS``) so an inflating bomb fails there with a
``MemoryError`` instead of pushing the server out of memory, and a crash of a C
parser (lxml, zlib) ends only that process.

How: a reader host (``reader_host.py``, started with ``python -m``, so it never
runs the caller's main script again as multiprocessing's fork server does) has
imported the readers once and forks one process per document (about 10 ms, see
docs/DOCUMENTS.md). Idle hosts are kept for the next document; a host whose
document ran past the deadline is killed with its reader, and the next document
starts a new one. Answers come back as JSON.

Outcome: ``extract_isolated`` blocks its thread until the answer, the deadline or
the reader's death. Call it from a worker thread, never the event loop.
"""

from __future__ import annotations

import contextlib
import json
import os
import pickle
import signal
import subprocess
import sys
import threading
import time
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any, Final, Protocol

import metacortex
from metacortex.documents.limits import DocumentLimits
from metacortex.documents.model import ExtractedDocument
from metacortex.documents.reader_host import READY
from metacortex.documents.wire import document_from_wire
from metacortex.errors import DocumentRefused, Unavailable

# How long a new host may take to import the readers (seconds).
START_SECONDS: Final = 60.0
# Idle hosts kept for the next documents.
MAX_IDLE_HOSTS: Final = 2
# How often a reader's wait looks whether its caller is gone (``Cancellation``).
_WATCH_SECONDS: Final = 0.1


class Cancellation(Protocol):
    """``metacortex.cancellation.Cancellation`` as a reader's wait uses it (this package
    imports nothing outside itself)."""

    @property
    def cancelled(self) -> bool: ...

    def check(self) -> None:
        """Raise (``CallerGone``) once cancelled."""
        ...


class _Host:
    def __init__(self) -> None:
        # Run from the folder holding the package: ``-m`` puts it first on the path, so
        # the host imports this very metacortex (installed, editable or beside main.py).
        source_root = Path(metacortex.__file__).resolve().parent.parent
        self.process = subprocess.Popen(
            [sys.executable, "-m", "metacortex.documents.reader_host"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            cwd=source_root,
            start_new_session=True,  # its own process group: killed with its reader
        )
        assert self.process.stdin is not None
        assert self.process.stdout is not None
        self.jobs = Connection(os.dup(self.process.stdin.fileno()), readable=False)
        self.answers = Connection(os.dup(self.process.stdout.fileno()), writable=False)
        self.process.stdin.close()
        self.process.stdout.close()
        if not self.answers.poll(START_SECONDS) or self.answers.recv_bytes() != READY:
            self.kill()
            raise Unavailable(
                "the document reader could not start: check that "
                f"`{sys.executable} -m metacortex.documents.reader_host` runs"
            )

    def kill(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait()
        self.jobs.close()
        self.answers.close()


class _Hosts:
    """Idle hosts, shared by the threads that read documents."""

    def __init__(self) -> None:
        self._idle: list[_Host] = []
        self._lock = threading.Lock()

    def take(self) -> _Host:
        with self._lock:
            while self._idle:
                host = self._idle.pop()
                if host.process.poll() is None:
                    return host
                host.kill()
        return _Host()

    def give_back(self, host: _Host) -> None:
        with self._lock:
            if len(self._idle) < MAX_IDLE_HOSTS:
                self._idle.append(host)
                return
        host.kill()

    def close(self) -> None:
        with self._lock:
            idle, self._idle = self._idle, []
        for host in idle:
            host.kill()


_HOSTS: Final = _Hosts()


def _answered(host: _Host, seconds: float, cancellation: Cancellation | None) -> bool:
    """Whether the reader answered within ``seconds``; False at once when cancelled."""
    if cancellation is None:
        return host.answers.poll(seconds)
    deadline = time.monotonic() + seconds
    while not cancellation.cancelled:
        left = deadline - time.monotonic()
        if left <= 0:
            return False
        if host.answers.poll(min(left, _WATCH_SECONDS)):
            return True
    return False


def shut_down() -> None:
    """End the idle reader hosts (they also end when this process's pipes close)."""
    _HOSTS.close()


def _outcome(wire: dict[str, Any], limits: DocumentLimits) -> ExtractedDocument:
    if "document" in wire:
        return document_from_wire(wire["document"])
    if "refused" in wire:
        raise DocumentRefused(wire["refused"], str(wire["message"]))
    code = wire.get("crashed")
    if code is not None and code < 0 and limits.memory_bytes > 0:
        detail = f"signal {-code}, perhaps past METACORTEX_DOCUMENT_MEMORY_MB"
    else:
        detail = f"exit code {code}"
    raise DocumentRefused(
        "corrupt",
        f"the reader stopped on this document ({detail}): it is damaged or built to break readers",
    )


def extract_isolated(
    data: bytes,
    media_type: str,
    limits: DocumentLimits,
    cancellation: Cancellation | None = None,
) -> ExtractedDocument:
    """``extract`` in a reader process: its result, its refusal, or ``DocumentRefused``
    (``too_slow``) when it runs past ``limits.seconds`` (the reader is killed). When
    ``cancellation`` is cancelled meanwhile (the caller is gone), the reader is killed
    within ``_WATCH_SECONDS`` and ``CallerGone`` raised."""
    limits.check_size(len(data))  # before paying for a process
    if cancellation is not None:
        cancellation.check()
    host = _HOSTS.take()
    try:
        host.jobs.send_bytes(pickle.dumps((data, media_type, limits)))
        if not _answered(host, limits.seconds, cancellation):
            host.kill()
            if cancellation is not None:
                cancellation.check()
            raise DocumentRefused(
                "too_slow",
                f"reading the document took longer than {limits.seconds:g} seconds "
                "(METACORTEX_DOCUMENT_EXTRACT_SECONDS): split it or raise the limit",
            )
        wire = json.loads(host.answers.recv_bytes())
    except (OSError, EOFError, ValueError):  # a pipe cut, or an answer cut short
        host.kill()
        raise DocumentRefused("corrupt", "the document reader stopped unexpectedly") from None
    _HOSTS.give_back(host)
    return _outcome(wire, limits)
