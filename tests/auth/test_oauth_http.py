"""Every OAuth rule over real loopback HTTP: discovery, registration, consent, tokens,
audience binding, scopes, rotation, revocation. The browser flow is in test_browser.py."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import httpx2
import pytest

from metacortex.cli.main import main
from metacortex.domain.records import utc_now
from tests.oauth_support import (
    CALLBACK,
    Browserless,
    OAuthLive,
    hidden,
    mcp_post,
    oauth_server,
    pkce_pair,
    query_of,
    tool_call,
    tools_list,
)
from tests.server.conftest import ADMIN_TOKEN, WEB_TOKEN


@pytest.fixture
def live(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[OAuthLive]:
    overrides: dict[str, Any] = getattr(request, "param", {})
    with oauth_server(tmp_path, **overrides) as running:
        yield running


# Every use after the first counts as reuse: the grace window (test_token_lifecycle.py) is off.
WITHOUT_GRACE = pytest.mark.parametrize(
    "live", [{"metacortex_oauth_replay_grace_seconds": 0}], indirect=True, ids=["no-grace"]
)


@pytest.fixture
def agent(live: OAuthLive) -> Iterator[Browserless]:
    user = Browserless(live)
    assert user.sign_in().status_code == 303
    yield user
    user.close()


def _tool_names(response: httpx2.Response) -> list[str]:
    assert response.status_code == 200, response.text
    return [tool["name"] for tool in response.json()["result"]["tools"]]


# ------------------------------------------------------------------ discovery
def test_401_challenges_name_the_resource_metadata_and_scope(live: OAuthLive) -> None:
    for path in ("/mcp", "/clients/web/mcp"):
        answer = mcp_post(live.url + path, None, {"jsonrpc": "2.0", "id": 1, "method": "ping"})

        assert answer.status_code == 401
        challenge = answer.headers["www-authenticate"]
        assert challenge.startswith("Bearer ")
        assert f'resource_metadata="{live.url}/.well-known/oauth-protected-resource{path}"' in (
            challenge
        )
        assert 'scope="memory:read memory:write"' in challenge
    wrong = mcp_post(live.mcp, "not-a-token", {"jsonrpc": "2.0", "id": 1, "method": "ping"})
    assert 'error="invalid_token"' in wrong.headers["www-authenticate"]


def test_resource_metadata_is_served_path_inserted_for_every_endpoint_and_at_the_root(
    live: OAuthLive,
) -> None:
    for path in ("/mcp", "/clients/web/mcp", "/clients/reader/mcp"):
        document = httpx2.get(f"{live.url}/.well-known/oauth-protected-resource{path}").json()
        assert document["resource"] == live.url + path
        assert document["authorization_servers"] == [live.url]
        assert document["scopes_supported"] == ["memory:read", "memory:write"]
    root = httpx2.get(f"{live.url}/.well-known/oauth-protected-resource").json()
    assert root["resource"] == live.mcp
    # Not an endpoint path at all (an unconfigured /clients/<id>/mcp answers like a
    # configured one: test_enumeration.py).
    unknown = httpx2.get(f"{live.url}/.well-known/oauth-protected-resource/not-an-endpoint")
    assert unknown.status_code == 404


def test_authorization_server_metadata_has_the_exact_issuer_and_what_clients_need(
    live: OAuthLive,
) -> None:
    document = httpx2.get(f"{live.url}/.well-known/oauth-authorization-server").json()

    assert document["issuer"] == live.url  # exactly: no trailing slash
    assert document["code_challenge_methods_supported"] == ["S256"]
    assert "none" in document["token_endpoint_auth_methods_supported"]
    assert document["client_id_metadata_document_supported"] is True
    assert document["authorization_response_iss_parameter_supported"] is True
    assert "offline_access" in document["scopes_supported"]
    assert document["token_endpoint"] == live.url + "/oauth/token"


def test_oauth_routes_are_absent_when_oauth_is_off(tmp_path: Path) -> None:
    with oauth_server(tmp_path, metacortex_oauth=False) as live:
        assert httpx2.get(f"{live.url}/.well-known/oauth-authorization-server").status_code == 404
        answer = mcp_post(live.mcp, None, {"jsonrpc": "2.0", "id": 1, "method": "ping"})
        assert answer.headers["www-authenticate"] == "Bearer"


# --------------------------------------------------------------- full flows
def test_dynamic_registration_consent_and_token_reach_search_context(
    live: OAuthLive, agent: Browserless
) -> None:
    client = agent.register(client_name="Test Connector")
    assert "client_secret" not in client or client["client_secret"] is None
    tokens = agent.tokens(client["client_id"])

    assert tokens["token_type"] == "Bearer"
    assert tokens["scope"] == "memory:read memory:write offline_access"
    assert tokens["refresh_token"]
    # A grant approved since spaces exist records them, and so also lists the space tools.
    assert _tool_names(tools_list(live.mcp, tokens["access_token"])) == [
        "save_context",
        "search_context",
        "fetch_context",
        "related_context",
        "list_spaces",
        "who_am_i",
        "create_document",
        "list_documents",
        "get_document",
    ]
    saved = tool_call(live.mcp, tokens["access_token"], "save_context", {"content": "oauth works"})
    assert saved.json()["result"]["isError"] is False
    found = tool_call(live.mcp, tokens["access_token"], "search_context", {"query": "oauth"})
    assert found.json()["result"]["structuredContent"]["matches"]


def test_tokens_and_secrets_are_stored_only_hashed(live: OAuthLive, agent: Browserless) -> None:
    client = agent.register(token_endpoint_auth_method="client_secret_post")
    tokens = agent.tokens(client["client_id"], client["client_secret"])
    everything = json.dumps(
        [
            live.store.auth_list(kind)
            for kind in ("client", "grant", "access_token", "refresh_token")
        ]
    )

    for secret in (client["client_secret"], tokens["access_token"], tokens["refresh_token"]):
        assert secret not in everything
    digest = hashlib.sha256(tokens["access_token"].encode()).hexdigest()
    assert live.store.auth_get("access_token", digest) is not None


def test_a_confidential_client_must_present_its_secret(live: OAuthLive, agent: Browserless) -> None:
    client = agent.register(token_endpoint_auth_method="client_secret_post")
    verifier, challenge = pkce_pair()
    code = agent.code_for(client["client_id"], challenge)

    refused = agent.exchange(client["client_id"], code, verifier, client_secret="wrong")
    assert refused.status_code == 401
    assert refused.json()["error"] == "invalid_client"


def test_client_id_metadata_document_client_is_shown_by_name_and_redirect_host(
    live: OAuthLive, agent: Browserless
) -> None:
    client_id = live.documents.add(
        "claude-code", client_name="Claude Code", redirect_uris=["http://localhost/callback"]
    )
    verifier, challenge = pkce_pair()
    redirect = "http://localhost:53682/callback"  # loopback: any port matches
    authorize = agent.authorize(client_id, challenge, redirect_uri=redirect)
    page = agent.http.get(authorize.headers["location"])

    assert "Claude Code" in page.text
    assert "localhost:53682" in page.text
    assert "metadata document" in page.text
    assert "form-action 'self' http://localhost:53682" in page.headers["content-security-policy"]
    answer = agent.http.post(
        "/oauth/consent",
        data={
            "csrf": hidden(page.text, "csrf"),
            "request": hidden(page.text, "request"),
            "decision": "approve",
            "preset": "read",
        },
    )
    location = answer.headers["location"]
    assert location.startswith(redirect + "?")
    code = query_of(location)["code"]
    tokens = agent.exchange(client_id, code, verifier, redirect_uri=redirect).json()
    assert _tool_names(tools_list(live.mcp, tokens["access_token"])) == [
        "search_context",
        "fetch_context",
        "related_context",
        "list_spaces",
        "who_am_i",
        "list_documents",
        "get_document",
    ]


def test_redirect_uris_match_exactly_except_loopback_ports(
    live: OAuthLive, agent: Browserless
) -> None:
    client = agent.register(redirect_uris=["https://app.example/cb", CALLBACK])
    _, challenge = pkce_pair()

    for bad in ("https://app.example/cb2", "https://app.example:444/cb", "https://evil.example/cb"):
        answer = agent.authorize(client["client_id"], challenge, redirect_uri=bad)
        assert answer.status_code == 400
        assert "redirect_uri" in answer.text
        assert "location" not in answer.headers
    assert (
        agent.authorize(
            client["client_id"], challenge, redirect_uri="http://127.0.0.1:7777/callback"
        ).status_code
        == 303
    )
    assert (
        agent.authorize(
            client["client_id"], challenge, redirect_uri="http://127.0.0.1:7777/other"
        ).status_code
        == 400
    )


def test_registration_refuses_non_https_non_loopback_redirects(agent: Browserless) -> None:
    answer = agent.http.post("/oauth/register", json={"redirect_uris": ["http://app.example/cb"]})
    assert answer.status_code == 400
    assert answer.json()["error"] == "invalid_redirect_uri"


# ------------------------------------------------------------ authorize rules
def test_deny_redirects_access_denied_with_state_and_iss(
    live: OAuthLive, agent: Browserless
) -> None:
    client = agent.register()
    _, challenge = pkce_pair()
    location = agent.consent(agent.authorize(client["client_id"], challenge), decision="deny")

    assert query_of(location) == {
        "error": "access_denied",
        "error_description": "the owner denied access",
        "state": "st-1",
        "iss": live.url,
    }
    assert live.store.auth_list("grant") == []


def test_approval_carries_iss_and_state(live: OAuthLive, agent: Browserless) -> None:
    client = agent.register()
    _, challenge = pkce_pair()
    params = query_of(agent.consent(agent.authorize(client["client_id"], challenge)))
    assert params["iss"] == live.url
    assert params["state"] == "st-1"


def test_pkce_s256_is_required(live: OAuthLive, agent: Browserless) -> None:
    client = agent.register()
    for method in ("plain", ""):
        answer = agent.authorize(client["client_id"], "x" * 43, code_challenge_method=method)
        assert query_of(answer.headers["location"])["error"] == "invalid_request"


def test_a_resource_that_is_not_an_endpoint_here_is_invalid_target(
    live: OAuthLive, agent: Browserless
) -> None:
    client = agent.register()
    _, challenge = pkce_pair()
    # An unconfigured but well-formed /clients/<id>/mcp is not refused here: that would
    # tell strangers which ids exist (test_enumeration.py); the owner's page says it.
    for resource in ("https://elsewhere.example/mcp", live.url + "/clients/not an id/mcp"):
        answer = agent.authorize(client["client_id"], challenge, resource=resource)
        assert query_of(answer.headers["location"])["error"] == "invalid_target"


def test_a_missing_scope_gets_the_default_and_unknown_scopes_are_ignored(
    live: OAuthLive, agent: Browserless
) -> None:
    client = agent.register()
    verifier, challenge = pkce_pair()
    code = agent.code_for(client["client_id"], challenge, scope="")
    tokens = agent.exchange(client["client_id"], code, verifier).json()
    assert tokens["scope"] == "memory:read memory:write"
    assert tokens["refresh_token"]  # registered for the refresh_token grant (the default)

    verifier, challenge = pkce_pair()
    code = agent.code_for(client["client_id"], challenge, scope=" claudeai  memory:read")
    tokens = agent.exchange(client["client_id"], code, verifier).json()
    assert tokens["scope"] == "memory:read"  # the unknown scope is not granted, nothing fails


def test_prompt_none_cannot_skip_the_consent_page(live: OAuthLive, agent: Browserless) -> None:
    client = agent.register()
    _, challenge = pkce_pair()
    answer = agent.authorize(client["client_id"], challenge, prompt="none")
    assert query_of(answer.headers["location"])["error"] == "consent_required"


def test_consent_needs_the_owner_and_the_session_csrf(live: OAuthLive) -> None:
    stranger = Browserless(live)
    try:
        client = stranger.register()
        _, challenge = pkce_pair()
        authorize = stranger.authorize(client["client_id"], challenge)
        page = stranger.http.get(authorize.headers["location"])
        assert ">Sign in</h1>" in page.text
        request_id = query_of(authorize.headers["location"])["request"]
        forged = stranger.http.post(
            "/oauth/consent",
            data={"request": request_id, "decision": "approve", "preset": "curator"},
        )
        assert forged.status_code == 401
        assert stranger.sign_in(next_url=authorize.headers["location"]).status_code == 303
        csrf_less = stranger.http.post(
            "/oauth/consent",
            data={"request": request_id, "decision": "approve", "preset": "curator", "csrf": "x"},
        )
        assert csrf_less.status_code == 403
        assert live.store.auth_list("grant") == []
    finally:
        stranger.close()


def test_consent_page_cannot_be_framed(live: OAuthLive, agent: Browserless) -> None:
    client = agent.register()
    _, challenge = pkce_pair()
    page = agent.http.get(agent.authorize(client["client_id"], challenge).headers["location"])
    assert "frame-ancestors 'none'" in page.headers["content-security-policy"]
    assert page.headers["x-frame-options"] == "DENY"


# ---------------------------------------------------------------- token rules
def test_an_expired_code_is_refused(live: OAuthLive, agent: Browserless) -> None:
    client = agent.register()
    verifier, challenge = pkce_pair()
    code = agent.code_for(client["client_id"], challenge)
    key = hashlib.sha256(code.encode()).hexdigest()
    binding = live.store.auth_get("code", key)
    assert binding is not None
    live.store.auth_put("code", key, binding, utc_now() - timedelta(seconds=1))

    answer = agent.exchange(client["client_id"], code, verifier)
    assert answer.status_code == 400
    assert answer.json()["error"] == "invalid_grant"


@WITHOUT_GRACE
def test_a_replayed_code_is_refused_and_revokes_what_it_issued(
    live: OAuthLive, agent: Browserless
) -> None:
    client = agent.register()
    verifier, challenge = pkce_pair()
    code = agent.code_for(client["client_id"], challenge)
    first = agent.exchange(client["client_id"], code, verifier).json()
    assert tools_list(live.mcp, first["access_token"]).status_code == 200

    replay = agent.exchange(client["client_id"], code, verifier)
    assert replay.json()["error"] == "invalid_grant"
    assert tools_list(live.mcp, first["access_token"]).status_code == 401


def test_a_wrong_pkce_verifier_is_refused(live: OAuthLive, agent: Browserless) -> None:
    client = agent.register()
    _, challenge = pkce_pair()
    code = agent.code_for(client["client_id"], challenge)
    other_verifier, _ = pkce_pair()

    answer = agent.exchange(client["client_id"], code, other_verifier)
    assert answer.json() == {
        "error": "invalid_grant",
        "error_description": "code_verifier does not match the code_challenge",
    }
    assert live.store.auth_list("grant") == []  # the spent code's grant is gone too


def test_a_different_resource_at_the_token_endpoint_is_invalid_target(
    live: OAuthLive, agent: Browserless
) -> None:
    client = agent.register()
    verifier, challenge = pkce_pair()
    code = agent.code_for(client["client_id"], challenge)

    answer = agent.exchange(
        client["client_id"], code, verifier, resource=live.url + "/clients/web/mcp"
    )
    assert answer.json()["error"] == "invalid_target"


def test_a_code_is_bound_to_its_client(live: OAuthLive, agent: Browserless) -> None:
    mine, other = agent.register(), agent.register()
    verifier, challenge = pkce_pair()
    code = agent.code_for(mine["client_id"], challenge)
    assert agent.exchange(other["client_id"], code, verifier).json()["error"] == "invalid_grant"


@WITHOUT_GRACE
def test_refresh_tokens_rotate_and_a_reused_one_revokes_the_family(
    live: OAuthLive, agent: Browserless
) -> None:
    client = agent.register()
    first = agent.tokens(client["client_id"])

    def refresh(token: str) -> httpx2.Response:
        return agent.http.post(
            "/oauth/token",
            data={
                "grant_type": "refresh_token",
                "refresh_token": token,
                "client_id": client["client_id"],
                "resource": live.mcp,
            },
        )

    second = refresh(first["refresh_token"]).json()
    assert second["refresh_token"] != first["refresh_token"]
    assert tools_list(live.mcp, second["access_token"]).status_code == 200

    reuse = refresh(first["refresh_token"])
    assert reuse.json()["error"] == "invalid_grant"
    assert tools_list(live.mcp, second["access_token"]).status_code == 401
    assert refresh(second["refresh_token"]).json()["error"] == "invalid_grant"


def test_a_refresh_cannot_widen_scope(live: OAuthLive, agent: Browserless) -> None:
    client = agent.register()
    first = agent.tokens(client["client_id"], scope="memory:read offline_access")
    answer = agent.http.post(
        "/oauth/token",
        data={
            "grant_type": "refresh_token",
            "refresh_token": first["refresh_token"],
            "client_id": client["client_id"],
            "scope": "memory:read memory:write",
        },
    )
    assert answer.json()["error"] == "invalid_scope"


# -------------------------------------------------------------- resource side
def test_a_token_issued_for_one_endpoint_is_refused_at_another(
    live: OAuthLive, agent: Browserless
) -> None:
    client = agent.register()
    tokens = agent.tokens(client["client_id"], resource=live.url + "/clients/web/mcp")

    assert tools_list(live.url + "/clients/web/mcp", tokens["access_token"]).status_code == 200
    assert tools_list(live.mcp, tokens["access_token"]).status_code == 401
    assert tools_list(live.url + "/clients/reader/mcp", tokens["access_token"]).status_code == 401


def test_a_grant_never_exceeds_its_endpoint_profile(live: OAuthLive, agent: Browserless) -> None:
    client = agent.register()
    verifier, challenge = pkce_pair()
    web = live.url + "/clients/web/mcp"
    _, other_challenge = pkce_pair()
    shown = agent.http.get(
        agent.authorize(client["client_id"], other_challenge, resource=web).headers["location"]
    ).text
    assert "list_context" not in shown  # the page shows what the grant would really get
    assert "save_context" in shown
    location = agent.consent(
        agent.authorize(client["client_id"], challenge, resource=web), preset="curator"
    )
    tokens = agent.exchange(
        client["client_id"], query_of(location)["code"], verifier, resource=web
    ).json()
    # The static "web" profile offers save/search/fetch only: curator cannot widen it.
    assert _tool_names(tools_list(web, tokens["access_token"])) == [
        "save_context",
        "search_context",
        "fetch_context",
    ]


def test_a_tool_outside_the_token_scopes_is_403_insufficient_scope(
    live: OAuthLive, agent: Browserless
) -> None:
    client = agent.register()
    tokens = agent.tokens(client["client_id"], scope="memory:read")

    assert (
        tool_call(live.mcp, tokens["access_token"], "search_context", {"query": "x"}).status_code
        == 200
    )
    answer = tool_call(live.mcp, tokens["access_token"], "save_context", {"content": "nope"})
    assert answer.status_code == 403
    challenge = answer.headers["www-authenticate"]
    assert 'error="insufficient_scope"' in challenge
    assert 'scope="memory:read memory:write"' in challenge
    assert answer.json()["error"]["code"] == "insufficient_scope"


def test_static_bearer_tokens_keep_working_and_url_tokens_stay_opt_in(live: OAuthLive) -> None:
    assert tools_list(live.mcp, ADMIN_TOKEN).status_code == 200
    url = live.url + "/clients/web/mcp?auth_" + "token=" + WEB_TOKEN
    legacy = mcp_post(url, None, {"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
    assert legacy.status_code == 200


# ----------------------------------------------------------------- revocation
def test_a_public_client_revokes_its_refresh_token_and_the_grant_ends(
    live: OAuthLive, agent: Browserless
) -> None:
    client = agent.register()
    tokens = agent.tokens(client["client_id"])

    answer = agent.http.post(
        "/oauth/revoke",
        data={"token": tokens["refresh_token"], "client_id": client["client_id"]},
    )
    assert answer.status_code == 200
    assert tools_list(live.mcp, tokens["access_token"]).status_code == 401


def test_revoking_an_access_token_ends_only_that_token(live: OAuthLive, agent: Browserless) -> None:
    client = agent.register()
    tokens = agent.tokens(client["client_id"])
    agent.http.post(
        "/oauth/revoke", data={"token": tokens["access_token"], "client_id": client["client_id"]}
    )
    assert tools_list(live.mcp, tokens["access_token"]).status_code == 401
    assert live.store.auth_list("grant")


def test_another_client_cannot_revoke_a_token(live: OAuthLive, agent: Browserless) -> None:
    mine, other = agent.register(), agent.register()
    tokens = agent.tokens(mine["client_id"])
    answer = agent.http.post(
        "/oauth/revoke", data={"token": tokens["access_token"], "client_id": other["client_id"]}
    )
    assert answer.status_code == 200
    assert tools_list(live.mcp, tokens["access_token"]).status_code == 200


def test_the_cli_lists_and_revokes_grants_and_clients(
    live: OAuthLive, agent: Browserless, capsys: pytest.CaptureFixture[str]
) -> None:
    client = agent.register(client_name="Listed Client")
    tokens = agent.tokens(client["client_id"])
    store_dir = str(Path(live.store.path).parent)
    # The live store file is m.sqlite3; the CLI opens <data dir>/metacortex.sqlite3.
    Path(store_dir, "cli").mkdir()
    Path(store_dir, "cli", "metacortex.sqlite3").symlink_to(live.store.path)
    args = ["--data-dir", str(Path(store_dir, "cli"))]

    assert main(["oauth", "grants", "--json", *args]) == 0
    [grant] = json.loads(capsys.readouterr().out)
    assert grant["client_name"] == "Listed Client"
    assert grant["preset"] == "read-write"
    assert main(["oauth", "clients", "--json", *args]) == 0
    listed: list[dict[str, Any]] = json.loads(capsys.readouterr().out)
    assert [c["id"] for c in listed] == [client["client_id"]]
    assert "secret_sha256" not in listed[0]

    assert main(["oauth", "grants", "revoke", grant["id"], *args]) == 0
    assert tools_list(live.mcp, tokens["access_token"]).status_code == 401
    assert main(["oauth", "clients", "revoke", client["client_id"], *args]) == 0
    assert main(["oauth", "clients", "revoke", client["client_id"], *args]) == 2


# ------------------------------------------------------------ ChatGPT shapes
def test_a_grant_with_chatgpt_tools_offers_search_and_fetch_in_chatgpt_shape(
    live: OAuthLive, agent: Browserless
) -> None:
    client = agent.register(client_name="ChatGPT")
    verifier, challenge = pkce_pair()
    location = agent.consent(agent.authorize(client["client_id"], challenge), chatgpt_tools="on")
    token = agent.exchange(client["client_id"], query_of(location)["code"], verifier).json()[
        "access_token"
    ]
    assert _tool_names(tools_list(live.mcp, token)) == [
        "save_context",
        "search_context",
        "fetch_context",
        "related_context",
        "list_spaces",
        "who_am_i",
        "create_document",
        "list_documents",
        "get_document",
        "search",
        "fetch",
    ]
    tool_call(live.mcp, token, "save_context", {"content": "The staging database is db-2."})

    found = tool_call(live.mcp, token, "search", {"query": "staging database"}).json()["result"]
    [item] = found["content"]
    results = json.loads(item["text"])["results"]
    assert results[0]["title"] == "The staging database is db-2."
    assert set(results[0]) == {"id", "title", "url"}
    fetched = tool_call(live.mcp, token, "fetch", {"id": results[0]["id"]}).json()["result"]
    document = json.loads(fetched["content"][0]["text"])
    assert document["text"] == "The staging database is db-2."
    assert set(document) == {"id", "title", "text", "url", "metadata"}


def test_without_the_option_search_and_fetch_are_not_offered(
    live: OAuthLive, agent: Browserless
) -> None:
    client = agent.register()
    token = agent.tokens(client["client_id"])["access_token"]
    assert "search" not in _tool_names(tools_list(live.mcp, token))
    refused = tool_call(live.mcp, token, "search", {"query": "x"}).json()
    assert refused["error"]["code"] == -32602  # an unknown tool is a protocol error


def test_behind_a_stripped_prefix_every_url_stays_under_the_public_base(tmp_path: Path) -> None:
    """cloudfunctions.net delivers ``/metaCortexMcp/x`` as ``/x``: with METACORTEX_PUBLIC_URL
    the challenge, resource metadata and issuer all name URLs under the prefix, and the
    issuer's metadata is at the OIDC form that stays under it."""
    public = "https://fn.example.net/metaCortexMcp"
    with oauth_server(tmp_path, metacortex_public_url=public) as live:
        challenge = mcp_post(live.mcp, None, {"jsonrpc": "2.0", "id": 1, "method": "ping"})
        assert (
            f'resource_metadata="{public}/.well-known/oauth-protected-resource/mcp"'
            in challenge.headers["www-authenticate"]
        )
        resource = httpx2.get(f"{live.url}/.well-known/oauth-protected-resource/mcp").json()
        assert resource["resource"] == public + "/mcp"
        assert resource["authorization_servers"] == [public]
        server = httpx2.get(f"{live.url}/.well-known/openid-configuration").json()
        assert server["issuer"] == public
        assert server["authorization_endpoint"] == public + "/oauth/authorize"


