"""``private_key_jwt`` for metadata-document clients (what ChatGPT's document declares):
a signed assertion authenticates; a missing, foreign-key, wrong-audience or replayed one
is ``invalid_client``."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import rsa
from jwt.algorithms import RSAAlgorithm

from metacortex import __version__
from tests.oauth_support import Browserless, OAuthLive, oauth_server, pkce_pair

ASSERTION_TYPE = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"


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


def _key() -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


def _client(live: OAuthLive, key: rsa.RSAPrivateKey) -> str:
    jwk: dict[str, Any] = RSAAlgorithm.to_jwk(key.public_key(), as_dict=True)
    jwks_uri = live.documents.add("keys", keys=[{**jwk, "kid": "k1", "alg": "RS256"}])
    return live.documents.add(
        "signed",
        client_name="Signed Client",
        redirect_uris=["http://127.0.0.1:9/callback"],
        token_endpoint_auth_method="private_key_jwt",
        jwks_uri=jwks_uri,
    )


def _assertion(
    key: rsa.RSAPrivateKey,
    client_id: str,
    audience: str,
    jti: str | None = None,
    exp: int | None = None,
) -> str:
    now = int(time.time())
    claims = {
        "iss": client_id,
        "sub": client_id,
        "aud": audience,
        "iat": now,
        "exp": now + 60 if exp is None else exp,
        "jti": jti or str(uuid.uuid4()),
    }
    return jwt.encode(claims, key, algorithm="RS256", headers={"kid": "k1"})


def _code(agent: Browserless, client_id: str) -> tuple[str, str]:
    verifier, challenge = pkce_pair()
    return agent.code_for(client_id, challenge), verifier


def test_metadata_advertises_private_key_jwt_next_to_none(live: OAuthLive) -> None:
    document = httpx2.get(f"{live.url}/.well-known/oauth-authorization-server").json()
    assert document["token_endpoint_auth_methods_supported"][0] == "none"
    assert "private_key_jwt" in document["token_endpoint_auth_methods_supported"]
    assert "RS256" in document["token_endpoint_auth_signing_alg_values_supported"]


def test_a_signed_assertion_authenticates_the_client(live: OAuthLive, agent: Browserless) -> None:
    key = _key()
    client_id = _client(live, key)
    code, verifier = _code(agent, client_id)
    assertion = _assertion(key, client_id, live.url + "/oauth/token")

    answer = agent.exchange(
        client_id, code, verifier, client_assertion_type=ASSERTION_TYPE, client_assertion=assertion
    )
    assert answer.status_code == 200, answer.text

    replay = agent.http.post(
        "/oauth/token",
        data={
            "grant_type": "refresh_token",
            "refresh_token": answer.json()["refresh_token"],
            "client_id": client_id,
            "client_assertion_type": ASSERTION_TYPE,
            "client_assertion": assertion,
        },
    )
    assert replay.status_code == 401
    assert "already used" in replay.json()["error_description"]


def test_the_document_and_key_fetches_say_who_is_fetching(
    live: OAuthLive, agent: Browserless
) -> None:
    """chatgpt.com and claude.ai sit behind bot rules that refuse anonymous fetches."""
    key = _key()
    client_id = _client(live, key)
    code, verifier = _code(agent, client_id)
    assertion = _assertion(key, client_id, live.url + "/oauth/token")
    agent.exchange(
        client_id, code, verifier, client_assertion_type=ASSERTION_TYPE, client_assertion=assertion
    )

    expected = f"MetaCortex/{__version__} (+client-metadata fetch)"
    assert live.documents.user_agents == {"signed": [expected], "keys": [expected]}


@pytest.mark.parametrize("problem", ["missing", "foreign key", "wrong audience"])
def test_a_bad_or_missing_assertion_is_invalid_client(
    live: OAuthLive, agent: Browserless, problem: str
) -> None:
    key = _key()
    client_id = _client(live, key)
    code, verifier = _code(agent, client_id)
    extra: dict[str, str] = {}
    if problem == "foreign key":
        extra = {"client_assertion": _assertion(_key(), client_id, live.url + "/oauth/token")}
    elif problem == "wrong audience":
        extra = {"client_assertion": _assertion(key, client_id, "https://elsewhere.example")}
    if extra:
        extra["client_assertion_type"] = ASSERTION_TYPE

    answer = agent.exchange(client_id, code, verifier, **extra)
    assert answer.status_code == 401
    assert answer.json()["error"] == "invalid_client"


@pytest.mark.parametrize(
    ("expires_in", "refused"),
    [(10**12, True), (11 * 60, True), (5 * 60, False)],
    ids=["exp 10^12", "11 minutes", "5 minutes"],
)
def test_an_assertion_valid_for_longer_than_ten_minutes_is_invalid_client(
    live: OAuthLive, agent: Browserless, expires_in: int, refused: bool
) -> None:
    """An attacker's signed assertion with ``exp`` 10^12 once gave a 500 (the replay
    record's expiry overflowed); RFC 7523 §3 lets a server refuse an ``exp``
    unreasonably far ahead, and Auth0 allows 5 minutes."""
    key = _key()
    client_id = _client(live, key)
    code, verifier = _code(agent, client_id)
    exp = expires_in if expires_in >= 10**12 else int(time.time()) + expires_in
    assertion = _assertion(key, client_id, live.url + "/oauth/token", exp=exp)

    answer = agent.exchange(
        client_id, code, verifier, client_assertion_type=ASSERTION_TYPE, client_assertion=assertion
    )
    if refused:
        assert answer.status_code == 401, answer.text
        assert answer.json() == {
            "error": "invalid_client",
            "error_description": "client_assertion exp is more than 10 minutes ahead; "
            "sign a short-lived assertion for each request",
        }
    else:
        assert answer.status_code == 200, answer.text
