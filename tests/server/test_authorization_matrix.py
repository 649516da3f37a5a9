"""Every MCP route × every way of presenting a credential × every Origin case,
against the exact status and JSON body, with zero bypasses.

The expected outcome comes from a small reference model of spec §3 (a token
opens only its own profile's endpoint; a URL token only where the profile opts
in; an Origin, when sent, must be one of that profile's origins exactly; an
unknown client and a wrong token are indistinguishable), written
independently of the guard. Allowed requests must really reach MCP: their
``tools/list`` is the profile's tool set.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any, Final

import pytest

from tests.server.conftest import (
    ADMIN_TOKEN,
    JSON_HEADERS,
    READER_TOKEN,
    WEB_ORIGIN,
    WEB_TOKEN,
    Harness,
)

pytestmark = pytest.mark.anyio

ALL_TOOLS: Final = {
    "save_context",
    "search_context",
    "fetch_context",
    "list_context",
    "deprecate_context",
    "consolidate_context",
}


@dataclass(frozen=True)
class Endpoint:
    profile: str | None  # None: no such client
    token: str | None
    url_token: bool
    origins: frozenset[str]
    tools: frozenset[str]


ENDPOINTS: Final = {
    "admin": Endpoint("admin", ADMIN_TOKEN, False, frozenset(), frozenset(ALL_TOOLS)),
    "web": Endpoint(
        "web",
        WEB_TOKEN,
        True,
        frozenset({WEB_ORIGIN}),
        frozenset({"save_context", "search_context", "fetch_context"}),
    ),
    "reader": Endpoint(
        "reader",
        READER_TOKEN,
        False,
        frozenset(),
        frozenset({"search_context", "fetch_context", "list_context"}),
    ),
    "nosuch": Endpoint(None, None, False, frozenset(), frozenset()),
}
PATHS: Final = {
    "admin": "/mcp",
    "web": "/clients/web/mcp",
    "reader": "/clients/reader/mcp",
    "nosuch": "/clients/nosuch/mcp",
}
ROUTES: Final = [
    (prefix + path, name) for prefix in ("", "/metaCortexMcp") for name, path in PATHS.items()
]
TOKENS: Final = {
    "none": None,
    "wrong": "W" * 43,
    "admin": ADMIN_TOKEN,
    "web": WEB_TOKEN,
    "reader": READER_TOKEN,
}
ORIGINS: Final = {
    "no origin": None,
    "allowed origin": WEB_ORIGIN,
    "evil origin": "https://evil.example",
}

UNAUTHORIZED: Final = {
    "error": {
        "code": "unauthorized",
        "message": "missing or invalid credential; send Authorization: Bearer <token>",
    }
}
FORBIDDEN: Final = {
    "error": {"code": "forbidden", "message": "this Origin is not allowed for this endpoint"}
}


def expected_status(endpoint: Endpoint, token: str | None, in_url: bool, origin: str | None) -> int:
    """Spec §3 as a reference model."""
    if token is None or endpoint.token is None or token != endpoint.token:
        return 401
    if in_url and not endpoint.url_token:
        return 401
    if origin is not None and origin not in endpoint.origins:
        return 403
    return 200


def tools_list() -> dict[str, Any]:
    meta = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "matrix", "version": "1"},
    }
    return {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": meta}}


CASES: Final = [
    pytest.param(
        path,
        name,
        token_name,
        in_url,
        origin_name,
        id=f"{path}|{token_name}{'(url)' if in_url else ''}|{origin_name}",
    )
    for (path, name), token_name, in_url, origin_name in itertools.product(
        ROUTES, TOKENS, (False, True), ORIGINS
    )
    if not (in_url and token_name == "none")
]


@pytest.mark.parametrize(("path", "endpoint_name", "token_name", "in_url", "origin_name"), CASES)
async def test_each_route_credential_and_origin_gets_exactly_its_status_and_body(
    harness: Harness,
    path: str,
    endpoint_name: str,
    token_name: str,
    in_url: bool,
    origin_name: str,
) -> None:
    endpoint = ENDPOINTS[endpoint_name]
    token = TOKENS[token_name]
    origin = ORIGINS[origin_name]
    headers = JSON_HEADERS | {"mcp-protocol-version": "2026-07-28", "mcp-method": "tools/list"}
    url = path
    if token is not None and in_url:
        url = f"{path}?auth_token={token}"
    elif token is not None:
        headers["authorization"] = f"Bearer {token}"
    if origin is not None:
        headers["origin"] = origin
    async with harness.http() as http:
        response = await http.post(url, json=tools_list(), headers=headers)

    expected = expected_status(endpoint, token, in_url, origin)
    assert response.status_code == expected
    assert response.headers["content-type"].startswith("application/json")
    if expected == 401:
        assert response.json() == UNAUTHORIZED
        assert response.headers["www-authenticate"] == "Bearer"
        assert "access-control-allow-origin" not in response.headers
    elif expected == 403:
        assert response.json() == FORBIDDEN
        assert "access-control-allow-origin" not in response.headers
    else:
        names = {tool["name"] for tool in response.json()["result"]["tools"]}
        assert names == endpoint.tools
        if origin is not None:
            assert response.headers["access-control-allow-origin"] == origin


async def test_no_wrong_credential_anywhere_gets_a_success(harness: Harness) -> None:
    """The whole cross product at once, counted: the only 2xx are the model's."""
    bypasses, successes, refusals = [], 0, set()
    async with harness.http() as http:
        for (path, name), token_name, in_url, origin_name in itertools.product(
            ROUTES, TOKENS, (False, True), ORIGINS
        ):
            token, origin = TOKENS[token_name], ORIGINS[origin_name]
            headers = dict(JSON_HEADERS)
            url = f"{path}?auth_token={token}" if token and in_url else path
            if token and not in_url:
                headers["authorization"] = f"Bearer {token}"
            if origin:
                headers["origin"] = origin
            response = await http.post(
                url, json={"jsonrpc": "2.0", "id": 1, "method": "ping"}, headers=headers
            )
            allowed = expected_status(ENDPOINTS[name], token, in_url, origin) == 200
            if response.is_success and not allowed:
                bypasses.append((url, token_name, origin_name))
            successes += response.is_success
            if response.status_code == 401:
                refusals.add(response.content)
    assert bypasses == []
    # admin: bearer, no origin; web: bearer or URL, no origin or its own; reader: bearer,
    # no origin — under both route forms.
    assert successes == 2 * (1 + 4 + 1)
    assert len(refusals) == 1  # every 401 is byte-identical, whatever the reason


