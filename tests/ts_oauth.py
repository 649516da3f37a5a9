"""The TypeScript MCP SDKs' OAuth clients, installed from npm and run from node.

``@modelcontextprotocol/sdk@1.32.2`` (Claude Code, Cursor, the Inspector 1.x) and
``@modelcontextprotocol/client@2.4.0`` (the Inspector 2.x) come from the connector
matrix's npm install (``tests/connectors/npm_tools.py``: the same pins, Node 22, one
cache); ``tests/ts_oauth_client.mjs`` drives their own discovery, schema and ``auth()``
code. Without npm or the registry the calling test is skipped, loudly.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any, Final, NoReturn

import httpx2
import pytest

from tests.connectors import npm_tools
from tests.oauth_support import CALLBACK, PASSPHRASE, approve_over_http

SCRIPT: Final = Path(__file__).with_name("ts_oauth_client.mjs")
SDKS: Final = ("v1", "v2")


def _skip(why: str) -> NoReturn:
    pytest.skip(f"TYPESCRIPT SDK OAUTH CLIENTS NOT RUN: {why}")


def install() -> tuple[Path, Path]:
    """Node and the driver's copy beside the installed SDKs (ESM resolves bare imports
    from the script's own folder, so the driver runs from the cache)."""
    tools = npm_tools.install()
    if isinstance(tools, str):
        _skip(tools)
    driver = npm_tools.CACHE / SCRIPT.name
    shutil.copyfile(SCRIPT, driver)
    return tools.node, driver


def run(sdk: str, action: str, **request: Any) -> dict[str, Any]:
    """One run of the driver; its JSON answer (``ok`` False carries the SDK's error)."""
    node, driver = install()
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as handle:
        json.dump({"sdk": sdk, "action": action, **request}, handle)
    try:
        done = subprocess.run(  # noqa: S603 - our own driver
            [str(node), str(driver), handle.name],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
            cwd=driver.parent,
        )
    finally:
        Path(handle.name).unlink()
    assert done.returncode == 0, done.stderr
    answer: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return answer


def approve_and_finish(
    sdk: str,
    authorization_url: str,
    server_url: str,
    state: str,
    passphrase: str = PASSPHRASE,
    **request: Any,
) -> dict[str, Any]:
    """The owner approves ``authorization_url`` over HTTP (signing in), and the SDK's
    ``auth()`` finishes with the code the redirect carried: its answer, AUTHORIZED."""
    with httpx2.Client(timeout=60, follow_redirects=False) as owner:
        answer = approve_over_http(owner, authorization_url, passphrase=passphrase)
    finished = run(
        sdk,
        "auth",
        serverUrl=server_url,
        redirectUrl=CALLBACK,
        stateFile=state,
        code=answer["code"],
        iss=answer["iss"],
        **request,
    )
    assert finished["ok"], finished
    assert finished["result"] == "AUTHORIZED"
    return finished
