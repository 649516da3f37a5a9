"""A child process whose output is read line by line until it says it is ready.

Used for the Firestore emulator (``tests/firestore_support.py``), for
``functions-framework`` serving the Cloud Functions entry (``bench/cold_start.py``)
and for ``metacortex serve`` processes sharing one data directory (``serve``).
Waiting on a log line instead of polling a port keeps tests free of sleeps; the
reader thread drains the pipe until the process exits, so a chatty child can
never block on a full pipe.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import IO, Final

# The settings a test's own environment might carry into a server it starts.
SETTING_PREFIXES: Final = ("MCP_", "METACORTEX_", "GEMINI_", "SEARCH_", "DEFAULT_FILTER")


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


def serve(data_dir: Path, **settings: str) -> tuple[WatchedProcess, str]:
    """A real ``metacortex serve`` on a free loopback port over ``data_dir``, with only
    ``settings`` among MetaCortex's variables; once it says it is ready: (it, its URL).
    The first one on a new data directory writes the admin token; later ones read it."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(SETTING_PREFIXES)}
    command = [sys.executable, "-m", "metacortex.cli.main", "serve", "--port", "0"]
    process = WatchedProcess(
        [*command, "--data-dir", str(data_dir)],
        " client snippets",  # the banner's last line
        env=env | settings,
        cwd=data_dir.parent,
    )
    process.wait_ready(180, "metacortex serve")
    ready = next(line for line in process.log if "is ready at " in line)
    return process, ready.split("is ready at ", 1)[1].split()[0]