def test_oauth_and_owner_posts_have_the_same_body_limit(live: OAuthLive) -> None:
    big = "x" * (1024 * 1024 + 1)
    for path in ("/oauth/token", "/oauth/register", "/owner/sign-in"):
        answer = httpx2.post(live.url + path, content=big, headers={"content-type": "text/plain"})
        assert answer.status_code == 413
        assert answer.json()["error"]["code"] == "payload_too_large"


@WITHOUT_GRACE
def test_consent_and_reuse_are_logged_without_any_secret(
    live: OAuthLive, agent: Browserless, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level("INFO", logger="metacortex.server")
    client = agent.register(token_endpoint_auth_method="client_secret_post")
    verifier, challenge = pkce_pair()
    code = agent.code_for(client["client_id"], challenge)
    tokens = agent.exchange(
        client["client_id"], code, verifier, client_secret=client["client_secret"]
    ).json()
    for _ in range(2):
        agent.http.post(
            "/oauth/token",
            data={
                "grant_type": "refresh_token",
                "refresh_token": tokens["refresh_token"],
                "client_id": client["client_id"],
                "client_secret": client["client_secret"],
            },
        )

    messages = [record.getMessage() for record in caplog.records]
    assert "oauth grant created" in messages
    assert "oauth refresh token reused: grant revoked" in messages
    everything = "\n".join(str(record.__dict__) for record in caplog.records)
    for secret in (code, client["client_secret"], tokens["access_token"], tokens["refresh_token"]):
        assert secret not in everything
