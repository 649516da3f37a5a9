"""Adding a memory in a real headless Chromium (Debian's ``chromium`` driven by Playwright
with the system binary) against the real app and its SQLite store (issue 41 §2, "add a
memory and find it", "link two memories by search"): from the Memories page's "Add a
memory", the owner types it, finds the memory it updates by search, saves, and Search
finds it, linked; a memory's "Add a relation" finds the other memory by search, as the
deprecation page finds the replacement, instead of asking for its id."""

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
async def test_the_owner_adds_a_memory_linked_by_search_and_search_finds_it(
    browser: Browser,
) -> None:
    live = browser.live
    older = live.service.save(
        ADMIN, content="The boiler is serviced every October by Heatwise", topic="house"
    )["item"]["id"]
    live.service.save(ADMIN, content="Paint samples: sage green for the cupboards", topic="house")
    await browser.sign_in("/console")
    page = browser.page

    await page.get_by_role("link", name="Add a memory").first.click()
    typed = "From 2027 the boiler is serviced in September"
    await page.get_by_label("The memory", exact=True).fill(typed)
    await page.get_by_label("Topic (optional)").fill("house")
    await page.get_by_label("Find the memory it relates to").fill("boiler service")
    await page.get_by_role("button", name="Find").click()
    await page.get_by_label("The boiler is serviced every October").check()
    await page.get_by_label("How it relates").select_option("updates")
    await page.get_by_role("button", name="Save the memory").click()

    assert await browser.notice() == "The memory was saved."
    new_id = page.url.split("/console/memories/")[1].split("?")[0]
    relations = await page.locator("#relation-list > li").all_inner_texts()
    assert any("updates" in text for text in relations), relations
    await page.get_by_role("link", name="Search", exact=True).click()
    await page.get_by_role("searchbox").first.fill("when is the boiler serviced")
    await page.get_by_role("searchbox").first.press("Enter")
    await page.locator(f"a[href*='/console/memories/{new_id}']").first.wait_for()
    assert older != new_id


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
