"""A real pseudo-terminal to write logs to, and its lines as a person would see them.

``pty.openpty()`` gives the pair a terminal window has: what is written to the
follower end is a TTY to the writer (``isatty()`` is true, as for ``metacortex
serve`` run in a terminal), and the leader end reads what the window would show.
A reader thread drains it into a queue, so the writer never blocks on a full
buffer and a test waits for a line (bounded by ``WAIT``) instead of sleeping.
"""

from __future__ import annotations

import contextlib
import os
import pty
import queue
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Final, TextIO

WAIT: Final = 30.0  # seconds a test waits for a line before declaring it missing


@dataclass
class Terminal:
    writer: TextIO  # the follower end, opened for text: hand it to the code under test
    follower_fd: int
    lines: queue.Queue[str] = field(default_factory=queue.Queue)
    seen: list[str] = field(default_factory=list)

    def wait_for(self, wanted: Callable[[str], bool]) -> str:
        """The first line not seen before that ``wanted`` accepts; every line read on
        the way is kept in ``seen``."""
        while True:
            try:
                line = self.lines.get(timeout=WAIT)
            except queue.Empty:
                raise AssertionError(
                    "no such line on the terminal; it showed:\n" + "\n".join(self.seen)
                ) from None
            self.seen.append(line)
            if wanted(line):
                return line


def _drain(leader: int, lines: queue.Queue[str]) -> None:
    pending = b""
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # the follower end closed: nothing more to read
            break
        if not chunk:
            break
        pending += chunk
        *complete, pending = pending.split(b"\n")
        for raw in complete:
            # The terminal turns "\n" into "\r\n" (onlcr), as a window receives it.
            lines.put(raw.decode("utf-8", errors="replace").rstrip("\r"))


@contextmanager
def terminal() -> Iterator[Terminal]:
    leader, follower = pty.openpty()
    writer = open(follower, "w", encoding="utf-8", closefd=False, buffering=1)  # noqa: SIM115
    term = Terminal(writer, follower)
    reader = threading.Thread(target=_drain, args=(leader, term.lines), daemon=True)
    reader.start()
    try:
        yield term
    finally:
        writer.close()
        os.close(follower)
        reader.join(timeout=WAIT)
        with contextlib.suppress(OSError):
            os.close(leader)
