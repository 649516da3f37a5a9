"""The official Python SDK's OAuth client (PyPI ``mcp`` 2.3, as pinned by pyproject's
``mcp>=2.3,<3``; the test names the installed version): ``OAuthClientProvider`` inside
``httpx2``, ``mcp.Client`` over Streamable HTTP, at each URL form.

The SDK discovers, registers, builds the authorization URL and exchanges the code; the
owner's Chromium gives consent. The SDK refreshes on its own clock, before a request,
when the access token's lifetime has run out: the test moves that clock (the SDK's
``token_expiry_time``) instead of waiting an hour. The race is two processes of the
same app, each holding the same stored tokens and the discovery the first one made,
refreshing at the same moment.
"""

from __future__ import annotations

import dataclasses
import time
from importlib.metadata import version

import anyio
import anyio.to_thread
import httpx2
import pytest
from mcp import Client
from mcp.client.auth import OAuthClientProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import AuthorizationCodeResult, OAuthClientMetadata

from tests.auth.test_sdk_client_flow import MemoryTokens
from tests.connectors.consent import ConsentBrowser
from tests.connectors.deployments import Deployment
from tests.connectors.replay import innermost
from tests.oauth_support import CALLBACK

pytestmark = [pytest.mark.slow, pytest.mark.anyio]


class Owner:
    """The application's hand-off to the browser; any consent after the first is a
    failure of the connector to stay connected."""

    def __init__(self, browser: ConsentBrowser) -> None:
        self.browser = browser
        self.answers: list[AuthorizationCodeResult] = []
        self.consents = 0
        self.preset = ""

    async def redirect(self, authorization_url: str) -> None:
        self.consents += 1
        if self.consents > 1:
            raise AssertionError(f"the SDK asked for consent again: {authorization_url}")
        consent = await anyio.to_thread.run_sync(self.browser.approve, authorization_url)
        assert not consent.csp_violations, consent.csp_violations
        self.preset = consent.preset
        params = consent.params
        self.answers.append(
            AuthorizationCodeResult(code=params["code"], state=params["state"], iss=params["iss"])
        )

    async def callback(self) -> AuthorizationCodeResult:
        return self.answers.pop()


def _provider(deployment: Deployment, owner: Owner, storage: MemoryTokens) -> OAuthClientProvider:
    return OAuthClientProvider(
        server_url=deployment.mcp,
        client_metadata=OAuthClientMetadata(
            client_name="MetaCortex connector matrix (Python SDK)",
            redirect_uris=[CALLBACK],  # type: ignore[list-item]
            grant_types=["authorization_code", "refresh_token"],
            token_endpoint_auth_method="none",
        ),
        storage=storage,
        redirect_handler=owner.redirect,
        callback_handler=owner.callback,
    )


def _twin(provider: OAuthClientProvider, owner: Owner) -> OAuthClientProvider:
    """Another process of the same app: the stored tokens and registration, and the
    discovery it made when it connected; its access token has just expired."""
    context = provider.context
    assert context.current_tokens is not None
    storage = MemoryTokens()
    storage.tokens, storage.client = context.current_tokens, context.client_info
    twin = OAuthClientProvider(
        server_url=context.server_url,
        client_metadata=context.client_metadata,
        storage=storage,
        redirect_handler=owner.redirect,
        callback_handler=owner.callback,
    )
    twin.context = dataclasses.replace(
        context,
        storage=twin.context.storage,
        lock=anyio.Lock(),
        token_expiry_time=time.time() - 1,
    )
    twin._initialized = True  # the SDK's own flag: its state is loaded
    return twin


async def _search(url: str, provider: OAuthClientProvider, query: str) -> str:
    """One connection of the connector calling a tool: "ok", or what went wrong."""
    try:
        async with (
            httpx2.AsyncClient(auth=provider, timeout=30) as http,
            Client(streamable_http_client(url, http_client=http), mode="legacy") as client,
        ):
            found = await client.call_tool("search_context", {"query": query})
    except Exception as error:  # noqa: BLE001 (the SDK's failure, named in the assertion)
        return innermost(error)
    return f"tool error: {found.content}" if found.is_error else "ok"


async def test_the_python_sdk_oauth_client_connects_calls_tools_refreshes_and_survives_a_race(
    deployment: Deployment, owner_browser: ConsentBrowser
) -> None:
    where = f"mcp@{version('mcp')} (Python SDK) at the {deployment.form} URL"
    owner = Owner(owner_browser)
    storage = MemoryTokens()
    provider = _provider(deployment, owner, storage)

    async with (
        httpx2.AsyncClient(auth=provider, timeout=30) as http,
        Client(streamable_http_client(deployment.mcp, http_client=http), mode="legacy") as client,
    ):
        names = {tool.name for tool in (await client.list_tools()).tools}
        saved = await client.call_tool("save_context", {"content": "The Python SDK connected."})
    assert {"save_context", "search_context"} <= names, (
        f"{where}: a plain Allow (preset {owner.preset!r}) gave only {sorted(names)}"
    )
    assert not saved.is_error, f"{where}: save_context refused: {saved.content}"
    assert await _search(deployment.mcp, provider, "Python SDK connected") == "ok", where

    assert storage.tokens is not None, where
    assert storage.client is not None, where
    assert storage.tokens.refresh_token, f"{where}: no refresh token ({storage.tokens.scope})"

    # The access token's hour is over: the SDK refreshes before its next request.
    before = storage.tokens
    provider.context.token_expiry_time = time.time() - 1
    refreshed = await _search(deployment.mcp, provider, "Python SDK")
    assert refreshed == "ok", f"{where}: the refresh: {refreshed}"
    assert storage.tokens.access_token != before.access_token, f"{where}: no refresh happened"

    # Two processes of the app refresh with the same refresh token at the same moment.
    twins = [_twin(provider, owner), _twin(provider, owner)]
    results: dict[int, str] = {}

    async def connect(index: int) -> None:
        results[index] = await _search(deployment.mcp, twins[index], "Python SDK")

    async with anyio.create_task_group() as group:
        for index in range(2):
            group.start_soon(connect, index)
    assert results == {0: "ok", 1: "ok"}, f"{where}: after the refresh race: {results}"
    for twin in twins:  # and each copy refreshes again later
        twin.context.token_expiry_time = time.time() - 1
        again = await _search(deployment.mcp, twin, "Python SDK")
        assert again == "ok", f"{where}: the next refresh after the race: {again}"
    assert owner.consents == 1, f"{where}: asked for consent {owner.consents} times"
