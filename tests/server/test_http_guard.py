"""The HTTP surface: routes, credentials, origins, hosts, limits; every refusal is small JSON."""

from __future__ import annotations

import io
import json
import logging
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from metacortex.kernel.logs import JsonFormatter
from metacortex.service import MemoryService
from tests.server.conftest import (
    ADMIN_TOKEN,
    JSON_HEADERS,
    READER_TOKEN,
    WEB_ORIGIN,
    WEB_TOKEN,
    Harness,
    make_settings,
    started,
)

pytestmark = pytest.mark.anyio

PING = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
MODERN = {"mcp-protocol-version": "2026-07-28"}


def modern_call(method: str) -> dict[str, Any]:
    """A 2026-07-28 stateless request (send it with modern_headers(method))."""
    meta = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "raw-test", "version": "1"},
    }
    return {"jsonrpc": "2.0", "id": 7, "method": method, "params": {"_meta": meta}}


def modern_headers(method: str = "tools/list", **extra: str) -> dict[str, str]:
    return JSON_HEADERS | MODERN | {"mcp-method": method} | extra


def error_of(response: Any) -> dict[str, str]:
    assert response.headers["content-type"] == "application/json"
    body = response.json()
    assert set(body) == {"error"}
    assert set(body["error"]) == {"code", "message"}
    return dict(body["error"])


async def test_healthz_answers_ok_and_nothing_else(harness: Harness) -> None:
    async with harness.http() as http:
        for path in ("/healthz", "/metaCortexMcp/healthz"):
            response = await http.get(path)
            assert response.status_code == 200
            assert response.json() == {"status": "ok"}
        assert error_of(await http.post("/healthz"))["code"] == "method_not_allowed"


async def test_unknown_paths_get_a_json_404(harness: Harness) -> None:
    async with harness.http(ADMIN_TOKEN) as http:
        response = await http.get("/admin/../etc/passwd")
        assert response.status_code == 404
        assert error_of(response)["code"] == "not_found"
        response = await http.post("/clients/web/mcp/extra", json=PING, headers=JSON_HEADERS)
        assert response.status_code == 404


@pytest.mark.parametrize(
    "path", ["/mcp", "/mcp/", "/metaCortexMcp/mcp", "/metaCortexMcp/clients/web/mcp"]
)
async def test_every_route_form_serves_mcp(harness: Harness, path: str) -> None:
    token = WEB_TOKEN if "clients" in path else ADMIN_TOKEN
    async with harness.http(token) as http:
        response = await http.post(
            path, json=modern_call("tools/list"), headers=modern_headers("tools/list")
        )
    assert response.status_code == 200
    assert response.json()["result"]["tools"]


@pytest.mark.parametrize("method", ["GET", "DELETE", "PUT"])
async def test_methods_other_than_post_are_405_on_mcp_routes(harness: Harness, method: str) -> None:
    async with harness.http(ADMIN_TOKEN) as http:
        response = await http.request(method, "/mcp", headers={"accept": "text/event-stream"})
    assert response.status_code == 405
    assert response.headers["allow"] == "POST, OPTIONS"
    assert error_of(response)["code"] == "method_not_allowed"


async def test_unknown_client_and_wrong_token_get_the_identical_401(harness: Harness) -> None:
    responses = []
    async with harness.http() as http:
        for path, token in [
            ("/clients/nobody/mcp", WEB_TOKEN),
            ("/clients/web/mcp", "x" * 43),
            ("/clients/web/mcp", None),
            ("/clients/web/mcp", ADMIN_TOKEN),
            ("/mcp", WEB_TOKEN),
        ]:
            headers = JSON_HEADERS | ({"authorization": f"Bearer {token}"} if token else {})
            responses.append(await http.post(path, json=PING, headers=headers))
    first = responses[0]
    assert first.status_code == 401
    assert first.headers["www-authenticate"] == "Bearer"
    for response in responses:
        assert (response.status_code, response.content) == (first.status_code, first.content)
        assert response.headers["www-authenticate"] == "Bearer"
    assert error_of(first)["code"] == "unauthorized"


async def test_the_bearer_scheme_is_case_insensitive(harness: Harness) -> None:
    async with harness.http() as http:
        headers = JSON_HEADERS | {"authorization": f"bearer {ADMIN_TOKEN}"}
        response = await http.post(
            "/mcp", json=modern_call("tools/list"), headers=headers | modern_headers()
        )
    assert response.status_code == 200


