"""The owner's browser for the console's flow tests: a real headless Chromium (Debian's
``chromium`` driven by Playwright with the system binary; never ``playwright install``),
its page's console errors and page errors collected so each test can fail on them."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any, Final

import pytest

from tests.console.browser_checks import chromium as system_chromium
from tests.console.support import ConsoleLive
from tests.oauth_support import PASSPHRASE

playwright_api = pytest.importorskip("playwright.async_api")

DESKTOP: Final = {"width": 1280, "height": 900}


@dataclass
class Browser:
    page: Any
    live: ConsoleLive
    problems: list[str] = field(default_factory=list)
    # HTTP statuses a test provokes on purpose (Chromium logs each as a console error).
    expected_statuses: set[int] = field(default_factory=set)

    async def open(self, path: str) -> None:
        await self.page.goto(self.live.url + path)

    async def sign_in(self, path: str = "/console") -> None:
        await self.open(path)
        await self.page.fill("#passphrase", PASSPHRASE)
        await self.page.click("button[type=submit]")
        await self.page.get_by_role("navigation", name="Console").wait_for()

    async def notice(self) -> str:
        """The page's confirmation (without its Undo button's text)."""
        text: str = await self.page.locator("#page-notice > p").inner_text()
        return text


@asynccontextmanager
async def chromium_on(live: ConsoleLive, **context: Any) -> AsyncIterator[Browser]:
    """A fresh browser on the live console; ``context``: Playwright context options
    (``java_script_enabled=False``, ``color_scheme="dark"``, ``permissions=[...]``)."""
    executable = system_chromium()
    async with playwright_api.async_playwright() as playwright:
        chromium = await playwright.chromium.launch(
            executable_path=executable, args=["--no-sandbox", "--disable-gpu"]
        )
        options = {"viewport": DESKTOP, "accept_downloads": True, **context}
        page = await (await chromium.new_context(**options)).new_page()
        driver = Browser(page, live)

        def console_message(message: Any) -> None:
            status = re.search(r"responded with a status of (\d+)", message.text)
            if status and int(status.group(1)) in driver.expected_statuses:
                return
            if message.type in ("error", "warning"):
                driver.problems.append(f"console {message.type}: {message.text}")

        page.on("console", console_message)
        page.on("pageerror", lambda error: driver.problems.append(f"page error: {error}"))
        try:
            yield driver
        finally:
            await chromium.close()
