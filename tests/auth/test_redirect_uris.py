"""Redirect URIs (issue 19 items 1, 14, 15): native apps' private-use schemes register and
work; anything malformed, scripted or posing as another host is refused before it can
reach the consent page or its Content-Security-Policy.

The counterparts are Cursor's dynamic-registration body (its three redirect URIs, as
reported in public issue threads, e.g. erp-mafia/accounted#2225) and an attacker's client
metadata document served on loopback."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx2

from tests.oauth_support import (
    Browserless,
    OAuthLive,
    hidden,
    oauth_server,
    pkce_pair,
    query_of,
    tools_list,
)

CURSOR_APP = "cursor://anysphere.cursor-mcp/oauth/callback"
CURSOR_REGISTRATION: dict[str, Any] = {
    "client_name": "Cursor",
    "redirect_uris": [
        CURSOR_APP,
        "https://www.cursor.com/agents/mcp/oauth/callback",
        "http://localhost:8787/callback",
    ],
    "token_endpoint_auth_method": "none",
    "grant_types": ["authorization_code", "refresh_token"],
    "response_types": ["code"],
}


def _csp_directives(header: str) -> list[str]:
    return [part.strip().split(" ", 1)[0] for part in header.split(";") if part.strip()]


def test_cursors_registration_with_its_app_scheme_registers_and_the_app_gets_tokens(
    live: OAuthLive, agent: Browserless
) -> None:
    registered = agent.http.post("/oauth/register", json=CURSOR_REGISTRATION)
    assert registered.status_code == 201, registered.text
    client_id = registered.json()["client_id"]
    assert registered.json()["redirect_uris"] == CURSOR_REGISTRATION["redirect_uris"]

    verifier, challenge = pkce_pair()
    authorize = agent.authorize(client_id, challenge, redirect_uri=CURSOR_APP)
    page = agent.http.get(authorize.headers["location"])
    assert "cursor://anysphere.cursor-mcp</strong> (an app on your device)" in page.text
    csp = page.headers["content-security-policy"]
    assert "form-action 'self' cursor:;" in csp
    answer = agent.http.post(
        "/oauth/consent",
        data={
            "csrf": hidden(page.text, "csrf"),
            "request": hidden(page.text, "request"),
            "decision": "approve",
            "preset": "read-write",
        },
    )
    location = answer.headers["location"]
    assert location.startswith(CURSOR_APP + "?")
    tokens = agent.exchange(
        client_id, query_of(location)["code"], verifier, redirect_uri=CURSOR_APP
    ).json()
    assert tools_list(live.mcp, tokens["access_token"]).status_code == 200
    # Its web and loopback callbacks work too (the loopback one on any port).
    _, other = pkce_pair()
    for uri in (
        "https://www.cursor.com/agents/mcp/oauth/callback",
        "http://localhost:40000/callback",
    ):
        assert agent.authorize(client_id, other, redirect_uri=uri).status_code == 303
    # An app scheme matches exactly: another path or host of it is refused.
    for uri in (
        "cursor://anysphere.cursor-mcp/oauth/other",
        "cursor://evil.example/oauth/callback",
    ):
        assert agent.authorize(client_id, other, redirect_uri=uri).status_code == 400


REFUSED = (
    "javascript:alert(1)",
    "data:text/html,<script>alert(1)</script>",
    "vbscript:msgbox",
    "file:///etc/passwd",
    "https:/evil.example/cb",  # a look-alike the SDK's parser would turn into https://
    "https:evil.example/cb",
    "HTTPS://evil.example/cb",
    "httpz://evil.example/cb",
    "http://evil.example/cb",
    "https://evil.example/cb#fragment",
    "https://chatgpt.com@evil.example/cb",
    "https://evil.example:99999/cb",
    "https://x;frame-ancestors *;/cb",
    "myapp:opaque",
    "cursor://user@anysphere.cursor-mcp/oauth/callback",
)


def test_registration_refuses_scripted_malformed_and_look_alike_redirect_uris(
    tmp_path: Path,
) -> None:
    # One address sends every form: the registration budget is raised so each reaches
    # the redirect check instead of the per-address limit (tests/auth/test_store_filling.py).
    with oauth_server(
        tmp_path, metacortex_oauth_registrations_per_minute_per_address=len(REFUSED) + 1
    ) as live:
        http = httpx2.Client(base_url=live.url, timeout=30)
        accepted = []
        with http:
            for uri in REFUSED:
                answer = http.post(
                    "/oauth/register",
                    json={"redirect_uris": [uri], "token_endpoint_auth_method": "none"},
                )
                if answer.status_code != 400 or answer.json()["error"] != "invalid_redirect_uri":
                    accepted.append((uri, answer.status_code, answer.text[:120]))
    assert accepted == []


def test_a_metadata_document_cannot_inject_csp_directives_into_the_consent_page(
    live: OAuthLive, agent: Browserless
) -> None:
    injected = "https://x;frame-ancestors *;form-action *;/cb"
    client_id = live.documents.add(
        "injector",
        client_name="Injector",
        redirect_uris=[injected, "https://claude.ai/api/mcp/auth_callback"],
    )
    _, challenge = pkce_pair()

    refused = agent.authorize(client_id, challenge, redirect_uri=injected)
    assert refused.status_code == 400
    assert "location" not in refused.headers
    allowed = agent.authorize(
        client_id, challenge, redirect_uri="https://claude.ai/api/mcp/auth_callback"
    )
    page = agent.http.get(allowed.headers["location"])
    csp = page.headers["content-security-policy"]
    assert _csp_directives(csp).count("frame-ancestors") == 1
    assert "frame-ancestors 'none'" in csp
    assert "form-action 'self' https://claude.ai;" in csp


def test_a_redirect_uri_with_user_information_cannot_pose_as_another_host(
    live: OAuthLive, agent: Browserless
) -> None:
    posing = "https://chatgpt.com@evil.example/connector/oauth/x"
    registered = agent.http.post(
        "/oauth/register", json={"redirect_uris": [posing], "token_endpoint_auth_method": "none"}
    )
    assert registered.status_code == 400
    # A registration stored before this rule existed cannot use it either.
    live.store.auth_put(
        "client",
        "legacy",
        {"client_name": "Legacy", "redirect_uris": [posing], "auth_method": "none"},
        None,
    )
    _, challenge = pkce_pair()
    answer = agent.authorize("legacy", challenge, redirect_uri=posing)
    assert answer.status_code == 400
    assert "chatgpt.com@" not in answer.text
    # The consent page names the parsed host (with its port), never the raw netloc.
    client_id = live.documents.add(
        "ported", client_name="Ported", redirect_uris=["https://chatgpt.com:8443/connector/x"]
    )
    shown = agent.authorize(
        client_id, challenge, redirect_uri="https://chatgpt.com:8443/connector/x"
    )
    page = agent.http.get(shown.headers["location"])
    assert "<strong>chatgpt.com:8443</strong>" in page.text
