"""The owner's commands on spaces, people and clients as an operator runs them: each a
fresh ``metacortex`` process (``python -m metacortex.cli.main``, no terminal) on one
SQLite data directory, with none of our settings from the caller's environment."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from metacortex.storage.sqlite import SQLiteStore
from tests.commands import BY_PATH, COMMAND, fresh_clone_env, run_command


@dataclass(frozen=True)
class Operator:
    root: Path
    # Settings the commands run with (e.g. MCP_CLIENT_PROFILES_JSON), beside --data-dir.
    environment: dict[str, str] = field(default_factory=dict)

    @property
    def data_dir(self) -> Path:
        return self.root / "data"

    @property
    def env(self) -> dict[str, str]:
        (self.root / "home").mkdir(exist_ok=True)
        return {**fresh_clone_env(self.root / "home"), **self.environment}

    def argv(self, *words: str) -> list[str]:
        return [*COMMAND, *words, "--data-dir", str(self.data_dir)]

    def run(self, *words: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
        return run_command(self.argv(*words), env=self.env, cwd=self.root, stdin=stdin)

    def json(self, *words: str) -> Any:
        """The command's JSON answer; it must succeed."""
        ran = self.run(*words, "--json")
        assert ran.returncode == 0, ran.stderr
        return json.loads(ran.stdout)

    def refused(self, *words: str) -> str:
        """The one line a refused command prints (status 2)."""
        ran = self.run(*words)
        assert ran.returncode == 2, (ran.stdout, ran.stderr)
        lines = ran.stderr.strip().splitlines()
        assert len(lines) == 1, ran.stderr
        return lines[0]

    def spelled(self, words: str) -> str:
        """A command as the failed one's message must spell it: this install's script
        (not on PATH here) and the same data directory."""
        return f"`{BY_PATH} {words} --data-dir {self.data_dir}`"

    @contextmanager
    def store(self) -> Iterator[SQLiteStore]:
        store = SQLiteStore(self.data_dir / "metacortex.sqlite3")
        try:
            yield store
        finally:
            store.close()
