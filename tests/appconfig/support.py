"""Helpers the ``metacortex init`` tests share: the golden files and one run of the command."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Final

import pytest

from metacortex.cli.main import main

GOLDEN: Final = Path(__file__).parent / "golden"
# The one environment-defined client the init suites configure (``--client reader``).
READER: Final = {
    "id": "reader",
    "token": "reader-" + "Q1w2E3r4T5y6U7i8O9p0A1s2D3f4G5h6",
    "allowedTools": ["search_context", "fetch_context"],
}


def copy(name: str, to: Path) -> bytes:
    """The golden file ``name`` written to ``to``; returns its bytes."""
    to.parent.mkdir(parents=True, exist_ok=True)
    to.write_bytes((GOLDEN / name).read_bytes())
    return to.read_bytes()


def run_init(
    capsys: pytest.CaptureFixture[str], target: str, config: Path, *extra: str
) -> tuple[int, str]:
    """``metacortex init`` on ``config`` with the data directory ``data``: exit code and
    everything it printed."""
    code = main(["init", "--target", target, "--config", str(config), "--data-dir", "data", *extra])
    captured = capsys.readouterr()
    return code, captured.out + captured.err


def run_init_process(
    place: Path, target: str, config: Path, *extra: str
) -> subprocess.CompletedProcess[str]:
    """``metacortex init`` as the operator runs it: a fresh process in ``place`` (this
    test's environment, the data directory ``data``), so a traceback would show on its
    stderr. Bounded: a file that makes it wait (a FIFO) fails the test, not the suite."""
    argv = ["init", "--target", target, "--config", str(config), "--data-dir", "data", *extra]
    return subprocess.run(  # noqa: S603 (this interpreter, fixed arguments)
        [sys.executable, "-m", "metacortex.cli.main", *argv],
        cwd=place,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def assert_malformed_file_refused_untouched(
    place: Path,
    capsys: pytest.CaptureFixture[str],
    target: str,
    name: str,
    message: str,
    *extra: str,
) -> None:
    """``init --yes`` on the golden malformed file ``name`` exits 2 with ``message`` and
    leaves the directory as it was: the file byte for byte (and its mtime), no .bak, no
    temporary file, no data directory."""
    config = place / name
    original = copy(name, config)
    modified = config.stat().st_mtime_ns

    code, out = run_init(capsys, target, config, "--yes", *extra)

    assert code == 2
    assert message in out
    assert config.read_bytes() == original
    assert config.stat().st_mtime_ns == modified
    assert sorted(path.name for path in place.iterdir()) == [name]
