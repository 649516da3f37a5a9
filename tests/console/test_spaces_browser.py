"""The console's spaces in a real headless Chromium (Debian's ``chromium`` driven by
Playwright with the system binary), on a live OAuth-enabled server with a household (one
memory in each of default, family and work): the owner switches spaces with the header's
switcher, sees every space at once, moves a memory to another space (recorded as an
owner event) and manages spaces and people; a reader is offered no change and no other
space, and a writer switches only among their spaces. Every new page fits a phone
(390 px) and a desktop (1280 px) and has no axe-core violation (WCAG 2.2 AA, 24 px
targets), light and dark. ``METACORTEX_UPDATE_SCREENSHOTS=1`` takes their screenshots."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from metacortex.domain.records import ALL_STATES
from metacortex.kernel.events import MEMORY_EVENTS
from metacortex.owner.passphrase import set_person_passphrase
from metacortex.storage.base import MemoryFilter
from tests.console.browsing import chromium_on
from tests.console.people_browser import PeopleLive, page_problems, people_server, screenshot
from tests.oauth_support import PASSPHRASE
from tests.owner.people_support import ANN_PASSPHRASE, BEN_PASSPHRASE

pytestmark = pytest.mark.slow


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def served(tmp_path: Path) -> Iterator[PeopleLive]:
    with people_server(tmp_path) as running:
        household = running.household
        set_person_passphrase(running.live.store, household.ann.id, ANN_PASSPHRASE)
        set_person_passphrase(running.live.store, household.ben.id, BEN_PASSPHRASE)
        yield running


def _memory_in(served: PeopleLive, space: str) -> str:
    [memory] = served.live.store.list_page(MemoryFilter(states=ALL_STATES, space=space), 1, None)
    return memory.id


async def _sign_in(page: Any, url: str, email: str, passphrase: str) -> None:
    await page.goto(url + "/console")
    if email:
        await page.get_by_label(re.compile("^Email")).fill(email)
    await page.get_by_label("Passphrase").fill(passphrase)
    await page.get_by_role("button", name="Sign in").click()
    await page.get_by_role("navigation", name="Console").wait_for()


async def _switcher(page: Any) -> list[str]:
    switch = page.locator("#space-choice")
    if await switch.count() == 0:
        return []
    labels: list[str] = await switch.locator("option").all_inner_texts()
    return labels


@pytest.mark.anyio
async def test_the_owner_switches_sees_all_spaces_moves_a_memory_and_manages_spaces_and_people(
    served: PeopleLive,
) -> None:
    url = served.live.url
    family = _memory_in(served, "family")
    async with chromium_on(served.console, bypass_csp=True) as browser:
        page = browser.page
        await _sign_in(page, url, "", PASSPHRASE)
        assert await _switcher(page) == ["All spaces", "Default", "Family", "Work"]

        await page.get_by_label("Space", exact=True).select_option("family")
        await page.get_by_role("button", name="Show").click()
        await page.wait_for_url(re.compile(r"space=family"))
        listing = await page.locator("main").inner_text()
        assert served.contents["family"] in listing
        assert served.contents["work"] not in listing
        assert "by Owner with" in listing

        await page.get_by_label("Space", exact=True).select_option("*")
        await page.get_by_role("button", name="Show").click()
        await page.wait_for_url(re.compile(r"space=%2A|space=\*"))
        listing = await page.locator("main").inner_text()
        assert all(content in listing for content in served.contents.values())
        await screenshot(page, "console-all-spaces")

        problems = await page_problems(page, url + "/console?space=*")
        problems |= await page_problems(page, url + "/console/spaces")
        await screenshot(page, "console-spaces")
        problems |= await page_problems(page, url + "/console/people")
        await screenshot(page, "console-people")
        problems |= await page_problems(page, url + "/console/activity?space=family")
        record = f"{url}/console/memories/{family}?space=family"
        problems |= await page_problems(page, record)

        await page.goto(record)
        await page.get_by_label("Move to").select_option("work")
        await page.locator("#move-space").click()
        await page.wait_for_url(re.compile(r"space=work&done=moved-space"))
        assert "moved to this space" in await page.get_by_role("status").first.inner_text()
        assert "Work" in await page.locator("#record-space").inner_text()

        await page.goto(url + "/console/spaces")
        await page.locator("#new-key").fill("garden")
        await page.locator("#new-name").fill("Garden")
        await page.get_by_role("button", name="Add space").click()
        await page.locator("#space-garden").wait_for()

        await page.goto(url + "/console/people")
        await page.get_by_role("button", name="Invitation link for Ben").click()
        link = await page.locator("#invite-link").inner_text()
        assert "/owner/invite/" in link
        problems |= await page_problems(page, url + "/console/people")

    served.live.app.state.runtime.events.flush()
    moved = [
        event
        for event in served.live.store.read_events(MEMORY_EVENTS)
        if event["event_type"] == "owner_action" and event["tool_name"] == "move_to_space"
    ]
    assert [(e["space"], e["request"]["to_space"], e["status"]) for e in moved] == [
        ("family", "work", "ok")
    ]
    assert served.live.store.get(family, space="work") is not None
    assert problems == {}
    assert browser.problems == []


@pytest.mark.anyio
async def test_a_reader_is_offered_no_change_and_a_writer_only_their_spaces(
    served: PeopleLive,
) -> None:
    url = served.live.url
    family = _memory_in(served, "family")
    work = _memory_in(served, "work")
    async with chromium_on(served.console, bypass_csp=True) as browser:
        page = browser.page
        await _sign_in(page, url, "ben@example.com", BEN_PASSPHRASE)
        assert await _switcher(page) == []  # Ben reads family only: nothing to switch to
        await page.goto(f"{url}/console/memories/{family}")
        assert await page.locator("#move-space-form").count() == 0
        assert await page.get_by_role("group", name="Change this memory").count() == 0
        assert await page.locator("#correct-form").count() == 0
        assert await page.locator(".select-item").count() == 0
        problems = await page_problems(page, f"{url}/console/memories/{family}")
        await page.get_by_role("button", name="Sign out").click()

        await _sign_in(page, url, "ann@example.com", ANN_PASSPHRASE)
        assert await _switcher(page) == ["Family", "Work"]
        await page.goto(f"{url}/console/memories/{work}?space=work")  # Ann reads work
        assert await page.locator("#correct-form").count() == 0
        assert await page.locator("#move-space-form").count() == 0
        problems |= await page_problems(page, f"{url}/console/memories/{work}?space=work")

    assert problems == {}
    assert browser.problems == []
