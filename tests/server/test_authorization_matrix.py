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

import hashlib
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
from tests.server.surface_snapshot import tool_names

pytestmark = pytest.mark.anyio


@dataclass(frozen=True)
class Endpoint:
    profile: str | None  # None: no such client
    token: str | None
    url_token: bool
    origins: frozenset[str]
    tools: frozenset[str]


ENDPOINTS: Final = {
    "admin": Endpoint("admin", ADMIN_TOKEN, False, frozenset(), frozenset(tool_names("default"))),
    "web": Endpoint(
        "web",
        WEB_TOKEN,
        True,
        frozenset({WEB_ORIGIN}),
        frozenset(tool_names("web")),
    ),
    "reader": Endpoint(
        "reader",
        READER_TOKEN,
        False,
        frozenset(),
        frozenset(tool_names("reader")),
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
        "message": "missing or invalid credential; send Authorization: Bearer <token> "
        "(or X-Api-Key: <token>)",
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
    if expected in (401, 403):
        assert response.json() == (UNAUTHORIZED if expected == 401 else FORBIDDEN)
        # A refusal is readable by a browser at a configured origin, never at another.
        cors = response.headers.get("access-control-allow-origin")
        assert cors == (WEB_ORIGIN if origin == WEB_ORIGIN else None)
        if expected == 401:
            assert response.headers["www-authenticate"] == "Bearer"
    else:
        names = {tool["name"] for tool in response.json()["result"]["tools"]}
        assert names == endpoint.tools
        if origin is not None:
            assert response.headers["access-control-allow-origin"] == origin


async def test_no_wrong_credential_anywhere_gets_a_success(harness: Harness) -> None:
    """The whole cross product at once, counted: the only 2xx are the model's."""
    bypasses, successes = [], 0
    refusals: dict[str, set[object]] = {name: set() for name in ORIGINS}
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
                refusals[origin_name].add(
                    (response.content, tuple(sorted(response.headers.multi_items())))
                )
    assert bypasses == []
    # admin: bearer, no origin; web: bearer or URL, no origin or its own; reader: bearer,
    # no origin — under both route forms.
    assert successes == 2 * (1 + 4 + 1)
    # For one origin, every 401 is byte-identical, headers included, whatever the reason
    # (unknown id, wrong token, another profile's token, a URL token where none is
    # accepted). Only the CORS headers differ between origins.
    assert [len(variants) for variants in refusals.values()] == [1] * len(ORIGINS)


@pytest.mark.parametrize("prefix", ["", "/metaCortexMcp"])
@pytest.mark.parametrize(
    ("endpoint_name", "origin", "status"),
    [
        ("web", WEB_ORIGIN, 204),
        ("web", "https://evil.example", 403),
        # Answered on the origin alone, so a preflight cannot tell which ids exist;
        # the POST then checks the profile's own origins.
        ("reader", WEB_ORIGIN, 204),
        ("admin", WEB_ORIGIN, 204),
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


NOT_FOUND: Final = {
    "error": {
        "code": "not_found",
        "message": "no such endpoint; MCP is served at POST /mcp and POST /clients/<id>/mcp",
    }
}
READER_DIGEST: Final = hashlib.sha256(READER_TOKEN.encode()).hexdigest()

# (path with query, Authorization header or None, expected status, the endpoint whose
# tools an allowed request lists). The edges of "a credential": where it may come from,
# which one wins, near misses of the token and of the route.
CREDENTIAL_EDGES: Final = [
    # The header wins over the URL: a wrong header is not rescued by a right URL token.
    pytest.param(
        f"/clients/web/mcp?auth_token={WEB_TOKEN}", "Bearer wrong", 401, None, id="bad-hdr+url"
    ),
    pytest.param(
        "/clients/web/mcp?auth_token=wrong", f"Bearer {WEB_TOKEN}", 200, "web", id="hdr+bad-url"
    ),
    pytest.param(
        f"/mcp?auth_token={ADMIN_TOKEN}", f"Bearer {ADMIN_TOKEN}", 200, "admin", id="admin-both"
    ),
    pytest.param("/clients/web/mcp?auth_token=", None, 401, None, id="empty-url-token"),
    pytest.param(f"/clients/web/mcp?AUTH_TOKEN={WEB_TOKEN}", None, 401, None, id="param-name-case"),
    pytest.param(f"/clients/web/mcp?token={WEB_TOKEN}", None, 401, None, id="other-param-name"),
    pytest.param(
        f"/clients/web/mcp?x=1&auth_token={WEB_TOKEN}", None, 200, "web", id="url-among-params"
    ),
    pytest.param(
        f"/clients/web/mcp?auth_token={WEB_TOKEN}%20", None, 401, None, id="url-trailing-space"
    ),
    pytest.param("/clients/web/mcp", f"Basic {WEB_TOKEN}", 401, None, id="basic-scheme"),
    pytest.param("/clients/web/mcp", WEB_TOKEN, 401, None, id="no-scheme"),
    pytest.param("/clients/web/mcp", "Bearer", 401, None, id="scheme-only"),
    pytest.param("/clients/web/mcp", "Bearer ", 401, None, id="scheme-and-space"),
    pytest.param("/clients/web/mcp", f"Bearer {WEB_TOKEN}x", 401, None, id="token-plus-one"),
    pytest.param("/clients/web/mcp", f"Bearer {WEB_TOKEN[:-1]}", 401, None, id="token-minus-one"),
    pytest.param("/clients/web/mcp", f"Bearer {WEB_TOKEN.upper()}", 401, None, id="token-upper"),
    pytest.param("/clients/web/mcp", f"Bearer  {WEB_TOKEN} ", 200, "web", id="token-padded"),
    # The stored digest of a token is not itself a credential.
    pytest.param("/clients/reader/mcp", f"Bearer {READER_DIGEST}", 401, None, id="digest-as-token"),
    # Route forms: one trailing slash is the same endpoint; nothing else aliases one.
    pytest.param("/clients/web/mcp/", f"Bearer {WEB_TOKEN}", 200, "web", id="trailing-slash"),
    pytest.param("/metaCortexMcp/mcp/", f"Bearer {ADMIN_TOKEN}", 200, "admin", id="prefixed-slash"),
    pytest.param("/clients/default/mcp", f"Bearer {ADMIN_TOKEN}", 401, None, id="default-id"),
    pytest.param("/clients/Web/mcp", f"Bearer {WEB_TOKEN}", 401, None, id="id-case"),
    pytest.param("/clients/web/mcp//", f"Bearer {WEB_TOKEN}", 404, None, id="two-slashes"),
    pytest.param("/clients//mcp", f"Bearer {ADMIN_TOKEN}", 404, None, id="empty-id"),
    pytest.param("/clients/web/reader/mcp", f"Bearer {READER_TOKEN}", 404, None, id="nested-id"),
    pytest.param(
        "/metaCortexMcp/metaCortexMcp/mcp", f"Bearer {ADMIN_TOKEN}", 404, None, id="2-prefix"
    ),
    pytest.param("/MCP", f"Bearer {ADMIN_TOKEN}", 404, None, id="path-case"),
]


@pytest.mark.parametrize(("url", "authorization", "status", "endpoint_name"), CREDENTIAL_EDGES)
async def test_credential_and_route_edges(
    harness: Harness, url: str, authorization: str | None, status: int, endpoint_name: str | None
) -> None:
    headers = JSON_HEADERS | {"mcp-protocol-version": "2026-07-28", "mcp-method": "tools/list"}
    if authorization is not None:
        headers["authorization"] = authorization
    async with harness.http() as http:
        response = await http.post(url, json=tools_list(), headers=headers)
    assert response.status_code == status
    if status == 401:
        assert response.json() == UNAUTHORIZED
        assert response.headers["www-authenticate"] == "Bearer"
    elif status == 404:
        assert response.json() == NOT_FOUND
    else:
        assert endpoint_name is not None
        names = {tool["name"] for tool in response.json()["result"]["tools"]}
        assert names == ENDPOINTS[endpoint_name].tools


@pytest.mark.parametrize(
    "origin",
    [
        WEB_ORIGIN.upper(),
        WEB_ORIGIN.replace("https://", "http://"),
        WEB_ORIGIN + ":8443",
        WEB_ORIGIN + "/",
        WEB_ORIGIN + " ",
        WEB_ORIGIN + ".evil.example",
        "https://evil.example?" + WEB_ORIGIN,
        f"{WEB_ORIGIN}, https://evil.example",
        "",
        "*",
    ],
)
async def test_an_origin_near_miss_is_refused_on_post_and_preflight(
    harness: Harness, origin: str
) -> None:
    """Exact match only: no case folding, prefix, suffix, list or wildcard."""
    headers = JSON_HEADERS | {"origin": origin, "authorization": f"Bearer {WEB_TOKEN}"}
    preflight = {"origin": origin, "access-control-request-method": "POST"}
    async with harness.http() as http:
        post = await http.post("/clients/web/mcp", json=tools_list(), headers=headers)
        options = await http.options("/clients/web/mcp", headers=preflight)
    for response in (post, options):
        assert response.status_code == 403
        assert response.json() == FORBIDDEN
        assert "access-control-allow-origin" not in response.headers
