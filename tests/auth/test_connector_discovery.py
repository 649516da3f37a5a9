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

from collections.abc import Iterator
from pathlib import Path

import httpx2
import pytest

from tests.oauth_support import Browserless, OAuthLive, oauth_server, tools_list
from tests.server.conftest import ADMIN_TOKEN

METHODS = ("GET", "HEAD", "DELETE", "PUT")


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def live(tmp_path: Path) -> Iterator[OAuthLive]:
    with oauth_server(tmp_path) as running:
        yield running


@pytest.fixture
def agent(live: OAuthLive) -> Iterator[Browserless]:
    user = Browserless(live)
    assert user.sign_in().status_code == 303
    yield user
    user.close()


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
