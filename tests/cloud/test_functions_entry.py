"""End to end, the way Google runs it: ``functions-framework`` serving
``functions/main.py`` (the function ``metaCortexMcp``) in its own process on a
loopback port, on the production composition: the Firestore store on the real
emulator and the Gemini providers, Gemini's REST API faked at the HTTP wire
(``tests/gemini_wire.py``, reached through ``GOOGLE_GEMINI_BASE_URL``). Driven
by the official ``mcp.Client`` through the ``/metaCortexMcp/...`` routes (as
Hosting rewrites and run.app URLs deliver them) and the bare ``/mcp`` form (as
cloudfunctions.net delivers it).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any, Final

import httpx2
import pytest
from google.cloud import firestore
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from bench.cold_start import ADMIN_TOKEN, FunctionProcess, production_settings
from metacortex.config import Settings
from metacortex.storage.firestore import FirestoreStore
from tests.firestore_support import Emulator
from tests.gemini_wire import FakeGemini, serve_over_http
from tests.server.surface_snapshot import tool_names
from tests.tool_results import error_code, payload

pytestmark = [pytest.mark.anyio, pytest.mark.firestore, pytest.mark.slow]

WEB_TOKEN: Final = "cloud-web-" + "M1n2B3v4C5x6Z7l8K9j0H1g2F3d4S5a6"
WEB_ORIGIN: Final = "https://claude.example.com"
HANDSHAKE: Final = "legacy"
STATELESS: Final = "2026-07-28"


@dataclass
class DeployedFunction:
    process: FunctionProcess
    gemini: FakeGemini
    emulator: Emulator
    project: str

    @asynccontextmanager
    async def connect(
        self, path: str, token: str = ADMIN_TOKEN, mode: str = STATELESS, **headers: str
    ) -> AsyncIterator[Client]:
        all_headers = {"authorization": f"Bearer {token}", **headers}
        async with (
            httpx2.AsyncClient(headers=all_headers, timeout=60) as http,
            Client(
                streamable_http_client(self.process.url + path, http_client=http), mode=mode
            ) as client,
        ):
            yield client

    def gemini_calls(self, suffix: str) -> list[dict[str, Any]]:
        return [
            FakeGemini.body(request)
            for request in self.gemini.requests
            if request.url.path.endswith(suffix)
        ]


@pytest.fixture(scope="module")
def deployed(firestore_emulator: Emulator) -> Iterator[DeployedFunction]:
    gemini = FakeGemini()
    settings_env = production_settings(firestore_emulator.host, "")
    project = settings_env["GOOGLE_CLOUD_PROJECT"]
    firestore_emulator.wipe(project)
    profiles = [
        {
            "id": "claude",
            "token_sha256": hashlib.sha256(WEB_TOKEN.encode()).hexdigest(),
            "allowedTools": ["save_context", "search_context", "fetch_context"],
            "allowedOrigins": [WEB_ORIGIN],
        }
    ]
    with serve_over_http(gemini) as gemini_url:
        env = production_settings(firestore_emulator.host, gemini_url) | {
            "MCP_CLIENT_PROFILES_JSON": json.dumps(profiles)
        }
        with FunctionProcess(env) as process:
            process.wait_listening()
            yield DeployedFunction(process, gemini, firestore_emulator, project)
            log = "\n".join(process.log)
    assert ADMIN_TOKEN not in log
    assert WEB_TOKEN not in log


@pytest.mark.parametrize("mode", [HANDSHAKE, STATELESS])
async def test_the_function_serves_every_tool_on_firestore_and_gemini_under_its_own_path(
    deployed: DeployedFunction, mode: str, png_base64: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    topic = f"cloud-{mode}"
    async with deployed.connect("/metaCortexMcp/mcp", mode=mode) as admin:
        assert len((await admin.list_tools()).tools) == len(tool_names("default"))
        saved = payload(
            await admin.call_tool(
                "save_context", {"content": f"Falcon ships in Q3 ({mode}).", "topic": topic}
            )
        )["item"]
        again = payload(
            await admin.call_tool(
                "save_context", {"content": f"Falcon ships in Q3 ({mode}).", "topic": topic}
            )
        )
        assert again["item"]["id"] == saved["id"]  # dedupe through Firestore's transaction
        image = payload(
            await admin.call_tool(
                "save_context",
                {"image_base64": png_base64, "image_mime_type": "image/png", "topic": topic},
            )
        )["item"]
        assert image["content"] == deployed.gemini.description
        found = payload(
            await admin.call_tool("search_context", {"query": "Falcon Q3", "filter_topic": topic})
        )
        assert found["matches"][0]["id"] == saved["id"]
        fetched = payload(await admin.call_tool("fetch_context", {"id": saved["id"]}))["item"]
        assert fetched["content"] == f"Falcon ships in Q3 ({mode})."
        listed = payload(await admin.call_tool("list_context", {"filter_topic": topic}))
        assert {item["id"] for item in listed["items"]} == {saved["id"], image["id"]}
        drafts = [
            payload(
                await admin.call_tool(
                    "save_context", {"content": text, "topic": topic, "draft": True}
                )
            )["item"]["id"]
            for text in (f"Owner is Dana ({mode}).", f"Launch is in Q3 ({mode}).")
        ]
        merged = payload(await admin.call_tool("consolidate_context", {"topic": topic}))
        assert merged["deprecated_ids"] == drafts
        assert merged["item"]["merged_content"] == deployed.gemini.merged
        superseding = {"id": saved["id"], "superseding_id": merged["item"]["merged_id"]}
        deprecated = payload(await admin.call_tool("deprecate_context", superseding))
        assert deprecated["previous_state"] == "active"
        assert error_code(await admin.call_tool("fetch_context", {"id": "0" * 26})) == "not_found"

    # The records really live in Firestore.
    monkeypatch.setenv("FIRESTORE_EMULATOR_HOST", deployed.emulator.host)
    store = FirestoreStore(
        firestore.Client(project=deployed.project),
        Settings(_env_file=None).memory_collection,  # type: ignore[call-arg]
    )
    try:
        stored = store.get(saved["id"])
        assert stored is not None
        assert stored.branch_state.value == "deprecated"
        assert stored.superseded_by == merged["item"]["merged_id"]
    finally:
        store.close()


async def test_gemini_is_asked_for_document_and_query_embeddings_at_the_configured_dimension(
    deployed: DeployedFunction,
) -> None:
    async with deployed.connect("/metaCortexMcp/mcp") as admin:
        payload(await admin.call_tool("save_context", {"content": "Task types are distinct."}))
        payload(await admin.call_tool("search_context", {"query": "task types"}))
    documents = [
        item for body in deployed.gemini_calls(":batchEmbedContents") for item in body["requests"]
    ]
    queries = deployed.gemini_calls(":embedContent") + [
        item
        for item in documents
        if item.get("taskType") == "RETRIEVAL_QUERY"  # if the SDK batches single texts
    ]
    assert documents
    assert {item["outputDimensionality"] for item in documents} == {8}
    assert "RETRIEVAL_DOCUMENT" in {item.get("taskType") for item in documents}
    assert any(call.get("taskType") == "RETRIEVAL_QUERY" for call in queries)


async def test_a_scoped_connector_profile_works_under_the_function_path(
    deployed: DeployedFunction,
) -> None:
    async with deployed.connect(
        "/metaCortexMcp/clients/claude/mcp", token=WEB_TOKEN, origin=WEB_ORIGIN
    ) as claude:
        names = {tool.name for tool in (await claude.list_tools()).tools}
        assert names == {"save_context", "search_context", "fetch_context"}
        saved = payload(await claude.call_tool("save_context", {"content": "From Claude."}))
        assert saved["item"]["content"] == "From Claude."


async def test_the_bare_path_form_and_health_answer_as_cloudfunctions_net_delivers_them(
    deployed: DeployedFunction,
) -> None:
    async with deployed.connect("/mcp") as admin:
        assert len((await admin.list_tools()).tools) == len(tool_names("default"))
    async with httpx2.AsyncClient(base_url=deployed.process.url) as http:
        assert (await http.get("/healthz")).json() == {"status": "ok"}
        assert (await http.get("/metaCortexMcp/healthz")).json() == {"status": "ok"}


async def test_credentials_are_checked_inside_the_function_with_json_errors(
    deployed: DeployedFunction,
) -> None:
    body = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    headers = {"content-type": "application/json", "accept": "application/json, text/event-stream"}
    async with httpx2.AsyncClient(base_url=deployed.process.url) as http:
        wrong = await http.post(
            "/metaCortexMcp/mcp", json=body, headers=headers | {"authorization": "Bearer nope"}
        )
        unknown = await http.post(
            "/metaCortexMcp/clients/nobody/mcp",
            json=body,
            headers=headers | {"authorization": f"Bearer {WEB_TOKEN}"},
        )
        foreign = await http.post(
            "/metaCortexMcp/clients/claude/mcp",
            json=body,
            headers=headers
            | {"authorization": f"Bearer {WEB_TOKEN}", "origin": "https://evil.example"},
        )
    assert wrong.status_code == unknown.status_code == 401
    assert wrong.content == unknown.content
    assert wrong.json()["error"]["code"] == "unauthorized"
    assert foreign.status_code == 403
    assert foreign.headers["content-type"] == "application/json"
