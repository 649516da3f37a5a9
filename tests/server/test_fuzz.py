"""Fuzzing the wire: whatever arrives, the answer is JSON, specific, never a 5xx
or a stack trace, and a rejected call changes no stored record.

Hypothesis throws malformed bodies and headers at the raw endpoint, and
arbitrary argument objects (wrong types, missing and unknown fields, huge and
unicode values, lone surrogates, NUL) at every tool, both as raw JSON-RPC and
through the SDK's own ``mcp.Client`` on every profile's endpoint.

The tests are synchronous and drive the app in a blocking portal's event loop:
Hypothesis then owns the loop over examples, and one started app (and store)
lives across all examples of a test, as a server would.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import anyio.from_thread
import httpx2
import mcp_types as types
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from metacortex.domain.records import Memory
from metacortex.mcp_surface.tools import TOOLS
from metacortex.operations.walk import all_memories
from metacortex.service import Access, MemoryService
from tests.server.conftest import (
    ADMIN_TOKEN,
    JSON_HEADERS,
    READER_TOKEN,
    WEB_TOKEN,
    Harness,
    client_profiles,
    make_settings,
    started,
)

SPEC_CODES: Final = {
    "invalid_argument",
    "not_found",
    "forbidden",
    "conflict",
    "failed_precondition",
    "unavailable",
    "rate_limited",
}
# The guard's refusals that a well-authenticated request can still meet.
GUARD_CODES: Final = {"payload_too_large", "unsupported_media_type", "not_acceptable"}
BODY_LIMIT: Final = 1024 * 1024  # the default, which these tests keep
FUZZ: Final = settings(
    max_examples=100,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
TOOL_FUZZ: Final = settings(FUZZ, max_examples=50)  # per tool and kind of call
MODERN: Final = {"mcp-protocol-version": "2026-07-28"}
META: Final = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
    "io.modelcontextprotocol/clientInfo": {"name": "fuzz", "version": "1"},
}
TOOLS_OF: Final = {
    "/mcp": frozenset(TOOLS),
    **{
        f"/clients/{entry['id']}/mcp": frozenset(entry["allowedTools"])
        for entry in client_profiles()
    },
}
READABLE_STATES: Final = {  # only where a profile restricts them
    f"/clients/{entry['id']}/mcp": frozenset(entry["allowedFilterStates"])
    for entry in client_profiles()
    if "allowedFilterStates" in entry
}
ENDPOINTS: Final = [
    ("/mcp", ADMIN_TOKEN),
    ("/clients/web/mcp", WEB_TOKEN),
    ("/clients/reader/mcp", READER_TOKEN),
]


def nasty_text(*, surrogates: bool = True, huge: int = 300_000) -> st.SearchStrategy[str]:
    # Every category, control characters included; utf-8 leaves the surrogates out.
    characters = st.characters(codec=None if surrogates else "utf-8", exclude_categories=())
    fixed = ["", " ", "\x00", "\u202e", "🧠" * 5, "a\x00b", "null", "[]", "../../etc"]
    return st.one_of(
        st.text(max_size=40),
        st.text(characters, max_size=40),
        st.sampled_from(fixed + (["\ud800", "a\udfffb"] if surrogates else [])),
        st.integers(20_000, huge).map(lambda n: "é" * n),  # past every text limit
    )


def json_values(
    text: st.SearchStrategy[str], extra: st.SearchStrategy[Any] | None = None
) -> st.SearchStrategy[Any]:
    if extra is None:
        extra = st.nothing()
    return st.recursive(
        st.none()
        | st.booleans()
        | st.integers(-(2**70), 2**70)
        | st.floats(allow_nan=False, allow_infinity=False)
        | text
        | extra,
        lambda inner: st.lists(inner, max_size=5) | st.dictionaries(text, inner, max_size=4),
        max_leaves=12,
    )


wire_text = nasty_text()
wire_values = json_values(wire_text)
# What the SDK client can send: no lone surrogates (it cannot encode them as UTF-8,
# and fails before sending) and, all together, within the body limit (over it, the
# guard's 413 reaches the client as a transport error: the raw tests cover both).
client_text = nasty_text(surrogates=False, huge=60_000)
header_text = st.text(st.characters(min_codepoint=0x20, max_codepoint=0x7E), max_size=60)


def check_json_answer(status: int, content_type: str, text: str) -> Any:
    assert status < 500, text[:300]
    assert content_type.startswith("application/json"), (status, content_type, text[:300])
    assert "Traceback" not in text
    assert 'File "' not in text
    return json.loads(text)


def check_refusal(body: Any) -> str:
    """A refusal is the guard's ``{"error": {code, message}}`` or a JSON-RPC error.

    Returns the code as text, for the statistics.
    """
    assert isinstance(body, dict), body
    error = body.get("error")
    assert isinstance(error, dict), body
    assert isinstance(error.get("message"), str)
    assert error["message"]
    if "jsonrpc" in body:
        assert body["jsonrpc"] == "2.0"
        assert "result" not in body
        assert isinstance(error["code"], int)
        assert not isinstance(error["code"], bool)
    else:
        assert set(body) == {"error"}
        assert set(error) == {"code", "message"}
        assert error["code"] in GUARD_CODES
    return str(error["code"])


def check_tool_failure(text: str) -> str:
    """The text of an ``isError`` result: exactly ``{"error": {code, message}}``."""
    failure = json.loads(text)
    assert set(failure) == {"error"}, failure
    assert set(failure["error"]) == {"code", "message"}, failure
    code, message = failure["error"]["code"], failure["error"]["message"]
    assert code in SPEC_CODES, failure
    assert isinstance(message, str)
    assert message
    # The catch-all for an exception our code did not expect: never reachable by input.
    assert "failed unexpectedly" not in message, message
    return str(code)


def tool_error(body: dict[str, Any]) -> str | None:
    """The error code of a failed raw ``tools/call``, None when it succeeded.

    A JSON-RPC error (the request itself was malformed) counts as a failure too.
    """
    if "error" in body:
        return check_refusal(body)
    result = body["result"]
    if not result.get("isError"):
        assert result["structuredContent"] == json.loads(result["content"][0]["text"])
        return None
    assert "structuredContent" not in result
    return check_tool_failure(result["content"][0]["text"])


def result_error(result: types.CallToolResult) -> str | None:
    """The error code of a failed SDK call, None when it succeeded."""
    assert len(result.content) == 1
    text = result.content[0]
    assert isinstance(text, types.TextContent)
    if not result.is_error:
        # The SDK client has also checked structuredContent against the output schema.
        assert result.structured_content == json.loads(text.text)
        return None
    assert result.structured_content is None
    return check_tool_failure(text.text)


@dataclass
class Wire:
    """A started app in a portal's event loop, and ways to talk to it."""

    portal: anyio.from_thread.BlockingPortal
    harness: Harness
    seeded_ids: list[str]

    def post(self, content: str | bytes, headers: dict[str, str]) -> httpx2.Response:
        async def send() -> httpx2.Response:
            async with self.harness.http(ADMIN_TOKEN) as http:
                return await http.post("/mcp", content=content, headers=headers)

        return self.portal.call(send)

    def call_tool(
        self, path: str, token: str, tool: str, arguments: dict[str, Any]
    ) -> types.CallToolResult:
        async def call() -> types.CallToolResult:
            async with self.harness.connect(path, token) as client:
                return await client.call_tool(tool, arguments)

        return self.portal.call(call)

    def snapshot(self) -> list[Memory]:
        """Every stored record, in every state."""
        return [memory for page in all_memories(self.harness.service.store) for memory in page]


