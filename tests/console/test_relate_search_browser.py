"""Linking two memories by search on a memory's page, in a real headless Chromium
(Debian's ``chromium`` driven by Playwright with the system binary) against the real app
and its SQLite store (issue 41 §2, "Linking"): "Add a relation" finds the other memory by
search, as the deprecation page finds the replacement, instead of asking for its id."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from tests.console.browser_checks import axe_script
from tests.console.browsing import Browser, chromium_on
from tests.console.support import ADMIN, ConsoleLive

pytestmark = pytest.mark.slow


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
async def browser(live: ConsoleLive) -> AsyncIterator[Browser]:
    axe_script()  # installed (or skipped loudly) before the browser starts
    async with chromium_on(live) as driver:
        yield driver
    assert driver.problems == []


@pytest.mark.anyio
async def test_the_owner_links_two_memories_by_finding_the_other_by_search(
    browser: Browser,
) -> None:
    live = browser.live
    plan = live.service.save(ADMIN, content="The kitchen plan: an island and open shelves")
    oven = live.service.save(ADMIN, content="We chose a steam oven for the kitchen island")
    live.service.save(ADMIN, content="Paint samples: sage green for the cupboards")
    await browser.sign_in(f"/console/memories/{oven['item']['id']}")
    page = browser.page

    await page.get_by_label("Find the other memory").fill("kitchen plan island")
    await page.get_by_role("button", name="Find", exact=True).click()
    choices = await page.locator("#relate-candidates label").all_inner_texts()
    await page.get_by_label("The kitchen plan: an island").check()
    await page.get_by_label("Type").select_option("extends")
    await page.get_by_role("button", name="Add relation").click()

    assert all("steam oven" not in text for text in choices)  # never the memory itself
    assert await browser.notice() == "The relation was added."
    listed = await page.locator("#relation-list > li").all_inner_texts()
    assert any("extends" in text and "kitchen plan" in text for text in listed), listed
    edges = live.service.related_context(ADMIN, id=oven["item"]["id"])["edges"]
    assert [(e["source"], e["target"], e["type"]) for e in edges] == [
        (oven["item"]["id"], plan["item"]["id"], "extends")
    ]
