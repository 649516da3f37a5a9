"""The consent flow in a real headless Chromium (Debian's ``chromium``, driven by Playwright
with the system binary; never ``playwright install``).

The browser discovers the server from a 401, registers by Client ID Metadata Document
(served by a local fixture) and by DCR, signs in, approves or denies; the code is then
exchanged over HTTP and ``search_context`` called through ``mcp.Client``. The token rules
(expired, replayed, wrong verifier, wrong resource, rotation and reuse, revoked grant,
another endpoint) are checked on codes the browser obtained. Screenshots of the consent
page are written to ``docs/images/`` when ``METACORTEX_UPDATE_SCREENSHOTS=1``.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any, Final

import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from metacortex.domain.records import utc_now
from tests.oauth_support import (
    PASSPHRASE,
    OAuthLive,
    mcp_post,
    oauth_server,
    pkce_pair,
    query_of,
    tools_list,
)

playwright_api = pytest.importorskip("playwright.async_api")

ROOT: Final = Path(__file__).resolve().parents[2]
IMAGES: Final = ROOT / "docs" / "images"
CHATGPT_REDIRECT: Final = "https://chatgpt.com/connector_platform_oauth_redirect"
LOCAL_REDIRECT: Final = "http://127.0.0.1:9/callback"


def _chromium() -> str:
    for candidate in ("/usr/lib/chromium/chromium", shutil.which("chromium") or ""):
        if candidate and Path(candidate).exists():
            return candidate
    pytest.skip(
        "SKIPPED LOUDLY: Debian's chromium is not installed (apt-get install -y chromium; "
        ".ci/run does it when root), so the browser test of the consent flow did not run"
    )


pytestmark = pytest.mark.slow


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[OAuthLive]:
    with oauth_server(tmp_path_factory.mktemp("browser")) as running:
        yield running


@dataclass
class Browser:
    page: Any
    live: OAuthLive
    shots: Path
    redirected: list[str]

    async def authorize(
        self, client_id: str, challenge: str, redirect_uri: str, **extra: str
    ) -> None:
        discovery = _discover(self.live)
        query = {
            "response_type": "code",
            "client_id": client_id,
            "redirect_uri": redirect_uri,
            "code_challenge": challenge,
            "code_challenge_method": "S256",
            "state": "browser-state",
            "resource": discovery["resource"],
            "scope": "memory:read memory:write offline_access",
            **extra,
        }
        url = str(httpx2.URL(discovery["authorization_endpoint"], params=query))
        await self.page.goto(url)

    async def sign_in_if_asked(self) -> None:
        if await self.page.locator("#passphrase").count():
            await self.page.fill("#passphrase", PASSPHRASE)
            await self.page.click("button[type=submit]")

    async def decide(self, decision: str) -> dict[str, str]:
        label = "Allow" if decision == "approve" else "Deny"
        await self.page.get_by_role("button", name=label).click()
        await self.page.wait_for_url(re.compile(r".*(code|error)=.*"))
        return query_of(self.page.url)

    async def code(self, client_id: str, redirect_uri: str = LOCAL_REDIRECT) -> tuple[str, str]:
        verifier, challenge = pkce_pair()
        await self.authorize(client_id, challenge, redirect_uri)
        await self.sign_in_if_asked()
        params = await self.decide("approve")
        return params["code"], verifier


def _discover(live: OAuthLive) -> dict[str, str]:
    """What a client learns from a bare 401: resource, issuer, endpoints."""
    challenge = mcp_post(live.mcp, None, {"jsonrpc": "2.0", "id": 1, "method": "ping"})
    assert challenge.status_code == 401
    found = re.search(r'resource_metadata="([^"]+)"', challenge.headers["www-authenticate"])
    assert found is not None
    resource = httpx2.get(found.group(1)).json()
    [issuer] = resource["authorization_servers"]
    server = httpx2.get(issuer + "/.well-known/oauth-authorization-server").json()
    assert server["issuer"] == issuer
    return {"resource": resource["resource"], **server}


@pytest.fixture
async def browser(live: OAuthLive, tmp_path: Path) -> AsyncIterator[Browser]:
    executable = _chromium()
    async with playwright_api.async_playwright() as playwright:
        chromium = await playwright.chromium.launch(
            executable_path=executable, args=["--no-sandbox", "--disable-gpu"]
        )
        context = await chromium.new_context(viewport={"width": 900, "height": 1000})
        page = await context.new_page()
        redirected: list[str] = []

        async def land(route: Any) -> None:  # the client's redirect target, never contacted
            redirected.append(route.request.url)
            await route.fulfill(status=200, content_type="text/plain", body="back at the client")

        await page.route(re.compile(r"^(https://chatgpt\.com/|http://127\.0\.0\.1:9/).*"), land)
        shots = IMAGES if os.environ.get("METACORTEX_UPDATE_SCREENSHOTS") == "1" else tmp_path
        try:
            yield Browser(page, live, shots, redirected)
        finally:
            await chromium.close()


def _exchange(
    live: OAuthLive,
    client_id: str,
    code: str,
    verifier: str,
    redirect_uri: str = LOCAL_REDIRECT,
    **extra: str,
) -> httpx2.Response:
    return httpx2.post(
        live.url + "/oauth/token",
        data={
            "grant_type": "authorization_code",
            "client_id": client_id,
            "code": code,
            "code_verifier": verifier,
            "redirect_uri": redirect_uri,
            "resource": live.mcp,
            **extra,
        },
    )


def _refresh(live: OAuthLive, client_id: str, token: str) -> httpx2.Response:
    return httpx2.post(
        live.url + "/oauth/token",
        data={"grant_type": "refresh_token", "refresh_token": token, "client_id": client_id},
    )


@pytest.mark.anyio
async def test_cimd_client_signs_in_approves_and_calls_search_context(browser: Browser) -> None:
    live = browser.live
    client_id = live.documents.add(
        "chatgpt",
        client_name="ChatGPT",
        redirect_uris=[CHATGPT_REDIRECT],
        token_endpoint_auth_method="none",
    )
    verifier, challenge = pkce_pair()
    await browser.authorize(client_id, challenge, CHATGPT_REDIRECT)
    page = browser.page

    await page.fill("#passphrase", "a wrong passphrase, surely")
    await page.click("button[type=submit]")
    assert await page.get_by_role("alert").inner_text() == "That passphrase is not correct."
    await page.screenshot(path=str(browser.shots / "sign-in.png"))
    await browser.sign_in_if_asked()

    await page.get_by_role("heading", name=re.compile("Allow ChatGPT")).wait_for()
    assert await page.locator("#preset-read-write").is_checked()  # ChatGPT's default
    assert await page.locator("#chatgpt-tools").is_checked()
    assert "chatgpt.com" in await page.locator("dl").inner_text()
    unlabeled = await page.evaluate(
        "[...document.querySelectorAll('input:not([type=hidden])')]"
        ".filter(i => i.labels.length === 0).length"
    )
    assert unlabeled == 0
    assert await page.evaluate("document.documentElement.lang") == "en"
    focused = []
    for _ in range(8):  # the keyboard alone reaches the decision
        await page.keyboard.press("Tab")
        focused.append(await page.evaluate("document.activeElement.textContent.trim()"))
    assert "Allow" in focused
    await page.screenshot(path=str(browser.shots / "consent.png"), full_page=True)
    await page.set_viewport_size({"width": 375, "height": 900})
    width = await page.evaluate("document.documentElement.scrollWidth")
    assert width <= 375  # no horizontal scrolling at phone width
    await page.screenshot(path=str(browser.shots / "consent-phone.png"), full_page=True)
    await page.set_viewport_size({"width": 900, "height": 1000})

    params = await browser.decide("approve")
    assert page.url.startswith(CHATGPT_REDIRECT + "?")
    assert params["iss"] == live.url
    assert params["state"] == "browser-state"
    tokens = _exchange(live, client_id, params["code"], verifier, CHATGPT_REDIRECT).json()

    headers = {"authorization": f"Bearer {tokens['access_token']}"}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=30) as http,
        Client(streamable_http_client(live.mcp, http_client=http), mode="legacy") as client,
    ):
        saved = await client.call_tool("save_context", {"content": "browser consent flow done"})
        assert not saved.is_error
        found = await client.call_tool("search_context", {"query": "consent flow"})
        assert found.structured_content is not None
        assert found.structured_content["matches"]
    for name in ("consent.png", "consent-phone.png", "sign-in.png"):
        assert (browser.shots / name).read_bytes().startswith(b"\x89PNG")


@pytest.mark.anyio
async def test_dcr_client_deny_and_every_token_rule(browser: Browser) -> None:
    live = browser.live
    registered = httpx2.post(
        _discover(live)["registration_endpoint"],
        json={
            "client_name": "Browser DCR",
            "redirect_uris": [LOCAL_REDIRECT],
            "token_endpoint_auth_method": "none",
        },
    )
    assert registered.status_code == 201
    client_id = registered.json()["client_id"]

    # deny
    _, challenge = pkce_pair()
    await browser.authorize(client_id, challenge, LOCAL_REDIRECT)
    await browser.sign_in_if_asked()
    denied = await browser.decide("deny")
    assert denied["error"] == "access_denied"
    assert denied["iss"] == live.url

    # wrong PKCE verifier, then a repeated code, then an expired code (a replay after the
    # grace window revokes: test_token_lifecycle.py)
    code, _ = await browser.code(client_id)
    wrong_verifier, _ = pkce_pair()
    assert _exchange(live, client_id, code, wrong_verifier).json()["error"] == "invalid_grant"
    code, verifier = await browser.code(client_id)
    first = _exchange(live, client_id, code, verifier).json()
    repeated = _exchange(live, client_id, code, verifier).json()  # inside the grace window
    assert repeated["access_token"] == first["access_token"]
    assert tools_list(live.mcp, first["access_token"]).status_code == 200
    code, verifier = await browser.code(client_id)
    key = hashlib.sha256(code.encode()).hexdigest()
    binding = live.store.auth_get("code", key)
    assert binding is not None
    live.store.auth_put("code", key, binding, utc_now() - timedelta(seconds=1))
    assert _exchange(live, client_id, code, verifier).json()["error"] == "invalid_grant"

    # wrong resource
    code, verifier = await browser.code(client_id)
    wrong = _exchange(live, client_id, code, verifier, resource=live.url + "/clients/web/mcp")
    assert wrong.json()["error"] == "invalid_target"

    # rotation, a repeated refresh, token at another endpoint, revoked grant
    code, verifier = await browser.code(client_id)
    tokens = _exchange(live, client_id, code, verifier).json()
    assert tools_list(live.url + "/clients/web/mcp", tokens["access_token"]).status_code == 401
    rotated = _refresh(live, client_id, tokens["refresh_token"]).json()
    assert rotated["refresh_token"] != tokens["refresh_token"]
    assert tools_list(live.mcp, rotated["access_token"]).status_code == 200
    again = _refresh(live, client_id, tokens["refresh_token"]).json()  # inside the window
    assert again["refresh_token"] == rotated["refresh_token"]
    assert tools_list(live.mcp, rotated["access_token"]).status_code == 200

    code, verifier = await browser.code(client_id)
    tokens = _exchange(live, client_id, code, verifier).json()
    assert tools_list(live.mcp, tokens["access_token"]).status_code == 200
    binding = live.store.auth_get(
        "access_token", hashlib.sha256(tokens["access_token"].encode()).hexdigest()
    )
    assert binding is not None
    grant_id = binding["grant"]
    live.store.auth_delete("grant", grant_id)  # what `metacortex oauth grants revoke` does
    assert tools_list(live.mcp, tokens["access_token"]).status_code == 401
    assert _refresh(live, client_id, tokens["refresh_token"]).json()["error"] == "invalid_grant"


@pytest.mark.anyio
async def test_a_signed_in_owner_arriving_from_another_site_is_not_asked_again(
    browser: Browser,
) -> None:
    live = browser.live
    page = browser.page
    server = live.url.replace("127.0.0.1", "localhost")  # another site than the fixture's
    await page.goto(server + "/owner/sign-in")
    await browser.sign_in_if_asked()
    await page.get_by_role("heading", name="You are signed in").wait_for()
    registered = httpx2.post(
        server + "/oauth/register",
        json={"redirect_uris": [LOCAL_REDIRECT], "token_endpoint_auth_method": "none"},
    ).json()
    _, challenge = pkce_pair()
    authorize = str(
        httpx2.URL(
            server + "/oauth/authorize",
            params={
                "response_type": "code",
                "client_id": registered["client_id"],
                "redirect_uri": LOCAL_REDIRECT,
                "code_challenge": challenge,
                "code_challenge_method": "S256",
                "resource": server + "/mcp",
            },
        )
    )

    await page.goto(str(httpx2.URL(live.documents.url + "/launch", params={"to": authorize})))
    await page.click("#go")  # a cross-site navigation: SameSite=Strict cookies stay behind

    await page.get_by_role("heading", name=re.compile("Allow")).wait_for()
    assert await page.locator("#passphrase").count() == 0
