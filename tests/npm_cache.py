"""npm packages the tests run (the real clients), installed once into ``.cache/<name>``.

``installed(name, spec, path)`` returns ``.cache/<name>/node_modules/<path>`` after
``npm install spec`` there (reused on later runs); without npm or the registry the
calling test is skipped, loudly, saying what did not run.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Final

import pytest

from tests.cache_lock import locked

ROOT: Final = Path(__file__).resolve().parents[1]


def installed(name: str, spec: str, path: str) -> Path:
    folder = ROOT / ".cache" / name
    with locked(folder):
        return _installed(folder, spec, path)


def _installed(folder: Path, spec: str, path: str) -> Path:
    target = folder / "node_modules" / path
    if target.exists():
        return target
    npm = shutil.which("npm")
    if npm is None:
        pytest.skip(f"SKIPPED LOUDLY: npm is not installed, so {spec} could not be fetched")
    folder.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(  # noqa: S603 (fixed arguments)
        [npm, "install", "--no-audit", "--no-fund", "--prefix", str(folder), spec],
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    if done.returncode != 0 or not target.exists():
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        pytest.skip(f"SKIPPED LOUDLY: npm could not install {spec} ({last})")
    return target