@pytest.mark.parametrize("prefix", ["", "/metaCortexMcp"])
@pytest.mark.parametrize(
    ("endpoint_name", "origin", "status"),
    [
        ("web", WEB_ORIGIN, 204),
        ("web", "https://evil.example", 403),
        ("reader", WEB_ORIGIN, 403),
        ("admin", WEB_ORIGIN, 403),
        # An unknown id answers like a profile that allows every configured origin,
        # so a preflight cannot tell which client ids exist.
        ("nosuch", WEB_ORIGIN, 204),
        ("nosuch", "https://evil.example", 403),
    ],
)
async def test_cors_preflight_matrix(
    harness: Harness, prefix: str, endpoint_name: str, origin: str, status: int
) -> None:
    headers = {"origin": origin, "access-control-request-method": "POST"}
    async with harness.http() as http:
        response = await http.options(prefix + PATHS[endpoint_name], headers=headers)
    assert response.status_code == status
    if status == 204:
        assert response.headers["access-control-allow-origin"] == origin
        assert response.headers["access-control-allow-methods"] == "POST, OPTIONS"
    else:
        assert response.json() == FORBIDDEN
        assert "access-control-allow-origin" not in response.headers


@pytest.mark.parametrize("path", ["/healthz", "/metaCortexMcp/healthz"])
async def test_health_needs_no_credential_and_reveals_nothing(harness: Harness, path: str) -> None:
    async with harness.http() as http:
        response = await http.get(path)
    assert response.status_code == 200
    assert response.json() == {"status": "ok"}