async def test_a_url_token_works_only_for_profiles_that_opt_in_and_is_never_recorded(
    harness: Harness, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="metacortex")
    async with harness.http() as http:
        allowed = await http.post(
            f"/clients/web/mcp?auth_token={WEB_TOKEN}",
            json=modern_call("tools/list"),
            headers=modern_headers("tools/list"),
        )
        refused = await http.post(
            f"/clients/reader/mcp?auth_token={READER_TOKEN}", json=PING, headers=JSON_HEADERS
        )
        refused_admin = await http.post(
            f"/mcp?auth_token={ADMIN_TOKEN}", json=PING, headers=JSON_HEADERS
        )
    assert allowed.status_code == 200
    assert refused.status_code == 401
    assert refused_admin.status_code == 401
    formatter = JsonFormatter()  # what a log line would actually hold, fields included
    server_logs = [formatter.format(r) for r in caplog.records if r.name.startswith("metacortex")]
    recorded = json.dumps(harness.events()) + json.dumps(server_logs)
    for token in (WEB_TOKEN, READER_TOKEN, ADMIN_TOKEN):
        assert token not in recorded
    # The query is kept only as its length and a digest of its redacted form.
    assert '"query": {"chars": ' in recorded


async def test_an_origin_must_match_the_profile_exactly(harness: Harness) -> None:
    async with harness.http(WEB_TOKEN) as http:
        ok = await http.post(
            "/clients/web/mcp",
            json=modern_call("tools/list"),
            headers=modern_headers(origin=WEB_ORIGIN),
        )
        assert ok.status_code == 200
        assert ok.headers["access-control-allow-origin"] == WEB_ORIGIN
        for origin in (WEB_ORIGIN + ":443", WEB_ORIGIN + "/", "https://evil.example.com", "null"):
            refused = await http.post(
                "/clients/web/mcp", json=PING, headers=JSON_HEADERS | {"origin": origin}
            )
            assert refused.status_code == 403, origin
            assert "access-control-allow-origin" not in refused.headers
            assert error_of(refused)["code"] == "forbidden"
    async with harness.http(ADMIN_TOKEN) as http:
        # The admin endpoint allows no browser origin unless MCP_ALLOWED_ORIGINS says so.
        refused = await http.post("/mcp", json=PING, headers=JSON_HEADERS | {"origin": WEB_ORIGIN})
        assert refused.status_code == 403


async def test_cors_preflight_answers_a_configured_origin(harness: Harness) -> None:
    preflight = {
        "origin": WEB_ORIGIN,
        "access-control-request-method": "POST",
        "access-control-request-headers": "authorization, content-type, mcp-protocol-version, x-y",
    }
    async with harness.http() as http:
        ok = await http.options("/clients/web/mcp", headers=preflight)
        assert ok.status_code == 204
        assert ok.headers["access-control-allow-origin"] == WEB_ORIGIN
        assert ok.headers["access-control-allow-methods"] == "POST, OPTIONS"
        allowed_headers = ok.headers["access-control-allow-headers"]
        assert allowed_headers == "authorization, content-type, mcp-protocol-version"
        stranger = await http.options(
            "/clients/web/mcp", headers=preflight | {"origin": "https://evil.example.com"}
        )
        assert stranger.status_code == 403
        assert "access-control-allow-origin" not in stranger.headers


async def test_a_preflight_does_not_reveal_which_client_ids_exist(harness: Harness) -> None:
    """Issue 8 item 9: a known id whose profile lacks the origin answered 403 while an
    unknown id answered 204, so a preflight told which ids exist. Now the answer depends
    on the origin alone; the POST still enforces the profile's own origins."""
    preflight = {"origin": WEB_ORIGIN, "access-control-request-method": "POST"}
    async with harness.http() as http:
        answers = [
            await http.options(path, headers=preflight)
            for path in ("/clients/reader/mcp", "/clients/no-such-id/mcp", "/mcp")
        ]
        assert {(a.status_code, a.headers.get("access-control-allow-origin")) for a in answers} == {
            (204, WEB_ORIGIN)
        }
    async with harness.http(READER_TOKEN) as http:
        refused = await http.post(
            "/clients/reader/mcp", json=PING, headers=JSON_HEADERS | {"origin": WEB_ORIGIN}
        )
        assert refused.status_code == 403


