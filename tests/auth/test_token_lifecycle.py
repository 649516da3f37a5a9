"""How long a connection lasts (issue 19 items 4 and 5): refresh tokens for clients
registered for the ``refresh_token`` grant, and a short grace window in which a repeated
refresh or code exchange (a lost response, two workers racing) gets a valid pair of the
same family instead of killing it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.oauth_support import CALLBACK, Browserless, OAuthLive, oauth_server, tools_list


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


def _refresh(agent: Browserless, client_id: str, token: str) -> dict[str, object]:
    answer = agent.http.post(
        "/oauth/token",
        data={"grant_type": "refresh_token", "refresh_token": token, "client_id": client_id},
    )
    body: dict[str, object] = answer.json()
    return body


# ------------------------------------------------------------ refresh tokens
def test_a_client_registered_for_refresh_gets_a_refresh_token_without_offline_access(
    live: OAuthLive, agent: Browserless
) -> None:
    client = agent.register(grant_types=["authorization_code", "refresh_token"])
    tokens = agent.tokens(client["client_id"], scope="memory:read memory:write")

    assert tokens["scope"] == "memory:read memory:write"
    assert tokens["refresh_token"]
    refreshed = _refresh(agent, client["client_id"], tokens["refresh_token"])
    assert refreshed["refresh_token"]
    assert tools_list(live.mcp, str(refreshed["access_token"])).status_code == 200


def test_a_client_registered_for_codes_only_gets_a_refresh_token_only_when_it_asks(
    agent: Browserless,
) -> None:
    client = agent.register(grant_types=["authorization_code"])
    plain = agent.tokens(client["client_id"], scope="memory:read memory:write")
    assert "refresh_token" not in plain
    offline = agent.tokens(client["client_id"], scope="memory:read offline_access")
    assert offline["refresh_token"]


def test_a_metadata_document_client_listing_the_refresh_grant_gets_a_refresh_token(
    live: OAuthLive, agent: Browserless
) -> None:
    client_id = live.documents.add(
        "refreshing",
        client_name="Refreshing",
        redirect_uris=[CALLBACK],
        grant_types=["authorization_code", "refresh_token"],
    )
    tokens = agent.tokens(client_id, scope="memory:read memory:write")
    assert tokens["refresh_token"]
