"""The Codex CLI's own ``codex mcp login`` (npm ``@openai/codex`` 0.171.0, its Linux
binary), in a throwaway ``CODEX_HOME`` whose ``config.toml`` names the server by URL
(``[mcp_servers.metacortex] url = ...``) and keeps credentials in a file.

Offline, login is all Codex can do: the rest of its MCP use needs a model. It
discovers (an unauthenticated ``GET`` of the MCP URL first, then well-known paths),
registers, listens on a loopback port and prints the authorization URL; the owner's
Chromium consents and is sent to Codex's listener for real; Codex exchanges the code
and stores the tokens. The test then checks what it stored: the server and client it
names, a refresh token, and an access token that ``tools/list`` accepts.

By default Codex registers with its client metadata document at
``https://chatgpt.com/oauth/codex/client.json``, which this server would fetch from the
internet; offline the test asks for dynamic registration
(``--oauth-client-registration dcr``).
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from tests.connectors.consent import ConsentBrowser
from tests.connectors.deployments import Deployment
from tests.connectors.npm_tools import NpmTools

# The first test to need the npm clients installs them (once, into .cache).
pytestmark = [pytest.mark.slow, pytest.mark.timeout(600), pytest.mark.anyio]

_AUTHORIZE = re.compile(r"(http://\S+/oauth/authorize\?\S+)")


def _login(codex: Path, home: Path, browser: ConsentBrowser) -> tuple[int, str]:
    """Run ``codex mcp login``; approve the URL it prints. Its exit code and output."""
    environment = {"CODEX_HOME": str(home), "HOME": str(home), "PATH": "/usr/bin:/bin"}
    environment["BROWSER"] = "/bin/false"  # nothing to open: the URL is read off stdout
    output: list[str] = []
    with subprocess.Popen(  # noqa: S603 (the pinned binary, fixed arguments)
        [str(codex), "mcp", "login", "metacortex", "--oauth-client-registration", "dcr"],
        env=environment,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    ) as process:
        assert process.stdout is not None
        try:
            for line in process.stdout:
                output.append(line)
                found = _AUTHORIZE.search(line)
                if found:
                    consent = browser.approve(found.group(1))
                    assert not consent.csp_violations, consent.csp_violations
            process.wait(timeout=60)
        finally:
            if process.poll() is None:
                process.kill()
    return process.returncode, "".join(output)


async def test_codex_mcp_login_discovers_registers_and_stores_working_tokens(
    npm_tools: NpmTools,
    deployment: Deployment,
    owner_browser: ConsentBrowser,
    tmp_path: Path,
) -> None:
    where = f"@openai/codex@{npm_tools.version('@openai/codex')} at the {deployment.form} URL"
    home = tmp_path / "codex-home"
    home.mkdir()
    (home / "config.toml").write_text(
        'mcp_oauth_credentials_store = "file"\n\n'
        f'[mcp_servers.metacortex]\nurl = "{deployment.mcp}"\n'
    )
    mark = deployment.refused_mark()
    code, output = _login(npm_tools.codex, home, owner_browser)
    assert code == 0, (
        f"{where}: codex mcp login failed: {output[-1200:]}\n"
        f"Google's front end answered 404 to: {deployment.refused_since(mark)}"
    )
    assert "Successfully logged in" in output, output

    [stored] = json.loads((home / ".credentials.json").read_text()).values()
    assert stored["server_url"] == deployment.mcp, where
    assert stored["issuer"] == deployment.base, where
    assert stored["refresh_token"], f"{where}: Codex stored no refresh token"
    assert "memory:write" in stored["scopes"], where

    headers = {"authorization": f"Bearer {stored['access_token']}"}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=30) as http,
        Client(streamable_http_client(deployment.mcp, http_client=http), mode="legacy") as client,
    ):
        names = {tool.name for tool in (await client.list_tools()).tools}
        saved = await client.call_tool("save_context", {"content": "Codex logged in."})
    assert "search_context" in names, f"{where}: the stored access token gave {names}"
    assert not saved.is_error, (
        f"{where}: Codex asked for {stored['scopes']} and a plain Allow refused "
        f"save_context: {saved.content}"
    )