async def test_refusals_carry_cors_headers_for_a_configured_origin(harness: Harness) -> None:
    """Issue 8 item 10: without CORS headers a browser sees a network error instead of
    the 401 and its WWW-Authenticate (or a 406, 413, 415, 429 and its Retry-After)."""
    async with harness.http() as http:
        unauthorized = await http.post(
            "/clients/web/mcp", json=PING, headers=JSON_HEADERS | {"origin": WEB_ORIGIN}
        )
        assert unauthorized.status_code == 401
        assert unauthorized.headers["access-control-allow-origin"] == WEB_ORIGIN
        assert "www-authenticate" in unauthorized.headers["access-control-expose-headers"]
        assert "retry-after" in unauthorized.headers["access-control-expose-headers"]
        stranger = await http.post(
            "/clients/web/mcp", json=PING, headers=JSON_HEADERS | {"origin": "https://evil.example"}
        )
        assert stranger.status_code == 401
        assert "access-control-allow-origin" not in stranger.headers
    async with harness.http(WEB_TOKEN) as http:
        unsupported = await http.post(
            "/clients/web/mcp",
            content=json.dumps(PING),
            headers={"content-type": "text/plain", "origin": WEB_ORIGIN},
        )
        assert unsupported.status_code == 415
        assert unsupported.headers["access-control-allow-origin"] == WEB_ORIGIN


async def test_a_foreign_host_header_is_refused_against_dns_rebinding(harness: Harness) -> None:
    async with harness.http(ADMIN_TOKEN) as http:
        refused = await http.post(
            "/mcp", json=PING, headers=JSON_HEADERS | {"host": "attacker.example:8765"}
        )
        assert refused.status_code == 421
        assert error_of(refused)["code"] == "host_not_allowed"
        for host in ("127.0.0.1:8765", "localhost", "[::1]:9000"):
            response = await http.post(
                "/mcp", json=modern_call("tools/list"), headers=modern_headers(host=host)
            )
            assert response.status_code == 200, host


async def test_malformed_loopback_look_alikes_are_not_loopback(harness: Harness) -> None:
    """Issue 8 item 8: ``[::1]evil.com`` and ``[::1]:x`` once passed as loopback."""
    async with harness.http(ADMIN_TOKEN) as http:
        for host in ("[::1]evil.com", "[::1]:x", "[::1", "localhost:80:80", "127.0.0.1:"):
            refused = await http.post(
                "/mcp", json=modern_call("tools/list"), headers=modern_headers(host=host)
            )
            assert refused.status_code == 421, host
            assert error_of(refused)["code"] == "host_not_allowed"


async def test_healthz_checks_the_host_too(harness: Harness) -> None:
    async with harness.http() as http:
        refused = await http.get("/healthz", headers={"host": "attacker.example"})
        assert refused.status_code == 421
        assert error_of(refused)["code"] == "host_not_allowed"
        assert (await http.get("/healthz", headers={"host": "127.0.0.1:8765"})).status_code == 200


async def test_configured_hosts_are_accepted(tmp_path: Path, service: MemoryService) -> None:
    settings = make_settings(
        tmp_path, metacortex_allowed_hosts="memory.example.org,*.run.app,api.example:8443"
    )
    async with started(settings, service) as harness, harness.http(ADMIN_TOKEN) as http:
        for host, status in [
            ("memory.example.org", 200),
            ("memory.example.org:443", 200),
            ("x-y.a.run.app", 200),
            ("run.app", 421),
            ("api.example:8443", 200),
            ("api.example:80", 421),
        ]:
            response = await http.post(
                "/mcp", json=modern_call("tools/list"), headers=modern_headers(host=host)
            )
            assert response.status_code == status, host


async def test_bodies_over_the_limit_are_413_whether_declared_or_streamed(
    tmp_path: Path, service: MemoryService
) -> None:
    settings = make_settings(tmp_path, metacortex_max_body_bytes=2048)
    big = json.dumps({**PING, "params": {"pad": "x" * 4000}}).encode()

    async def chunks() -> AsyncIterator[bytes]:
        for start in range(0, len(big), 512):
            yield big[start : start + 512]

    async with started(settings, service) as harness, harness.http(ADMIN_TOKEN) as http:
        declared = await http.post("/mcp", content=big, headers=JSON_HEADERS)
        streamed = await http.post("/mcp", content=chunks(), headers=JSON_HEADERS)
        small = await http.post("/mcp", json=modern_call("tools/list"), headers=modern_headers())
    for response in (declared, streamed):
        assert response.status_code == 413
        assert error_of(response)["code"] == "payload_too_large"
    assert small.status_code == 200