def seed(harness: Harness) -> list[str]:
    service, admin = harness.service, Access.admin()
    saved = [
        service.save(admin, content="The fuzz baseline: Falcon ships in Q3.", topic="fuzz"),
        service.save(
            admin, content="A draft that must survive the fuzzing.", topic="fuzz", draft=True
        ),
        service.save(admin, content="Replacement.", topic="fuzz"),
        service.save(admin, content="An outdated fact: Falcon ships in Q2.", topic="fuzz"),
    ]
    ids = [str(result["item"]["id"]) for result in saved]
    # A deprecated record too, which the reader profile must never be shown.
    service.deprecate(admin, id=ids[3], superseding_id=ids[2])
    return ids


@pytest.fixture
def wire(tmp_path: Path, service: MemoryService) -> Iterator[Wire]:
    # A rate limit no run reaches: a 429 would only hide what the examples test.
    fuzz_settings = make_settings(
        tmp_path / "data",
        metacortex_rate_limit_per_minute=1_000_000,
        metacortex_admin_rate_limit_per_minute=1_000_000,
    )
    assert fuzz_settings.metacortex_max_body_bytes == BODY_LIMIT
    with (
        anyio.from_thread.start_blocking_portal() as portal,
        portal.wrap_async_context_manager(started(fuzz_settings, service)) as harness,
    ):
        ids = seed(harness)
        yield Wire(portal, harness, ids)


