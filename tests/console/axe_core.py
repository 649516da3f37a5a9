"""axe-core (Deque's accessibility engine, from npm) for the browser tests.

``axe_script()`` installs ``axe-core@4`` into ``.cache/axe-core`` once (reused after)
and returns the path of ``axe.min.js``; without npm or the registry the calling test
is skipped, loudly. ``violations(page)`` injects it into a Playwright page (opened with
``bypass_csp=True``: the console's CSP allows no script) and returns axe's violations.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any, Final

import pytest

ROOT: Final = Path(__file__).resolve().parents[2]
CACHE: Final = ROOT / ".cache" / "axe-core"
PACKAGE: Final = "axe-core@4"
SCRIPT: Final = CACHE / "node_modules" / "axe-core" / "axe.min.js"


def axe_script() -> Path:
    if SCRIPT.exists():
        return SCRIPT
    npm = shutil.which("npm")
    if npm is None:
        pytest.skip("SKIPPED LOUDLY: npm is not installed, so axe-core could not be fetched")
    CACHE.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(  # noqa: S603 (fixed arguments)
        [npm, "install", "--no-audit", "--no-fund", "--prefix", str(CACHE), PACKAGE],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    if done.returncode != 0 or not SCRIPT.exists():
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        pytest.skip(f"SKIPPED LOUDLY: npm could not install {PACKAGE} ({last})")
    return SCRIPT


async def violations(page: Any) -> list[dict[str, Any]]:
    """axe's violations on the page as it is now: rule id, impact and the nodes' targets."""
    await page.add_script_tag(path=str(axe_script()))
    found: list[dict[str, Any]] = await page.evaluate(
        """async () => (await axe.run()).violations.map(v => ({
            id: v.id, impact: v.impact, targets: v.nodes.map(n => n.target.join(' '))
        }))"""
    )
    return found


async def overflow(page: Any) -> int:
    """How many pixels the page is wider than the window (0: no horizontal scroll)."""
    width: int = await page.evaluate("document.scrollingElement.scrollWidth - window.innerWidth")
    return width
