"""How long a connection lasts (issue 19 items 4 and 5): refresh tokens for clients
registered for the ``refresh_token`` grant, and a short grace window in which a repeated
refresh or code exchange (a lost response, two workers racing) gets a valid pair of the
same family instead of killing it."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx2
import pytest

from tests.oauth_support import (
    CALLBACK,
    Browserless,
    OAuthLive,
    oauth_server,
    pkce_pair,
    tools_list,
)


def _refresh(agent: Browserless, client_id: str, token: str, **extra: str) -> dict[str, Any]:
    answer = agent.http.post(
        "/oauth/token",
        data={
            "grant_type": "refresh_token",
            "refresh_token": token,
            "client_id": client_id,
            **extra,
        },
    )
    body: dict[str, Any] = answer.json()
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


# --------------------------------------------------------------- grace window
def test_two_concurrent_refreshes_with_one_token_both_succeed_and_the_connector_keeps_working(
    live: OAuthLive, agent: Browserless
) -> None:
    """Claude.ai refreshes from several workers at once (reported: PrefectHQ/fastmcp#4264)."""
    client = agent.register()
    token = agent.tokens(client["client_id"])["refresh_token"]
    racers = 4
    start = threading.Barrier(racers)

    def refresh(_: int) -> httpx2.Response:
        with httpx2.Client(base_url=live.url, timeout=30) as http:
            start.wait(timeout=30)
            return http.post(
                "/oauth/token",
                data={
                    "grant_type": "refresh_token",
                    "refresh_token": token,
                    "client_id": client["client_id"],
                },
            )

    with ThreadPoolExecutor(racers) as pool:
        answers = list(pool.map(refresh, range(racers)))

    assert [answer.status_code for answer in answers] == [200] * racers
    pairs = {(a.json()["access_token"], a.json()["refresh_token"]) for a in answers}
    assert len(pairs) == 1  # every racer got the same pair of the same family
    [(access, refreshed)] = pairs
    assert tools_list(live.mcp, access).status_code == 200
    following = _refresh(agent, client["client_id"], refreshed)
    assert tools_list(live.mcp, following["access_token"]).status_code == 200
    assert len(live.store.auth_list("grant")) == 1


def test_a_refresh_repeated_within_the_grace_window_gets_the_first_pair_again(
    live: OAuthLive, agent: Browserless
) -> None:
    """A response lost on the way: the client sends the same refresh again."""
    client = agent.register()
    token = agent.tokens(client["client_id"])["refresh_token"]

    first = _refresh(agent, client["client_id"], token)
    again = _refresh(agent, client["client_id"], token)

    assert again["access_token"] == first["access_token"]
    assert again["refresh_token"] == first["refresh_token"]
    assert 0 < again["expires_in"] <= first["expires_in"]
    assert tools_list(live.mcp, again["access_token"]).status_code == 200
    assert _refresh(agent, client["client_id"], again["refresh_token"])["refresh_token"]


def _grace_logs(caplog: pytest.LogCaptureFixture) -> list[tuple[str, str, dict[str, Any]]]:
    """(level, message, fields) of the server's log lines about repeated codes and tokens."""
    return [
        (record.levelname, record.getMessage(), dict(getattr(record, "metacortex_fields", {})))
        for record in caplog.records
        if record.name == "metacortex.server" and record.getMessage().startswith("oauth ")
    ]


def test_every_repeat_within_the_grace_window_is_logged_as_a_warning_with_its_address(
    live: OAuthLive, agent: Browserless, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level("INFO", logger="metacortex.server")
    client = agent.register()
    token = agent.tokens(client["client_id"])["refresh_token"]
    _refresh(agent, client["client_id"], token)
    caplog.clear()

    _refresh(agent, client["client_id"], token)

    [(level, message, fields)] = _grace_logs(caplog)
    assert level == "WARNING"
    assert "refresh token repeated within the grace window" in message
    assert fields["address"] == "127.0.0.1"
    assert fields["user_agent"].startswith("python-httpx")


def _elsewhere(live: OAuthLive, **headers: str) -> httpx2.Client:
    """Another machine: a connection from another loopback address (127.0.0.2, a real
    peer address the server sees), or the same one with another user agent."""
    transport = httpx2.HTTPTransport(local_address="127.0.0.2") if not headers else None
    return httpx2.Client(base_url=live.url, timeout=30, transport=transport, headers=headers)


@pytest.mark.parametrize(
    "attacker", ["another address", "another user agent"], ids=["address", "user-agent"]
)
def test_a_used_refresh_token_replayed_from_elsewhere_within_the_window_gets_nothing(
    live: OAuthLive, agent: Browserless, caplog: pytest.LogCaptureFixture, attacker: str
) -> None:
    """Someone who copied a refresh token (a log, a leaked client store) replays it seconds
    after the client used it, from another machine, with the same public client_id: the
    grace is for the first use's own repeats, so the replay gets no pair; it counts as
    reuse and the family is revoked, as RFC 9700 §4.14.2 asks."""
    caplog.set_level("INFO", logger="metacortex.server")
    client = agent.register()
    token = agent.tokens(client["client_id"])["refresh_token"]
    first = _refresh(agent, client["client_id"], token)

    headers = {"user-agent": "curl/8.11.1"} if attacker == "another user agent" else {}
    with _elsewhere(live, **headers) as other:
        replay = other.post(
            "/oauth/token",
            data={
                "grant_type": "refresh_token",
                "refresh_token": token,
                "client_id": client["client_id"],
            },
        )

    assert replay.status_code == 400
    assert replay.json()["error"] == "invalid_grant"
    assert first["access_token"] not in replay.text
    assert first["refresh_token"] not in replay.text
    assert tools_list(live.mcp, first["access_token"]).status_code == 401
    [(level, message, fields)] = _grace_logs(caplog)[-1:]
    assert level == "WARNING"
    assert "from another address or user agent than its first use" in message
    assert fields["address"] == ("127.0.0.2" if attacker == "another address" else "127.0.0.1")


def test_a_code_exchange_repeated_within_the_grace_window_gets_the_first_pair_again(
    live: OAuthLive, agent: Browserless
) -> None:
    """A token request retried after a timeout."""
    client = agent.register()
    verifier, challenge = pkce_pair()
    code = agent.code_for(client["client_id"], challenge)

    first = agent.exchange(client["client_id"], code, verifier).json()
    again = agent.exchange(client["client_id"], code, verifier).json()

    assert again["access_token"] == first["access_token"]
    assert again["refresh_token"] == first["refresh_token"]
    assert tools_list(live.mcp, first["access_token"]).status_code == 200
    # Without the verifier a repeat is no repeat: the code was stolen, the grant goes.
    other_verifier, _ = pkce_pair()
    stolen = agent.exchange(client["client_id"], code, other_verifier)
    assert stolen.json()["error"] == "invalid_grant"
    assert tools_list(live.mcp, first["access_token"]).status_code == 401


def test_repeats_keep_no_token_in_the_store(live: OAuthLive, agent: Browserless) -> None:
    client = agent.register()
    verifier, challenge = pkce_pair()
    code = agent.code_for(client["client_id"], challenge)
    tokens = agent.exchange(client["client_id"], code, verifier).json()
    agent.exchange(client["client_id"], code, verifier)
    refreshed = _refresh(agent, client["client_id"], tokens["refresh_token"])
    _refresh(agent, client["client_id"], tokens["refresh_token"])

    everything = json.dumps(
        [live.store.auth_list(kind) for kind in ("code", "access_token", "refresh_token")]
    )
    assert "successor" in everything  # the sealed answers are there...
    for secret in (code, *tokens.values(), *refreshed.values()):
        if isinstance(secret, str) and len(secret) > 20:
            assert secret not in everything  # ...and no token in plaintext


def test_a_repeat_at_another_instance_gets_the_same_pair(tmp_path: Path) -> None:
    """Two server instances over one store: the window is kept in the store."""
    with oauth_server(tmp_path) as one, oauth_server(tmp_path) as other:
        agent = Browserless(one)
        try:
            assert agent.sign_in().status_code == 303
            client = agent.register()
            token = agent.tokens(client["client_id"])["refresh_token"]
            first = _refresh(agent, client["client_id"], token)
            again = httpx2.post(
                other.url + "/oauth/token",
                data={
                    "grant_type": "refresh_token",
                    "refresh_token": token,
                    "client_id": client["client_id"],
                },
            ).json()
        finally:
            agent.close()
        assert again["refresh_token"] == first["refresh_token"]
        # (Each instance here has its own URL; the token belongs to the one it was asked at.)
        assert tools_list(one.mcp, again["access_token"]).status_code == 200


@pytest.fixture
def strict(tmp_path: Path) -> Iterator[tuple[OAuthLive, Browserless]]:
    """A server whose grace window is 0 s: every use after the first is past it."""
    with oauth_server(tmp_path, metacortex_oauth_replay_grace_seconds=0) as running:
        user = Browserless(running)
        assert user.sign_in().status_code == 303
        yield running, user
        user.close()


def test_a_refresh_replayed_after_the_window_revokes_the_family(
    strict: tuple[OAuthLive, Browserless],
) -> None:
    live, agent = strict
    client = agent.register()
    token = agent.tokens(client["client_id"])["refresh_token"]
    first = _refresh(agent, client["client_id"], token)

    replay = _refresh(agent, client["client_id"], token)

    assert replay["error"] == "invalid_grant"
    assert tools_list(live.mcp, first["access_token"]).status_code == 401
    assert _refresh(agent, client["client_id"], first["refresh_token"])["error"] == "invalid_grant"


def test_a_refused_refresh_does_not_use_the_token(strict: tuple[OAuthLive, Browserless]) -> None:
    live, agent = strict
    client, stranger = agent.register(), agent.register()
    token = agent.tokens(client["client_id"], scope="memory:read offline_access")["refresh_token"]

    assert _refresh(agent, stranger["client_id"], token)["error"] == "invalid_grant"
    widened = _refresh(agent, client["client_id"], token, scope="memory:read memory:write")
    assert widened["error"] == "invalid_scope"
    elsewhere = _refresh(agent, client["client_id"], token, resource=live.url + "/clients/web/mcp")
    assert elsewhere["error"] == "invalid_target"

    refreshed = _refresh(agent, client["client_id"], token)  # still its first use
    assert tools_list(live.mcp, refreshed["access_token"]).status_code == 200
