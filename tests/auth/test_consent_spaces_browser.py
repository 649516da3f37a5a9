"""The consent page's space choice in a real headless Chromium (Debian's ``chromium``
through Playwright with the system binary), for the official ``mcp`` SDK's own OAuth
client: a person the owner invited signs in, gives the connector one of her spaces to
read only, and the SDK's client then reads that space, cannot write it, and cannot see
another. The page fits a phone and a desktop with no axe-core violation, light and dark."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp import Client
from mcp.client.auth import OAuthClientProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import AuthorizationCodeResult, OAuthClientMetadata

from metacortex.owner.passphrase import set_person_passphrase
from tests.auth.test_sdk_client_flow import MemoryTokens
from tests.console.browsing import chromium_on
from tests.console.people_browser import PeopleLive, page_problems, people_server, screenshot
from tests.oauth_support import CALLBACK, query_of
from tests.owner.people_support import ANN_PASSPHRASE

pytestmark = pytest.mark.slow


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def served(tmp_path: Path) -> Iterator[PeopleLive]:
    with people_server(tmp_path) as running:
        set_person_passphrase(running.live.store, running.household.ann.id, ANN_PASSPHRASE)
        yield running


def _text(result: Any) -> str:
    return " ".join(getattr(item, "text", "") for item in result.content)


@pytest.mark.anyio
async def test_a_connector_given_one_space_to_read_reads_it_and_nothing_more(
    served: PeopleLive,
) -> None:
    url = served.live.url
    answers: list[AuthorizationCodeResult] = []
    problems: dict[str, Any] = {}
    async with chromium_on(served.console, bypass_csp=True) as browser:
        page = browser.page

        async def land(route: Any) -> None:  # the connector's redirect URI, never contacted
            await route.fulfill(status=200, content_type="text/plain", body="back at the client")

        await page.route(re.compile(r"^http://127\.0\.0\.1:9/.*"), land)
        await page.goto(url + "/owner/sign-in")
        await page.get_by_label(re.compile("^Email")).fill("ann@example.com")
        await page.get_by_label("Passphrase").fill(ANN_PASSPHRASE)
        await page.get_by_role("button", name="Sign in").click()
        await page.get_by_role("heading", name="You are signed in").wait_for()

        async def approve(authorization_url: str) -> None:
            await page.goto(authorization_url)
            await page.get_by_role("heading", name=re.compile("^Allow")).wait_for()
            problems.update(await page_problems(page, page.url))
            assert await page.locator("#approver").inner_text() == "Ann (ann@example.com)"
            assert await page.locator("#space-family").input_value() == "write"  # preselected
            await page.get_by_label(re.compile("^Family")).select_option("read")
            await page.get_by_label(re.compile("^Work")).select_option("none")
            await page.get_by_label("Its default space").select_option("family")
            await screenshot(page, "consent-spaces")
            await page.get_by_role("button", name="Allow").click()
            await page.wait_for_url(re.compile(r"^http://127\.0\.0\.1:9/callback\?.*code="))
            params = query_of(page.url)
            answers.append(
                AuthorizationCodeResult(
                    code=params["code"], state=params["state"], iss=params["iss"]
                )
            )

        async def callback() -> AuthorizationCodeResult:
            return answers.pop()

        provider = OAuthClientProvider(
            server_url=served.live.mcp,
            client_metadata=OAuthClientMetadata(
                client_name="Ann's notes agent",
                redirect_uris=[CALLBACK],  # type: ignore[list-item]
                token_endpoint_auth_method="none",
                scope="memory:read memory:write offline_access",
            ),
            storage=MemoryTokens(),
            redirect_handler=approve,
            callback_handler=callback,
        )
        async with (
            httpx2.AsyncClient(auth=provider, timeout=30) as http,
            Client(streamable_http_client(served.live.mcp, http_client=http), mode="legacy") as mcp,
        ):
            family = await mcp.call_tool("search_context", {"query": "plan weekend"})
            write = await mcp.call_tool(
                "save_context", {"content": "a new note", "space": "family"}
            )
            work = await mcp.call_tool("search_context", {"query": "plan", "space": "work"})
            default = await mcp.call_tool("search_context", {"query": "plan", "space": "default"})

    assert problems == {}
    assert browser.problems == []
    assert not family.is_error
    assert family.structured_content is not None
    [match] = family.structured_content["matches"]
    assert served.contents["family"] in str(match)
    assert write.is_error
    assert "may only read the space 'family'" in _text(write)
    for refused, key in ((work, "work"), (default, "default")):
        assert refused.is_error
        assert f"no space '{key}' is available" in _text(refused)
    [(_, grant)] = served.live.store.auth_list("grant")
    assert grant["person"] == served.household.ann.id
    assert grant["spaces"] == {"family": "read"}
