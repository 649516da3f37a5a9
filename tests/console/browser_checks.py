"""What the layout tests check in a real browser: horizontal overflow and axe-core.

axe-core is Deque's own accessibility engine, installed from npm (``axe-core@4``) into
``.cache/axe`` on first use; the tests skip loudly when npm cannot fetch it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import Any, Final

import pytest

ROOT: Final = Path(__file__).resolve().parents[2]
AXE_CACHE: Final = ROOT / ".cache" / "axe"
AXE_SCRIPT: Final = AXE_CACHE / "node_modules" / "axe-core" / "axe.min.js"
PHONE: Final = {"width": 390, "height": 844}
DESKTOP: Final = {"width": 1280, "height": 800}
WIDTHS: Final = {"phone": PHONE, "desktop": DESKTOP}
# The system's colour scheme (prefers-color-scheme) the pages are checked in.
SCHEMES: Final = ("light", "dark")
IMAGES: Final = ROOT / "docs" / "images"


def chromium() -> str:
    for candidate in ("/usr/lib/chromium/chromium", shutil.which("chromium") or ""):
        if candidate and Path(candidate).exists():
            return candidate
    pytest.skip(
        "SKIPPED LOUDLY: Debian's chromium is not installed (apt-get install -y chromium; "
        ".ci/run does it when root), so the console's layout and axe tests did not run"
    )


def axe_script() -> Path:
    """``axe.min.js`` of axe-core 4, installed from npm into ``.cache/axe`` if missing."""
    if AXE_SCRIPT.exists():
        return AXE_SCRIPT
    npm = shutil.which("npm")
    if npm is None:
        pytest.skip("SKIPPED LOUDLY: npm is not installed, so axe-core could not be fetched")
    AXE_CACHE.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(  # noqa: S603 (fixed arguments)
        [npm, "install", "--no-audit", "--no-fund", "--prefix", str(AXE_CACHE), "axe-core@4"],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    if done.returncode != 0 or not AXE_SCRIPT.exists():
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        pytest.skip(f"SKIPPED LOUDLY: npm could not install axe-core@4 ({last})")
    return AXE_SCRIPT


# Anything wider than the window: the page itself (the issue's own measure), a box that
# scrolls sideways (content clipped behind a scrollbar, as the topics table was), and any
# visible element whose right edge passes the window (unless a box that clips on
# purpose, with an ellipsis, holds it; that box is checked itself).
OVERFLOW: Final = """
() => {
  const name = e => e.tagName.toLowerCase() + (e.id ? '#' + e.id : '')
    + (typeof e.className === 'string' && e.className ? '.' + e.className.replace(/ /g, '.') : '');
  // Inside a box that clips its content (an ellipsis), overflow is hidden on purpose;
  // the clipping box is checked itself.
  const clipped = e => {
    for (let a = e.parentElement; a && a !== document.body; a = a.parentElement) {
      if (['hidden', 'clip'].includes(getComputedStyle(a).overflowX)) return true;
    }
    return false;
  };
  const problems = [];
  const page = document.scrollingElement;
  if (page.scrollWidth > window.innerWidth) {
    problems.push(`the page is ${page.scrollWidth}px wide in a ${window.innerWidth}px window`);
  }
  for (const e of document.querySelectorAll('body *')) {
    const style = getComputedStyle(e);
    if (style.display === 'none' || style.visibility === 'hidden') continue;
    if (e.closest('.visually-hidden, .skip')) continue;
    if (['auto', 'scroll'].includes(style.overflowX) && e.scrollWidth > e.clientWidth + 1) {
      problems.push(`${name(e)} scrolls sideways: ${e.scrollWidth}px in ${e.clientWidth}px`);
    }
    const box = e.getBoundingClientRect();
    if (box.width > 0 && box.right > window.innerWidth + 1 && !clipped(e)) {
      problems.push(`${name(e)} ends at ${Math.round(box.right)}px`);
    }
  }
  return problems.slice(0, 20);
}
"""


def overflow(page: Any) -> list[str]:
    problems: list[str] = page.evaluate(OVERFLOW)
    return problems


# WCAG 2.0-2.2 A and AA and axe's best practices: with ``wcag22aa`` axe also runs
# ``target-size`` (every target at least 24 by 24 CSS pixels, or spaced as if it were).
AXE_TAGS: Final = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "wcag22aa", "best-practice"]
AXE_RUN: Final = "async tags => (await axe.run({runOnly: {type: 'tag', values: tags}})).violations"


def axe_violations(page: Any) -> list[str]:
    """axe-core's violations on the page as loaded: WCAG 2.2 AA (target size included)
    and best practices."""
    if not page.evaluate("typeof window.axe !== 'undefined'"):
        page.add_script_tag(path=str(axe_script()))
    found: list[dict[str, Any]] = page.evaluate(AXE_RUN, AXE_TAGS)
    return [
        f"{v['id']} ({v['impact']}): {v['help']} at "
        + ", ".join(" ".join(node["target"]) for node in v["nodes"][:3])
        for v in found
    ]


def screenshot(page: Any, name: str, scheme: str) -> None:
    """``docs/images/console-<name>[-dark].png`` of the whole page, when
    ``METACORTEX_UPDATE_SCREENSHOTS=1`` asks for new ones."""
    if os.environ.get("METACORTEX_UPDATE_SCREENSHOTS") != "1":
        return
    suffix = "-dark" if scheme == "dark" else ""
    page.screenshot(path=str(IMAGES / f"console-{name}{suffix}.png"), full_page=True)
