"""A real pseudo-terminal to write logs to, and its lines as a person would see them.

``pty.openpty()`` gives the pair a terminal window has: what is written to the
follower end is a TTY to the writer (``isatty()`` is true, as for ``metacortex
serve`` run in a terminal), and the leader end reads what the window would show.
A reader thread drains it into a queue, so the writer never blocks on a full
buffer and a test waits for a line (bounded by ``WAIT``) instead of sleeping.
``window`` runs a whole command in such a terminal, for prompts a person answers.
"""

from __future__ import annotations

import contextlib
import os
import pty
import queue
import subprocess
import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
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


@dataclass
class Window:
    """A command run in a terminal window: what the window shows, and a person typing.

    The command's standard input (and, unless told otherwise, its output) is the
    follower end of a pseudo-terminal in a session of its own, as in a terminal tab;
    ``expect`` waits on what was shown (a prompt ends without a newline), ``type``
    sends keys as the keyboard would (``"\\x04"`` is Ctrl-D).
    """

    process: subprocess.Popen[str]
    leader: int
    shown: str = ""
    _read_to: int = 0
    _changed: threading.Condition = field(default_factory=threading.Condition)

    def expect(self, text: str) -> str:
        """What the window showed since the last ``expect``, up to and including
        ``text``; fails (with everything shown) when it does not appear within WAIT."""
        with self._changed:
            found = self._changed.wait_for(lambda: text in self.shown[self._read_to :], WAIT)
            if not found:
                raise AssertionError(f"the window never showed {text!r}; it showed:\n{self.shown}")
            end = self.shown.index(text, self._read_to) + len(text)
            seen, self._read_to = self.shown[self._read_to : end], end
            return seen

    def type(self, keys: str) -> None:
        os.write(self.leader, keys.encode())

    def finish(self) -> int:
        """Wait for the command to end; its exit status."""
        return self.process.wait(timeout=WAIT)

    def _drain(self) -> None:
        while True:
            try:
                chunk = os.read(self.leader, 65536)
            except OSError:  # the command ended and the follower end closed
                break
            if not chunk:
                break
            with self._changed:
                self.shown += chunk.decode("utf-8", errors="replace").replace("\r\n", "\n")
                self._changed.notify_all()


@contextmanager
def window(
    argv: list[str],
    *,
    env: Mapping[str, str],
    cwd: Path,
    stdout: int | None = None,
    stderr: int | None = None,
) -> Iterator[Window]:
    """Run ``argv`` in a new terminal window (stdin, and stdout/stderr unless given)."""
    leader, follower = pty.openpty()
    try:
        process = subprocess.Popen(  # noqa: S603 (the command under test, no shell)
            argv,
            stdin=follower,
            stdout=follower if stdout is None else stdout,
            stderr=follower if stderr is None else stderr,
            env=dict(env),
            cwd=cwd,
            text=True,
            start_new_session=True,  # a tab's own session, not the test runner's terminal
        )
    finally:
        os.close(follower)  # the command holds it now; its exit ends the leader's reads
    shown = Window(process, leader)
    reader = threading.Thread(target=shown._drain, daemon=True)
    reader.start()
    try:
        yield shown
    finally:
        if process.poll() is None:
            process.kill()
        process.wait(timeout=WAIT)
        for stream in (process.stdout, process.stderr):
            if stream is not None:
                stream.close()
        reader.join(timeout=WAIT)
        with contextlib.suppress(OSError):
            os.close(leader)
