"""The TypeScript SDKs' OAuth clients (``@modelcontextprotocol/sdk`` 1.32.2: Claude Code,
Cursor, the Inspector 1.x; ``@modelcontextprotocol/client`` 2.4.0: the Inspector 2.x) find
the authorization server, register and get tokens at the root URL and behind Google's
front end for Cloud Functions, where only ``/metaCortexMcp/*`` reaches the function and
the one metadata document they can reach is ``<issuer>/.well-known/openid-configuration``
(issue 19 item 2). Their own code runs from node (``tests/ts_oauth.py``); every metadata
document the app can be asked for is checked with both SDKs' own zod schemas."""

from __future__ import annotations

from pathlib import Path
from typing import Final

import httpx2
import pytest

from metacortex.kernel.routes import FUNCTION_PREFIX
from tests import ts_oauth
from tests.oauth_support import CALLBACK, oauth_server, query_of, tools_list

pytestmark = pytest.mark.slow

AS: Final = "/.well-known/oauth-authorization-server"
OIDC: Final = "/.well-known/openid-configuration"
# How the server is reached: at its root, or behind the front end with the function
# name stripped (METACORTEX_PUBLIC_URL set) or passed on.
DEPLOYMENTS: Final = {"root": None, "prefix-stripped": True, "prefix-kept": False}


@pytest.fixture(scope="module", autouse=True)
def typescript_sdks() -> None:
    ts_oauth.install()


def _documents(origin: str, front: bool | None) -> list[str]:
    """Every authorization-server metadata URL that reaches the app in this deployment."""
    forms = [AS, OIDC, AS + FUNCTION_PREFIX, OIDC + FUNCTION_PREFIX]
    under_prefix = [origin + FUNCTION_PREFIX + form for form in forms]
    return under_prefix if front is not None else under_prefix + [origin + f for f in forms]


@pytest.mark.parametrize("deployment", list(DEPLOYMENTS))
def test_every_metadata_document_passes_both_sdks_schemas(tmp_path: Path, deployment: str) -> None:
    front = DEPLOYMENTS[deployment]
    with oauth_server(tmp_path, front=front) as live:
        documents = _documents(live.url, front)
        for sdk in ts_oauth.SDKS:
            answer = ts_oauth.run(sdk, "schemas", documents=documents)
            assert answer["ok"], answer
            for checked in answer["checked"]:
                assert checked["status"] == 200, checked
                assert checked["oauth"] is None, (sdk, checked)
                assert checked["oidc"] is None, (sdk, checked)
        jwks = httpx2.get(httpx2.get(documents[1]).json()["jwks_uri"])
        assert jwks.status_code == 200
        assert jwks.json() == {"keys": []}  # no ID token is ever signed


@pytest.mark.parametrize("sdk", ts_oauth.SDKS)
@pytest.mark.parametrize("deployment", list(DEPLOYMENTS))
def test_the_sdk_discovers_registers_gets_tokens_and_refreshes_at_the_url_it_was_given(
    tmp_path: Path, deployment: str, sdk: str
) -> None:
    """Discovery, registration and the code exchange (item 2); then a refresh, which the
    1.32 client can do only if a refresh token is issued without ``offline_access``
    (it asks for the challenge's scopes alone: item 5)."""
    front = DEPLOYMENTS[deployment]
    with oauth_server(tmp_path, front=front) as live:
        base = live.url if front is None else live.url + FUNCTION_PREFIX
        server_url = base + "/mcp"
        state = str(tmp_path / "client-state.json")
        first = ts_oauth.run(
            sdk, "auth", serverUrl=server_url, redirectUrl=CALLBACK, stateFile=state
        )
        assert first["ok"], first
        assert first["challengeStatus"] == 401
        assert first["result"] == "REDIRECT"
        assert first["issuer"] == base
        authorization_url = first["authorizationUrl"]
        assert authorization_url.startswith(base + "/oauth/authorize?")
        assert query_of(authorization_url)["resource"] == server_url
        second = ts_oauth.approve_and_finish(sdk, authorization_url, server_url, state)
        tokens = second["tokens"]
        assert tools_list(server_url, tokens["access_token"]).status_code == 200
        assert tokens.get("refresh_token"), tokens
        third = ts_oauth.run(
            sdk, "auth", serverUrl=server_url, redirectUrl=CALLBACK, stateFile=state
        )
        assert third["ok"], third
        assert third["result"] == "AUTHORIZED"  # refreshed, no new authorization
        refreshed = third["tokens"]
        assert refreshed["refresh_token"] != tokens["refresh_token"]
        assert tools_list(server_url, refreshed["access_token"]).status_code == 200


@pytest.mark.parametrize("sdk", ts_oauth.SDKS)
def test_an_app_starting_oauth_itself_finds_the_server_at_its_root(
    tmp_path: Path, sdk: str
) -> None:
    """An application that calls the SDK's ``auth()`` before any MCP request (no 401, so
    no ``resource_metadata`` to follow) derives every discovery URL from the server URL's
    origin: at the server's own root they all reach the app."""
    with oauth_server(tmp_path) as live:
        first = ts_oauth.run(
            sdk,
            "auth",
            serverUrl=live.mcp,
            redirectUrl=CALLBACK,
            stateFile=str(tmp_path / "state.json"),
            challenge=False,
        )
    assert first["ok"], first
    assert first["result"] == "REDIRECT"
    assert first["issuer"] == live.url
    assert first["authorizationUrl"].startswith(live.url + "/oauth/authorize?")


@pytest.mark.parametrize("sdk", ts_oauth.SDKS)
def test_an_app_starting_oauth_itself_finds_nothing_at_the_cloudfunctions_url(
    tmp_path: Path, sdk: str
) -> None:
    """The same at ``https://REGION-PROJECT.cloudfunctions.net/metaCortexMcp/mcp``: the
    protected-resource document RFC 9728 derives from it
    (``/.well-known/oauth-protected-resource/metaCortexMcp/mcp``), the origin's
    authorization-server documents and the SDK's last resort (``/register`` at the
    origin) are all root paths, Google's 404s there. Such an app needs the function at a
    root (docs/CONNECTORS.md; tests/cloud/test_function_root.py)."""
    with oauth_server(tmp_path, front=True) as live:
        answer = ts_oauth.run(
            sdk,
            "auth",
            serverUrl=live.url + FUNCTION_PREFIX + "/mcp",
            redirectUrl=CALLBACK,
            stateFile=str(tmp_path / "state.json"),
            challenge=False,
        )
        registered = live.store.auth_list("client")
    assert not answer["ok"], answer
    assert "404" in answer["error"], answer
    assert registered == []  # nothing reached the app
