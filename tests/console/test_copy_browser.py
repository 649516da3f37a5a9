"""Copy buttons and pages without script, in a real headless Chromium (Debian's
``chromium`` through Playwright), under the console's own CSP (never bypassed here: a
script the policy refused would be a console error, and each test fails on one).

The copy buttons come from ``/console/static/console.js``, the console's only script, from
its own origin (``script-src 'self'``, no inline script). Without script every page still
works: the text is there to select, "Select all" is a link the server answers, and no
button that needs script is shown.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from metacortex.clients.snippets import token_variable_for
from tests.console.browsing import Browser, chromium_on
from tests.console.support import ADMIN, ConsoleLive, seed

expect = pytest.importorskip("playwright.async_api").expect

pytestmark = pytest.mark.slow


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
async def browser(live: ConsoleLive) -> AsyncIterator[Browser]:
    # The clipboard API asks the page's permission: granted as a person's click would.
    async with chromium_on(live, permissions=["clipboard-read", "clipboard-write"]) as driver:
        yield driver
    assert driver.problems == []


async def _clipboard(browser: Browser) -> str:
    text: str = await browser.page.evaluate("navigator.clipboard.readText()")
    return text


async def _create_client(browser: Browser, client_id: str) -> None:
    page = browser.page
    await page.get_by_label("Id", exact=False).first.fill(client_id)
    await page.get_by_role("button", name="Create client").click()
    await page.locator("#new-token").wait_for()


@pytest.mark.anyio
async def test_the_token_the_export_line_and_each_configuration_copy_with_one_click(
    browser: Browser,
) -> None:
    page = browser.page
    await browser.sign_in("/console/clients")
    await _create_client(browser, "laptop")
    token = (await page.locator("#token-text").inner_text()).strip()
    variable = token_variable_for("laptop")

    await page.get_by_role("button", name="Copy the token").click()
    assert await _clipboard(browser) == token
    await page.get_by_role("button", name="Copy the export line").click()
    assert await _clipboard(browser) == f"export {variable}='{token}'"
    await expect(page.locator("#copy-status")).to_have_text(
        "Copied the export line to the clipboard."
    )
    await expect(page.get_by_role("button", name="Copy the export line")).to_have_text("Copied")

    snippets = page.locator(".snippet pre.snippet-text")
    assert await snippets.count() >= 4
    for index in range(await snippets.count()):
        snippet = snippets.nth(index)
        label = await snippet.get_attribute("data-copy")
        await page.get_by_role("button", name=f"Copy {label}").click()
        assert await _clipboard(browser) == await snippet.inner_text()
    await page.get_by_role("button", name="Copy the endpoint URL").click()
    assert await _clipboard(browser) == f"{browser.live.url}/clients/laptop/mcp"


@pytest.mark.anyio
async def test_the_console_sends_its_script_under_a_strict_policy(browser: Browser) -> None:
    page = browser.page
    await browser.sign_in()
    answer = await page.goto(browser.live.url + "/console/clients/default")
    assert answer is not None
    policy = (await answer.all_headers())["content-security-policy"]

    assert "script-src 'self';" in policy
    assert "unsafe-inline" not in policy
    assert "unsafe-eval" not in policy
    # The policy holds: an inline script the page did not ship is refused by the browser.
    ran = await page.evaluate(
        """() => new Promise(done => {
             document.addEventListener('securitypolicyviolation', () => done('refused'));
             const s = document.createElement('script');
             s.textContent = "document.title = 'injected'";
             document.body.appendChild(s);
             setTimeout(() => done(document.title), 500);
           })"""
    )
    assert ran == "refused"
    browser.problems.clear()  # the refusal above is logged as a console error, on purpose
    assert await page.get_by_role("button", name="Copy the endpoint URL").count() == 1


@pytest.mark.anyio
async def test_without_script_the_token_shows_and_select_all_and_bulk_work(
    live: ConsoleLive,
) -> None:
    seeded = seed(live.service)
    async with chromium_on(live, java_script_enabled=False) as browser:
        page = browser.page
        await browser.sign_in("/console/clients")
        await _create_client(browser, "no-script")
        assert len((await page.locator("#token-text").inner_text()).strip()) > 20
        assert await page.locator(".copy-button").count() == 0

        await browser.open("/console?topic=garden")
        await page.get_by_role("link", name="Select all 3 on this page").click()
        boxes = page.locator("#memory-list input.select-item")
        assert [await boxes.nth(i).is_checked() for i in range(3)] == [True, True, True]
        await page.get_by_role("button", name="Deprecate selected…").click()
        await page.get_by_role("heading", name="Deprecate 3 memories?").wait_for()
        await page.get_by_role("button", name="Deprecate 3 memories").click()
        assert await browser.notice() == "3 memories deprecated."
        for memory_id in seeded.garden:
            meta = live.service.fetch(ADMIN, id=memory_id)["item"]["metadata"]
            assert meta["branch_state"] == "deprecated"
        await page.get_by_role("button", name="Undo").click()
        assert "3 memories are back" in await browser.notice()
    assert browser.problems == []
