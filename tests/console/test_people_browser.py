"""A person the owner invited, in a real headless Chromium (Debian's ``chromium`` driven by
Playwright with the system binary): the link ``metacortex person invite`` printed (the
real command, a fresh process) opens the page where they choose a passphrase; they land
signed in on the console, which shows their spaces only and refuses the owner's clients
page; later they sign in with their email. Every page they meet fits a phone and a
desktop and has no axe-core violation (WCAG 2.2 AA, 24 px targets), light and dark."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.console.browsing import chromium_on
from tests.console.people_browser import PeopleLive, page_problems, people_server, screenshot
from tests.owner.people_support import ANN_PASSPHRASE

pytestmark = pytest.mark.slow


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def served(tmp_path: Path) -> Iterator[PeopleLive]:
    with people_server(tmp_path) as running:
        yield running


@pytest.mark.anyio
async def test_an_invited_person_chooses_a_passphrase_and_sees_only_their_spaces(
    served: PeopleLive,
) -> None:
    url = served.live.url
    link = served.invite("ann@example.com")
    async with chromium_on(served.console, bypass_csp=True) as browser:
        browser.expected_statuses |= {403, 410}
        page = browser.page
        problems = await page_problems(page, link)  # the form, before it is used

        await page.goto(link)
        assert "ann@example.com" in await page.locator("#invited-email").inner_text()
        await screenshot(page, "invitation")
        await page.get_by_label("New passphrase").fill(ANN_PASSPHRASE)
        await page.get_by_label("Repeat it").fill(ANN_PASSPHRASE)
        await page.get_by_role("button", name="Set passphrase and sign in").click()
        await page.get_by_role("navigation", name="Console").wait_for()

        assert page.url == url + "/console"
        listing = await page.locator("main").inner_text()
        assert served.contents["family"] in listing  # Ann's first space: family
        assert served.contents["default"] not in listing
        assert served.contents["work"] not in listing
        menu = await page.get_by_role("navigation", name="Console").inner_text()
        assert "Clients" not in menu
        assert "Export" not in menu
        problems |= await page_problems(page, url + "/console")
        problems |= await page_problems(page, url + "/console?space=work")

        answer = await page.goto(url + "/console/clients")
        assert answer is not None
        assert answer.status == 403
        heading = await page.get_by_role("heading", level=1).inner_text()
        assert heading == "This page is the owner's"
        problems |= await page_problems(page, url + "/console/clients")

        answer = await page.goto(link)  # used: it says so
        assert answer is not None
        assert answer.status == 410
        assert "already used" in await page.get_by_role("alert").inner_text()
        problems |= await page_problems(page, link)

        await page.goto(url + "/console")
        await page.get_by_role("button", name="Sign out").click()
        await page.goto(url + "/console")
        problems |= await page_problems(page, url + "/owner/sign-in")
        await page.goto(url + "/console")
        await page.get_by_label(re.compile("^Email")).fill("ann@example.com")
        await page.get_by_label("Passphrase").fill(ANN_PASSPHRASE)
        await page.get_by_role("button", name="Sign in").click()
        await page.get_by_role("navigation", name="Console").wait_for()
        assert served.contents["family"] in await page.locator("main").inner_text()

    assert problems == {}
    assert browser.problems == []
