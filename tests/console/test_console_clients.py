"""The clients page over real loopback HTTP (issue 21 §2, §3): client endpoints created,
paused, resumed and removed by the owner without a restart, the environment's shown
read-only, OAuth grants paused and revoked, confirmations before anything is lost,
ready-to-paste connections, and activity charts naming clients as the page does.

The counterpart of every token is the real server: the token the page shows is used
at the endpoint with the real MCP JSON-RPC over HTTP. The servers here check the
store on every request (``METACORTEX_CLIENT_REFRESH_SECONDS=0``); the bound itself is
tested with two processes in ``tests/server/test_client_refusal_two_processes.py``.
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from metacortex.clients.grants import list_grants
from metacortex.kernel.events import MEMORY_EVENTS
from tests.console.support import ConsoleLive, Owner, console_server
from tests.oauth_support import Browserless, OAuthLive, hidden, tool_call, tools_list

pytestmark = pytest.mark.slow


@pytest.fixture(params=[True, False], ids=["oauth", "no-oauth"])
def live(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[ConsoleLive]:
    with console_server(
        tmp_path, oauth=request.param, metacortex_client_refresh_seconds=0
    ) as running:
        yield running


@pytest.fixture
def owner(live: ConsoleLive) -> Iterator[Owner]:
    user = Owner(live)
    user.sign_in()
    yield user
    user.close()


def _create(owner: Owner, client_id: str, *tools: str, **form: str) -> str:
    """Create a client on the clients page; the token the created page shows once."""
    page = owner.http.get("/console/clients")
    answer = owner.http.post(
        "/console/clients",
        data={
            "csrf": hidden(page.text, "csrf"),
            "id": client_id,
            "tools": list(tools or ("search_context", "fetch_context")),
            **form,
        },
    )
    assert answer.status_code == 201, answer.text
    token = re.search(r'<div class="token-once".*?<code>([^<]+)</code>', answer.text, re.S)
    assert token is not None
    return html.unescape(token.group(1))


def test_a_client_created_on_the_page_serves_at_once_and_its_token_is_shown_only_then(
    owner: Owner, live: ConsoleLive
) -> None:
    token = _create(owner, "laptop-codex", description="Codex on the laptop")
    endpoint = f"{live.url}/clients/laptop-codex/mcp"

    listed = tools_list(endpoint, token)
    page = owner.http.get("/console/clients/laptop-codex").text
    clients = owner.http.get("/console/clients").text

    assert listed.status_code == 200, listed.text
    names = [tool["name"] for tool in listed.json()["result"]["tools"]]
    assert names == ["search_context", "fetch_context"]
    assert token not in page
    assert token not in clients
    assert "Codex on the laptop" in clients
    assert 'id="client-laptop-codex"' in clients
    live.flush_events()
    assert token not in str(live.store.read_events(MEMORY_EVENTS))
    headings = re.findall(r'<h3 id="snippet-[a-z-]+-title">([^<]+) <span', page)
    assert headings == ["ChatGPT", "Claude", "Claude Code", "Codex", "Cursor", "VS Code"]
    assert "bearer_token_env_var = &#34;METACORTEX_TOKEN_LAPTOP_CODEX&#34;" in page
    assert f"url = &#34;{endpoint}&#34;" in page


def test_pausing_refuses_the_client_resuming_lets_it_in_and_removing_ends_its_token(
    owner: Owner, live: ConsoleLive
) -> None:
    token = _create(owner, "agent")
    endpoint = f"{live.url}/clients/agent/mcp"
    assert tools_list(endpoint, token).status_code == 200

    paused = owner.post("/console/clients/agent/pause")
    refused = tools_list(endpoint, token)
    resumed = owner.post("/console/clients/agent/resume")
    served = tools_list(endpoint, token)
    confirm = owner.http.get("/console/clients/agent/remove")
    still = tools_list(endpoint, token)
    removed = owner.post("/console/clients/agent/remove")
    gone = tools_list(endpoint, token)

    assert paused.status_code == 303
    assert refused.status_code == 403
    assert refused.json()["error"]["code"] == "forbidden"
    assert "paused" in refused.json()["error"]["message"]
    assert resumed.status_code == 303
    assert served.status_code == 200
    assert confirm.status_code == 200
    assert "Remove client agent?" in confirm.text
    assert still.status_code == 200  # the confirmation page changes nothing
    assert removed.status_code == 303
    assert gone.status_code == 401
    assert "The client was removed" in owner.http.get(removed.headers["location"]).text
    live.flush_events()
    actions = [
        (e["tool_name"], e["status"])
        for e in live.store.read_events(MEMORY_EVENTS)
        if e["event_type"] == "owner_action"
    ]
    assert actions == [
        ("client_create", "ok"),
        ("client_pause", "ok"),
        ("client_resume", "ok"),
        ("client_remove", "ok"),
    ]


def test_clients_from_the_environment_are_listed_read_only_and_cannot_be_changed(
    owner: Owner,
) -> None:
    clients = owner.http.get("/console/clients").text
    web = clients.split('id="client-web"')[1].split("</li>")[0]

    pause = owner.post("/console/clients/web/pause")
    remove = owner.http.get("/console/clients/web/remove")
    clash = owner.http.post(
        "/console/clients", data={"csrf": owner.csrf(), "id": "web", "tools": "search_context"}
    )

    assert "From MCP_CLIENT_PROFILES_JSON (read-only" in web
    assert "Pause" not in web
    assert "Remove" not in web
    assert pause.status_code == 409
    assert "MCP_CLIENT_PROFILES_JSON" in pause.text
    assert remove.status_code == 409
    assert clash.status_code == 409
    assert "already defined in MCP_CLIENT_PROFILES_JSON" in clash.text
    assert 'value="web"' in clash.text  # the form keeps what was typed


def test_a_bad_new_client_is_refused_with_the_reason_and_nothing_is_stored(
    owner: Owner, live: ConsoleLive
) -> None:
    bad_id = owner.http.post(
        "/console/clients",
        data={"csrf": owner.csrf(), "id": "has space", "tools": "search_context"},
    )
    no_tools = owner.http.post("/console/clients", data={"csrf": owner.csrf(), "id": "empty"})
    forged = owner.http.post(
        "/console/clients", data={"csrf": "forged", "id": "x", "tools": "search_context"}
    )

    assert bad_id.status_code == 400
    assert "URL path" in bad_id.text
    assert no_tools.status_code == 400
    assert "at least one tool" in no_tools.text
    assert forged.status_code == 403
    assert live.store.auth_list("client_profile") == []


@pytest.mark.parametrize("live", [True], indirect=True, ids=["oauth"])
def test_an_oauth_grant_is_paused_resumed_and_revoked_after_a_confirmation(
    owner: Owner, live: ConsoleLive
) -> None:
    oauth = _oauth(live)
    agent = Browserless(oauth)
    client = agent.register(client_name="Test Agent")
    agent.sign_in()
    tokens = agent.tokens(client["client_id"])
    agent.close()
    access = tokens["access_token"]
    page = owner.http.get("/console/clients").text
    grant_id = re.findall(r"/console/clients/grants/([0-9a-f]+)/revoke", page)[0]

    paused = owner.post(f"/console/clients/grants/{grant_id}/pause")
    refused = tools_list(oauth.mcp, access)
    listed_paused = owner.http.get("/console/clients").text
    resumed = owner.post(f"/console/clients/grants/{grant_id}/resume")
    served = tools_list(oauth.mcp, access)
    confirm = owner.http.get(f"/console/clients/grants/{grant_id}/revoke")
    still = tools_list(oauth.mcp, access)
    revoked = owner.post(f"/console/clients/grants/{grant_id}/revoke")

    assert paused.status_code == 303
    assert refused.status_code == 403
    assert "paused" in refused.json()["error"]["message"]
    grant_card = listed_paused.split(f'id="grant-{grant_id}"')[1].split("</li>")[0]
    assert "paused" in grant_card
    assert resumed.status_code == 303
    assert served.status_code == 200
    assert "Revoke Test Agent" in confirm.text
    assert still.status_code == 200
    assert revoked.status_code == 303
    assert tools_list(oauth.mcp, access).status_code == 401
    assert "Test Agent" not in owner.http.get("/console/clients").text


@pytest.mark.parametrize("live", [True], indirect=True, ids=["oauth"])
def test_activity_charts_name_an_oauth_client_as_the_clients_page_does(
    owner: Owner, live: ConsoleLive
) -> None:
    """Issue 21 §2: OAuth clients appeared as ``oauth-<grant id>`` in the charts."""
    oauth = _oauth(live)
    agent = Browserless(oauth)
    client = agent.register(client_name="Notes Agent")
    agent.sign_in()
    tokens = agent.tokens(client["client_id"])
    agent.close()
    called = tool_call(oauth.mcp, tokens["access_token"], "search_context", {"query": "sun"})
    assert called.status_code == 200, called.text
    live.flush_events()
    [grant] = list_grants(live.store)

    activity = owner.http.get("/console/activity").text
    clients = owner.http.get("/console/clients").text

    assert grant.label.startswith("Notes Agent (127.0.0.1")
    assert html.escape(grant.label) in clients
    assert html.escape(grant.label) in activity
    assert "oauth-" not in activity


def _oauth(live: ConsoleLive) -> OAuthLive:
    return OAuthLive(live.url, live.store, live.app, documents=None)  # type: ignore[arg-type]
