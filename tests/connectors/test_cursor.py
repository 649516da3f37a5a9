"""Cursor, replayed (a desktop app; its OAuth client is the TypeScript SDK's): its
dynamic registration body with three redirect URIs, one of them the private-use
``cursor://anysphere.cursor-mcp/oauth/callback`` (RFC 8252 §7.1), and the desktop
flow that returns on that scheme. Chromium must be allowed to follow the consent
page's redirect to it (no CSP ``form-action`` block); the code is read off the
``Location`` the server sent. Then ``tools/list``, ``save_context`` and
``search_context`` through ``mcp.Client``, a refresh and a refresh race.
"""

from __future__ import annotations

import httpx2
import pytest

from tests.connectors.consent import ConsentBrowser
from tests.connectors.deployments import Deployment
from tests.connectors.replay import connect, stays_connected
from tests.connectors.vendors import CURSOR

pytestmark = [pytest.mark.slow, pytest.mark.anyio]


async def test_cursor_registers_its_three_redirects_connects_refreshes_and_survives_a_race(
    deployment: Deployment, owner_browser: ConsentBrowser
) -> None:
    where = f"Cursor (its registration body, replayed) at the {deployment.form} URL"
    async with httpx2.AsyncClient(timeout=30) as http:
        connector = await connect(CURSOR, "dynamic", deployment, owner_browser, http)
        assert connector.consent is not None
        assert connector.consent.location.startswith(CURSOR.redirect_uri + "?code="), where
        assert connector.tokens is not None
        assert connector.tokens.refresh_token, (
            f"{where}: no refresh token for the challenge's scopes ({connector.tokens.scope})"
        )
        names, saved = await connector.use("save_context", {"content": "Cursor connected."})
        assert {"save_context", "search_context"} <= names, (
            f"{where}: a plain Allow (preset {connector.consent.preset!r}) gave {sorted(names)}"
        )
        assert saved.startswith("ok"), f"{where}: save_context: {saved}"
        await stays_connected(connector, "search_context", {"query": "Cursor"})
