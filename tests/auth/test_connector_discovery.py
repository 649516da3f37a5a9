"""How real clients find the authorization server (issue 19 items 3 and 9).

- Codex (rmcp) discovers OAuth with an unauthenticated ``GET`` of the MCP URL and reads
  only a 401 challenge: every method gets the challenge until the client is
  authenticated (405 with ``Allow`` only then); preflights stay as they are.
- Browser clients preflight the well-known documents: ``OPTIONS`` answers with CORS.
- A URL typed with a trailing slash: its resource metadata names that very URL
  (RFC 9728 §3.3), which the Python SDK's own OAuth client then sends back as
  ``resource`` and the server accepts, bound to the same endpoint as the slash-less form.
"""

from __future__ import annotations

from pathlib import Path
from urllib.parse import parse_qs

import anyio.to_thread
import httpx2
import pytest
from mcp import Client
from mcp.client.auth import OAuthClientProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import AuthorizationCodeResult, OAuthClientMetadata

from tests.auth.test_sdk_client_flow import MemoryTokens
from tests.oauth_support import (
    CALLBACK,
    Browserless,
    OAuthLive,
    approve_over_http,
    mcp_post,
    oauth_server,
    query_of,
    tools_list,
)
from tests.server.conftest import ADMIN_TOKEN

METHODS = ("GET", "HEAD", "DELETE", "PUT")


@pytest.mark.parametrize("path", ["/mcp", "/mcp/", "/clients/web/mcp", "/metaCortexMcp/mcp"])
def test_an_unauthenticated_request_of_any_method_gets_the_oauth_challenge(
    live: OAuthLive, path: str
) -> None:
    for method in METHODS:
        answer = httpx2.request(method, live.url + path, headers={"accept": "text/event-stream"})
        assert answer.status_code == 401, (method, answer.status_code)
        challenge = answer.headers["www-authenticate"]
        assert challenge.startswith('Bearer resource_metadata="'), challenge
        assert "/.well-known/oauth-protected-resource" in challenge


def test_an_authenticated_request_of_another_method_is_405_with_allow(
    live: OAuthLive, agent: Browserless
) -> None:
    client = agent.register()
    token = agent.tokens(client["client_id"])["access_token"]
    for credential in (token, ADMIN_TOKEN):
        for method in METHODS:
            answer = httpx2.request(
                method, live.mcp, headers={"authorization": f"Bearer {credential}"}
            )
            assert answer.status_code == 405, (method, answer.status_code)
            assert answer.headers["allow"] == "POST, OPTIONS"
    assert tools_list(live.mcp, token).status_code == 200


def test_without_oauth_an_unauthenticated_get_is_401_too(tmp_path: Path) -> None:
    with oauth_server(tmp_path, metacortex_oauth=False) as live:
        answer = httpx2.get(live.mcp)
        assert answer.status_code == 401
        assert answer.headers["www-authenticate"] == "Bearer"


def test_preflights_of_the_mcp_route_are_unchanged(live: OAuthLive) -> None:
    answer = httpx2.options(live.mcp)
    assert answer.status_code == 204
    assert answer.headers["allow"] == "POST, OPTIONS"


@pytest.mark.parametrize(
    "path",
    [
        "/.well-known/oauth-authorization-server",
        "/.well-known/openid-configuration",
        "/.well-known/oauth-protected-resource/mcp",
        "/metaCortexMcp/.well-known/openid-configuration",
        "/metaCortexMcp/.well-known/oauth-protected-resource/mcp",
    ],
)
def test_a_browser_preflight_of_a_well_known_document_gets_cors_headers(
    live: OAuthLive, path: str
) -> None:
    answer = httpx2.options(
        live.url + path,
        headers={
            "origin": "https://inspector.example",
            "access-control-request-method": "GET",
            "access-control-request-headers": "mcp-protocol-version",
        },
    )
    assert answer.status_code == 204
    assert answer.headers["access-control-allow-origin"] == "*"
    assert "GET" in answer.headers["access-control-allow-methods"]
    assert "mcp-protocol-version" in answer.headers["access-control-allow-headers"]


def test_both_url_forms_read_resource_metadata_naming_the_url_they_were_given(
    live: OAuthLive,
) -> None:
    """RFC 9728 §3.3; VS Code compares the two exactly (reported in microsoft/vscode#259251)."""
    for typed in (live.mcp, live.mcp + "/"):
        challenge = mcp_post(typed, None, {"jsonrpc": "2.0", "id": 1, "method": "ping"})
        header = challenge.headers["www-authenticate"]
        metadata_url = header.split('resource_metadata="', 1)[1].split('"', 1)[0]
        assert metadata_url == typed.replace(
            live.url, live.url + "/.well-known/oauth-protected-resource"
        )
        assert httpx2.get(metadata_url).json()["resource"] == typed


@pytest.mark.anyio
async def test_the_sdk_client_given_a_url_with_a_trailing_slash_connects_and_stays_bound(
    live: OAuthLive,
) -> None:
    """The ``mcp`` SDK's own OAuth client, configured with ``…/mcp/``: it sends that URL as
    ``resource``; the grant is bound to the endpoint, whose token works at both forms."""
    server_url = live.mcp + "/"
    owner = httpx2.Client(timeout=30, follow_redirects=False)
    answers: list[AuthorizationCodeResult] = []
    sent_resources: list[str] = []

    def approve(url: str) -> AuthorizationCodeResult:
        sent_resources.append(query_of(url)["resource"])
        params = approve_over_http(owner, url)
        return AuthorizationCodeResult(
            code=params["code"], state=params["state"], iss=params["iss"]
        )

    async def redirect_handler(url: str) -> None:
        answers.append(await anyio.to_thread.run_sync(approve, url))

    async def callback_handler() -> AuthorizationCodeResult:
        return answers.pop()

    async def note_token_request(request: httpx2.Request) -> None:
        if request.url.path == "/oauth/token":
            form = parse_qs(request.content.decode())
            sent_resources.extend(form.get("resource", []))

    storage = MemoryTokens()
    provider = OAuthClientProvider(
        server_url=server_url,
        client_metadata=OAuthClientMetadata(
            client_name="Slash client",
            redirect_uris=[CALLBACK],  # type: ignore[list-item]
            token_endpoint_auth_method="none",
        ),
        storage=storage,
        redirect_handler=redirect_handler,
        callback_handler=callback_handler,
    )
    try:
        async with (
            httpx2.AsyncClient(
                auth=provider, timeout=30, event_hooks={"request": [note_token_request]}
            ) as http,
            Client(streamable_http_client(server_url, http_client=http), mode="legacy") as client,
        ):
            found = await client.call_tool("search_context", {"query": "anything"})
            assert not found.is_error
    finally:
        owner.close()
    assert sent_resources == [server_url, server_url]  # authorize, then token
    [(_, grant)] = live.store.auth_list("grant")
    assert grant["resource"] == live.mcp
    assert storage.tokens is not None
    for form in (live.mcp, server_url):
        assert tools_list(form, storage.tokens.access_token).status_code == 200