async def test_non_json_requests_are_refused_with_json(harness: Harness) -> None:
    async with harness.http(ADMIN_TOKEN) as http:
        wrong_type = await http.post(
            "/mcp", content=b"{}", headers={"content-type": "text/plain", "accept": "*/*"}
        )
        assert wrong_type.status_code == 415
        assert error_of(wrong_type)["code"] == "unsupported_media_type"
        wrong_accept = await http.post(
            "/mcp", json=PING, headers={"content-type": "application/json", "accept": "text/html"}
        )
        assert wrong_accept.status_code == 406
        assert error_of(wrong_accept)["code"] == "not_acceptable"


@pytest.mark.parametrize("protocol", [{}, MODERN])
async def test_an_unparseable_body_gets_a_json_rpc_error(
    harness: Harness, protocol: dict[str, str]
) -> None:
    async with harness.http(ADMIN_TOKEN) as http:
        response = await http.post(
            "/mcp", content=b'{"jsonrpc": "2.0", "id": 1,', headers=JSON_HEADERS | protocol
        )
    assert response.status_code == 400
    assert response.headers["content-type"].startswith("application/json")
    body = response.json()
    assert body["jsonrpc"] == "2.0"
    assert body["error"]["code"] == -32700


async def test_the_rate_limit_is_per_profile_with_retry_after(
    tmp_path: Path, service: MemoryService
) -> None:
    settings = make_settings(
        tmp_path, metacortex_rate_limit_per_minute=2, metacortex_admin_rate_limit_per_minute=2
    )
    async with started(settings, service) as harness:
        async with harness.http(ADMIN_TOKEN) as http:
            statuses = [
                (await http.post("/mcp", json=modern_call("tools/list"), headers=modern_headers()))
                for _ in range(3)
            ]
        async with harness.http(WEB_TOKEN) as http:
            other = await http.post(
                "/clients/web/mcp", json=modern_call("tools/list"), headers=modern_headers()
            )
        assert [r.status_code for r in statuses] == [200, 200, 429]
        limited = statuses[2]
        retry_after = int(limited.headers["retry-after"])
        assert retry_after >= 1
        body = limited.json()  # a JSON-RPC error, so that MCP clients show its message
        assert (body["jsonrpc"], body["id"]) == ("2.0", None)
        assert body["error"]["data"] == {"code": "rate_limited", "retry_after_seconds": retry_after}
        assert f"retry after {retry_after} s" in body["error"]["message"]
        assert other.status_code == 200  # another profile has its own bucket


async def test_rejections_are_recorded_with_their_reason(harness: Harness) -> None:
    async with harness.http() as http:
        await http.post("/clients/nobody/mcp", json=PING, headers=JSON_HEADERS)
        await http.get("/mcp", headers={"authorization": f"Bearer {ADMIN_TOKEN}"})
        await http.post(
            "/clients/web/mcp",
            json=PING,
            headers=JSON_HEADERS
            | {"authorization": f"Bearer {WEB_TOKEN}", "origin": "https://x.y"},
        )
    rejected = [e for e in harness.events() if e["event_type"] == "request_rejected"]
    assert [(e["client_id"], e["reason"], e["http_status"]) for e in rejected] == [
        ("nobody", "unauthorized", 401),
        ("default", "method_not_allowed", 405),
        ("web", "origin_not_allowed", 403),
    ]
    for event in rejected:
        assert event["status"] == "rejected"
        assert event["timestamp"] < event["expires_at"]
        assert event["latency_ms"] >= 0


async def test_requests_and_tool_calls_are_logged_as_cloud_logging_json(harness: Harness) -> None:
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(JsonFormatter())
    server_logger = logging.getLogger("metacortex.server")
    server_logger.addHandler(handler)
    previous = server_logger.level
    server_logger.setLevel(logging.INFO)
    try:
        async with harness.connect() as admin:
            await admin.call_tool("search_context", {"query": "anything at all"})
    finally:
        server_logger.removeHandler(handler)
        server_logger.setLevel(previous)
    entries = [json.loads(line) for line in stream.getvalue().splitlines()]
    tool = next(e for e in entries if e["message"] == "tool search_context ok")
    assert tool["severity"] == "INFO"
    assert tool["client_id"] == "default"
    assert tool["latency_ms"] >= 0
    request = next(e for e in entries if "httpRequest" in e)
    assert request["httpRequest"]["requestMethod"] == "POST"
    assert request["httpRequest"]["status"] == 200
    assert request["httpRequest"]["latency"].endswith("s")
    assert "anything at all" not in stream.getvalue()


