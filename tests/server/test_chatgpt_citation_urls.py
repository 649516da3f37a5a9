"""ChatGPT's ``search``/``fetch`` shapes give a canonical https URL to cite (issue 19
item 8): the record's page in the owner's console when the server knows its public URL,
else the opaque ``metacortex:memory/<id>``. Through the ``mcp`` SDK's client."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from metacortex.service import Access, MemoryService
from tests.server.conftest import make_settings, started

TOKEN = "chatgpt-" + "P0o9I8u7Y6t5R4e3W2q1A2s3D4f5G6h7"
PROFILES = json.dumps(
    [
        {
            "id": "chatgpt",
            "token": TOKEN,
            "allowedTools": ["search_context", "fetch_context"],
            "chatgptDataTools": True,
        }
    ]
)

pytestmark = pytest.mark.anyio


async def _cited(tmp_path: Path, service: MemoryService, **settings: Any) -> tuple[str, str, str]:
    """(memory id, the url search gives, the url fetch gives)."""
    values = make_settings(tmp_path / "data", mcp_client_profiles_json=PROFILES, **settings)
    async with (
        started(values, service) as harness,
        harness.connect("/clients/chatgpt/mcp", token=TOKEN) as client,
    ):
        saved = service.save(Access.admin(), content="The staging database is db-2.")
        memory_id = saved["item"]["id"]
        found = await client.call_tool("search", {"query": "staging database"})
        [result] = json.loads(found.content[0].text)["results"]  # type: ignore[union-attr]
        fetched = await client.call_tool("fetch", {"id": memory_id})
        document = json.loads(fetched.content[0].text)  # type: ignore[union-attr]
        if document["url"].startswith("https://"):
            async with harness.http() as http:  # the page exists (it asks the owner to sign in)
                page = await http.get(urlsplit(document["url"]).path)
            assert page.status_code == 200
            assert 'name="passphrase"' in page.text
    return memory_id, result["url"], document["url"]


async def test_with_a_public_url_results_cite_the_consoles_https_record_page(
    tmp_path: Path, service: MemoryService
) -> None:
    public = "https://memory.example.com/metaCortexMcp"
    memory_id, searched, fetched = await _cited(
        tmp_path, service, metacortex_public_url=public + "/"
    )
    assert searched == fetched == f"{public}/console/memories/{memory_id}"


async def test_without_a_public_url_results_keep_the_opaque_record_url(
    tmp_path: Path, service: MemoryService
) -> None:
    memory_id, searched, fetched = await _cited(tmp_path, service)
    assert searched == fetched == f"metacortex:memory/{memory_id}"
