"""An attacker's malformed inputs to the OAuth side, over real loopback HTTP (issue 19,
item 15): a 100,000-deep JSON body carrying a valid OAuth token, client metadata
documents and key sets nested past Python's parser, and client_id URLs whose host is an
IPv6 form that reaches a private IPv4 address (NAT64, 6to4, Teredo, IPv4-compatible,
-mapped and -translated, site-local) or an IETF-reserved IPv4 one (192.0.0.0/24); every
row of the special-purpose registries is in test_reachable_addresses.py."""

from __future__ import annotations

from collections.abc import Iterator

import httpx2
import pytest

from tests.oauth_support import Browserless, OAuthLive, mcp_post, oauth_server, pkce_pair

DEPTH = 100_000
ASSERTION_TYPE = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[OAuthLive]:
    with oauth_server(
        tmp_path_factory.mktemp("hostile"),
        metacortex_oauth_authorizations_per_minute_per_address=1000,
    ) as running:
        yield running


@pytest.fixture(scope="module")
def agent(live: OAuthLive) -> Iterator[Browserless]:
    user = Browserless(live)
    assert user.sign_in().status_code == 303
    yield user
    user.close()


def _nested(depth: int) -> bytes:
    return b'{"a":' * depth + b"1" + b"}" * depth


def test_a_100k_deep_json_body_with_an_oauth_token_is_a_clear_400_parse_error(
    live: OAuthLive, agent: Browserless
) -> None:
    token = agent.tokens(agent.register()["client_id"])["access_token"]
    headers = {
        "content-type": "application/json",
        "accept": "application/json, text/event-stream",
        "authorization": f"Bearer {token}",
    }
    prefix = b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"save_context",'
    call = prefix + b'"arguments":{"content":' + _nested(DEPTH) + b"}}}"
    for body in (_nested(DEPTH), call):
        answer = httpx2.post(live.mcp, content=body, headers=headers, timeout=60)
        assert answer.status_code == 400, answer.text[:200]
        assert answer.json() == {
            "jsonrpc": "2.0",
            "id": None,
            "error": {"code": -32700, "message": "Parse error: the JSON body is nested too deeply"},
        }
    # The token still works for a normal call.
    listed = mcp_post(live.mcp, token, {"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
    assert listed.status_code == 200


def test_a_metadata_document_nested_past_the_parser_is_a_clear_refusal(
    live: OAuthLive, agent: Browserless
) -> None:
    live.documents.raw["deep"] = b"[" * 8000 + b"]" * 8000  # within the 16 KiB limit
    _, challenge = pkce_pair()
    page = agent.authorize(f"{live.documents.url}/clients/deep.json", challenge)
    assert page.status_code == 400
    assert "the client metadata document is not JSON (or it nests too deeply)" in page.text


def test_a_key_set_nested_past_the_parser_is_invalid_client(
    live: OAuthLive, agent: Browserless
) -> None:
    live.documents.raw["deep-keys"] = b'{"keys":' * 1500 + b"[]" + b"}" * 1500
    client_id = live.documents.add(
        "deep-signer",
        redirect_uris=["http://127.0.0.1:9/callback"],
        token_endpoint_auth_method="private_key_jwt",
        jwks_uri=f"{live.documents.url}/clients/deep-keys.json",
    )
    unsigned = "eyJhbGciOiJSUzI1NiIsImtpZCI6ImsxIn0.e30.c2ln"  # {"alg":"RS256","kid":"k1"}.{}
    answer = agent.http.post(
        "/oauth/token",
        data={
            "grant_type": "refresh_token",
            "refresh_token": "x",
            "client_id": client_id,
            "client_assertion_type": ASSERTION_TYPE,
            "client_assertion": unsigned,
        },
    )
    assert answer.status_code == 401, answer.text
    assert answer.json() == {
        "error": "invalid_client",
        "error_description": "the client's jwks_uri did not answer JSON (or it nests too deeply)",
    }


@pytest.mark.parametrize(
    "host",
    [
        "[64:ff9b::7f00:1]",  # NAT64 (RFC 6052) of 127.0.0.1
        "[64:ff9b::a9fe:a9fe]",  # NAT64 of the cloud metadata address 169.254.169.254
        "[64:ff9b:1::808:808]",  # local-use NAT64 (RFC 8215): whatever the translator reaches
        "[2002:7f00:1::1]",  # 6to4 of 127.0.0.1
        "[2002:a00:1::1]",  # 6to4 of 10.0.0.1
        "[::127.0.0.1]",  # IPv4-compatible (deprecated)
        "[::a9fe:a9fe]",  # IPv4-compatible 169.254.169.254
        "[::ffff:10.1.2.3]",  # IPv4-mapped
        "[::ffff:0:7f00:1]",  # IPv4-translated (RFC 2765) of 127.0.0.1: issue 28's probe
        "[::ffff:0:a9fe:a9fe]",  # IPv4-translated 169.254.169.254
        "[2001:0:7f00:1::]",  # Teredo whose server is 127.0.0.1
        "[3fff::1]",  # documentation (RFC 9637), global to Python before 3.13
        "[fec0::1]",  # site-local (deprecated)
        "192.0.0.8",  # IETF protocol assignments (RFC 7600's ipv4only dummy address)
        "192.0.0.170",  # NAT64 discovery (RFC 7050)
    ],
)
def test_a_metadata_url_whose_address_reaches_a_private_network_is_refused_before_any_fetch(
    live: OAuthLive, agent: Browserless, host: str
) -> None:
    _, challenge = pkce_pair()
    page = agent.authorize(f"https://{host}/client.json", challenge)
    assert page.status_code == 400
    assert "resolves to a private or loopback address; refused" in page.text, page.text