@given(
    body=st.one_of(st.binary(max_size=400), wire_values.map(json.dumps)),
    protocol=st.sampled_from([{}, MODERN]),
)
@FUZZ
def test_any_body_at_the_raw_endpoint_gets_a_json_error(
    wire: Wire, body: str | bytes, protocol: dict[str, str]
) -> None:
    before = wire.snapshot()
    response = wire.post(body, JSON_HEADERS | protocol)
    answer = check_json_answer(
        response.status_code, response.headers["content-type"], response.text
    )
    # No random bytes or JSON value is a valid JSON-RPC request: always an error.
    assert response.status_code >= 400
    event(f"status {response.status_code}: {check_refusal(answer)}")
    assert wire.snapshot() == before


@given(
    method=st.one_of(st.sampled_from(["tools/call", "tools/list", "prompts/get"]), wire_text),
    params=wire_values,
    request_id=wire_values,
)
@FUZZ
def test_any_json_rpc_envelope_gets_a_json_answer(
    wire: Wire, method: str, params: Any, request_id: Any
) -> None:
    before = wire.snapshot()
    message = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}
    response = wire.post(json.dumps(message), JSON_HEADERS | MODERN)
    answer = check_json_answer(
        response.status_code, response.headers["content-type"], response.text
    )
    if response.status_code == 200 and "result" in answer:
        assert answer["jsonrpc"] == "2.0"
        assert "error" not in answer
        event("result")
    else:
        event(f"status {response.status_code}: {check_refusal(answer)}")
    assert wire.snapshot() == before


@given(
    tool=st.sampled_from(sorted(TOOLS)) | header_text,
    headers=st.fixed_dictionaries(
        {},
        optional={
            "mcp-protocol-version": st.sampled_from(["2026-07-28", "2025-06-18", ""]) | header_text,
            "mcp-method": st.sampled_from(["tools/call", "tools/list"]) | header_text,
            "mcp-name": st.sampled_from(sorted(TOOLS)) | header_text,
            "mcp-param-content": header_text,
            "mcp-param-id": header_text,
            "content-type": st.sampled_from(
                ["application/json", "application/json; charset=latin-1", "APPLICATION/JSON"]
            )
            | header_text,
            "accept": st.sampled_from(["application/json", "*/*", "text/event-stream"])
            | header_text,
        },
    ),
)
@FUZZ
def test_any_mcp_headers_get_a_json_answer(wire: Wire, tool: str, headers: dict[str, str]) -> None:
    """The 2026-07-28 request headers, missing, mismatched, or junk."""
    before = wire.snapshot()
    call = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": tool, "arguments": {"id": "nosuch"}, "_meta": META},
    }
    response = wire.post(json.dumps(call), JSON_HEADERS | headers)
    answer = check_json_answer(
        response.status_code, response.headers["content-type"], response.text
    )
    if response.status_code == 200:
        code = tool_error(answer)
        assert code is not None  # no tool succeeds with {"id": "nosuch"}
        event(f"tool error {code}")
    else:
        event(f"status {response.status_code}: {check_refusal(answer)}")
    assert wire.snapshot() == before


@pytest.mark.parametrize("tool", sorted(TOOLS))
@given(data=st.data())
@TOOL_FUZZ
def test_any_arguments_to_any_tool_get_success_or_a_specific_error(
    wire: Wire, tool: str, data: st.DataObject
) -> None:
    fields = sorted(TOOLS[tool].input_model.model_fields)
    names = st.sampled_from(fields) | wire_text if fields else wire_text  # list_spaces: none
    arguments = data.draw(st.dictionaries(names, wire_values, max_size=6), label="arguments")
    before = wire.snapshot()
    call = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": tool, "arguments": arguments, "_meta": META},
    }
    headers = JSON_HEADERS | MODERN | {"mcp-method": "tools/call", "mcp-name": tool}
    content = json.dumps(call)
    response = wire.post(content, headers)
    body = check_json_answer(response.status_code, response.headers["content-type"], response.text)
    if response.status_code != 200:  # refused before MCP: only a body over the limit is
        assert response.status_code == 413
        assert len(content.encode()) > BODY_LIMIT
        assert check_refusal(body) == "payload_too_large"
        assert wire.snapshot() == before
        return
    code = tool_error(body)
    event(f"outcome: {code or 'success'}")
    if code is not None:
        assert wire.snapshot() == before


def plausible(name: str, schema: dict[str, Any], ids: list[str]) -> st.SearchStrategy[Any]:
    """A value of the declared type, near the declared bounds, real ids for ids."""
    if "enum" in schema:
        return st.sampled_from(schema["enum"])
    kind = schema.get("type")
    if kind == "integer":
        low, high = schema.get("minimum", 0), schema.get("maximum", 100)
        return st.integers(low, high) | st.sampled_from([low - 1, high + 1])
    if kind == "number":
        return st.floats(-0.5, 1.5)
    if kind == "boolean":
        return st.booleans()
    if kind == "array":
        return st.lists(st.sampled_from(ids) | st.text(max_size=8), max_size=4)
    if name.endswith("id"):
        return st.sampled_from(ids) | st.sampled_from(["nosuch", "0" * 26, "a b", "é", ""])
    if name.startswith(("valid_", "created_")):
        return st.sampled_from(
            ["2026-01-01T00:00:00Z", "2025-06-30T12:00:00+02:00", "2030-01-01", "2020-02-30"]
        )
    if "topic" in name:
        return st.sampled_from(["fuzz", "general", "other", "no such", "a" * 65])
    return st.text(st.characters(codec="utf-8"), min_size=1, max_size=30)


