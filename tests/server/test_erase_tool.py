"""The owner's ``erase_context`` tool: offered only on the admin endpoint and only when
the operator turns it on; ``metacortex smoke`` uses it to leave nothing behind.

Through the real MCP client (the ``mcp`` SDK) over the app, and over real loopback
HTTP for the smoke command.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from mcp import types
from mcp.shared.exceptions import MCPError

from metacortex.access.profiles import load_profiles
from metacortex.cli.main import main
from metacortex.cli.smoke import SMOKE_TOPIC
from metacortex.errors import ConfigurationError
from metacortex.server.app import create_app
from metacortex.service import Access, MemoryService
from tests.oauth_support import serving
from tests.server.conftest import (
    ADMIN_TOKEN,
    READER_TOKEN,
    Harness,
    LiveServer,
    make_settings,
    started,
)
from tests.tool_results import error_code

ADMIN = Access.admin()


@pytest.fixture
async def offering(tmp_path: Path, service: MemoryService) -> AsyncIterator[Harness]:
    """The app with the owner's erase tool turned on."""
    settings = make_settings(tmp_path / "data", metacortex_admin_erase_tool=True)
    async with started(settings, service) as running:
        yield running


def _payload(result: types.CallToolResult) -> dict[str, object]:
    assert not result.is_error, result.content
    assert isinstance(result.content[0], types.TextContent)
    payload: dict[str, object] = json.loads(result.content[0].text)
    return payload


@pytest.mark.anyio
async def test_when_turned_on_only_the_admin_endpoint_offers_erase_and_it_erases(
    offering: Harness,
) -> None:
    service = offering.service
    secret = service.save(ADMIN, content="An API key pasted by mistake")["item"]["id"]
    async with offering.connect("/mcp") as admin:
        admin_tools = [tool.name for tool in (await admin.list_tools()).tools]
        erased = _payload(await admin.call_tool("erase_context", {"ids": [secret]}))
        fetched = await admin.call_tool("fetch_context", {"id": secret})
    async with offering.connect("/clients/reader/mcp", READER_TOKEN) as reader:
        reader_tools = [tool.name for tool in (await reader.list_tools()).tools]
        with pytest.raises(MCPError, match="unknown tool 'erase_context'"):
            await reader.call_tool("erase_context", {"ids": [secret]})

    assert admin_tools[-1] == "erase_context"
    assert "erase_context" not in reader_tools
    assert (erased["erased_ids"], erased["erased_count"]) == ([secret], 1)
    assert error_code(fetched) == "not_found"
    assert "was erased on" in fetched.content[0].text  # type: ignore[union-attr]
    assert "by the admin endpoint (erase_context)" in fetched.content[0].text  # type: ignore[union-attr]
    calls = [e for e in offering.events() if e.get("tool_name") == "erase_context"]
    assert [(e["client_id"], e["status"]) for e in calls] == [
        ("default", "ok"),
        ("reader", "error"),
    ]
    event = calls[0]
    assert event["response"] == {
        "erased_count": 1,
        "erased_ids": [secret],
        "erased_document_ids": [],
        "already_erased_count": 0,
        "derived_ids": [],
    }
    assert "API key" not in json.dumps(offering.events())


@pytest.mark.anyio
async def test_when_off_erase_does_not_exist_on_the_admin_endpoint(harness: Harness) -> None:
    kept = harness.service.save(ADMIN, content="Kept")["item"]["id"]
    async with harness.connect("/mcp", ADMIN_TOKEN) as admin:
        tools = [tool.name for tool in (await admin.list_tools()).tools]
        with pytest.raises(MCPError, match="unknown tool 'erase_context'"):
            await admin.call_tool("erase_context", {"ids": [kept]})

    assert "erase_context" not in tools
    assert harness.service.store.get(kept) is not None


def test_no_client_profile_and_no_admin_tool_list_can_name_the_erase_tool(
    tmp_path: Path,
) -> None:
    client = [{"id": "agent", "token": "t0k3n-" + "Abcdefghij" * 4, "allowedTools": []}]
    client[0]["allowedTools"] = ["search_context", "erase_context"]
    for overrides in (
        {"mcp_client_profiles_json": json.dumps(client)},
        {"mcp_allowed_tools": ("search_context", "erase_context")},
    ):
        with pytest.raises(ConfigurationError, match="erase_context is the owner's tool"):
            load_profiles(make_settings(tmp_path, **overrides))


@pytest.fixture
def erasing_live(tmp_path: Path, service: MemoryService) -> Iterator[LiveServer]:
    settings = make_settings(tmp_path / "data", metacortex_admin_erase_tool=True)
    app = create_app(settings, service)
    with serving(app) as url:
        yield LiveServer(url, service, app)


@pytest.fixture
def _smoke_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.chdir(tmp_path)  # no stray .env
    for name in ("MCP_SMOKE_TOKEN", "MCP_SMOKE_MODE", "MCP_SMOKE_ORIGIN", "MCP_SMOKE_URL_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("MCP_ADMIN_TOKEN", ADMIN_TOKEN)


@pytest.mark.usefixtures("_smoke_env")
def test_smoke_erases_what_it_wrote_when_the_endpoint_offers_erase(
    erasing_live: LiveServer, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["smoke", "--url", f"{erasing_live.url}/mcp"]) == 0

    err = capsys.readouterr().err
    assert "erase_context (smoke memory erased)" in err
    assert "fetch_context: the smoke memory is gone" in err
    assert "could not clean up" not in err
    assert SMOKE_TOPIC not in erasing_live.service.store.topic_counts()


@pytest.mark.usefixtures("_smoke_env")
def test_smoke_says_clearly_when_it_could_not_clean_up(
    live: LiveServer, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["smoke", "--url", f"{live.url}/mcp"]) == 0

    err = capsys.readouterr().err
    assert "deprecate_context (smoke memory retired)" in err
    [warning] = [line for line in err.splitlines() if line.startswith("warn ")]
    assert warning.startswith("warn could not clean up: the smoke memory ")
    assert f"stays in topic {SMOKE_TOPIC!r}" in warning
    assert "METACORTEX_ADMIN_ERASE_TOOL=true" in warning
