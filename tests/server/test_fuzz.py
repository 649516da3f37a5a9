"""Fuzzing the wire: whatever arrives, the answer is JSON, specific, never a 5xx
or a stack trace, and a rejected call changes no stored record.

Hypothesis throws malformed bodies at the raw endpoint, and arbitrary argument
objects (wrong types, missing and unknown fields, huge and unicode values,
lone surrogates, NUL) at every tool over the real MCP transport.

The tests are synchronous and drive the app in a blocking portal's event loop:
Hypothesis then owns the loop over examples, and one started app (and store)
lives across all examples of a test, as a server would.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Final

import anyio.from_thread
import httpx2
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from metacortex.config import Settings
from metacortex.domain.records import Memory
from metacortex.operations.walk import all_memories
from metacortex.server.tools import TOOLS
from metacortex.service import Access, MemoryService
from tests.server.conftest import ADMIN_TOKEN, JSON_HEADERS, Harness, started

SPEC_CODES: Final = {
    "invalid_argument",
    "not_found",
    "forbidden",
    "conflict",
    "failed_precondition",
    "unavailable",
    "rate_limited",
}
FUZZ: Final = settings(
    max_examples=120,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
MODERN: Final = {"mcp-protocol-version": "2026-07-28"}
META: Final = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
    "io.modelcontextprotocol/clientInfo": {"name": "fuzz", "version": "1"},
}

nasty_text = st.one_of(
    st.text(max_size=40),
    st.text(st.characters(codec=None, exclude_categories=()), max_size=40),  # surrogates too
    st.sampled_from(["", " ", "\x00", "\u202e", "🧠" * 5, "a\x00b", "\ud800", "null", "[]"]),
    st.integers(20_000, 300_000).map(lambda n: "é" * n),  # past every text limit
)
json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | nasty_text,
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(nasty_text, inner, max_size=4),
    max_leaves=12,
)


def snapshot(harness: Harness) -> list[Memory]:
    return [memory for page in all_memories(harness.service.store) for memory in page]


def check_json_answer(status: int, content_type: str, text: str) -> Any:
    assert status < 500, text[:300]
    assert content_type.startswith("application/json"), (status, content_type, text[:300])
    assert "Traceback" not in text
    assert 'File "' not in text
    return json.loads(text)


def tool_error(body: dict[str, Any]) -> dict[str, str] | None:
    """The ``{"code", "message"}`` of a failed call, None when it succeeded.

    A JSON-RPC error (the request itself was malformed) counts as a failure too.
    """
    if "error" in body:
        error = body["error"]
        assert isinstance(error["code"], int)
        assert error["message"]
        return {"code": str(error["code"]), "message": error["message"]}
    result = body["result"]
    if not result.get("isError"):
        assert result["structuredContent"] == json.loads(result["content"][0]["text"])
        return None
    failure = json.loads(result["content"][0]["text"])
    assert set(failure) == {"error"}
    code, message = failure["error"]["code"], failure["error"]["message"]
    assert code in SPEC_CODES
    assert message
    assert "failed unexpectedly" not in message, message
    return {"code": code, "message": message}


def seed(harness: Harness) -> None:
    service, admin = harness.service, Access.admin()
    service.save(admin, content="The fuzz baseline: Falcon ships in Q3.", topic="fuzz")
    service.save(admin, content="A draft that must survive the fuzzing.", topic="fuzz", draft=True)
    service.save(admin, content="Replacement.", topic="fuzz")


@dataclass
class Wire:
    """A started app in a portal's event loop, and a way to POST to it."""

    portal: anyio.from_thread.BlockingPortal
    harness: Harness

    def post(self, content: str | bytes, headers: dict[str, str]) -> httpx2.Response:
        async def send() -> httpx2.Response:
            async with self.harness.http(ADMIN_TOKEN) as http:
                return await http.post("/mcp", content=content, headers=headers)

        return self.portal.call(send)

    def snapshot(self) -> list[Memory]:
        return snapshot(self.harness)


@pytest.fixture
def wire(settings: Settings, service: MemoryService) -> Iterator[Wire]:
    with (
        anyio.from_thread.start_blocking_portal() as portal,
        portal.wrap_async_context_manager(started(settings, service)) as harness,
    ):
        seed(harness)
        yield Wire(portal, harness)


@given(body=st.one_of(st.binary(max_size=400), json_values.map(json.dumps)))
@FUZZ
def test_any_body_at_the_raw_endpoint_gets_a_json_answer(wire: Wire, body: str | bytes) -> None:
    before = wire.snapshot()
    response = wire.post(body, JSON_HEADERS)
    check_json_answer(response.status_code, response.headers["content-type"], response.text)
    assert wire.snapshot() == before


@given(
    method=st.one_of(st.sampled_from(["tools/call", "tools/list", "prompts/get"]), nasty_text),
    params=json_values,
    request_id=json_values,
)
@FUZZ
def test_any_json_rpc_envelope_gets_a_json_answer(
    wire: Wire, method: str, params: Any, request_id: Any
) -> None:
    before = wire.snapshot()
    message = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}
    response = wire.post(json.dumps(message), JSON_HEADERS | MODERN)
    check_json_answer(response.status_code, response.headers["content-type"], response.text)
    assert wire.snapshot() == before


@pytest.mark.parametrize("tool", sorted(TOOLS))
@given(data=st.data())
@FUZZ
def test_any_arguments_to_any_tool_get_success_or_a_specific_error(
    wire: Wire, tool: str, data: st.DataObject
) -> None:
    fields = sorted(TOOLS[tool].input_model.model_fields)
    arguments = data.draw(
        st.dictionaries(st.sampled_from(fields) | nasty_text, json_values, max_size=6),
        label="arguments",
    )
    before = wire.snapshot()
    call = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": tool, "arguments": arguments, "_meta": META},
    }
    headers = JSON_HEADERS | MODERN | {"mcp-method": "tools/call", "mcp-name": tool}
    response = wire.post(json.dumps(call), headers)
    body = check_json_answer(response.status_code, response.headers["content-type"], response.text)
    if response.status_code != 200:  # refused before MCP (e.g. a body over the limit)
        assert set(body) == {"error"}
        assert wire.snapshot() == before
        return
    failure = tool_error(body)
    event(f"outcome: {failure['code'] if failure else 'success'}")
    if failure is not None:
        assert wire.snapshot() == before
