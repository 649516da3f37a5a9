"""Every view in the real host (see host_support.py) is axe-core clean (WCAG 2.2 AA and
best practices, target size included) and has nothing wider than the window, at 390
and 1280 px wide, in the host's light and dark themes, filled with realistic data.

With METACORTEX_APPS_SCREENSHOTS=1 it also writes docs/images/apps/<view>.png (390 px,
light), the screenshots docs/APPS.md shows.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any, Final

import pytest
from playwright.sync_api import expect

from tests.apps.driving import Host, hosted
from tests.apps.host_support import Live
from tests.console.browser_checks import IMAGES, SCHEMES, WIDTHS, axe_violations, overflow

SCREENSHOTS: Final = IMAGES / "apps"


def _memory(host: Host, live: Live) -> None:
    host.open("owner", "fetch_context", {"id": live.seeded.new})
    host.view.get_by_role("button", name="Deprecate").click()  # its form shown too


def _search(host: Host, live: Live) -> None:
    host.open("owner", "search_context", {"query": "staging database"})
    host.view.get_by_role("button", name="Open").first.click()
    expect(host.view.locator("#opened article")).to_be_visible()


VIEWS: Final[dict[str, Callable[[Host, Live], object]]] = {
    "search": _search,
    "memory": _memory,
    "save": lambda host, live: host.open(
        "owner",
        "save_context",
        {"content": "Deploys freeze on Fridays after 15:00.", "topic": "infra"},
    ),
    "spaces": lambda host, live: host.open("owner", "list_spaces", {}),
    "upload": lambda host, live: host.open(
        "owner",
        "create_document",
        {
            "content": "# Onboarding\n\nAsk for a laptop on day one.\n\n## Access\n\n"
            "Request VPN access from the infra team.",
            "media_type": "text/markdown",
            "source": "handbook/onboarding.md",
            "topic": "infra",
        },
    ),
    "graph": lambda host, live: host.open("owner", "related_context", {"id": live.seeded.new}),
}


@pytest.mark.parametrize("scheme", SCHEMES)
@pytest.mark.parametrize("view", sorted(VIEWS))
def test_the_view_is_axe_clean_and_fits_at_phone_and_desktop_widths(
    browser: Any, live: Live, view: str, scheme: str
) -> None:
    with hosted(browser, live) as host:
        VIEWS[view](host, live)
        host.theme(scheme)
        expect(host.view.locator("html")).to_have_attribute("data-theme", scheme)
        for width, size in WIDTHS.items():
            host.page.set_viewport_size(size)
            frame = host.frame
            # The frame lays out at the new width a moment after the page does.
            frame.wait_for_function(
                "width => document.documentElement.clientWidth === width", arg=size["width"]
            )
            assert axe_violations(frame) == [], (view, scheme, width)
            assert overflow(frame) == [], (view, scheme, width)
            if (
                os.environ.get("METACORTEX_APPS_SCREENSHOTS") == "1"
                and scheme == "light"
                and width == "phone"
            ):
                SCREENSHOTS.mkdir(parents=True, exist_ok=True)
                height = frame.evaluate("document.documentElement.scrollHeight")
                host.page.set_viewport_size({"width": size["width"], "height": height})
                host.page.locator("iframe").screenshot(path=str(SCREENSHOTS / f"{view}.png"))
