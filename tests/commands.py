"""The ``metacortex`` command run as a person runs it: a fresh process each time.

A fresh clone has the command at ``.venv/bin/metacortex``, not on ``PATH``;
``fresh_clone_env`` gives a child that ``PATH`` (or, with ``on_path``, the one
after ``source .venv/bin/activate``), a ``HOME`` of its own and none of our
settings from the caller's environment, so what a command prints to run next can
be checked as the person would type it.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Final

import pytest

_OWN_PREFIXES: Final = ("MCP_", "METACORTEX_", "GEMINI_", "GOOGLE_", "GCLOUD_", "FIRESTORE_")
VENV_BIN: Final = Path(sys.executable).parent
# How a printed command is spelled while the venv's bin is not on PATH.
BY_PATH: Final = str(VENV_BIN / "metacortex")
COMMAND: Final = [sys.executable, "-m", "metacortex.cli.main"]


def fresh_clone_env(home: Path, *, on_path: bool = False) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(_OWN_PREFIXES)}
    rest = [p for p in env.get("PATH", "").split(os.pathsep) if p and Path(p) != VENV_BIN]
    path = [str(VENV_BIN), *rest] if on_path else rest
    return {**env, "HOME": str(home), "PATH": os.pathsep.join(path)}


def fresh_clone(factory: pytest.TempPathFactory, name: str) -> tuple[Path, dict[str, str]]:
    """A folder to run ``serve`` from (skipped without the local model it loads), and the
    environment of a fresh clone with its own ``HOME`` in it."""
    pytest.importorskip(
        "metacortex.providers.local", reason="LOCAL EMBEDDER NOT AVAILABLE: serve cannot start"
    )
    root = factory.mktemp(name)
    (root / "home").mkdir()
    return root, fresh_clone_env(root / "home")


def run_command(
    argv: list[str], *, env: dict[str, str], cwd: Path, stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    """``argv`` (a printed command, or ``[*COMMAND, ...]``) without a terminal."""
    return subprocess.run(  # noqa: S603 (our own interpreter, or a command we printed)
        argv,
        input=stdin,
        stdin=subprocess.DEVNULL if stdin is None else None,
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        start_new_session=True,  # no controlling terminal, as under a script
        timeout=180,
        check=False,
    )
