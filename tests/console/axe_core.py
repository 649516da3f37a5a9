"""axe-core (Deque's accessibility engine, from npm) for the browser tests.

``axe_script()`` installs ``axe-core@4`` into ``.cache/axe-core`` once (reused after,
``tests/npm_cache.py``) and returns the path of ``axe.min.js``; without npm or the
registry the calling test is skipped, loudly. ``violations(page)`` injects it into a
Playwright page (opened with ``bypass_csp=True``: the console's CSP allows no script)
and returns axe's violations.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Final

from tests.npm_cache import installed

PACKAGE: Final = "axe-core@4"


def axe_script() -> Path:
    return installed("axe-core", PACKAGE, "axe-core/axe.min.js")


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
