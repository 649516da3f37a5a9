"""The documents page's history import in a real headless Chromium (Debian's ``chromium``
driven by Playwright with the system binary): the owner chooses a Claude export in the
form, leaves "told by the file", and reads the summary; the documents page with the
import form and the summary page have no axe-core violation (WCAG 2.2 AA with target
size, best practices) and fit a phone and a desktop."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from metacortex.service import Access
from tests.console.browser_checks import AXE_RUN, AXE_TAGS, OVERFLOW, axe_script
from tests.console.browsing import chromium_on
from tests.console.people_browser import page_problems
from tests.console.support import ConsoleLive, console_server
from tests.importing.exports import claude_export, generated_chats

pytestmark = pytest.mark.slow


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def live(tmp_path: Path) -> Iterator[ConsoleLive]:
    axe_script()  # installed (or skipped loudly) before the server starts
    with console_server(tmp_path, oauth=False) as running:
        yield running


async def _problems_here(page: Any) -> tuple[list[str], list[str]]:
    """What is wider than the window and what axe-core reports, on the page as it is (a
    POST's answer cannot be opened again by its address)."""
    await page.add_script_tag(path=str(axe_script()))
    violations: list[dict[str, Any]] = await page.evaluate(AXE_RUN, AXE_TAGS)
    return await page.evaluate(OVERFLOW), [v["id"] for v in violations]


@pytest.mark.anyio
async def test_the_owner_imports_a_claude_export_from_the_documents_page(
    live: ConsoleLive, tmp_path: Path
) -> None:
    export = tmp_path / "data-2026-11-30.zip"
    export.write_bytes(claude_export(generated_chats(3, 4)))
    async with chromium_on(live, bypass_csp=True) as browser:
        page = browser.page
        await browser.sign_in("/console/documents")
        problems = await page_problems(page, live.url + "/console/documents")
        await page.set_input_files("#import-file", str(export))
        await page.fill("#import-topic", "history")
        await page.click("#import-submit")
        await page.locator("#import-summary").wait_for()
        assert "Claude history imported into default" in await page.locator("h1").inner_text()
        lines = await page.locator("#import-summary > li").all_inner_texts()
        assert (
            lines[0]
            == "imported: 3 conversations as new documents (12 messages, 12 passages added)"
        )
        for width in (390, 1280):
            await page.set_viewport_size({"width": width, "height": 900})
            assert await _problems_here(page) == ([], [])
        await page.click("#to-documents")
        await page.locator("#documents").wait_for()
        assert await page.locator("#documents > li").count() == 3
    documents = live.service.list_documents(Access.admin())["documents"]
    assert {d["topic"] for d in documents} == {"history"}
    assert problems == {}
    assert browser.problems == []
