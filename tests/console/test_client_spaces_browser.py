"""A client's spaces chosen in the console, in a real headless Chromium (Debian's
``chromium`` driven by Playwright with the system binary) against the real app, then used
by the official ``mcp`` SDK client over loopback HTTP (issue 41 §2, "Applications and
spaces"): "New client endpoint" makes a client limited to one space, its card and page
say so, its MCP call in that space works and in another is refused; the page's grant,
default and take-away controls change it as ``metacortex client grant|ungrant`` does."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from metacortex.access.registry import Registry
from metacortex.clients import ClientManager
from tests.console.browser_checks import axe_script
from tests.console.browsing import Browser, chromium_on
from tests.console.support import ConsoleLive, console_server
from tests.server.conftest import STATELESS_MODE

pytestmark = pytest.mark.slow


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def live(tmp_path: Path) -> Iterator[ConsoleLive]:
    with console_server(tmp_path, oauth=False, metacortex_client_refresh_seconds=0) as running:
        Registry(running.store).add_space("work", "Work")
        yield running


@pytest.fixture
async def browser(live: ConsoleLive) -> AsyncIterator[Browser]:
    axe_script()  # installed (or skipped loudly) before the browser starts
    async with chromium_on(live) as driver:
        yield driver
    assert driver.problems == []


async def _call(url: str, token: str, tool: str, arguments: dict[str, Any]) -> Any:
    async with (
        httpx2.AsyncClient(headers={"authorization": f"Bearer {token}"}, timeout=60) as http,
        Client(streamable_http_client(url, http_client=http), mode=STATELESS_MODE) as client,
    ):
        return await client.call_tool(tool, arguments)


@pytest.mark.anyio
async def test_a_client_made_in_the_console_for_one_space_is_refused_in_another(
    browser: Browser,
) -> None:
    live = browser.live
    await browser.sign_in("/console/clients")
    page = browser.page
    await page.get_by_label("Id", exact=False).first.fill("work-laptop")
    await page.get_by_label("Default", exact=True).select_option("")
    await page.get_by_label("Work", exact=True).select_option("write")
    await page.get_by_label("Default space").select_option("work")
    await page.get_by_role("button", name="Create client").click()
    token = (await page.locator("#token-text").inner_text()).strip()
    person = await page.locator("#client-person").inner_text()
    granted = await page.locator("#space-grants > li").all_inner_texts()

    url = f"{live.url}/clients/work-laptop/mcp"
    saved = await _call(url, token, "save_context", {"content": "The work VPN is vpn.example"})
    refused = await _call(url, token, "search_context", {"query": "vpn", "space": "default"})

    assert "Owner" in person
    assert [text.split(" · ")[0] for text in granted] == ["Work"]
    assert saved.is_error is False
    assert json.loads(saved.content[0].text)["item"]["metadata"]["space"] == "work"
    assert refused.is_error is True
    assert "no space 'default'" in refused.content[0].text
    await page.goto(f"{live.url}/console/clients")
    card = await page.locator("#client-work-laptop-spaces").inner_text()
    assert card == "Spaces: work (write, default)"


@pytest.mark.anyio
async def test_the_clients_page_grants_makes_default_and_takes_away_a_space(
    browser: Browser,
) -> None:
    live = browser.live
    await browser.sign_in("/console/clients")
    page = browser.page
    await page.get_by_label("Id", exact=False).first.fill("both")
    await page.get_by_role("button", name="Create client").click()  # default: write
    await page.locator("#token-text").wait_for()

    await page.get_by_label("Space to grant").select_option("work")
    await page.get_by_label("Level").select_option("read")
    await page.get_by_role("button", name="Grant").click()
    await page.get_by_role("button", name="Make Work the default space").click()
    await page.get_by_role("button", name="Take Default away").click()

    view = ClientManager(live.store, live.runtime.settings).get("both")
    assert view.grants == {"work": "read"}
    assert view.default_space == "work"
    assert "The client's spaces were changed" in await browser.notice()
