"""The documents pages in a real headless Chromium (Debian's ``chromium`` driven by
Playwright with the system binary): the owner uploads a file through the form, opens its
page, searches inside it and erases it after the confirmation; a file over
``METACORTEX_DOCUMENT_MAX_BYTES`` chosen in the form gets the refusal page; a reader
(Ben) sees the documents of his space without the upload form or the erase link. Every
page fits a phone (390 px) and a desktop (1280 px), light and dark, with no axe-core
violation (WCAG 2.2 AA with target size, best practices). Screenshots go to
``docs/images/`` when ``METACORTEX_UPDATE_SCREENSHOTS=1``."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Final

import pytest

from metacortex.documents.isolation import shut_down
from metacortex.service import Access
from tests.console.browser_checks import axe_script
from tests.console.browsing import chromium_on
from tests.console.documents_support import documents_console
from tests.console.people_browser import page_problems, screenshot
from tests.console.support import ConsoleLive
from tests.owner.people_support import BEN_PASSPHRASE, Household

pytestmark = pytest.mark.slow

# A long unbroken source path and title: what must wrap on a phone.
SOURCE: Final = (
    "notes/platform-migration-working-group/2026-q3/"
    "decisions-and-open-questions-of-the-staging-environment.md"
)
TITLE: Final = (
    "Platform migration working group: decisions and open questions for the staging environment"
)
NOTES: Final = f"""# {TITLE}

## Databases

The staging database moves to the managed cluster in the first week of September.
Backups are taken every night at two and kept for thirty days.

## Networking

Every service talks to the others through the internal load balancer; the old VPN
link is switched off once the last batch job has moved.

## Open questions

Who owns the alerting rules after the move, and whether the reporting jobs run
from the new scheduler or stay on the old machine until December.
"""


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module", autouse=True)
def _reader_hosts() -> Iterator[None]:
    yield
    shut_down()


@pytest.fixture
def live(tmp_path: Path) -> Iterator[ConsoleLive]:
    axe_script()  # installed (or skipped loudly) before the server starts
    with documents_console(tmp_path) as running:
        yield running


@pytest.mark.anyio
async def test_the_owner_uploads_reads_searches_and_erases_a_document_in_the_browser(
    live: ConsoleLive, tmp_path: Path
) -> None:
    notes = tmp_path / "decisions.md"
    notes.write_text(NOTES)
    big = tmp_path / "big.md"
    big.write_text("# Big\n\n" + "All work and no play makes a dull document. " * 4_000)
    async with chromium_on(live, bypass_csp=True) as browser:
        browser.expected_statuses |= {413}
        page = browser.page
        await browser.sign_in("/console/documents")
        problems = await page_problems(page, live.url + "/console/documents")  # empty

        await page.set_input_files("#upload-file", str(notes))
        await page.fill("#upload-source", SOURCE)
        await page.fill("#upload-topic", "platform-migration")
        await page.click("#upload-submit")
        await page.locator("#page-notice").wait_for()
        assert "Document added" in await browser.notice()
        document_url = page.url
        assert "Platform migration working group" in await page.locator("h1").inner_text()
        passages = page.locator("#passages > li")
        assert await passages.count() == 3

        await page.fill("#find-query", "load balancer VPN")
        await page.click("form[role=search] button")
        found = page.locator("#found-passages > li")
        await found.first.wait_for()
        assert await found.count() == 1
        assert "internal load balancer" in await found.first.inner_text()
        search_url = page.url
        problems |= await page_problems(page, search_url)
        await screenshot(page, "console-document")
        problems |= await page_problems(page, live.url + "/console/documents")
        await page.goto(live.url + "/console/documents")
        await screenshot(page, "console-documents")

        # A file over the limit, chosen in the form: the refusal page, nothing stored.
        await page.set_input_files("#upload-file", str(big))
        await page.click("#upload-submit")
        await page.get_by_role("heading", name="The file is too large").wait_for()
        assert "METACORTEX_DOCUMENT_MAX_BYTES" in await page.locator("#page-error").inner_text()
        assert len(live.service.list_documents(Access.admin())["documents"]) == 1

        await page.goto(document_url)
        await page.click("#erase-document")
        await page.locator("#confirm-erase-document").wait_for()
        problems |= await page_problems(page, page.url)
        await page.click("#confirm-erase-document")
        await page.locator("#erase-document-result").wait_for()
        assert "3 passages erased" in await page.locator("#erase-document-result").inner_text()
        assert live.service.list_documents(Access.admin())["documents"] == []
    assert problems == {}
    assert browser.problems == []


@pytest.mark.anyio
async def test_a_reader_sees_the_documents_of_his_space_without_upload_or_erase(
    live: ConsoleLive,
) -> None:
    household = Household.signed_up(live.store)
    owner = Access.admin(directory=household.registry.directory())
    added = live.service.create_document(
        owner, content=NOTES, media_type="text/markdown", source=SOURCE, space="family"
    )["document"]
    async with chromium_on(live, bypass_csp=True) as browser:
        page = browser.page
        await page.goto(live.url + "/console")  # the console asks him to sign in first
        await page.fill("#email", "ben@example.com")
        await page.fill("#passphrase", BEN_PASSPHRASE)
        await page.click("button[type=submit]")
        await page.get_by_role("navigation", name="Console").wait_for()
        await page.get_by_role("link", name="Documents").click()
        await page.locator("#documents").wait_for()
        assert await page.locator("#upload").count() == 0
        await page.click(f"a[href*='{added['id']}']")
        await page.locator("#passages").wait_for()
        assert await page.locator("#erase-document").count() == 0
        problems = await page_problems(page, live.url + "/console/documents?space=family")
        problems |= await page_problems(page, page.url)
    assert problems == {}
    assert browser.problems == []
