"""A child process whose output is read line by line until it says it is ready.

Used for the Firestore emulator (``tests/firestore_support.py``) and for
``functions-framework`` serving the Cloud Functions entry (``bench/cold_start.py``).
Waiting on a log line instead of polling a port keeps tests free of sleeps; the
reader thread drains the pipe until the process exits, so a chatty child can
never block on a full pipe.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import IO


class WatchedProcess:
    def __init__(
        self,
        argv: list[str],
        ready_line: str,
        *,
        env: Mapping[str, str] | None = None,
        cwd: Path | None = None,
        own_group: bool = False,
    ) -> None:
        """``own_group``: run it in a process group of its own and stop the whole
        group, for programs whose children outlive them (the firebase CLI)."""
        self.log: list[str] = []
        self._ready_line = ready_line
        self._ready = threading.Event()
        self._own_group = own_group
        self._process = subprocess.Popen(  # noqa: S603 - argv from our own code, no shell
            argv,
            start_new_session=own_group,
            cwd=cwd,
            env=dict(env) if env is not None else None,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            text=True,
        )
        assert self._process.stdout is not None
        self._reader = threading.Thread(
            target=self._drain, args=(self._process.stdout,), daemon=True
        )
        self._reader.start()

    @property
    def pid(self) -> int:
        return self._process.pid

    def _drain(self, stream: IO[str]) -> None:
        with stream:
            for line in stream:
                self.log.append(line.rstrip())
                if self._ready_line in line:
                    self._ready.set()
        self._ready.set()  # exited: wake the waiter, who then sees the exit

    def wait_ready(self, timeout: float, what: str) -> None:
        """Return once the ready line was printed; otherwise stop it and raise with
        the last lines of its output."""
        if not self._ready.wait(timeout) or self._process.poll() is not None:
            self.stop()
            tail = "\n".join(self.log[-20:])
            raise RuntimeError(f"{what} did not start: {tail or 'no output'}")

    def stop(self) -> None:
        if self._process.poll() is None:
            self._signal(signal.SIGTERM)
            try:
                self._process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self._signal(signal.SIGKILL)
                self._process.wait(timeout=20)
        if self._own_group:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self._process.pid, signal.SIGKILL)  # children left behind
        self._reader.join(timeout=5)

    def _signal(self, number: int) -> None:
        if self._own_group:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self._process.pid, number)
        else:
            self._process.send_signal(number)
