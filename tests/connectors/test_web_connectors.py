"""ChatGPT's and Claude.ai's connector flows, replayed (their brokers run on the
vendors' servers): with the client metadata documents those vendors publish, served on
loopback (ChatGPT's ``private_key_jwt`` document, Claude's public ``none`` one), and by
dynamic registration. What each sends is in ``tests.connectors.vendors``; the steps are
``tests.connectors.replay``'s: discovery from the 401, registration, consent in
Chromium, the ``iss``/``state`` checks, the code exchange, ``tools/list`` and a tool
call through ``mcp.Client``, a refresh, and a refresh race.
"""

from __future__ import annotations

import json
from typing import Any

import httpx2
import pytest

from tests.connectors.consent import ConsentBrowser
from tests.connectors.deployments import Deployment
from tests.connectors.replay import ReplayedConnector, connect, stays_connected
from tests.connectors.vendors import CHATGPT, CLAUDE, Registration, Vendor

pytestmark = [pytest.mark.slow, pytest.mark.anyio]


async def _chatgpt_search(connector: ReplayedConnector, where: str) -> None:
    """ChatGPT's data-only modes call ``search``: results carry a citable ``url``."""
    names, outcome = await connector.use("search", {"query": "ChatGPT connector"})
    assert {"search", "fetch", "save_context"} <= names, f"{where}: tools {sorted(names)}"
    assert outcome.startswith("ok"), f"{where}: search: {outcome}"
    _, saved = await connector.use("save_context", {"content": "The ChatGPT connector works."})
    assert saved.startswith("ok"), f"{where}: save_context: {saved}"
    _, found = await connector.use("search", {"query": "ChatGPT connector works"})
    [result, *_] = json.loads(found.removeprefix("ok "))["results"]
    if connector.deployment.form == "cloudfunctions.net":  # a public URL is configured
        assert result["url"].startswith(connector.deployment.base + "/"), (
            f"{where}: search result url {result['url']!r} is not a page of the server"
        )


async def _claude_save_and_search(connector: ReplayedConnector, where: str) -> None:
    names, saved = await connector.use("save_context", {"content": "Claude's connector works."})
    assert {"save_context", "search_context"} <= names, f"{where}: tools {sorted(names)}"
    assert saved.startswith("ok"), f"{where}: save_context: {saved}"
    _, found = await connector.use("search_context", {"query": "Claude connector works"})
    assert "connector works" in found, f"{where}: search_context: {found}"


@pytest.mark.parametrize(
    ("vendor", "registration"),
    [
        pytest.param(CHATGPT, "document", id="chatgpt-document-private_key_jwt"),
        pytest.param(CHATGPT, "dynamic", id="chatgpt-dcr"),
        pytest.param(CLAUDE, "document", id="claude-document-none"),
        pytest.param(CLAUDE, "dynamic", id="claude-dcr"),
    ],
)
async def test_a_web_connector_replayed_connects_calls_tools_refreshes_and_survives_a_race(
    deployment: Deployment,
    owner_browser: ConsentBrowser,
    vendor: Vendor,
    registration: Registration,
) -> None:
    where = f"{vendor.name} ({registration} registration, replayed) at the {deployment.form} URL"
    async with httpx2.AsyncClient(timeout=30) as http:
        connector = await connect(vendor, registration, deployment, owner_browser, http)
        assert connector.tokens is not None
        assert connector.tokens.refresh_token, f"{where}: no refresh token"
        tool: tuple[str, dict[str, Any]]
        if vendor is CHATGPT:
            await _chatgpt_search(connector, where)
            tool = ("search", {"query": "ChatGPT"})
        else:
            await _claude_save_and_search(connector, where)
            tool = ("search_context", {"query": "Claude"})
        await stays_connected(connector, *tool)