def near_valid_arguments(
    tool: str, ids: list[str], *, junk: bool = True
) -> st.SearchStrategy[dict[str, Any]]:
    """Each field of the tool's input schema mostly of its declared type and at times
    junk, a required one now and then missing, an unknown one now and then added:
    close enough to valid that calls get past validation to the service and store.
    Without junk: declared types only, required fields always there."""
    schema = TOOLS[tool].definition().input_schema
    junk_value = json_values(client_text, st.sampled_from(ids)) if junk else st.nothing()
    fields = {
        name: st.one_of(*[plausible(name, spec, ids)] * 7, junk_value)
        for name, spec in schema["properties"].items()
    }
    required = set(schema.get("required", []))
    if tool == "save_context":
        required.add("content")  # optional in the schema only for image saves
    known = st.fixed_dictionaries(
        {name: value for name, value in fields.items() if name in required},
        optional={name: value for name, value in fields.items() if name not in required},
    )
    drop_required = st.sampled_from([False, False, False, True] if junk else [False])
    unknown = st.one_of(
        *[st.just({})] * 3,
        st.dictionaries(client_text, junk_value, min_size=1, max_size=1) if junk else st.nothing(),
    )

    def combine(args: dict[str, Any], drop: bool, extra: dict[str, Any]) -> dict[str, Any]:
        kept = {name: value for name, value in args.items() if not (drop and name in required)}
        return extra | kept

    return st.builds(combine, known, drop_required, unknown)


@pytest.mark.parametrize("tool", sorted(TOOLS))
@given(data=st.data())
@TOOL_FUZZ
def test_any_arguments_through_the_sdk_client_on_any_endpoint(
    wire: Wire, tool: str, data: st.DataObject
) -> None:
    """What a real MCP client gets back: a result, success or ``isError``, never an
    exception; a tool outside the endpoint's profile is ``forbidden``, whatever the
    arguments; a success shows only records in states the profile may read; and a
    failed call leaves every stored record as it was.

    The SDK client sends arguments as given (it does not check them against the
    input schema), so a schema violation comes back from our server as an
    ``isError`` ``invalid_argument`` result, never as a JSON-RPC error.
    """
    path, token = data.draw(st.sampled_from(ENDPOINTS), label="endpoint")
    arguments = data.draw(
        near_valid_arguments(tool, wire.seeded_ids).filter(
            lambda args: len(json.dumps(args, ensure_ascii=False).encode()) < BODY_LIMIT // 2
        ),
        label="arguments",
    )
    before = wire.snapshot()
    result = wire.call_tool(path, token, tool, arguments)
    code = result_error(result)
    event(f"{path} outcome: {code or 'success'}")
    if tool not in TOOLS_OF[path]:
        assert code == "forbidden"
    if code is not None:
        assert wire.snapshot() == before
    elif path in READABLE_STATES and tool != "save_context":
        assert result.structured_content is not None
        assert states_shown(result.structured_content) <= READABLE_STATES[path]


def states_shown(payload: dict[str, Any]) -> set[str]:
    """The lifecycle states of the records a read tool returned."""
    records = [payload["item"]] if "item" in payload else []
    records += payload.get("matches", []) + payload.get("items", [])
    return {record["metadata"]["branch_state"] for record in records}


@pytest.mark.parametrize("tool", ["search_context", "list_context", "fetch_context"])
@given(data=st.data())
@TOOL_FUZZ
def test_the_reader_profile_never_reads_outside_its_states(
    wire: Wire, tool: str, data: st.DataObject
) -> None:
    """Well-typed reads on an endpoint restricted to some states, the others asked for
    by filter or by id: a success shows none of them, a refusal is specific."""
    path = "/clients/reader/mcp"
    arguments = data.draw(near_valid_arguments(tool, wire.seeded_ids, junk=False))
    result = wire.call_tool(path, READER_TOKEN, tool, arguments)
    code = result_error(result)
    event(f"outcome: {code or 'success'}")
    if code is None:
        assert result.structured_content is not None
        assert states_shown(result.structured_content) <= READABLE_STATES[path]
    else:
        assert code in {"invalid_argument", "forbidden", "not_found"}
