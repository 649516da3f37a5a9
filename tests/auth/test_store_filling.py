"""Strangers cannot fill the store through the authorization server (issue 19, item 11).

An attacker's own requests over real loopback HTTP, replayed from the report: a
registration with a 1 MB ``client_name``, authorization requests with a 20 KB
``state`` and ``code_challenge``, and bursts of both from one address and from a
second loopback address (127.0.0.2). What the store holds is read from the SQLite
file itself (rows and bytes of ``auth_state``), so "stores nothing" means nothing.
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import httpx2
import pytest

from metacortex.domain.records import utc_now
from tests.oauth_support import (
    CALLBACK,
    Browserless,
    OAuthLive,
    oauth_server,
    pkce_pair,
    query_of,
)

MEGABYTE = 1_000_000
OTHER_ADDRESS = "127.0.0.2"  # also loopback on Linux: a second client address


def _stored(live: OAuthLive, kind: str | None = None) -> tuple[int, int]:
    """(rows, bytes of data) of ``auth_state``, read from the database file."""
    with contextlib.closing(sqlite3.connect(live.store.path)) as db:
        where, args = ("WHERE kind = ?", (kind,)) if kind else ("", ())
        rows, size = db.execute(
            f"SELECT COUNT(*), COALESCE(SUM(LENGTH(data)), 0) FROM auth_state {where}",  # noqa: S608
            args,
        ).fetchone()
    return int(rows), int(size)


def _expiry(live: OAuthLive, client_id: str) -> datetime | None:
    with contextlib.closing(sqlite3.connect(live.store.path)) as db:
        (expires,) = db.execute(
            "SELECT expires_at FROM auth_state WHERE kind = 'client' AND key = ?", (client_id,)
        ).fetchone()
    return None if expires is None else datetime.fromtimestamp(expires / 1000, tz=utc_now().tzinfo)


@contextlib.contextmanager
def _from(live: OAuthLive, address: str) -> Iterator[Browserless]:
    """A user agent whose connections leave from ``address``."""
    agent = Browserless(live)
    agent.http.close()
    transport = httpx2.HTTPTransport(local_address=address)
    agent.http = httpx2.Client(base_url=live.url, transport=transport, timeout=30)
    try:
        yield agent
    finally:
        agent.close()


def _registration(**extra: Any) -> dict[str, Any]:
    return {"redirect_uris": [CALLBACK], "token_endpoint_auth_method": "none", **extra}


@pytest.fixture
def live(tmp_path: Path) -> Iterator[OAuthLive]:
    with oauth_server(tmp_path, metacortex_oauth_unused_client_minutes=5) as running:
        yield running


def test_a_registration_past_the_size_of_a_client_metadata_document_is_refused_and_stores_nothing(
    live: OAuthLive,
) -> None:
    before = _stored(live)
    huge_name = httpx2.post(
        live.url + "/oauth/register", json=_registration(client_name="A" * MEGABYTE), timeout=30
    )
    assert huge_name.status_code == 400, huge_name.status_code
    assert huge_name.json()["error"] == "invalid_client_metadata"
    assert "larger than 16384 bytes" in huge_name.json()["error_description"]

    padded = httpx2.post(
        live.url + "/oauth/register",
        json=_registration(redirect_uris=[f"https://app.example/cb/{i:05}" for i in range(700)]),
    )
    assert padded.status_code == 400
    assert "larger than 16384 bytes" in padded.json()["error_description"]

    long_name = httpx2.post(live.url + "/oauth/register", json=_registration(client_name="A" * 201))
    assert long_name.status_code == 400
    assert long_name.json() == {
        "error": "invalid_client_metadata",
        "error_description": "client_name is longer than 200 characters",
    }
    assert _stored(live) == before

    fits = httpx2.post(live.url + "/oauth/register", json=_registration(client_name="A" * 200))
    assert fits.status_code == 201, fits.text


def test_an_unapproved_registration_expires_after_the_configured_minutes_and_an_approved_one_stays(
    live: OAuthLive,
) -> None:
    agent = Browserless(live)
    assert agent.sign_in().status_code == 303
    started = utc_now()
    approved = agent.register()["client_id"]
    abandoned = agent.register()["client_id"]
    for client_id in (approved, abandoned):
        expires = _expiry(live, client_id)
        assert expires is not None, "a registration nobody approved is kept forever"
        assert started + timedelta(minutes=5) <= expires + timedelta(seconds=1)
        assert expires <= utc_now() + timedelta(minutes=5)

    agent.tokens(approved)
    assert _expiry(live, approved) is None  # the owner approved it: kept until removed
    assert _expiry(live, abandoned) is not None

    # Five minutes on, as the store sees it: the abandoned registration is gone.
    record = live.store.auth_get("client", abandoned)
    assert record is not None
    live.store.auth_put("client", abandoned, record, utc_now() - timedelta(seconds=1))
    _, challenge = pkce_pair()
    page = agent.authorize(abandoned, challenge)
    assert page.status_code == 400
    assert "unknown client_id" in page.text
    assert "remove the connector in the client and add it again" in page.text
    agent.close()


def test_registration_is_limited_per_address_and_overall(tmp_path: Path) -> None:
    with oauth_server(
        tmp_path,
        metacortex_oauth_registrations_per_minute_per_address=3,
        metacortex_oauth_registrations_per_minute=5,
    ) as live:
        with _from(live, "127.0.0.1") as first:
            statuses = [first.http.post("/oauth/register", json=_registration()) for _ in range(4)]
        assert [s.status_code for s in statuses] == [201, 201, 201, 429]
        assert statuses[-1].json()["error"] == "temporarily_unavailable"
        assert int(statuses[-1].headers["retry-after"]) >= 1
        with _from(live, OTHER_ADDRESS) as second:
            others = [second.http.post("/oauth/register", json=_registration()) for _ in range(3)]
        assert [s.status_code for s in others] == [201, 201, 429]  # the overall budget
        assert _stored(live, "client")[0] == 5


def test_authorize_refuses_a_huge_state_or_a_malformed_code_challenge_and_stores_nothing(
    live: OAuthLive,
) -> None:
    agent = Browserless(live)
    client_id = agent.register()["client_id"]
    _, challenge = pkce_pair()
    before = _stored(live)

    # The report's request, a 20 KB state and a 20 KB code_challenge, repeated (within
    # the per-address budget of 30 a minute: every request here counts against it).
    for _ in range(20):
        flood = agent.authorize(client_id, "C" * 20_000, state="S" * 20_000)
        assert flood.status_code == 400
        assert "state is longer than 2048 characters" in flood.text
        assert "S" * 100 not in flood.text
    for bad in ("C" * 20_000, "C" * 42, "C" * 129, "A+/=" * 11, challenge[:-1] + "!"):
        refused = agent.authorize(client_id, bad)
        assert refused.status_code == 303
        error = query_of(refused.headers["location"])
        assert error["error"] == "invalid_request", bad
        assert "43-128 characters" in error["error_description"]
    assert _stored(live) == before

    longest = agent.authorize(client_id, "C" * 128, state="S" * 2048)
    assert longest.status_code == 303
    assert "/oauth/consent?" in longest.headers["location"]
    assert _stored(live, "authz_request")[0] == 1
    agent.close()


def test_authorize_is_limited_per_address_and_overall(tmp_path: Path) -> None:
    with oauth_server(
        tmp_path,
        metacortex_oauth_authorizations_per_minute_per_address=3,
        metacortex_oauth_authorizations_per_minute=5,
    ) as live:
        _, challenge = pkce_pair()
        with _from(live, "127.0.0.1") as first:
            client_id = first.register()["client_id"]
            answers = [first.authorize(client_id, challenge) for _ in range(4)]
        assert [a.status_code for a in answers] == [303, 303, 303, 429]
        assert "Too many authorization requests" in answers[-1].text
        assert int(answers[-1].headers["retry-after"]) >= 1
        with _from(live, OTHER_ADDRESS) as second:
            others = [second.authorize(client_id, challenge) for _ in range(3)]
        assert [a.status_code for a in others] == [303, 303, 429]  # the overall budget
        assert _stored(live, "authz_request")[0] == 5


def test_metadata_document_client_ids_at_the_token_endpoint_share_the_authorize_budget(
    tmp_path: Path,
) -> None:
    """Each new https client_id is fetched and cached for two days: an attacker serving
    documents for endless paths of their own host could fill the store through
    ``/oauth/token`` as through ``/oauth/authorize``."""
    with oauth_server(
        tmp_path,
        metacortex_oauth_authorizations_per_minute_per_address=3,
        metacortex_oauth_authorizations_per_minute=100,
    ) as live:
        client_ids = [
            live.documents.add(f"attacker-{n}", redirect_uris=[CALLBACK]) for n in range(5)
        ]
        answers = [
            httpx2.post(
                live.url + "/oauth/token",
                data={"grant_type": "refresh_token", "refresh_token": "x", "client_id": cid},
            )
            for cid in client_ids
        ]
        assert [a.status_code for a in answers] == [400, 400, 400, 429, 429]
        assert answers[-1].json()["error"] == "temporarily_unavailable"
        assert _stored(live, "cimd")[0] == 3
        assert live.documents.fetches == 3
