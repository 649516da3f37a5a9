"""The official ``mcp`` SDK's own OAuth client completes the whole flow against the server:
401 -> resource metadata -> AS metadata -> DCR -> authorize -> consent -> code (with
``iss``) -> token -> tools/call, then a refresh when the access token is gone."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import anyio.to_thread
import httpx2
import pytest
from mcp import Client
from mcp.client.auth import OAuthClientProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import (
    AuthorizationCodeResult,
    OAuthClientInformationFull,
    OAuthClientMetadata,
    OAuthToken,
)

from tests.oauth_support import CALLBACK, Browserless, OAuthLive, oauth_server, query_of


class MemoryTokens:
    def __init__(self) -> None:
        self.tokens: OAuthToken | None = None
        self.client: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client = client_info


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def live(tmp_path: Path) -> Iterator[OAuthLive]:
    with oauth_server(tmp_path) as running:
        yield running


@pytest.mark.anyio
async def test_the_sdk_oauth_client_connects_and_calls_search_context(live: OAuthLive) -> None:
    owner = Browserless(live)
    assert (await anyio.to_thread.run_sync(owner.sign_in)).status_code == 303
    answers: list[AuthorizationCodeResult] = []

    def approve(authorization_url: str) -> AuthorizationCodeResult:
        authorize = owner.http.get(authorization_url)
        params = query_of(owner.consent(authorize))
        return AuthorizationCodeResult(
            code=params["code"], state=params["state"], iss=params["iss"]
        )

    async def redirect_handler(authorization_url: str) -> None:
        answers.append(await anyio.to_thread.run_sync(approve, authorization_url))

    async def callback_handler() -> AuthorizationCodeResult:
        return answers.pop()

    storage = MemoryTokens()
    provider = OAuthClientProvider(
        server_url=live.mcp,
        client_metadata=OAuthClientMetadata(
            client_name="SDK test client",
            redirect_uris=[CALLBACK],  # type: ignore[list-item]
            token_endpoint_auth_method="none",
            scope="memory:read memory:write offline_access",
        ),
        storage=storage,
        redirect_handler=redirect_handler,
        callback_handler=callback_handler,
    )
    try:
        async with (
            httpx2.AsyncClient(auth=provider, timeout=30) as http,
            Client(streamable_http_client(live.mcp, http_client=http), mode="legacy") as client,
        ):
            saved = await client.call_tool("save_context", {"content": "the sdk flow works"})
            assert not saved.is_error
            found = await client.call_tool("search_context", {"query": "sdk flow"})
            assert not found.is_error
            assert found.structured_content is not None
            assert found.structured_content["matches"]
        assert storage.tokens is not None
        assert storage.tokens.refresh_token
        assert storage.client is not None
        grants = live.store.auth_list("grant")
        assert [grant["client_name"] for _, grant in grants] == ["SDK test client"]
    finally:
        owner.close()
