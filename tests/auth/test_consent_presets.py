"""What a plain "Allow" grants (issue 19 item 6): the consent page preselects the smallest
preset covering the scopes the client asked for, within the endpoint's profile, so a
coding agent asking for ``memory:write`` can save; a grant keeps only the scopes its
preset uses, and the console's clients page shows that one truth.

The real client: the TypeScript SDK 1.32's OAuth client (Claude Code, Cursor), which
asks for the challenge's scopes, ``memory:read memory:write``."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Final

import httpx2
import pytest

from tests import ts_oauth
from tests.console.support import ConsoleLive, Owner
from tests.oauth_support import (
    CALLBACK,
    Browserless,
    OAuthLive,
    approve_over_http,
    checked_preset,
    oauth_server,
    pkce_pair,
    query_of,
    tool_call,
)
from tests.server.conftest import ADMIN_TOKEN, client_profiles

DRAFTS: Final = {
    "id": "drafts",
    "token": "drafts-" + "Zx9Cv8Bn7Mm6Ll5Kk4Jj3Hh2Gg1Ff0Dd",
    "allowedTools": ["save_context", "search_context", "fetch_context", "list_context"],
    "allowedFilterStates": ["wip"],
}


def _preselected(agent: Browserless, client_id: str, **params: str) -> str:
    _, challenge = pkce_pair()
    page = agent.http.get(agent.authorize(client_id, challenge, **params).headers["location"])
    return checked_preset(page.text)


@pytest.mark.slow
def test_a_coding_agent_saves_after_a_plain_allow(live: OAuthLive, tmp_path: Path) -> None:
    state = str(tmp_path / "client-state.json")
    first = ts_oauth.run("v1", "auth", serverUrl=live.mcp, redirectUrl=CALLBACK, stateFile=state)
    assert first["ok"], first
    assert query_of(first["authorizationUrl"])["scope"] == "memory:read memory:write"
    with httpx2.Client(timeout=30, follow_redirects=False) as owner:
        answer = approve_over_http(owner, first["authorizationUrl"], preset=None)
    second = ts_oauth.run(
        "v1",
        "auth",
        serverUrl=live.mcp,
        redirectUrl=CALLBACK,
        stateFile=state,
        code=answer["code"],
        iss=answer["iss"],
    )
    assert second["ok"], second
    token = second["tokens"]["access_token"]

    saved = tool_call(live.mcp, token, "save_context", {"content": "Saved after Allow."})
    assert saved.status_code == 200
    assert saved.json()["result"]["isError"] is False


def test_the_preselection_follows_the_request_within_the_endpoint(
    live: OAuthLive, agent: Browserless
) -> None:
    client_id = agent.register()["client_id"]
    assert _preselected(agent, client_id, scope="memory:read") == "read"
    assert _preselected(agent, client_id, scope="memory:read memory:write") == "read-write"
    assert _preselected(agent, client_id, scope="") == "read-write"  # the default scopes
    # The "reader" endpoint offers no tool that writes: nothing more than read to give.
    reader = live.url + "/clients/reader/mcp"
    assert _preselected(agent, client_id, scope="memory:write", resource=reader) == "read"


def test_a_grant_keeps_the_scopes_its_preset_uses_and_the_clients_page_says_so(
    live: OAuthLive, agent: Browserless
) -> None:
    client = agent.register(client_name="Careful Agent")
    tokens = agent.tokens(
        client["client_id"], scope="memory:read memory:write offline_access", preset="read"
    )
    assert tokens["scope"] == "memory:read offline_access"
    [(_, grant)] = live.store.auth_list("grant")
    assert grant["scopes"] == ["memory:read", "offline_access"]
    # A grant approved before this rule, as it was stored then.
    live.store.auth_put(
        "grant",
        "legacy",
        {**grant, "client_name": "Legacy Agent", "scopes": ["memory:read", "memory:write"]},
        None,
    )

    owner = Owner(ConsoleLive(live.url, live.store, live.app))
    try:
        owner.sign_in()
        page = owner.http.get("/console/clients").text
    finally:
        owner.close()
    rows = page.split("<tr>")
    careful = next(row for row in rows if "Careful Agent" in row)
    legacy = next(row for row in rows if "Legacy Agent" in row)
    assert "Read only · memory:read offline_access" in careful
    assert "Read only · memory:read<" in legacy
    assert "memory:write" not in careful + legacy


def _preset_words(page: str) -> dict[str, str]:
    """What the consent page says under each preset (its summary, tools and states)."""
    found = re.findall(r'<span class="tools" id="tools-([^"]+)">(.*?)</span>', page, re.S)
    return {preset: " ".join(text.split()) for preset, text in found}


def test_a_read_only_grant_on_a_drafts_endpoint_says_drafts_and_reads_only_drafts(
    tmp_path: Path,
) -> None:
    """An endpoint whose profile reads only drafts (allowedFilterStates ["wip"]): "Read
    only" said "your active memories" while the grant reads drafts and nothing else. The
    words come from what the grant gets there; a search with its token proves it."""
    profiles = json.dumps([*client_profiles(), DRAFTS])
    with oauth_server(tmp_path, mcp_client_profiles_json=profiles) as live:
        agent = Browserless(live)
        try:
            assert agent.sign_in().status_code == 303
            endpoint = live.url + "/clients/drafts/mcp"
            saved: dict[bool, str] = {}
            for content, draft in (("Active deploy note.", False), ("Draft deploy note.", True)):
                answer = tool_call(
                    live.mcp, ADMIN_TOKEN, "save_context", {"content": content, "draft": draft}
                )
                saved[draft] = answer.json()["result"]["structuredContent"]["item"]["id"]
            client_id = agent.register()["client_id"]
            _, challenge = pkce_pair()
            authorize = agent.authorize(
                client_id, challenge, scope="memory:read", resource=endpoint
            )
            words = _preset_words(agent.http.get(authorize.headers["location"]).text)
            reader = agent.tokens(client_id, preset="read", scope="memory:read", resource=endpoint)
            found = tool_call(
                endpoint, reader["access_token"], "search_context", {"query": "deploy note"}
            )
            admin_words = _preset_words(
                agent.http.get(agent.authorize(client_id, challenge).headers["location"]).text
            )
        finally:
            agent.close()

    assert "active" not in words["read"]
    assert words["read"].startswith("Search and read your draft memories.")
    assert "States it can read: wip." in words["read"]
    assert "active" not in words["read-write"]
    # Curate everything there is not every tool nor every state.
    assert "every" not in words["curator"].lower()
    assert "draft" in words["curator"]
    matches = found.json()["result"]["structuredContent"]["matches"]
    assert [match["id"] for match in matches] == [saved[True]]
    # At the admin endpoint the words are what they were.
    assert admin_words["read"].startswith("Search and read your active memories.")
