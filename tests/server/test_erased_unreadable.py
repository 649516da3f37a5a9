"""A scoped endpoint fetching the id of a draft it could never read, after the owner
erased it, gets the very answer an id that never existed gets: the tombstone ("erased
on ... by ...") is for callers that could have read the record.

Counterpart: the real MCP client (the ``mcp`` SDK) on an endpoint that reads active
memories only; the two answers are compared byte for byte, the id aside.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Final

import pytest

from metacortex.domain.records import new_memory_id
from metacortex.service import Access, MemoryService
from tests.server.conftest import make_settings, started

ACTIVE_ONLY_TOKEN: Final = "active-" + "M1n2B3v4C5x6Z7l8K9j0H1g2F3d4S5a6"


@pytest.mark.anyio
async def test_an_erased_draft_fetched_by_an_endpoint_that_never_read_drafts_is_no_such_id(
    tmp_path: Path, service: MemoryService
) -> None:
    profile = {
        "id": "active-only",
        "token_sha256": hashlib.sha256(ACTIVE_ONLY_TOKEN.encode()).hexdigest(),
        "allowedTools": ["fetch_context", "search_context"],
        "allowedFilterStates": ["active"],
    }
    settings = make_settings(tmp_path / "data", mcp_client_profiles_json=json.dumps([profile]))
    owner = Access.admin()
    draft = service.save(owner, content="A draft the endpoint never saw", draft=True)["item"]["id"]
    service.erase(owner, ids=[draft], erased_by="owner (test)")
    never = new_memory_id()
    assert len(never) == len(draft)

    async with (
        started(settings, service) as harness,
        harness.connect("/clients/active-only/mcp", ACTIVE_ONLY_TOKEN) as client,
    ):
        erased = await client.call_tool("fetch_context", {"id": draft})
        missing = await client.call_tool("fetch_context", {"id": never})
        async with harness.connect() as admin:  # the owner's endpoint reads every state
            told = await admin.call_tool("fetch_context", {"id": draft})

    erased_bytes = erased.model_dump_json().encode()
    missing_bytes = missing.model_dump_json().encode()
    assert erased_bytes.replace(draft.encode(), never.encode()) == missing_bytes
    assert erased.is_error
    assert f"no memory with id '{draft}'" in erased_bytes.decode()
    assert b"erased" not in erased_bytes
    assert f"memory '{draft}' was erased on " in told.model_dump_json()
