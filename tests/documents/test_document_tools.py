"""The document tools through the official ``mcp`` SDK's client over the app (in-process
ASGI): a model adds a file, finds its passages citing title and page, reads the text a
slice at a time; every answer validates against the tool's own output schema."""

from __future__ import annotations

import base64
from collections.abc import Iterator
from typing import Any

import jsonschema  # type: ignore[import-untyped]
import pytest

from metacortex.documents.isolation import shut_down
from metacortex.mcp_surface.tools import TOOLS
from tests.documents.craft import pdf_of_pages
from tests.server.conftest import READER_TOKEN, WEB_TOKEN, Harness
from tests.server.conftest import harness as harness
from tests.server.conftest import service as service
from tests.server.conftest import settings as settings
from tests.tool_results import error_code, payload

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module", autouse=True)
def _reader_hosts() -> Iterator[None]:
    yield
    shut_down()


def _valid(tool: str, result: dict[str, Any]) -> dict[str, Any]:
    schema = TOOLS[tool].definition().output_schema
    assert schema is not None
    jsonschema.validate(result, schema)
    return result


async def test_a_model_adds_a_pdf_finds_a_passage_citing_its_page_and_reads_around_it(
    harness: Harness,
) -> None:
    pages = [
        "The lease starts on the first of March and runs for two years. " * 11,
        "The deposit is three months of rent, returned within thirty days. " * 11,
        "Pets are allowed with the landlord's written consent only. " * 12,
    ]
    pdf = pdf_of_pages(pages, title="Flat lease")
    async with harness.connect() as admin:
        added = _valid(
            "create_document",
            payload(
                await admin.call_tool(
                    "create_document",
                    {
                        "content_base64": base64.b64encode(pdf).decode(),
                        "source": "/home/ann/lease.pdf",
                        "topic": "home",
                    },
                )
            ),
        )
        document = added["document"]
        assert added["write_status"] == "created"
        assert document["media_type"] == "application/pdf"  # from the source's extension
        assert document["page_count"] == 3
        found = _valid(
            "search_context",
            payload(await admin.call_tool("search_context", {"query": "deposit returned"})),
        )
        top = found["matches"][0]
        assert top["metadata"]["document"]["title"] == "Flat lease"
        assert top["metadata"]["document"]["page"] == 2
        fetched = _valid(
            "fetch_context",
            payload(await admin.call_tool("fetch_context", {"id": top["id"], "neighbours": 1})),
        )
        assert [
            item["metadata"]["document"]["page"] for item in fetched["neighbours"]["before"]
        ] == [1]
        assert [
            item["metadata"]["document"]["page"] for item in fetched["neighbours"]["after"]
        ] == [3]
        listed = _valid("list_documents", payload(await admin.call_tool("list_documents", {})))
        assert [d["id"] for d in listed["documents"]] == [document["id"]]
        read = _valid(
            "get_document",
            payload(
                await admin.call_tool(
                    "get_document", {"id": document["id"], "page": 3, "limit_chars": 60}
                )
            ),
        )
        assert read["text"].startswith("Pets are allowed")
        assert read["page"] == 3
        listing = _valid(
            "list_context",
            payload(await admin.call_tool("list_context", {"filter_origin": "document"})),
        )
        assert len(listing["items"]) == 3


async def test_markdown_as_text_and_the_same_text_again_is_a_duplicate(harness: Harness) -> None:
    arguments = {
        "content": "# Trip plan\n\nWe fly to Lisbon on 3 May and stay at the Alfama flat.\n",
        "media_type": "text/markdown",
        "source": "notes/trip.md",
        "topic": "travel",
    }
    async with harness.connect() as admin:
        first = payload(await admin.call_tool("create_document", arguments))
        again = payload(await admin.call_tool("create_document", arguments))
    assert first["document"]["title"] == "Trip plan"
    assert again["write_status"] == "duplicate"
    assert again["document"]["id"] == first["document"]["id"]
    events = [e for e in harness.events() if e.get("tool_name") == "create_document"]
    assert events, "each call is recorded"
    for event in events:
        assert "Lisbon" not in str(event)  # the content is summarized, never stored


async def test_bad_documents_are_refused_with_a_reason_and_nothing_is_kept(
    harness: Harness,
) -> None:
    async with harness.connect() as admin:
        refused = await admin.call_tool(
            "create_document",
            {
                "content_base64": base64.b64encode(b"%PDF-1.4 not really").decode(),
                "media_type": "application/pdf",
            },
        )
        assert error_code(refused) == "invalid_argument"
        no_type = await admin.call_tool("create_document", {"content_base64": "aGVsbG8="})
        assert error_code(no_type) == "invalid_argument"
        listed = payload(await admin.call_tool("list_documents", {}))
    assert listed["documents"] == []


async def test_endpoints_without_the_document_tools_do_not_offer_them(harness: Harness) -> None:
    """The test clients list their tools explicitly (made before documents existed)."""
    for token, path in ((WEB_TOKEN, "/clients/web/mcp"), (READER_TOKEN, "/clients/reader/mcp")):
        async with harness.connect(path, token) as client:
            names = {tool.name for tool in (await client.list_tools()).tools}
            assert not names & {"create_document", "list_documents", "get_document"}
            refused = await client.call_tool("list_documents", {})
            assert error_code(refused) == "forbidden"