async def test_the_cloud_deployment_checks_hosts_only_once_they_are_configured(
    tmp_path: Path, service: MemoryService
) -> None:
    for configured, status in [("", 200), ("memory.example.org", 421)]:
        settings = make_settings(tmp_path, deployment="cloud", metacortex_allowed_hosts=configured)
        async with started(settings, service) as harness, harness.http(ADMIN_TOKEN) as http:
            response = await http.post(
                "/mcp",
                json=modern_call("tools/list"),
                headers=modern_headers(host="abc-uc.a.run.app"),
            )
        assert response.status_code == status, configured


async def test_a_json_rpc_batch_is_refused_as_invalid_request_with_a_short_message(
    harness: Harness,
) -> None:
    """Issue 8 item 14: a batch answered -32602 with a pydantic dump."""
    async with harness.http(ADMIN_TOKEN) as http:
        response = await http.post("/mcp", json=[PING, PING], headers=JSON_HEADERS)
    assert response.status_code == 400
    body = response.json()
    assert body["jsonrpc"] == "2.0"
    assert body["id"] is None
    assert body["error"]["code"] == -32600
    assert "batch" in body["error"]["message"]
    assert len(body["error"]["message"]) < 200


async def test_a_missing_accept_header_means_anything(harness: Harness) -> None:
    async with harness.http(ADMIN_TOKEN) as http:
        request = http.build_request(
            "POST",
            "/mcp",
            content=json.dumps(modern_call("tools/list")),
            headers={
                "content-type": "Application/JSON; charset=UTF-8",
                "mcp-protocol-version": "2026-07-28",
                "mcp-method": "tools/list",
            },
        )
        del request.headers["accept"]
        assert "accept" not in request.headers
        response = await http.send(request)
    assert response.status_code == 200, response.text
    assert response.json()["result"]["tools"]


async def test_an_unsupported_protocol_version_header_is_named_in_the_refusal(
    harness: Harness,
) -> None:
    """Issue 8 item 14: the refusal talked about params._meta, not the header at fault."""
    async with harness.http(ADMIN_TOKEN) as http:
        response = await http.post(
            "/mcp", json=PING, headers=JSON_HEADERS | {"mcp-protocol-version": "1999-01-01"}
        )
    assert response.status_code == 400
    message = response.json()["error"]["message"]
    assert "MCP-Protocol-Version" in message
    assert "1999-01-01" in message
    assert "2025-11-25" in message


async def test_a_loopback_bind_accepts_loopback_origins_on_every_endpoint(
    tmp_path: Path, service: MemoryService
) -> None:
    """Issue 8 item 15: as the SDK does, a server bound to loopback takes local pages
    (``http://localhost:*``, ``http://127.0.0.1:*``, ``http://[::1]:*``) by default."""
    settings = make_settings(tmp_path, bind_is_loopback=True)
    local = [
        "http://localhost:5173",
        "http://127.0.0.1:3000",
        "http://[::1]:8080",
        "http://localhost",
    ]
    async with started(settings, service) as harness, harness.http(ADMIN_TOKEN) as http:
        for origin in local:
            response = await http.post(
                "/mcp", json=modern_call("tools/list"), headers=modern_headers(origin=origin)
            )
            assert response.status_code == 200, origin
            assert response.headers["access-control-allow-origin"] == origin
            preflight = await http.options(
                "/clients/reader/mcp",
                headers={"origin": origin, "access-control-request-method": "POST"},
            )
            assert preflight.status_code == 204, origin
        for origin in ("http://localhost.evil.example", "https://localhost:5173", "http://evil:1"):
            refused = await http.post("/mcp", json=PING, headers=JSON_HEADERS | {"origin": origin})
            assert refused.status_code == 403, origin


async def test_a_public_bind_keeps_its_exact_origin_lists(harness: Harness) -> None:
    async with harness.http(ADMIN_TOKEN) as http:
        refused = await http.post(
            "/mcp", json=PING, headers=JSON_HEADERS | {"origin": "http://localhost:5173"}
        )
    assert refused.status_code == 403
